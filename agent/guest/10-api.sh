#!/bin/sh
# Every endpoint of sigmig-agent, driven with curl against real sigstorm
# workloads holding real pending signals, and every documented error.
# On a kernel without the signalfd interface (the host), the endpoints
# that need it must answer 503 kernel_unsupported instead.
# shellcheck disable=SC2016 # the single-quoted jq programs use jq's $variables
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
AGENT_BIN=${AGENT_BIN:-/sigmig/bin/sigmig-agent}
BIN_DIR=${BIN_DIR:-/sigmig/bin}
PORT=${PORT:-18181}
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$HERE/lib.sh"
STATE_DIR=${STATE_DIR:-$WORK/state}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

need_tools curl jq "$AGENT_BIN" "$BIN_DIR/sigstorm" "$BIN_DIR/sigsend"

start_agent --max-body 4K --restore-timeout-ms 60000 --log-level info ||
	{ echo "not ok 1 - agent did not come up"; cat "$WORK/agent.log"; exit 1; }
ok "agent listens on $BASE"

# ---------------------------------------------------------------- health, capabilities
req GET /v1/health
expect "GET /v1/health" 200
check "health says ok" test "$(jqb .status)" = ok
req GET /v1/capabilities
expect "GET /v1/capabilities" 200
check "capabilities: kernel release is the running one" test "$(jqb .kernel.release)" = "$(uname -r)"
check "capabilities: lists sigstorm" jq -e '.programs | index("sigstorm")' "$BODY" >/dev/null
IFACE=$(jqb .migration)
echo "# kernel $(uname -r): SFD_RAW $(jqb .signalfd.sfd_raw), queue pread $(jqb .signalfd.queue_pread)"
if [ -n "${EXPECT_INTERFACE:-}" ]; then
	check "capabilities: interface present = $EXPECT_INTERFACE" test "$IFACE" = "$EXPECT_INTERFACE"
fi

# ---------------------------------------------------------------- start, list, inspect
areq POST /v1/workloads -H 'Content-Type: application/json' \
	-d '{"program":"sigstorm","args":["--threads","3","--sigpending","100000"]}'
expect "POST /v1/workloads starts sigstorm" 201
W=$(jqb .id)
PID=$(jqb .pid)
note_pid "$W" "$PID"
check "201 has Location /v1/workloads/$W" test "$(header Location)" = "/v1/workloads/$W"
check "started workload is running" test "$(jqb .state)" = running
req GET /v1/workloads
expect "GET /v1/workloads without a token is 401 (a workload's arguments and pid are private)" 401 unauthorized
areq GET /v1/workloads
expect "GET /v1/workloads" 200
check "list holds $W" jq -e --arg w "$W" '.workloads | map(.id) | index($w)' "$BODY" >/dev/null
threads_registered() {	# ID N
	REQ_TIMEOUT=10 afetch "$WORK/wl.body" "$WORK/wl.headers" GET "/v1/workloads/$1"
	jq -e ".runtime.threads | length == $2" "$WORK/wl.body" >/dev/null
}
wait_for 10 threads_registered "$W" 3 || true
areq GET "/v1/workloads/$W"
expect "GET /v1/workloads/$W" 200
check "inspect: runtime reports 3 threads" test "$(jqb '.runtime.threads | length')" = 3
areq HEAD "/v1/workloads/$W"
expect "HEAD /v1/workloads/$W" 200

# ---------------------------------------------------------------- freeze, pending signals
areq POST "/v1/workloads/$W/freeze"
expect "POST freeze" 200
check "freeze: state frozen" test "$(jqb .workload.state)" = frozen
areq POST "/v1/workloads/$W/freeze"
expect "POST freeze twice is 409 wrong_state" 409 wrong_state

areq POST /v1/workloads --json "{\"program\":\"sigsend\",\"control\":false,\"args\":[\"--pid\",\"$PID\",\"--log\",\"/dev/stdout\",\"--count\",\"600\",\"--seed\",\"7\"]}"
expect "POST /v1/workloads starts sigsend (control false)" 201
S=$(jqb .id)
note_pid "$S" "$(jqb .pid)"
check "sigsend finishes" wait_for 120 state_is "$S" exited
areq GET "/v1/workloads/$S"
check "sigsend exit code 0" test "$(jqb .exit.code)" = 0
areq GET "/v1/workloads/$S/log"
expect "GET log of sigsend" 200

