# shellcheck shell=sh
# Shared helpers of the agent's API tests (POSIX sh: busybox ash in the
# guest, bash or dash on the host). Source it; it is not a test itself.
#   AGENT_BIN BIN_DIR STATE_DIR PORT TOKEN  configure start_agent.
#
# Every reply a test receives is recorded (method, path, status, headers,
# body) to be checked against docs/openapi.yaml, which needs python: on the
# host, host-api.sh passes REPLY_DIR and checks it afterwards; in the guest,
# the records are framed on stdout (the console) when the test ends and the
# host checks them (orchestrate/guest-test.sh).

TAP_N=0
TAP_FAILED=0
AGENT_PID=""
PORT=${PORT:-18181}
TOKEN=${TOKEN:-t0ken-$$}
BASE="http://127.0.0.1:$PORT"
WORK=${WORK:-$(mktemp -d /tmp/agent-test.XXXXXX)}
BODY="$WORK/body"
HEADERS="$WORK/headers"
STATUS=""
REPLY_TEST=${REPLY_TEST:-$(basename "$0" .sh)}
if [ -n "${REPLY_DIR:-}" ]; then
	REPLY_CONSOLE=0
else
	REPLY_DIR=$WORK/replies
	REPLY_CONSOLE=1
fi
mkdir -p "$REPLY_DIR"
# A file, not a variable: replies also arrive in command substitutions.
[ -f "$REPLY_DIR/count" ] || echo 0 >"$REPLY_DIR/count"

ok() {
	TAP_N=$((TAP_N + 1))
	echo "ok $TAP_N - $*"
}

not_ok() {
	TAP_N=$((TAP_N + 1))
	TAP_FAILED=$((TAP_FAILED + 1))
	echo "not ok $TAP_N - $*"
	[ -s "$BODY" ] && echo "#   last body: $(head -c 600 "$BODY")"
	return 0
}

check() {	# NAME COMMAND... : ok when the command succeeds
	name=$1
	shift
	if "$@" >/dev/null; then ok "$name"; else not_ok "$name"; fi
}

finish() {
	echo "1..$TAP_N"
	[ "$TAP_FAILED" -eq 0 ]
}

# fetch BODY_FILE HEADERS_FILE METHOD PATH [curl args...]: one request;
# sets FETCH_STATUS (000: no reply) and records the reply.
fetch() {
	f_body=$1
	f_headers=$2
	f_method=$3
	f_path=$4
	shift 4
	if [ "$f_method" = HEAD ]; then
		set -- -I "$@"	# -X HEAD would wait for a body
	else
		set -- -X "$f_method" "$@"
	fi
	FETCH_STATUS=$(curl -s -m "${REQ_TIMEOUT:-120}" -o "$f_body" -D "$f_headers" \
		-w '%{http_code}' "$@" "$BASE$f_path") || FETCH_STATUS=000
	[ "$FETCH_STATUS" = 000 ] || record_reply "$f_method" "$f_path" "$FETCH_STATUS" "$f_headers" "$f_body"
}

record_reply() {	# METHOD PATH STATUS HEADERS_FILE BODY_FILE
	read -r r_n <"$REPLY_DIR/count"
	r_n=$((r_n + 1))
	echo "$r_n" >"$REPLY_DIR/count"
	r=$REPLY_DIR/$r_n
	printf 'test=%s\nmethod=%s\npath=%s\nstatus=%s\nbytes=%s\n' "$REPLY_TEST" "$1" "$2" "$3" \
		"$(wc -c <"$5" 2>/dev/null || echo 0)" >"$r.meta"
	cp "$4" "$r.headers" 2>/dev/null || : >"$r.headers"
	cp "$5" "$r.body" 2>/dev/null || : >"$r.body"
}

# The records, framed for the host: base64 lines of the meta, the headers
# and (JSON only: other bodies are not checked beyond their type) the
# gzipped body, an end line with the body's size, a trailer with the count.
emit_replies() {
	[ "$REPLY_CONSOLE" = 1 ] || return 0
	e_n=0
	e_i=1
	read -r e_count <"$REPLY_DIR/count"
	while [ "$e_i" -le "$e_count" ]; do
		r=$REPLY_DIR/$e_i
		id=$REPLY_TEST/$e_i
		e_i=$((e_i + 1))
		[ -f "$r.meta" ] || continue
		base64 <"$r.meta" | sed "s|^|SIGMIG-REPLY $id meta |"
		base64 <"$r.headers" | sed "s|^|SIGMIG-REPLY $id headers |"
		e_bytes=0
		if grep -qi '^content-type:.*json' "$r.headers"; then
			gzip -c <"$r.body" | base64 | sed "s|^|SIGMIG-REPLY $id body |"
			e_bytes=$(wc -c <"$r.body")
		fi
		echo "SIGMIG-REPLY $id end $e_bytes"
		e_n=$((e_n + 1))
	done
	echo "SIGMIG-REPLIES $REPLY_TEST $e_n"
}

