#!/usr/bin/env bash
# Host-only checks (TAP) of the two-guest tooling, no QEMU needed: the link
# relay (orchestrate/link-relay.sh) with two fake QEMU socket netdevs that
# send real Ethernet/IPv4/TCP frames, and the verdict's way from sigledger
# through migrate.sh's result to the report, on a made-up move.
set -uo pipefail
SUITE=two-guest-relay
# shellcheck source=orchestrate/two-guest-tap.sh
source "$(dirname "${BASH_SOURCE[0]}")/../two-guest-tap.sh"
DIR=$(mktemp -d)
on_exit rm -rf "$DIR"

echo "TAP version 13"
base=$(free_port_base 2) || { echo "not ok - two free ports for the relay"; exit 1; }
"$REPO/orchestrate/link-relay.sh" run --dir "$DIR/link" --port-a "$base" --port-b $((base + 1)) \
	>"$DIR/relay.log" 2>&1 &
RELAY_PID=$!
on_exit stop_pids -t 5 "$RELAY_PID"
wait_until 10 "the relay" test -f "$DIR/link/ready"
tap $? "relay listens on two ports (socat + link-relay)"

# The fake guests: frame N carries payload bytes N (TCP port 8080, A -> B).
python3 - "$base" "$DIR/link" "$REPO/orchestrate/link-relay.sh" >"$DIR/py.out" 2>"$DIR/py.err" <<'EOF'
import socket, struct, subprocess, sys, time
base, linkdir, relay = int(sys.argv[1]), sys.argv[2], sys.argv[3]
def tap(ok, what):
    print(("ok - %s" if ok else "not ok - %s") % what, flush=True)

def csum(data):
    if len(data) % 2: data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16: s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff

def frame(payload, seq):
    src, dst = bytes([10, 99, 0, 1]), bytes([10, 99, 0, 2])
    tcp = struct.pack("!HHIIBBHHH", 40000, 8080, seq, 0, 5 << 4, 0x18, 65535, 0, 0) + payload
    tcs = csum(src + dst + struct.pack("!BBH", 0, 6, len(tcp)) + tcp)
    tcp = tcp[:16] + struct.pack("!H", tcs) + tcp[18:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 1, 0, 64, 6, 0, src, dst)
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    eth = b"\x52\x54\x00\x99\x00\x02" + b"\x52\x54\x00\x99\x00\x01" + b"\x08\x00"
    return eth + ip + tcp

def tcp_ok(f):
    ip = f[14:34]; tcp = f[34:]
    return csum(ip[12:20] + struct.pack("!BBH", 0, 6, len(tcp)) + tcp) == 0

a = socket.create_connection(("127.0.0.1", base)); b = socket.create_connection(("127.0.0.1", base + 1))
b.settimeout(2)
def send(f): a.sendall(struct.pack("!I", len(f)) + f)
def recv():
    hdr = b""
    while len(hdr) < 4:
        c = b.recv(4 - len(hdr))
        if not c: raise EOFError
        hdr += c
    ln = struct.unpack("!I", hdr)[0]; d = b""
    while len(d) < ln: d += b.recv(ln - len(d))
    return d
def ctl(*args):
    subprocess.run([relay, "set", linkdir] + list(args), check=True); time.sleep(0.3)

time.sleep(0.5)
f = frame(bytes([1]) * 1000, 1); send(f)
got = recv()
tap(got == f, "pass: a frame crosses unchanged")

ctl("corrupt-after", "ab", "1500")
f2 = frame(bytes([2]) * 1000, 1001); send(f2); g2 = recv()
f3 = frame(bytes([3]) * 1000, 2001); send(f3); g3 = recv()
f4 = frame(bytes([4]) * 1000, 3001); send(f4); g4 = recv()
tap(g2 == f2, "corrupt-after: frames before the threshold unchanged")
diff = [i for i in range(len(f3)) if f3[i] != g3[i]]
payload_diff = [i for i in diff if i >= 54]
other_diff = [i for i in diff if i < 54 and i not in (50, 51)]
tap(len(payload_diff) == 1 and not other_diff and tcp_ok(g3),
    "corrupt-after: one payload byte flipped, TCP checksum recomputed (diff at %s)" % diff)
tap(g4 == f4, "corrupt-after: corrupts once, later frames unchanged")