# jq: the same record, or the same timer record with a higher overrun (the
# 4 bytes at offset 20 of the raw x86_64 siginfo); same_queue pairs them.
SAME_OR_RAISED='
	def masked: .raw[0:40] + .raw[48:];
	def same_or_raised($a; $b):
		$a == $b or ($a.layout == "timer" and $b.layout == "timer"
			and ($a | masked) == ($b | masked)
			and ($a | del(.overrun, .raw)) == ($b | del(.overrun, .raw))
			and $b.overrun >= $a.overrun);
	def same_queue($a; $b):
		($a | length) == ($b | length)
		and ([range(0; $a | length) as $i | same_or_raised($a[$i]; $b[$i])] | all);
'

if [ "$IFACE" = true ]; then
	areq GET "/v1/workloads/$W/signals?limit=100000"
	expect "GET signals" 200
	cp "$BODY" "$WORK/signals1.json"
	TOTAL=$(jqb .pending_total)
	echo "# pending: $TOTAL ($(jqb '[.threads[].pending.count] | map(tostring) | join("+")') private, $(jqb .shared.count) shared)"
	check "signals: at least 100 pending (standard signals coalesce)" test "$TOTAL" -ge 100
	check "signals: 3 threads listed" test "$(jqb '.threads | length')" = 3
	check "signals: counts add up" jq -e '.pending_total == ([.threads[].pending.count] | add) + .shared.count' "$BODY"
	check "signals: every record has a name, a code name and 128 raw bytes" \
		jq -e '[.shared.signals[], .threads[].pending.signals[]] | length > 0 and all(.signal != null and (.raw | length) == 256 and (.layout | type) == "string")' "$BODY"
	check "signals: rt records carry pid/uid/value and nothing of other layouts" \
		jq -e '[.shared.signals[], .threads[].pending.signals[] | select(.layout == "rt")] | length > 0 and all(has("pid") and has("uid") and has("value") and (has("timerid") | not) and (has("addr") | not))' "$BODY"
	check "signals: kill records carry pid/uid only" \
		jq -e '[.shared.signals[], .threads[].pending.signals[] | select(.layout == "kill")] | all(has("pid") and (has("value") | not))' "$BODY"
	check "signals: code names seen" jq -e '[.. | .code_name? // empty] | unique | length >= 1' "$BODY"
	echo "# layouts: $(jq -c '[.shared.signals[], .threads[].pending.signals[] | .code_name] | group_by(.) | map({(.[0]): length}) | add' "$BODY")"
	areq GET "/v1/workloads/$W/signals?limit=100000"
	# A periodic timer's pending record reports the periods it has missed
	# so far: a later read may show a higher overrun, nothing else changes.
	check "signals: a second read sees the same queues (PEEK never dequeues; timer overruns only grow)" \
		jq -e --slurpfile a "$WORK/signals1.json" "$SAME_OR_RAISED"'
			$a[0] as $o
			| ([range(0; $o.threads | length) as $i
			    | same_queue($o.threads[$i].pending.signals; .threads[$i].pending.signals)] | all)
			  and same_queue($o.shared.signals; .shared.signals)' "$BODY"
	areq GET "/v1/workloads/$W/signals?limit=2"
	check "signals: limit truncates the lists but not the counts" \
		jq -e --argjson t "$TOTAL" '.pending_total == $t and ([.threads[].pending.signals | length] | max) <= 2' "$BODY"
	areq GET "/v1/workloads/$W/signals?limit=lots"
	expect "signals: bad limit is 400" 400 invalid_parameter

	areq POST "/v1/workloads/$W/checkpoint"
	expect "POST checkpoint" 200
	cp "$BODY" "$WORK/image"
	check "checkpoint: application/octet-stream" test "$(header Content-Type)" = application/octet-stream
	check "checkpoint: X-Sigmig-Signals = pending_total" test "$(header X-Sigmig-Signals)" = "$TOTAL"
	check "checkpoint: starts with the image magic" sh -c "head -c 8 '$WORK/image' | grep -q SIGMIGIM"
else
	areq GET "/v1/workloads/$W/signals"
	expect "GET signals without the kernel interface is 503" 503 kernel_unsupported
	areq POST "/v1/workloads/$W/checkpoint"
	expect "checkpoint without the kernel interface is 503" 503 kernel_unsupported
fi

