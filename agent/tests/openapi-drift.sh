#!/usr/bin/env bash
# The reply checker must catch replies that drift from docs/openapi.yaml:
# well-formed bodies pass, and each deliberate drift (a renamed member, a
# member of another siginfo layout, another time unit, a wrong type, an
# undocumented status, a missing header, a damaged console record) fails
# with a message naming the field. TAP.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CHECK=(/usr/bin/python3 "$REPO/orchestrate/lib/openapi_check.py")
WORK=$(mktemp -d /tmp/openapi-drift.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
failed=0

ok() { echo "ok - openapi drift: $*"; }
not_ok() { echo "not ok - openapi drift: $*"; failed=1; }

# conforms NAME METHOD PATH STATUS BODY_FILE [HEADERS_FILE]
conforms() {
	local name=$1 out
	if out=$("${CHECK[@]}" reply "$2" "$3" "$4" --body "$5" ${6:+--headers "$6"} 2>&1); then
		ok "$name conforms"
	else
		not_ok "$name should conform: $out"
	fi
}

# drifts NAME MUST_MENTION METHOD PATH STATUS BODY_FILE [HEADERS_FILE]
drifts() {
	local name=$1 want=$2 out rc=0
	out=$("${CHECK[@]}" reply "$3" "$4" "$5" --body "$6" ${7:+--headers "$7"} 2>&1) || rc=$?
	if [ "$rc" = 1 ] && grep -qF -- "$want" <<<"$out"; then
		ok "$name is caught ($(head -1 <<<"$out" | cut -c1-160))"
	else
		not_ok "$name: expected rc 1 naming '$want', got rc $rc: $out"
	fi
}

mutate() {	# SRC JQ DEST
	jq -c "$2" "$1" >"$3"
}

headers() {	# STATUS CONTENT-TYPE [EXTRA HEADER LINE] -> a curl -D file on stdout
	printf 'HTTP/1.1 %s X\r\nContent-Type: %s\r\n%s\r\n' "$1" "$2" "${3:+$3$'\r\n'}"
}

# Two records (an rt one process-wide, a kill one on thread 0) and a timer;
# raw is the record's 128 bytes: signo, errno, code, then the layout's fields.
jq -n '
	def raw: . + ("0" * (256 - length));
	{workload: "w1", version: 1, arch: "x86_64", created_ns: 1796290000000000000, pid: 120,
	 program: "sigstorm", pending_total: 2, dump_ns: 1830000,
	 shared: {count: 1, truncated: false, signals: [
		{signo: 35, signal: "SIGRTMIN+1", errno: 0, code: -1, code_name: "SI_QUEUE", layout: "rt",
		 pid: 99, uid: 0, value: 17, value_int: 17,
		 raw: ("2300000000000000ffffffff000000006300000000000000" + "1100000000000000" | raw)}]},
	 threads: [{index: 0, tid: 121, blocked: "0x0000000000000200", pending: {count: 1, truncated: false,
		signals: [{signo: 10, signal: "SIGUSR1", errno: 0, code: 0, code_name: "SI_USER", layout: "kill",
			   pid: 99, uid: 0, raw: ("0a000000000000000000000000000000" + "63000000" | raw)}]}}],
	 timers: [{id: 0, clock: 1, notify: 4, signo: 36, signal: "SIGRTMIN+2", value: 0, thread_index: 1,
		   overrun: 0, interval_ns: 1000000, remaining_ns: 400000}]}' >"$WORK/signals.json"
cat >"$WORK/workload.json" <<'EOF'
{"id":"w3","program":"sigstorm","args":["--threads","4"],"control":true,"pid":311,"state":"running",
 "restored":true,"started_at":"2026-12-03T11:23:42Z","exit":null,"ctl_socket":"/run/sigmig/w3.sock",
 "ledger":"/run/sigmig/w3.ledger","log":"/run/sigmig/w3.log",
 "output":{"max_bytes":1073741824,"log_bytes":0,"ledger_bytes":5120,"limit_reached":false},
 "restore":{"requeued":2,"verified":true,"restore_ns":52000000,"requeue":"write"}}
EOF
jq -c '{result: "committed", workload: "w1", target: "http://10.99.0.2:8080", target_workload: .,
	target_resumed: true, signals: 2, image_bytes: 4200, carried_at_commit: 1,
	commit: {method: "commit", carried: 1, removed: 0, timers: 0,
	        exit_window: {from_ns: 1796396913670589400, to_ns: 1796396913719716900, ms: 49.1, sealed: true}},
	forward: {source: "w1.120", drains: 19, batches: 12, forwarded: 340, merged: 3, spooled: 0,
		  spool: [], lease_ms: 2000, ran_ms: 2104.5},
	timings: {freeze_ms: 0.4, dump_ms: 21.0, transfer_ms: 80.2, restore_ms: 160.9,
	          commit_ms: 3.1, resume_ms: 0.0, downtime_ms: 265.6}}' "$WORK/workload.json" >"$WORK/migrate.json"
echo '{"status":"ok","version":"0.1.0","uptime_s":42,"workloads":1}' >"$WORK/health.json"
echo '{"type":"urn:sigmig:problem:wrong_state","title":"Conflict","status":409,"detail":"w1 is frozen","code":"wrong_state","instance":"/v1/workloads/w1/freeze"}' >"$WORK/problem.json"
headers 201 application/json 'Location: /v1/workloads/w3' >"$WORK/created.headers"
headers 201 application/json >"$WORK/no-location.headers"
headers 200 'text/plain; charset=utf-8' >"$WORK/text.headers"
headers 409 application/problem+json >"$WORK/problem.headers"