ctl("cut-after", "ab", "1500")
send(frame(bytes([5]) * 1000, 4001)); ok5 = len(recv()) > 0
send(frame(bytes([6]) * 1000, 5001))
try:
    recv(); cut = False
except (socket.timeout, EOFError):
    cut = True
tap(ok5 and cut, "cut-after: passes up to the threshold, then drops")

ctl("delay", "300")
t0 = time.time(); send(frame(bytes([7]) * 100, 6001)); recv(); dt = time.time() - t0
tap(0.28 <= dt < 2, "delay 300: the frame arrives after %.0f ms" % (dt * 1000))
ctl("pass")
st = open(linkdir + "/stats").read()
tap("corrupted=1" in st and "dropped_ab=1" in st, "stats count the corruption and the drop: " + st.strip())
EOF
# Renumber the Python checks into this suite's TAP stream.
py_lines=0
while IFS= read -r line; do
	case "$line" in
	"ok - "*) tap 0 "${line#ok - }" ;;
	"not ok - "*) tap 1 "${line#not ok - }" ;;
	*) continue ;;
	esac
	py_lines=$((py_lines + 1))
done <"$DIR/py.out"
if [ "$py_lines" != 7 ]; then
	diag <"$DIR/py.err"
	tap 1 "relay checks: $py_lines of 7 ran"
fi

# The verdict, without guests: one RT signal (sender id 1, pid 99) pending
# on thread 0 of A, moved, delivered on B. migrate.sh's own result code
# (lib/migrate-*.sh) runs sigledger on it; report.py shows that verdict.
make -s -C "$REPO/workloads" build/sigledger >"$DIR/make.log" 2>&1 ||
	{ diag <"$DIR/make.log"; tap 1 "sigledger builds"; }
mkdir -p "$DIR/move"
/usr/bin/python3 - "$DIR/move" <<'EOF'
import json, struct, sys
d = sys.argv[1]
val = (0x5347 << 48) | (1 << 32) | 1
b = struct.pack("<iiiiiiQ", 35, 0, -1, 0, 99, 0, val)
raw = (b + bytes(128 - len(b))).hex()
rec = {"signo": 35, "signal": "SIGRTMIN+1", "errno": 0, "code": -1, "code_name": "SI_QUEUE",
       "layout": "rt", "pid": 99, "uid": 0, "value": val, "value_int": 1, "raw": raw}
snap = {"workload": "w1", "version": 1, "arch": "x86_64", "created_ns": 1796290000000000000,
        "pid": 120, "program": "sigstorm", "pending_total": 1, "dump_ns": 5,
        "shared": {"count": 0, "truncated": False, "signals": []},
        "threads": [{"index": 0, "tid": 121, "blocked": "0x0000000000000000",
                     "pending": {"count": 1, "truncated": False, "signals": [rec]}}], "timers": []}
wl = {"id": "w1", "program": "sigstorm", "args": [], "control": True, "pid": 130, "state": "frozen",
      "restored": True, "held": True, "started_at": "2026-12-03T11:23:42Z", "exit": None,
      "ctl_socket": "/run/sigmig/w1.sock", "ledger": "/run/sigmig/w1.ledger", "log": "/run/sigmig/w1.log",
      "restore": {"requeued": 1, "verified": True, "restore_ns": 5, "requeue": "write"}}
mig = {"result": "committed", "workload": "w1", "target": "http://10.99.0.2:8080",
       "target_workload": wl, "target_resumed": False, "signals": 1, "image_bytes": 4000,
       "commit": {"method": "commit"}, "timings": {"freeze_ms": 1, "dump_ms": 2, "transfer_ms": 3,
       "restore_ms": 4, "commit_ms": 1, "resume_ms": 0, "downtime_ms": 11}}
caps = {"agent_version": "0.1.0", "api_version": "v1", "kernel": {"release": "6.1", "machine": "x86_64"},
        "signalfd": {"sfd_raw": True, "sfd_private_group": True, "queue_pread": True, "queue_write": True,
                     "queue_seal": True},
        "migration": True, "programs": [], "limits": {"max_body": 1, "max_image": 1, "max_workloads": 1},
        "auth": "bearer"}
for name, doc in (("before", snap), ("after", snap), ("migrate", mig),
                  ("capabilities-a", caps), ("capabilities-b", caps)):
    json.dump(doc, open("%s/%s.json" % (d, name), "w"))
