#!/usr/bin/env bash
# Host-only checks (TAP) of the two-guest tooling, no QEMU needed: the link
# relay (orchestrate/link-relay.sh) with two fake QEMU socket netdevs that
# send real Ethernet/IPv4/TCP frames, and the report's verdict.
set -uo pipefail
SUITE=two-guest-relay
# shellcheck source=../two-guest-tap.sh
source "$(dirname "${BASH_SOURCE[0]}")/../two-guest-tap.sh"
DIR=$(mktemp -d)
RELAY_PID=""
cleanup() {
	[ -z "$RELAY_PID" ] || kill "$RELAY_PID" 2>/dev/null
	[ -z "$RELAY_PID" ] || timeout 5 tail --pid="$RELAY_PID" -f /dev/null 2>/dev/null
	rm -rf "$DIR"
}
trap cleanup EXIT

echo "TAP version 13"
base=$((30000 + (RANDOM % 4000) * 2))
"$REPO/orchestrate/link-relay.sh" run --dir "$DIR/link" --port-a "$base" --port-b $((base + 1)) \
	>"$DIR/relay.log" 2>&1 &
RELAY_PID=$!
for _ in $(seq 1 100); do [ -f "$DIR/link/ready" ] && break; sleep 0.1; done
[ -f "$DIR/link/ready" ]
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

# The report's verdict follows the ledger and the queues.
cat >"$DIR/ok.json" <<'EOF'
{"threads": 1, "before": {"threads": [{"index": 0, "pending": {"count": 1, "signals": [{"signal": "SIGRTMIN", "code_name": "SI_QUEUE", "raw": "ab"}]}}], "shared": {"count": 0, "signals": []}},
 "after": {"threads": [{"index": 0, "pending": {"count": 1, "signals": [{"signal": "SIGRTMIN", "code_name": "SI_QUEUE", "raw": "ab"}]}}], "shared": {"count": 0, "signals": []}},
 "migrate": {"timings": {"freeze_ms": 1, "dump_ms": 2, "transfer_ms": 3, "restore_ms": 4, "commit_ms": 1, "downtime_ms": 11}},
 "ledger": {"sent": 5, "lost": 0, "duplicated": 0, "mismatched": 0}}
EOF
python3 "$REPO/orchestrate/report/report.py" "$DIR/ok.json" --html "$DIR/ok.html" >"$DIR/ok.txt" 2>&1
rc=$?
[ "$rc" = 0 ] && grep -q PASS "$DIR/ok.txt" && grep -q '<svg' "$DIR/ok.html" && ! grep -q 'src="http' "$DIR/ok.html"
tap $? "report: a clean move is PASS, the HTML page is self-contained with inline SVG"
jq '.ledger.duplicated = 1' "$DIR/ok.json" >"$DIR/dup.json"
python3 "$REPO/orchestrate/report/report.py" "$DIR/dup.json" >"$DIR/dup.txt" 2>&1
rc=$?
[ "$rc" = 1 ] && grep -q 'duplicated = 1' "$DIR/dup.txt"
tap $? "report: one duplicated signal makes it FAIL (rc=$rc)"
jq '.after.threads[0].pending.signals[0].raw = "ac"' "$DIR/ok.json" >"$DIR/diff.json"
python3 "$REPO/orchestrate/report/report.py" "$DIR/diff.json" >"$DIR/diff.txt" 2>&1
rc=$?
[ "$rc" = 1 ] && grep -q DIFFERENT "$DIR/diff.txt"
tap $? "report: one altered byte in a queue makes it FAIL (rc=$rc)"
tap_done
