#!/bin/bash
# vt-suite: kernel
# test-kpatch-tcgkeep.sh: the e2e guests' keeping instances (VT_TCG_KEEP, guest/init vt.keep)
# leave no kernel text to patch in the sessions under test. Boots the kernel-patch test kernel
# (tinyconfig: no jump labels, so a tracepoint's static call is all that enabling an event
# patches) with the e2e guests' keeping, and runs tests/bench/bench-tcg-patch.sh's loop there:
# 300 times an instance is made, sched, irq and timer enabled in it, 0.02 s waited, disabled,
# removed, while both vCPUs write markers flat out. All 300 cycles must end, and the console
# must show neither an oops nor a stall. The same loop over one keeping instance (the guests'
# scheme until 2026-11-26, every cycle patching the static calls twice) oopsed on a stale int3
# in 3 of 3 runs, after 79, 8 and 1 cycles (bench-tcg-patch, mode one); that QEMU race is what
# this guards against. TCG only: under KVM the CPU runs the patched text itself.
# Env: VT_KEEP=1. Exit: 0 pass, 1 fail, 77 skip.
echo "test-kpatch-tcgkeep: with the e2e guests' keeping instances, 300 enable/disable cycles patch nothing that a TCG vCPU trips on"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/../kpatch/kpatch-lib.sh"
VT_LOG_PREFIX=test-kpatch-tcgkeep

for t in qemu-system-x86_64 busybox cpio depmod timeout gcc; do
	command -v "$t" >/dev/null || { echo "test-kpatch-tcgkeep: SKIP: $t not found"; exit 77; }
done
WORK=$(mktemp -d /tmp/vt-test-kpatch-tcgkeep.XXXXXX)
KEEP=${VT_KEEP:-0}
cleanup() { if [ "$KEEP" = 1 ]; then echo "test-kpatch-tcgkeep: kept $WORK"; else rm -rf "$WORK"; fi; }
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

kp_setup "$WORK"; rc=$?
[ $rc = 0 ] || exit $rc
CYCLES=300
VT_KEEP=$KEEP VT_IMAGE=$WORK/image-unpatched VT_TCG_MODES=keep VT_TCG_SLEEP=0.02 \
	"$VT_REPO/tests/bench/bench-tcg-patch.sh" 1 $CYCLES >"$WORK/bench.log" 2>&1
rc=$?
sed 's/^/  /' "$WORK/bench.log"
fail=0
bad() { echo "test-kpatch-tcgkeep: FAIL: $*"; fail=1; }
[ $rc = 0 ] || bad "bench-tcg-patch.sh exited $rc"
grep -q "^bench-tcg-patch: keep run 1: $CYCLES of $CYCLES cycles, done," "$WORK/bench.log" ||
	bad "the loop did not finish its $CYCLES cycles"
grep -q '^bench-tcg-patch: keep run 1: the guest said:' "$WORK/bench.log" &&
	bad "the guest's console has an oops or a stall"
grep -q '^keep  *1  *0  '"$CYCLES"'$' "$WORK/bench.log" || bad "the summary row is not 'keep 1 0 $CYCLES'"
grep -q '^bench-tcg-patch: keep run 1: VT-INIT: keep sched irq timer (2 instances, 1 CPU online)$' "$WORK/bench.log" ||
	bad "the guest's /init did not keep sched, irq and timer in two instances with one CPU online"
if [ $fail = 0 ]; then echo "test-kpatch-tcgkeep: PASS"; exit 0; fi
KEEP=1
echo "test-kpatch-tcgkeep: FAIL"
exit 1