open(d + "/sender-1-a.log", "w").write("S 1 sigqueue 35 120 -1 0 %x 99 0 1000 1\n" % val)
open(d + "/ledger-a.txt", "w").write("H 120 0 1 62\n")
open(d + "/ledger-live.txt", "w").write("H 130 1 2 62\nD 0 131 5000 %s\n" % raw)
EOF

# verdict_of CASE [FAILURE...]: migrate.sh's check_ledger, write_result and
# verdict on a copy of the move; the result in $DIR/CASE/result.json.
verdict_of() {
	local case=$1
	shift
	rm -rf "${DIR:?}/$case"
	cp -r "$DIR/move" "$DIR/$case"
	(
		# shellcheck source=orchestrate/lib/migrate-api.sh
		. "$REPO/orchestrate/lib/migrate-api.sh"
		# shellcheck source=orchestrate/lib/migrate-result.sh
		. "$REPO/orchestrate/lib/migrate-result.sh"
		# shellcheck disable=SC2034 # read by the sourced code
		out=$DIR/$case from=http://a to=http://b target=http://t expect=ok fault="" threads=1 signals=1 \
			EXACT=1 MIGRATED=1 HELD=1 HELD_SECONDS=0.5 MIGRATE_STATUS=200 PID_A=120 PID_B=130
		FAILURES=("$@")
		check_ledger
		write_result
		verdict
	) >"$DIR/$case.out" 2>&1
}

report() {	# CASE [report args...]: sets RC
	RC=0
	python3 "$REPO/orchestrate/report/report.py" "$DIR/$1/result.json" --no-color "${@:2}" \
		>"$DIR/$1.txt" 2>&1 || RC=$?
}

verdict_of ok
report ok --html "$DIR/ok.html"
[ "$RC" = 0 ] && grep -q PASS "$DIR/ok.txt" && grep -q '<svg' "$DIR/ok.html" && ! grep -q 'src="http' "$DIR/ok.html"
tap $? "a clean move: sigledger's verdict PASS, in the report and its self-contained HTML page (rc=$RC)"

echo "D 0 131 5001 $(jq -r '.threads[0].pending.signals[0].raw' "$DIR/move/before.json")" >>"$DIR/move/ledger-live.txt"
verdict_of dup
report dup
[ "$RC" = 1 ] && grep -q 'FAIL .*duplicated = 1' "$DIR/dup.txt" && grep -q 'verdict: FAIL: duplicated = 1' "$DIR/dup.out"
tap $? "one signal delivered twice: FAIL in migrate.sh and in the report (rc=$RC)"
sed -i '$d' "$DIR/move/ledger-live.txt"

jq '.threads[0].pending.signals[0].raw |= ("24" + .[2:])' "$DIR/move/before.json" >"$DIR/move/after.json"
verdict_of diff
report diff
[ "$RC" = 1 ] && grep -q 'DIFFERENT' "$DIR/diff.txt" && grep -q 'queue t0 differs after the move' "$DIR/diff.txt"
tap $? "one altered byte in a queue: FAIL, the queue marked DIFFERENT (rc=$RC)"
cp "$DIR/move/before.json" "$DIR/move/after.json"

verdict_of outcome "the original on A is 'running', not migrated, after a confirmed move"
report outcome
[ "$RC" = 1 ] && grep -q "FAIL .*the original on A is 'running'" "$DIR/outcome.txt"
tap $? "an outcome check of migrate.sh fails the verdict (rc=$RC)"

jq 'del(.ledger.verdict)' "$DIR/ok/result.json" >"$DIR/ok/nov.json"
RC=0
python3 "$REPO/orchestrate/report/report.py" "$DIR/ok/nov.json" >"$DIR/nov.txt" 2>&1 || RC=$?
[ "$RC" = 2 ] && grep -q 'has no verdict.pass' "$DIR/nov.txt"
tap $? "a result without sigledger's verdict is an error naming it (rc=$RC: $(head -c 100 "$DIR/nov.txt"))"
jq '.migrate.timings |= (.downtime_ns = 11000000 | del(.downtime_ms))' "$DIR/ok/result.json" >"$DIR/ok/ns.json"
RC=0
python3 "$REPO/orchestrate/report/report.py" "$DIR/ok/ns.json" >"$DIR/ns.txt" 2>&1 || RC=$?
[ "$RC" = 2 ] && grep -q 'has no downtime_ms' "$DIR/ns.txt"
tap $? "timings in another unit are an error naming the documented field (rc=$RC)"
tap_done
