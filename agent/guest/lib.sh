# Shared helpers of the agent's API tests (POSIX sh: busybox ash in the
# guest, bash or dash on the host). Source it; it is not a test itself.
#   AGENT_BIN BIN_DIR STATE_DIR PORT TOKEN  configure start_agent.

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

# req METHOD PATH [curl args...]: sets STATUS, writes BODY and HEADERS.
req() {
	method=$1
	path=$2
	shift 2
	if [ "$method" = HEAD ]; then
		set -- -I "$@"	# -X HEAD would wait for a body
	else
		set -- -X "$method" "$@"
	fi
	STATUS=$(curl -s -m "${REQ_TIMEOUT:-120}" -o "$BODY" -D "$HEADERS" \
		-w '%{http_code}' "$@" "$BASE$path") || STATUS=000
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
	curl -s -m 2 -o /dev/null "$BASE/v1/health"
}

start_agent() {	# extra agent options...
	mkdir -p "$STATE_DIR"
	"$AGENT_BIN" --listen "127.0.0.1:$PORT" --token "$TOKEN" \
		--bin-dir "$BIN_DIR" --state-dir "$STATE_DIR" "$@" \
		2>>"$WORK/agent.log" &
	AGENT_PID=$!
	wait_for 20 agent_up
}

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

workload_state() {	# ID
	curl -s -m 10 "$BASE/v1/workloads/$1" | jq -r .state
}

state_is() {	# ID STATE
	[ "$(workload_state "$1")" = "$2" ]
}

cleanup() {
	stop_agent
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

note_pid() {	# ID PID: remembered for cleanup
	echo "$2" >"$WORK/pid-$1"
}