areq POST "/v1/workloads/$W/thaw"
expect "POST thaw" 200
check "thaw: state running" test "$(jqb .workload.state)" = running
areq POST "/v1/workloads/$W/thaw"
expect "POST thaw twice is 409 wrong_state" 409 wrong_state
areq POST "/v1/workloads/$S/freeze"
expect "freeze an exited workload is 409" 409 wrong_state

# ---------------------------------------------------------------- restore
if [ "$IFACE" = true ]; then
	restore_image() {	# QUERY NAME: sets R
		areq POST "/v1/restore?${1}arg=--threads&arg=3&arg=--sigpending&arg=100000" \
			-H 'Content-Type: application/octet-stream' --data-binary "@$WORK/image"
		expect "$2" 201
		R=$(jqb .id)
		note_pid "$R" "$(jqb .pid)"
	}
	restore_image "" "POST /v1/restore restores the checkpoint"
	check "restore: running, restored, verified" jq -e '.state == "running" and .restored and .restore.verified == true' "$BODY"
	check "restore: requeued every signal" test "$(jqb .restore.requeued)" = "$TOTAL"
	check "restore: arguments from the query" jq -e '.args == ["--threads","3","--sigpending","100000"]' "$BODY"
	areq DELETE "/v1/workloads/$R"
	expect "DELETE the restored workload" 200
	# Held restore: verified, then parked until thaw (resumes) or DELETE (COMMIT).
	restore_image "hold=1&" "POST /v1/restore?hold=1 restores and holds"
	check "restore hold: frozen, held, restored, verified" jq -e '.state == "frozen" and .held == true and .restored and .restore.verified == true' "$BODY"
	areq POST "/v1/workloads/$R/checkpoint"
	expect "restore hold: checkpoint of a held copy is 409" 409 wrong_state
	areq GET "/v1/workloads/$R/signals?limit=100000"
	expect "restore hold: the held copy's signals can be read" 200
	# Timers re-armed by the restore may queue more while held: the image's
	# records must be the head of every queue, byte for byte, in order.
	check "restore hold: every queue starts with the checkpoint's records, byte for byte ($(jqb .pending_total) pending, $TOTAL checkpointed)" \
		jq -e --slurpfile a "$WORK/signals1.json" "$SAME_OR_RAISED"'
			def head_of($want; $got): same_queue($want; $got[:($want | length)]);
			$a[0] as $o
			| ([range(0; $o.threads | length) as $i
			    | head_of($o.threads[$i].pending.signals; .threads[$i].pending.signals)] | all)
			  and head_of($o.shared.signals; .shared.signals)
			  and .pending_total >= $o.pending_total' "$BODY"
	areq GET "/v1/workloads/$R"
	check "restore hold: reading its signals leaves it held" jq -e '.state == "frozen" and .held == true' "$BODY"
	# A commit delta goes into a held copy only, checked whole first.
	areq POST "/v1/workloads/$R/requeue" -H 'Content-Type: application/octet-stream'
	expect "requeue without a body is 400" 400 empty_body
	head -c 100 "$WORK/image" >"$WORK/short"
	areq POST "/v1/workloads/$R/requeue" -H 'Content-Type: application/octet-stream' \
		--data-binary "@$WORK/short"
	expect "requeue of a truncated image is 400 bad_image" 400 bad_image
	req POST "/v1/workloads/$R/requeue" -H 'Content-Type: application/octet-stream' \
		--data-binary "@$WORK/image"
	expect "requeue without the token is 401" 401
	areq GET "/v1/workloads/$R"
	check "restore hold: refused requeues leave it held" jq -e '.state == "frozen" and .held == true' "$BODY"
	areq POST "/v1/workloads/$R/thaw"
	expect "restore hold: thaw resumes it" 200
	check "restore hold: running after thaw" jq -e '.workload.state == "running" and (.workload.held // false) == false' "$BODY"
	# Forwarded batches go into a running copy, each batch of a source once.
	areq POST "/v1/workloads/$R/requeue?batch=1" -H 'Content-Type: application/octet-stream' \
		--data-binary "@$WORK/image"
	expect "requeue with a batch but no source is 400" 400 invalid_parameter
	for q in "source=a/b&batch=1" "source=s&batch=0" "source=s&batch=-1" "source=s&batch=2147483648" \
		"source=s&batch=1x" "source=$(head -c 65 /dev/zero | tr '\0' a)&batch=1"; do
		areq POST "/v1/workloads/$R/requeue?$q" -H 'Content-Type: application/octet-stream' \
			--data-binary "@$WORK/image"
		expect "requeue?$q is 400" 400 invalid_parameter
	done
	areq POST "/v1/workloads/$R/requeue?source=s&batch=1&hold=1" -H 'Content-Type: application/octet-stream' \
		--data-binary "@$WORK/image"
	expect "requeue with an unknown parameter is 400" 400 unknown_parameter
	areq POST "/v1/workloads/$R/requeue?source=s&batch=1" -H 'Content-Type: application/octet-stream' \
		--data-binary "@$WORK/short"
	expect "a truncated batch is 400 bad_image, nothing requeued" 400 bad_image
	areq POST "/v1/workloads/$R/requeue?source=api-test&batch=2" -H 'Content-Type: application/octet-stream' \
		--data-binary "@$WORK/image"
	expect "requeue of batch 2 before batch 1 is 409" 409 batch_out_of_order
	areq POST "/v1/workloads/$R/requeue?source=api-test&batch=1" -H 'Content-Type: application/octet-stream' \
		--data-binary "@$WORK/image"
	expect "requeue of batch 1 into the running copy" 200
	check "requeue into a running copy: every record requeued or merged ($(jq -c .result "$BODY"), $TOTAL sent)" \
		jq -e --argjson n "$TOTAL" '.result.requeued + .result.merged == $n and .result.duplicate == false
			and .workload.state == "running"' "$BODY"
	areq POST "/v1/workloads/$R/requeue?source=api-test&batch=1" -H 'Content-Type: application/octet-stream' \
		--data-binary "@$WORK/image"
	expect "batch 1 again (its answer lost) is acknowledged" 200
	check "batch 1 again: a duplicate, nothing requeued ($(jq -c .result "$BODY"))" \
		jq -e '.result.duplicate == true and .result.requeued == 0' "$BODY"
	areq POST "/v1/workloads/$R/replay"
	expect "replay of a workload without a spool is 409" 409 nothing_to_replay
	areq DELETE "/v1/workloads/$R"
	expect "DELETE the thawed copy" 200
	restore_image "hold=1&" "POST /v1/restore?hold=1 again"
	areq DELETE "/v1/workloads/$R"
	expect "DELETE a held copy" 200
	check "DELETE a held copy ends it with COMMIT (exit 0, never resumed)" jq -e '.exit.code == 0' "$BODY"
	# The image reaches the program through a FIFO: a program that opens
	# it after the agent has the whole image must still get every byte.
	for i in 1 2 3 4 5 6 7 8; do
		restore_image "hold=1&" "held restore $i of 8 in a row"
		areq DELETE "/v1/workloads/$R"
		expect "held restore $i of 8: DELETE" 200
	done
	areq POST "/v1/restore?hold=2" --data-binary "@$WORK/image"
	expect "restore with hold=2 is 400" 400 invalid_parameter

	areq GET /v1/workloads
	before_refused=$(jq -c '[.workloads[].id]' "$BODY")
	size=$(wc -c <"$WORK/image")
	head -c $((size / 2)) "$WORK/image" >"$WORK/truncated"
	areq POST /v1/restore --data-binary "@$WORK/truncated"
	expect "restore a truncated image is 400 bad_image" 400 bad_image
	# Change one byte in the middle of the image (to X, or Y if it is X).
	flip=X
	[ "$(tail -c +$((size / 2 + 1)) "$WORK/image" | head -c 1)" != X ] || flip=Y
	{ head -c $((size / 2)) "$WORK/image"; printf '%s' "$flip"; tail -c $((size - size / 2 - 1)) "$WORK/image"; } >"$WORK/corrupt"
	areq POST /v1/restore --data-binary "@$WORK/corrupt"
	expect "restore a corrupt image is 400 bad_image" 400 bad_image
	# Its head passed: the program was started before the rest arrived.
	areq GET /v1/workloads
	check "the program a refused image started is gone ($before_refused before, $(jq -c '[.workloads[].id]' "$BODY") after)" \
		jq -e --argjson b "$before_refused" '[.workloads[].id] == $b' "$BODY"
	areq POST /v1/restore
	expect "restore without a body is 400" 400 empty_body
	areq POST "/v1/restore?program=withrlimit" --data-binary "@$WORK/image"
	expect "restore into a program that is not a workload is 403" 403 program_not_allowed
	areq POST "/v1/restore?colour=blue" --data-binary "@$WORK/image"
	expect "restore with an unknown parameter is 400" 400 unknown_parameter