# req METHOD PATH [curl args...]: sets STATUS, writes BODY and HEADERS.
req() {
	fetch "$BODY" "$HEADERS" "$@"
	STATUS=$FETCH_STATUS
}

# As fetch, with the bearer token.
afetch() {
	fetch "$@" -H "Authorization: Bearer $TOKEN"
}

# As req, with the bearer token.
areq() {
	method=$1
	path=$2
	shift 2
	req "$method" "$path" -H "Authorization: Bearer $TOKEN" "$@"
}

jqb() {	# jq over the last body
	jq -r "$@" "$BODY"
}

header() {	# header value of the last reply (case-insensitive name)
	grep -i "^$1:" "$HEADERS" | head -1 | sed 's/^[^:]*: *//' | tr -d '\r'
}

expect() {	# NAME STATUS [CODE]: checks the status and the problem code
	name=$1
	want=$2
	code=${3:-}
	if [ "$STATUS" != "$want" ]; then
		not_ok "$name (HTTP $STATUS, expected $want)"
		return 0
	fi
	if [ -n "$code" ]; then
		got=$(jqb .code 2>/dev/null)
		ctype=$(header Content-Type)
		if [ "$got" != "$code" ] || [ "$ctype" != "application/problem+json" ]; then
			not_ok "$name (code '$got' type '$ctype', expected $code)"
			return 0
		fi
	fi
	ok "$name"
}

try() {	# NAME STATUS CODE req|areq METHOD PATH [curl args...]: the request, then expect
	t_name=$1
	t_status=$2
	t_code=$3
	shift 3
	"$@"
	expect "$t_name" "$t_status" "$t_code"
}