conforms "a signals reply (rt and kill records, a timer)" GET /v1/workloads/w1/signals 200 "$WORK/signals.json"
conforms "a migrate reply" POST /v1/workloads/w1/migrate 200 "$WORK/migrate.json"
conforms "a restore reply with Location" POST /v1/restore 201 "$WORK/workload.json" "$WORK/created.headers"
conforms "a health reply" GET /v1/health 200 "$WORK/health.json"
conforms "a problem" POST /v1/workloads/w1/freeze 409 "$WORK/problem.json" "$WORK/problem.headers"

mutate "$WORK/signals.json" '.threads[0].private = .threads[0].pending | del(.threads[0].pending)' "$WORK/d1.json"
drifts "a thread queue renamed pending -> private" '$.threads[0]' GET /v1/workloads/w1/signals 200 "$WORK/d1.json"
mutate "$WORK/signals.json" '.threads[0].pending.signals[0].value = 5' "$WORK/d2.json"
drifts "a kill-layout record with an rt member (value)" "\$.threads[0].pending.signals[0]: Unevaluated properties are not allowed ('value'" \
	GET /v1/workloads/w1/signals 200 "$WORK/d2.json"
mutate "$WORK/signals.json" 'del(.pending_total)' "$WORK/d3.json"
drifts "a signals reply without pending_total" "'pending_total' is a required property" GET /v1/workloads/w1/signals 200 "$WORK/d3.json"
mutate "$WORK/signals.json" '.shared.signals[0].raw |= .[2:]' "$WORK/d4.json"
drifts "a record whose raw is not 128 bytes" '$.shared.signals[0].raw' GET /v1/workloads/w1/signals 200 "$WORK/d4.json"
mutate "$WORK/migrate.json" '.timings.downtime_ns = 265600000 | del(.timings.downtime_ms)' "$WORK/d5.json"
drifts "migrate timings in another unit (downtime_ns)" '$.timings' POST /v1/workloads/w1/migrate 200 "$WORK/d5.json"
mutate "$WORK/migrate.json" '.forward.spool = ["/run/sigmig/w1-forward-2.image"]' "$WORK/d7.json"
drifts "a spool entry without its batch number" '$.forward.spool[0]' POST /v1/workloads/w1/migrate 200 "$WORK/d7.json"
mutate "$WORK/migrate.json" '.target_workload.pid = "311"' "$WORK/d6.json"
drifts "a pid as a string" "\$.target_workload.pid: '311' is not of type 'integer'" POST /v1/workloads/w1/migrate 200 "$WORK/d6.json"
mutate "$WORK/problem.json" '.code = "frozen_already"' "$WORK/d7.json"
drifts "a problem code the spec does not list" '$.code' POST /v1/workloads/w1/freeze 409 "$WORK/d7.json" "$WORK/problem.headers"
drifts "an undocumented status" 'status 418 is not documented' GET /v1/health 418 "$WORK/health.json"
drifts "JSON sent as text/plain" "Content-Type 'text/plain; charset=utf-8' is not one of application/json" \
	GET /v1/health 200 "$WORK/health.json" "$WORK/text.headers"
drifts "a 201 without Location" 'header Location is missing' POST /v1/restore 201 "$WORK/workload.json" "$WORK/no-location.headers"
mutate "$WORK/workload.json" '.control = false' "$WORK/d8.json"
drifts "a control:false workload with a ledger" '$.ledger: False schema' GET /v1/workloads/w3 200 "$WORK/d8.json"

# The guest's console framing: one whole record passes, a damaged one and
# a test that never reported its replies fail.
frame() {	# ID META_FILE HEADERS_FILE BODY_FILE
	base64 <"$2" | sed "s|^|SIGMIG-REPLY $1 meta |"
	base64 <"$3" | sed "s|^|SIGMIG-REPLY $1 headers |"
	gzip -c <"$4" | base64 | sed "s|^|SIGMIG-REPLY $1 body |"
	echo "SIGMIG-REPLY $1 end $(wc -c <"$4")"
}
printf 'test=10-api\nmethod=GET\npath=/v1/health\nstatus=200\n' >"$WORK/meta"
headers 200 application/json >"$WORK/json.headers"
{
	echo "# SIGMIG-TEST agent/10-api"
	frame 10-api/1 "$WORK/meta" "$WORK/json.headers" "$WORK/health.json"
	echo "SIGMIG-REPLIES 10-api 1"
} >"$WORK/console-ok.log"
if out=$("${CHECK[@]}" console "$WORK/console-ok.log") && grep -q '^ok - openapi: GET /v1/health 200' <<<"$out"; then
	ok "a framed console record is decoded and conforms"
else
	not_ok "a framed console record: $out"
fi
awk '/ body / && !done { $NF = "AAAA" $NF; done = 1 } { print }' "$WORK/console-ok.log" >"$WORK/console-bad.log"
{ cat "$WORK/console-bad.log"; echo "# SIGMIG-TEST agent/20-load"; } >"$WORK/console-bad2.log"
rc=0
out=$("${CHECK[@]}" console "$WORK/console-bad2.log") || rc=$?
if [ "$rc" = 1 ] && grep -q '^not ok - openapi: 10-api/1: unreadable record' <<<"$out" &&
   grep -q '^not ok - openapi: 20-load recorded no replies' <<<"$out"; then
	ok "a damaged console record and a test without its replies are failures"
else
	not_ok "damaged console records: rc $rc: $out"
fi
exit "$failed"