else
	areq POST /v1/restore --data-binary 'SIGMIGIM...'
	expect "restore without the kernel interface is 503" 503 kernel_unsupported
fi

# ---------------------------------------------------------------- migrate
areq POST "/v1/workloads/$W/migrate" --json '{"target":"ftp://x"}'
expect "migrate: bad target is 400" 400 invalid_field
areq POST "/v1/workloads/$W/migrate" --json '{"target":"http://127.0.0.1:9","timeout_ms":3000}'
if [ "$IFACE" = true ]; then
	expect "migrate to a dead target is 502 target_unreachable" 502 target_unreachable
	check "after a failed migration the original runs" state_is "$W" running
	areq POST "/v1/workloads/$W/migrate" --json "{\"target\":\"$BASE\",\"token\":\"wrong\"}"
	expect "migrate with a token the target refuses is 502 target_rejected" 502 target_rejected
	check "target_rejected carries the target's code" test "$(jqb .cause)" = unauthorized
	check "after a rejected migration the original runs" state_is "$W" running
	# Pile up queued signals, as an operator would before migrating.
	areq POST "/v1/workloads/$W/freeze"
	expect "freeze before migrating" 200
	areq POST /v1/workloads --json "{\"program\":\"sigsend\",\"control\":false,\"args\":[\"--pid\",\"$PID\",\"--log\",\"/dev/stdout\",\"--count\",\"400\",\"--seed\",\"9\",\"--kinds\",\"sigqueue,tgsigqueue\"]}"
	S2=$(jqb .id)
	note_pid "$S2" "$(jqb .pid)"
	check "sigsend into the frozen workload finishes" wait_for 120 state_is "$S2" exited
	areq POST "/v1/workloads/$W/migrate" --json "{\"target\":\"$BASE\",\"token\":\"$TOKEN\"}"
	expect "migrate a frozen workload to an agent (here: itself) commits" 200
	cp "$BODY" "$WORK/migrate.json"
	echo "# migrate timings: $(jq -c .timings "$BODY") signals $(jqb .signals) image $(jqb .image_bytes) B"
	M=$(jqb .target_workload.id)
	note_pid "$M" "$(jqb .target_workload.pid)"
	check "migrate: result committed, timings reported" jq -e '.result == "committed" and .timings.downtime_ms > 0 and .timings.transfer_ms >= 0' "$BODY"
	check "migrate: pending signals moved ($(jqb .signals))" jq -e '.signals > 0 and .target_workload.restore.requeued == .signals' "$BODY"
	check "migrate: the new workload runs restored" jq -e '.target_workload.restored and .target_workload.state == "running"' "$BODY"
	check "migrate: the original is marked migrated" state_is "$W" migrated
	check "migrate: the original process is gone" sh -c "! kill -0 $PID 2>/dev/null"
	areq POST "/v1/workloads/$W/freeze"
	expect "freeze a migrated workload is 409" 409 wrong_state
	W=$M