wait_for() {	# SECONDS COMMAND...: polls until the command succeeds
	limit=$1
	shift
	i=0
	while [ "$i" -lt $((limit * 10)) ]; do
		"$@" && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

agent_up() {
	REQ_TIMEOUT=2 fetch "$WORK/up.body" "$WORK/up.headers" GET /v1/health
	[ "$FETCH_STATUS" != 000 ]
}

start_agent() {	# extra agent options...
	mkdir -p "$STATE_DIR"
	# shellcheck disable=SC2153 # AGENT_BIN is the sourcing test's
	"$AGENT_BIN" --listen "127.0.0.1:$PORT" --token "$TOKEN" \
		--bin-dir "$BIN_DIR" --state-dir "$STATE_DIR" "$@" \
		2>>"$WORK/agent.log" &
	AGENT_PID=$!
	wait_for 20 agent_up
}

# shellcheck disable=SC2034 # AGENT_RC is for the sourcing test
stop_agent() {
	[ -n "$AGENT_PID" ] || return 0
	kill -TERM "$AGENT_PID" 2>/dev/null || true
	i=0
	while kill -0 "$AGENT_PID" 2>/dev/null && [ "$i" -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	kill -KILL "$AGENT_PID" 2>/dev/null || true
	AGENT_RC=0
	wait "$AGENT_PID" 2>/dev/null || AGENT_RC=$?
	AGENT_PID=""
}

rss_kb() {
	awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"
}

workload_state() {	# ID (BODY is left alone)
	REQ_TIMEOUT=10 afetch "$WORK/wl.body" "$WORK/wl.headers" GET "/v1/workloads/$1"
	jq -r .state "$WORK/wl.body"
}

state_is() {	# ID STATE
	[ "$(workload_state "$1")" = "$2" ]
}

cleanup() {
	stop_agent
	emit_replies
	# Workloads are not the agent's to kill on exit: do it here.
	for sock in "$STATE_DIR"/w*.sock; do
		[ -e "$sock" ] || continue
		pkill_by_sock "$sock"
	done
	[ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"
}

pkill_by_sock() {	# the pid recorded for a workload's socket in our notes
	id=${1##*/}
	id=${id%.sock}
	pid=$(cat "$WORK/pid-$id" 2>/dev/null) || return 0
	kill -KILL "$pid" 2>/dev/null || true
}

# PID has ended: gone, or a zombie nobody has reaped yet (an adopted
# workload's parent is not the agent; our own children until we wait).
ended() {	# PID
	e_stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	[ "$(echo "${e_stat##*) }" | cut -c1)" = Z ]
}

note_pid() {	# ID PID: remembered for cleanup
	echo "$2" >"$WORK/pid-$1"
}

# After the agent ended (killed, or at a fault point): AGENT_RC is its exit
# status, and it starts again on the same state directory, or the test ends.
# shellcheck disable=SC2034 # AGENT_RC is for the sourcing test
restart_agent() {	# NAME
	AGENT_RC=0
	wait "$AGENT_PID" 2>/dev/null || AGENT_RC=$?
	AGENT_PID=""
	if start_agent --log-level info; then
		ok "$1: the agent starts again on the same state directory"
	else
		not_ok "$1: the agent does not come back"
		exit 1
	fi
}

# A second agent (B) on loopback, sharing the token and the program
# directory; its pid in B_PID, its log in $WORK/agent-b.log.
start_second_agent() {	# PORT STATE_DIR
	mkdir -p "$2"
	"$AGENT_BIN" --listen "127.0.0.1:$1" --token "$TOKEN" --bin-dir "$BIN_DIR" \
		--state-dir "$2" --log-level info 2>>"$WORK/agent-b.log" &
	B_PID=$!
}

# Agents A and B for a move within the guest; the test ends with a SKIP on
# a kernel without the migration interface.
start_agents_a_b() {	# PORT_B STATE_DIR_B
	start_agent --log-level info ||
		{ echo "not ok 1 - agent A did not come up"; cat "$WORK/agent.log"; exit 1; }
	req GET /v1/capabilities
	if [ "$(jqb .migration)" != true ]; then
		echo "ok 1 - # SKIP the kernel lacks the interface: no migration"
		finish
		exit 0
	fi
	start_second_agent "$1" "$2"
	check "agents A ($BASE) and B (port $1) answer" \
		wait_for 20 sh -c "curl -fs -m 2 -o /dev/null http://127.0.0.1:$1/v1/health"
}

bcurl() {	# METHOD PATH [curl args...]: agent B's (PORT_B) reply body on stdout
	b_m=$1 b_p=$2
	shift 2
	curl -s -m 30 -X "$b_m" -H "Authorization: Bearer $TOKEN" "$@" "http://127.0.0.1:$PORT_B$b_p"
}

# It ends, and so do the workloads it started (recorded by socket or pid).
stop_second_agent() {	# STATE_DIR
	if [ -n "${B_PID:-}" ]; then
		kill -TERM "$B_PID" 2>/dev/null || true
		wait "$B_PID" 2>/dev/null || true
	fi
	for sock in "$1"/w*.sock; do
		[ -e "$sock" ] || continue
		pkill_by_sock "$sock"
	done
}

# Every tool a test needs, or "not ok 1" and out.
need_tools() {	# TOOL...
	for n_tool in "$@"; do
		command -v "$n_tool" >/dev/null || { echo "not ok 1 - missing $n_tool"; exit 1; }
	done
}

# Freezes workload ID (pid PID), has sigsend queue COUNT real-time signals
# into it (seed SEED) and writes its checkpoint to $WORK/image.
checkpoint_with_signals() {	# ID PID COUNT SEED
	areq POST "/v1/workloads/$1/freeze"
	expect "freeze $1" 200
	areq POST /v1/workloads --json "{\"program\":\"sigsend\",\"control\":false,\"args\":[\"--pid\",\"$2\",\"--log\",\"/proc/self/fd/1\",\"--count\",\"$3\",\"--seed\",\"$4\",\"--kinds\",\"sigqueue,tgsigqueue\"]}"
	expect "sigsend queues $3 signals into it" 201
	c_sender=$(jqb .id)
	note_pid "$c_sender" "$(jqb .pid)"
	check "sigsend finishes" wait_for 120 state_is "$c_sender" exited
	areq POST "/v1/workloads/$1/checkpoint"
	expect "checkpoint" 200
	cp "$BODY" "$WORK/image"
}
