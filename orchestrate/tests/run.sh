#!/usr/bin/env bash
# Self-tests of the orchestration scripts that need neither QEMU nor a kernel
# build: the Kconfig checker, the guest test runner (under busybox sh, as in
# the guest) and shell syntax.  TAP 13 on stdout; non-zero exit on failure.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ORCH=$(dirname "$HERE")
SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT
# shellcheck source=orchestrate/lib/tap.sh
. "$ORCH/lib/tap.sh"
# shellcheck source=orchestrate/lib/ports.sh
. "$ORCH/lib/ports.sh"

expect() {	# expect <description> <command...>: the command must succeed
	local what=$1; shift
	"$@" >"$SCRATCH/out" 2>&1
	local rc=$?
	[ "$rc" = 0 ] || sed 's/^/# /' "$SCRATCH/out"
	tap "$rc" "$what"
}

test_shell_syntax() {
	local f
	for f in "$ORCH"/*.sh "$ORCH"/tests/*.sh; do
		expect "bash -n $(basename "$f")" bash -n "$f"
	done
	for f in "$ORCH"/guest/*; do
		expect "busybox sh -n guest/$(basename "$f")" busybox sh -n "$f"
	done
}

test_check_kconfig() {
	local cfg="$SCRATCH/.config" frag="$SCRATCH/frag.config"
	printf 'CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_N=4\nCONFIG_S="x y"\n' >"$cfg"
	printf 'CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_N=4\nCONFIG_S="x y"\n' >"$frag"
	expect "check-kconfig accepts a fragment the .config satisfies" \
		"$ORCH/check-kconfig.sh" "$cfg" "$frag"
	printf 'CONFIG_A=y\nCONFIG_MISSING=y\nCONFIG_B=y\nCONFIG_N=8\n' >"$frag"
	"$ORCH/check-kconfig.sh" "$cfg" "$frag" >"$SCRATCH/out" 2>&1
	local rc=$?
	[ "$rc" != 0 ] && grep -q CONFIG_MISSING "$SCRATCH/out" &&
		grep -q CONFIG_B "$SCRATCH/out" && grep -q CONFIG_N "$SCRATCH/out" &&
		! grep -q 'CONFIG_A=' "$SCRATCH/out"
	tap $? "check-kconfig fails naming every missing or different option (rc=$rc)"
	# nocr.config after guest.config: the later fragment's value is wanted
	local late="$SCRATCH/late.config"
	printf 'CONFIG_B=y\nCONFIG_A=y\n' >"$frag"
	printf '# CONFIG_B is not set\n' >"$late"
	expect "check-kconfig: a later fragment overrides an earlier one" \
		"$ORCH/check-kconfig.sh" "$cfg" "$frag" "$late"
	"$ORCH/check-kconfig.sh" "$cfg" "$late" "$frag" >"$SCRATCH/out" 2>&1
	rc=$?
	[ "$rc" != 0 ] && grep -q 'frag.config: CONFIG_B=y' "$SCRATCH/out"
	tap $? "check-kconfig: ... and the last one is what must hold (rc=$rc)"
}

make_program() {	# make_program <path> <body>
	mkdir -p "$(dirname "$1")"
	printf '#!/bin/sh\n%s\n' "$2" >"$1"
	chmod +x "$1"
}

run_tests() {
	SIGMIG_TESTS_DIR="$SCRATCH/tests" SIGMIG_BENCH_DIR="$SCRATCH/bench" TMPDIR="$SCRATCH" \
		PATH="$SCRATCH/bin:$PATH" busybox sh "$ORCH/guest/run-tests" "$@" >"$SCRATCH/out" 2>&1
}

test_run_tests() {
	local t="$SCRATCH/tests" rc
	mkdir -p "$SCRATCH/bin"
	for applet in timeout setsid kill sleep; do
		ln -sf "$(command -v busybox)" "$SCRATCH/bin/$applet"
	done
	make_program "$t/alpha/01-pass" 'echo "ok 1 - fine"'
	make_program "$t/alpha/02-notok" 'echo "not ok 1 - broken"; exit 1'
	make_program "$t/beta/01-silent-fail" 'exit 3'
	make_program "$t/beta/02-hang" 'sleep 30'
	printf 'not executable\n' >"$t/beta/lib.sh"
	run_tests --timeout 2; rc=$?
	[ "$rc" != 0 ]
	tap $? "run-tests exits non-zero when a program fails (rc=$rc)"
	grep -q '^SIGMIG-RESULT alpha/01-pass rc=0' "$SCRATCH/out"
	tap $? "run-tests reports a passing program with rc=0"
	[ "$(grep -c '^not ok' "$SCRATCH/out")" = 3 ]
	tap $? "run-tests adds a synthetic 'not ok' only for failures without one"
	grep -q '^not ok - beta/01-silent-fail exited with rc=3' "$SCRATCH/out"
	tap $? "run-tests names the silent failure and its exit code"
	grep -q '^SIGMIG-RESULT beta/02-hang rc=[1-9]' "$SCRATCH/out" &&
		grep -q 'killed after 2s timeout' "$SCRATCH/out"
	tap $? "run-tests kills a program at the per-test timeout"
	! grep -q 'lib.sh' "$SCRATCH/out"
	tap $? "run-tests skips non-executable files"
	[ "$(grep '^SIGMIG-RESULT' "$SCRATCH/out" | cut -d' ' -f2 | tr '\n' ' ')" = \
	  "alpha/01-pass alpha/02-notok beta/01-silent-fail beta/02-hang " ]
	tap $? "run-tests runs components and programs in name order"
	run_tests --only alpha --timeout 2
	! grep -q 'beta/' "$SCRATCH/out" && grep -q 'alpha/01-pass' "$SCRATCH/out"
	tap $? "run-tests --only runs one component"
	make_program "$t/gamma/01-pass" 'echo "ok 1 - gamma"'
	run_tests --only alpha,gamma --timeout 2
	[ "$(grep '^SIGMIG-RESULT' "$SCRATCH/out" | cut -d' ' -f2 | cut -d/ -f1 | sort -u | tr '\n' ' ')" = "alpha gamma " ]
	tap $? "run-tests --only a,b runs exactly the listed components"
	run_tests --skip alpha,gamma --timeout 2
	[ "$(grep '^SIGMIG-RESULT' "$SCRATCH/out" | cut -d' ' -f2 | cut -d/ -f1 | sort -u | tr '\n' ' ')" = "beta " ]
	tap $? "run-tests --skip a,b runs every other component"
	test_run_tests_strays
	rm -rf "$t/alpha/02-notok" "$t/beta" "$t/gamma"
	run_tests --timeout 2
	tap $? "run-tests exits 0 when every program passes"
	make_program "$SCRATCH/bench/01-bench" 'echo "ok 1 - bench ran"'
	run_tests --only bench --timeout 2
	grep -q '^SIGMIG-RESULT bench/01-bench rc=0' "$SCRATCH/out"
	tap $? "run-tests --only bench runs the bench programs"
}

# Children that keep the output pipe open must neither hang the runner after
# the program exits nor survive the program's timeout.
test_run_tests_strays() {
	local t="$SCRATCH/tests" start elapsed
	rm -rf "$t/alpha" "$t/beta"
	make_program "$t/gamma/01-leaves-child" '(sleep 40; echo "ok 99 - stray") & echo "ok 1 - parent done"'
	make_program "$t/gamma/02-hang-with-child" 'sleep 40 & echo "ok 1 - started"; sleep 40'
	make_program "$t/gamma/03-after" 'echo "ok 1 - still running tests"'
	start=$SECONDS
	run_tests --timeout 3
	elapsed=$((SECONDS - start))
	[ "$elapsed" -lt 20 ]
	tap $? "run-tests is not held up by children of a test (${elapsed}s)"
	grep -q '^SIGMIG-RESULT gamma/01-leaves-child rc=0' "$SCRATCH/out" &&
		! grep -q 'ok 99 - stray' "$SCRATCH/out"
	tap $? "run-tests kills what a passing program leaves behind"
	grep -q '^not ok - gamma/02-hang-with-child killed after 3s timeout' "$SCRATCH/out" &&
		grep -q '^SIGMIG-RESULT gamma/03-after rc=0' "$SCRATCH/out"
	tap $? "run-tests counts a hung program as failed and goes on"
	[ "$(grep -c '^not ok' "$SCRATCH/out")" = 1 ]
	tap $? "run-tests adds exactly one 'not ok' for a timeout"
}

# Host ports for listeners come from below the ephemeral range, where no
# outgoing connection can take them between the pick and the bind (a pick
# in 30000-45000 collided in CI twice).
test_free_port_base() {
	local low base i rc=0
	read -r low _ </proc/sys/net/ipv4/ip_local_port_range
	for i in $(seq 1 20); do
		base=$(free_port_base 3) || { rc=1; break; }
		if [ "$base" -lt 20000 ] || [ $((base + 2)) -ge "$low" ] ||
			port_busy "$base" || port_busy $((base + 1)) || port_busy $((base + 2)); then
			echo "# pick $i: $base (ephemeral range from $low)"
			rc=1
		fi
	done
	tap "$rc" "free_port_base picks free ports below the ephemeral range ($low)"
}

# The relay's UNIX sockets must not depend on the checkout's depth: sun_path
# holds 108 bytes, and CI checks out into deep paths.
test_relay_deep_path() {
	local dir pid port_a port_b rc=0
	dir="$SCRATCH/$(printf 'deep-checkout-%.0s' 1 2 3 4 5 6 7 8)/run/relay"
	port_a=$(free_port_base 2) || { tap 1 "two free ports for link-relay"; return; }
	port_b=$((port_a + 1))
	"$ORCH/link-relay.sh" run --dir "$dir" --port-a "$port_a" --port-b "$port_b" \
		>"$SCRATCH/relay.out" 2>&1 &
	pid=$!
	for _ in $(seq 100); do
		[ -e "$dir/ready" ] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	[ -e "$dir/ready" ] || { rc=1; sed 's/^/# /' "$SCRATCH/relay.out"; }
	tap "$rc" "link-relay runs with its state directory ${#dir} bytes deep"
	kill "$pid" 2>/dev/null
	timeout 10 tail --pid="$pid" -f /dev/null
	tap $? "link-relay stops on TERM"
	! pgrep -f "$dir/control" >/dev/null && ! ss -Hltn "sport = :$port_a" | grep -q .
	tap $? "link-relay leaves neither the relay nor a listener behind"
}

# A background loop that stop_pids ends must not leave its sleep behind:
# make test counts any process the tests leave as a failure.
test_stoppable_sleep() {
	local lib="$ORCH/lib/common.sh" loop marker=0.$((RANDOM + 1000))7 left
	# shellcheck disable=SC2016 # expanded by the inner bash
	bash -c '. "$1"; while :; do sleep_stoppable "$2"; done' _ "$lib" "$marker" &
	loop=$!
	sleep 0.3
	# shellcheck disable=SC2016
	bash -c '. "$1"; stop_pids -t 5 "$2"' _ "$lib" "$loop"
	left=$(pgrep -fx "sleep $marker" | tr '\n' ' ')
	[ -z "$left" ]
	tap $? "a loop stopped by stop_pids leaves no sleep behind${left:+ (left: $left)}"
	pkill -fx "sleep $marker"
	return 0
}

# A match near the end of a long console log (CRLF lines), read under
# pipefail 50 times: `tr | grep -q` failed about one time in three here,
# grep -q leaving at the match and tr dying of SIGPIPE.
test_log_has() {
	local lib="$ORCH/lib/common.sh" log="$SCRATCH/console.log" misses
	{
		for _ in $(seq 20000); do printf 'SIGMIG-REPLY 1 body %s\r\n' "$RANDOM$RANDOM$RANDOM"; done
		printf 'SIGMIG-EXIT 0\r\n'
		for _ in $(seq 2000); do printf 'ok - openapi: reply %s\r\n' "$RANDOM"; done
	} >"$log"
	# shellcheck disable=SC2016 # expanded by the inner bash
	misses=$(bash -c 'set -uo pipefail; . "$1"; n=0
		for _ in $(seq 50); do log_has "$2" "^SIGMIG-EXIT [0-9]" || n=$((n + 1)); done
		log_has "$2" "^not ok" && n=$((n + 100))
		log_has "$2.missing" . && n=$((n + 1000))
		echo "$n"' _ "$lib" "$log" 2>&1)
	[ "$misses" = 0 ]
	tap $? "log_has finds a line near the end of a long CRLF log every time, and not what is absent (misses: $misses)"
}

# Every shell script of the project, by extension or by its #! line.
shell_scripts() {
	local repo=$1 f
	git -C "$repo" ls-files | while IFS= read -r f; do
		case "$f" in
		*.sh|*.sh.in) echo "$f" ;;
		*) head -n1 "$repo/$f" 2>/dev/null | grep -qE '^#!(/usr/bin/env )?(/bin/)?(ba)?sh\b' && echo "$f" ;;
		esac
	done
}

test_shellcheck() {
	local repo f
	repo=$(dirname "$ORCH")
	if ! command -v shellcheck >/dev/null; then
		tap 1 "shellcheck (make deps installs it) is needed to check the scripts"
		return
	fi
	for f in $(shell_scripts "$repo"); do
		(cd "$repo" && shellcheck -x -P SCRIPTDIR "$f") >"$SCRATCH/out" 2>&1
		local rc=$?
		[ "$rc" = 0 ] || sed 's/^/# /' "$SCRATCH/out" | head -40
		tap "$rc" "shellcheck $f"
	done
}

# The docs' transcript checker (lib/doc_examples.py) on a small document run
# here with a stub curl: it must pass the document as written and report a
# drifted copy (a renamed key, a wrong status, a refused request) by line.
test_doc_examples() {
	local d="$SCRATCH/docex" rc
	mkdir -p "$d/bin" "$d/out" "$d/drift"
	cat >"$d/bin/curl" <<-'EOF'
	#!/bin/sh
	# the stub agent: a problem for PUT, a 415 for a form body, else a workload
	case " $* " in
	*" -X PUT "*) printf 'HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, HEAD\r\n\r\n{"code":"method_not_allowed","status":405}\n' ;;
	*" -d "*) printf '{"code":"unsupported_media_type","status":415}\n'
		case " $* " in *" --fail-with-body "*) exit 22 ;; esac ;;
	*) printf '{"id":"w7","pid":4242,"runtime":{"threads":[{"index":0,"tid":9}]}}\n' ;;
	esac
	EOF
	chmod +x "$d/bin/curl"
	cat >"$d/doc.md" <<-'EOF'
	| status | code | meaning |
	|---|---|---|
	| 405 | `method_not_allowed` | |
	| 415 | `unsupported_media_type` | |

	```sh
	$ curl -s $A/v1/workloads/w1 | jq -c .
	{"id":"w1","pid":14588,"runtime":{"threads":[{"index":0,"tid":14591},{"index":1,"tid":14592}]},...}
	$ curl -s -X PUT -i \
	    $A/v1/workloads
	HTTP/1.1 405 Method Not Allowed
	Allow: GET, HEAD

	{"code":"method_not_allowed","status":405}
	$ curl -s $A/v1/workloads/w1 | jq -r '"\(.id) pid \(.pid)"'
	w1 pid 14588
	```
	EOF
	PATH="$d/bin:$PATH" "$ORCH/lib/doc_examples.py" script "$d/doc.md" "$d/out" >"$d/run.sh" &&
		(cd "$d" && A=http://stub PATH="$d/bin:$PATH" bash run.sh) &&
		"$ORCH/lib/doc_examples.py" check "$d/doc.md" "$d/out" >"$SCRATCH/out" 2>&1
	rc=$?
	[ "$rc" = 0 ] || sed 's/^/# /' "$SCRATCH/out"
	tap "$rc" "doc_examples.py: a document whose transcripts match the replies passes"

	drift() {	# drift <description> <sed expression> <expected message>
		sed "$2" "$d/doc.md" >"$d/drift/doc.md"
		rm -f "$d/drift/"*.out "$d/drift/"*.rc
		"$ORCH/lib/doc_examples.py" script "$d/drift/doc.md" "$d/drift" >"$d/drift/run.sh" &&
			(cd "$d" && A=http://stub PATH="$d/bin:$PATH" bash drift/run.sh)
		"$ORCH/lib/doc_examples.py" check "$d/drift/doc.md" "$d/drift" >"$SCRATCH/out" 2>&1
		rc=$?
		[ "$rc" = 1 ] && grep -q "$3" "$SCRATCH/out"
		local ok=$?
		[ "$ok" = 0 ] || sed 's/^/# /' "$SCRATCH/out"
		tap "$ok" "doc_examples.py reports $1 (rc=$rc)"
	}
	drift "a renamed key, naming the example's line" 's/"tid":14591/"thread_id":14591/' \
		'FAIL doc.md:7: '
	grep -q 'runtime.threads\[0\]' "$SCRATCH/out"
	tap $? "doc_examples.py names the key path that drifted"
	drift "a wrong status" 's/^HTTP\/1.1 405 Method Not Allowed/HTTP\/1.1 404 Not Found/' \
		'status: documented 404, got 405'
	drift "a wrong problem code" 's/"method_not_allowed","status"/"not_found","status"/' \
		"documented 'not_found', got 'method_not_allowed'"
	drift "a documented header the reply lacks" 's/^Allow: GET, HEAD/Location: \/v1\/x/' \
		'header Location: documented, missing'
	drift "a text line that no longer appears" 's/^w1 pid 14588/w1 pid 14588 running/' \
		'not in the output'
	# shellcheck disable=SC2016 # a sed expression, no expansion wanted
	drift "a request the agent refuses (a form body, curl --fail-with-body)" \
		's/^\$ curl -s \$A\/v1\/workloads\/w1 | jq -c ./$ curl -s -d x=1 $A\/v1\/workloads\/w1 | jq -c ./' \
		'exit status 22'
	grep -q 'FAIL doc.md:7:' "$SCRATCH/out"
	tap $? "doc_examples.py names the refused example by its line"
	"$ORCH/lib/doc_examples.py" list "$(dirname "$ORCH")/docs/api.md" >"$SCRATCH/out" 2>&1
	rc=$?
	[ "$rc" = 0 ] && [ "$(grep -c ': curl' "$SCRATCH/out")" -ge 20 ]
	tap $? "doc_examples.py: docs/api.md has its curl transcripts and their JSON parses (rc=$rc)"
}

echo "TAP version 13"
test_shell_syntax
test_check_kconfig
test_free_port_base
test_relay_deep_path
test_stoppable_sleep
test_log_has
test_shellcheck
test_doc_examples
if command -v busybox >/dev/null; then
	test_run_tests
else
	tap 1 "busybox (make deps installs it) is needed to test the guest runner"
fi
tap_done