else
	expect "migrate without the kernel interface is 503" 503 kernel_unsupported
fi

# ---------------------------------------------------------------- files, metrics
areq GET "/v1/workloads/$W/ledger"
expect "GET ledger" 200
areq GET "/v1/workloads/$S/ledger"
expect "a workload without a runtime has no ledger (404)" 404 no_file
req GET /metrics
expect "GET /metrics" 200
check "metrics: text format" grep -qi '^content-type: text/plain' "$HEADERS"
check "metrics: requests by route and status" grep -q 'sigmig_agent_http_requests_total{route="/v1/workloads/{id}/freeze",method="POST",status="409"}' "$BODY"
if [ "$IFACE" = true ]; then
	check "metrics: migrations by result" grep -q 'sigmig_agent_migrations_total{result="committed"} 1' "$BODY"
	check "metrics: aborted migrations counted" grep -q 'sigmig_agent_migrations_total{result="aborted"} 2' "$BODY"
	check "metrics: signals requeued" sh -c "grep '^sigmig_agent_signals_requeued_total' '$BODY' | awk '{exit !(\$2 > 0)}'"
fi

# ---------------------------------------------------------------- errors
try "unknown path is 404" 404 not_found req GET /v1/nope
try "unknown workload is 404" 404 unknown_workload areq GET /v1/workloads/w999999
try "malformed workload id is 404" 404 unknown_workload areq GET /v1/workloads/bogus/signals
try "PUT /v1/workloads is 405" 405 method_not_allowed req PUT /v1/workloads
check "405 carries Allow" test "$(header Allow)" = "GET, HEAD, POST"
try "DELETE /v1/health is 405" 405 method_not_allowed req DELETE /v1/health
try "POST without a token is 401" 401 unauthorized req POST /v1/workloads --json '{"program":"sigstorm"}'
check "401 carries WWW-Authenticate" sh -c "grep -qi '^www-authenticate: Bearer' '$HEADERS'"
try "POST with a wrong token is 401" 401 unauthorized req POST /v1/workloads -H 'Authorization: Bearer nope' --json '{"program":"sigstorm"}'
try "DELETE without a token is 401" 401 unauthorized req DELETE "/v1/workloads/$W"
try "GET signals (it freezes the workload) without a token is 401" 401 unauthorized req GET "/v1/workloads/$W/signals?limit=1"
try "GET signals with a wrong token is 401" 401 unauthorized req GET "/v1/workloads/$W/signals" -H 'Authorization: Bearer nope'
try "signals: limit above 100000 is 400" 400 invalid_parameter areq GET "/v1/workloads/$W/signals?limit=100001"
try "malformed JSON is 400" 400 malformed_json areq POST /v1/workloads --json '{"program":'
try "unknown member is 400" 400 unknown_field areq POST /v1/workloads --json '{"program":"sigstorm","colour":1}'
try "a path as program is 400" 400 invalid_field areq POST /v1/workloads --json '{"program":"../../bin/sh"}'
try "a program that is not a workload is 403" 403 program_not_allowed areq POST /v1/workloads --json '{"program":"nosuchprog"}'
try "agent-owned option is 400" 400 invalid_field areq POST /v1/workloads --json '{"program":"sigstorm","args":["--ctl","/tmp/x"]}'
try "a text/plain body is 415" 415 unsupported_media_type areq POST /v1/workloads -H 'Content-Type: text/plain' -d '{"program":"sigstorm"}'
try "a form-urlencoded body (curl -d) is 415" 415 unsupported_media_type areq POST /v1/workloads -d '{"program":"sigstorm"}'
try "a body without Content-Type is 415" 415 unsupported_media_type areq POST /v1/workloads -H 'Content-Type:' -d '{"program":"sigstorm"}'
try "application/jsonx is not JSON: 415" 415 unsupported_media_type areq POST /v1/workloads -H 'Content-Type: application/jsonx' -d '{"program":"nosuchprog"}'
try "application/json with a charset is JSON" 403 program_not_allowed areq POST /v1/workloads -H 'Content-Type: application/json; charset=utf-8' -d '{"program":"nosuchprog"}'
head -c 5000 /dev/zero | tr '\0' ' ' >"$WORK/big"
try "a body over --max-body is 413" 413 body_too_large areq POST /v1/workloads -H 'Content-Type: application/json' --data-binary "@$WORK/big"
try "a chunked body over --max-body is 413" 413 body_too_large areq POST /v1/workloads -H 'Content-Type: application/json' -H 'Transfer-Encoding: chunked' --data-binary "@$WORK/big"
try "migrating a workload without runtime is 409" 409 no_runtime areq POST "/v1/workloads/$S/migrate" --json '{"target":"http://127.0.0.1:9"}'

