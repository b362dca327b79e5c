# sigmig top-level entry points.  Logs go to build/logs/.
#   make              install the Debian packages, build the guest kernels
#                     (patched, stock, patched without checkpoint/restore),
#                     the initramfs and every host program; runs no test
#   make deps         install the Debian packages (skipped when all present)
#   make kernel       patched linux-source-6.1 bzImage (cached, incremental)
#   make initramfs    busybox + every component's install-guest output
#   make check        host-side checks (TAP): every component's make check,
#                     the patch series, shellcheck
#   make test         everything, ends with "N passed, N failed"
#   make bench        boot a guest running /sigmig/bench/*
#   make criu-bench   CRIU alone vs CRIU + sigmig, one guest (docs/criu-bench.md)
#   make migrate-demo, make test-debug
# SIGMIG_CACHE holds the kernel trees and builds; its default is set in one
# place, orchestrate/lib/kernel-tree.sh (orchestrate/build-kernel.sh --help).

SHELL := /bin/bash
ORCH := orchestrate
FLAVOR ?= default

DEB_PACKAGES := linux-source-6.1 qemu-system-x86 busybox-static \
	libmicrohttpd-dev libjansson-dev libcurl4-openssl-dev openssl gcc-multilib \
	socat flex bison \
	libelf-dev libssl-dev bc cpio xz-utils curl jq clang \
	libclang-rt-14-dev python3 python3-jsonschema python3-yaml shellcheck \
	make gcc git perl util-linux binutils iproute2 criu

COMPONENTS := workloads agent kernel kernel/stress

.PHONY: all deps kernel kernel-stock kernel-nocr initramfs programs check test bench \
	criu-bench migrate-demo test-debug clean

all: deps
	$(MAKE) --no-print-directory kernel kernel-stock kernel-nocr programs initramfs

deps:
	@missing=$$(for p in $(DEB_PACKAGES); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; \
	done); \
	if [ -z "$$missing" ]; then echo "deps: all Debian packages present"; exit 0; fi; \
	echo "deps: installing:" $$missing; \
	export DEBIAN_FRONTEND=noninteractive; \
	timeout 900 apt-get update -q && timeout 3600 apt-get install -y -q $$missing

kernel:
	@mkdir -p build/logs
	$(ORCH)/build-kernel.sh --flavor $(FLAVOR) 2>&1 | tee build/logs/kernel-$(FLAVOR).log; exit $${PIPESTATUS[0]}

kernel-stock:
	@$(MAKE) --no-print-directory kernel FLAVOR=stock

kernel-nocr:
	@$(MAKE) --no-print-directory kernel FLAVOR=nocr

programs:
	@for c in $(COMPONENTS); do $(MAKE) --no-print-directory -C $$c all || exit; done

initramfs:
	@mkdir -p build/logs
	$(ORCH)/build-initramfs.sh 2>&1 | tee build/logs/initramfs.log; exit $${PIPESTATUS[0]}

check: deps
	@mkdir -p build/logs
	$(ORCH)/host-check.sh 2>&1 | tee build/logs/host-check.log; exit $${PIPESTATUS[0]}

test:
	@$(ORCH)/test-all.sh --kernel-flavor $(FLAVOR)

bench: deps
	$(ORCH)/guest-test.sh --only bench --timeout 5400 --test-timeout 5000

criu-bench: deps
	$(ORCH)/guest-test.sh --only bench:criu --timeout 3600 --test-timeout 3000

migrate-demo test-debug:
	@if [ -f $(ORCH)/$@.sh ]; then exec bash $(ORCH)/$@.sh $(ARGS); \
	else echo "make $@: not implemented yet"; exit 1; fi

clean:
	@for c in $(COMPONENTS); do $(MAKE) --no-print-directory -C $$c clean || exit; done
	rm -rf build
