#!/bin/bash
# vt-suite: kernel
# test-kpatch-splice.sh: kernel-patches/0001 (backport of 2aa043a55b9a). Boots the kernel built by
# kernel-patches/build.sh unpatched and patched (same tree, same config) with a reproducer: in a
# tracefs instance with buffer_percent=0, one trace_marker (a partial sub-buffer only), then a
# blocking splice() from per_cpu/cpu1/trace_pipe_raw into a pipe. Unpatched: the splice must still
# be running after 5 s (the guest reports its state and whether SIGKILL ended it) - the bug is
# reproduced, detected by a timer, and QEMU is bounded by `timeout`. Patched: it must return 0
# within the 5 s, and the console must be clean (no BUG:/WARNING:).
# Env: VT_KEEP=1 keeps the work dir; VT_KERNEL_CACHE (build.sh's cache). Exit: 0 pass, 1 fail, 77 skip.
echo "test-kpatch-splice: blocking splice of a partial page with buffer_percent=0 hangs the unpatched 6.1 kernel and returns on the patched one"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/../kpatch/kpatch-lib.sh"
VT_LOG_PREFIX=test-kpatch-splice

for t in qemu-system-x86_64 busybox cpio depmod timeout gcc; do
	command -v "$t" >/dev/null || { echo "test-kpatch-splice: SKIP: $t not found"; exit 77; }
done

T0=$(vt_now)
WORK=$(mktemp -d /tmp/vt-test-kpatch-splice.XXXXXX)
KEEP=${VT_KEEP:-0}
cleanup() {
	vt_guest_stop 2>/dev/null
	if [ "$KEEP" = 1 ]; then echo "test-kpatch-splice: kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

kp_setup "$WORK"; rc=$?
[ $rc = 0 ] || exit $rc
fail=0
VT_PORTS=0

# Unpatched: the reproducer must find the splice still running. 30 s bounds QEMU even if the
# stuck CPU keeps the guest from powering off (seen in about one run in two).
VT_TIMEOUT=30
KP_OFF_GRACE=3
kp_boot unpatched "$WORK/unpatched" "kp.mode=splice-block kp.wait=5" ||
	{ echo "test-kpatch-splice: FAIL: QEMU did not start (unpatched)"; exit 1; }
T_UNPATCHED=$KP_T_BOOT
echo "  unpatched guest console:"
kp_console "$WORK/unpatched" | sed 's/^/    /'
if ! grep -aq 'KP: kernel .*-vt mode splice-block' "$WORK/unpatched/console.log"; then
	echo "test-kpatch-splice: FAIL: the unpatched kernel did not run the reproducer"; fail=1
elif grep -aq 'KP: splice-block still in splice()' "$WORK/unpatched/console.log"; then
	how="the guest powered off by itself"
	[ "$KP_QEMU_RC" = 124 ] || [ "$KP_QEMU_RC" = 137 ] && how="the guest could not power off: QEMU stopped by the host"
	echo "test-kpatch-splice: unpatched: bug reproduced, splice() stuck ($how)"
else
	echo "test-kpatch-splice: FAIL: the unpatched kernel did not hang (the reproducer no longer reproduces)"
	fail=1
fi

# Patched: returns, clean console.
VT_TIMEOUT=60
KP_OFF_GRACE=10
kp_boot patched "$WORK/patched" "kp.mode=splice-block kp.wait=5" ||
	{ echo "test-kpatch-splice: FAIL: QEMU did not start (patched)"; exit 1; }
T_PATCHED=$KP_T_BOOT
echo "  patched guest console:"
kp_console "$WORK/patched" | sed 's/^/    /'
if [ "$KP_QEMU_RC" != 0 ]; then
	echo "test-kpatch-splice: FAIL: patched guest: QEMU exited $KP_QEMU_RC"; fail=1
fi
grep -aq 'KP: kernel .*-vt-kpatch mode splice-block' "$WORK/patched/console.log" ||
	{ echo "test-kpatch-splice: FAIL: the patched kernel did not run the reproducer"; fail=1; }
grep -aq 'KP: splice-block returned 0 ' "$WORK/patched/console.log" ||
	{ echo "test-kpatch-splice: FAIL: the patched kernel's splice did not return 0"; fail=1; }
vt_check_console "$WORK/patched/console.log" || fail=1

echo "test-kpatch-splice: timings: kernels ${KP_T_BUILD} s (build.sh, cached when unchanged)," \
	"unpatched boot ${T_UNPATCHED} s, patched boot ${T_PATCHED} s, whole test $(vt_secs "$T0" "$(vt_now)") s"
if [ $fail = 0 ]; then echo "test-kpatch-splice: PASS"; exit 0; fi
KEEP=1
echo "test-kpatch-splice: FAIL"
exit 1