# ---------------------------------------------------------------- stop, shutdown
areq DELETE "/v1/workloads/$S"
expect "DELETE an exited workload" 200
areq DELETE "/v1/workloads/$S"
expect "DELETE it again is 404" 404 unknown_workload
areq POST "/v1/workloads/$W/freeze"
expect "freeze before SIGTERM" 200
SOCK=$(jqb .workload.ctl_socket)
WPID=$(jqb .workload.pid)
stop_agent
check "SIGTERM: the agent exits 0 (rc $AGENT_RC; sanitizers report leaks here)" test "$AGENT_RC" = 0
if command -v "$BIN_DIR/sigmig-ctl" >/dev/null 2>&1; then
	check "SIGTERM: the frozen workload was thawed" sh -c "'$BIN_DIR/sigmig-ctl' '$SOCK' STATUS | grep -q '\"state\":\"running\"'"
else
	check "SIGTERM: agent logged the thaw" grep -q "shutdown: thawed $W" "$WORK/agent.log"
fi
check "SIGTERM: the workload survives the agent" kill -0 "$WPID"
kill -KILL "$WPID" 2>/dev/null || true
grep -c ' error: ' "$WORK/agent.log" | sed 's/^/# agent error lines: /' || true
grep -A20 'Sanitizer' "$WORK/agent.log" | sed 's/^/# /' || true
finish
