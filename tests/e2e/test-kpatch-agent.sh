#!/bin/bash
# vt-suite: kernel
# test-kpatch-agent.sh: the project's transport on the patched kernel: tests/e2e/test-agent-guest.sh
# (HELLO, BUFFER_SIZE, EVENTS, three START/markers/STOP cycles with exact per-CPU marker counts,
# zero lost, BYE, the agent exits 0 on SIGTERM, tracefs put back, clean console) booting the
# kernel-patches kernel (both patches, so virtio_console steals the ring-buffer pages) instead
# of Debian's. Env: VT_KPATCH_KERNEL=patched|unpatched (default patched), and test-agent-guest's.
# Exit: 0 pass, 1 fail, 77 skip.
echo "test-kpatch-agent: trace-agent on the patched kernel streams exact per-CPU marker counts over 3 cycles with nothing lost"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/../kpatch/kpatch-lib.sh"
VT_LOG_PREFIX=test-kpatch-agent
KERNEL=${VT_KPATCH_KERNEL:-patched}
command -v gcc >/dev/null || { echo "test-kpatch-agent: SKIP: gcc not found"; exit 77; }

WORK=$(mktemp -d /tmp/vt-test-kpatch-agent.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
kp_setup "$WORK"; rc=$?
[ $rc = 0 ] || exit $rc
suffix=-vt
[ "$KERNEL" = patched ] && suffix=-vt-kpatch
echo "test-kpatch-agent: kernels ${KP_T_BUILD} s (build.sh, cached when unchanged); running test-agent-guest.sh on $KERNEL"
VT_AGENT_KERNEL=$KP_OUT/$KERNEL/vmlinux VT_AGENT_KERNEL_RELEASE=$suffix "$HERE/test-agent-guest.sh"
