#!/bin/bash
# vt-suite: e2e
# test-agent-guest.sh: the static trace-agent in a 2-vCPU TCG guest, started by the guest's
# script as a daemon, driven over virtio-serial socket ports by vt-e2e-host: HELLO, BUFFER_SIZE,
# EVENTS sched:* irq:*, then three START/markers/STOP cycles in one session (N markers per CPU,
# pinned, written by vt-e2e-guest), each drained by the byte counts of STATS; exact marker counts
# per CPU and cycle, zero lost, sched events on every CPU, after BYE the instance is kept with
# no event enabled (--keep-instance), the agent exits 0 on SIGTERM and its exit removes the
# instance, the guest powers off with a clean console.
# Env: VT_BUILDDIR (default <repo>/build), VT_STATIC_AGENT, VT_E2E_MARKERS (default 10000),
# VT_KEEP=1 keeps the work dir, VT_AGENT_KERNEL=VMLINUX boots that kernel (everything built in, no
# modules in the image) and VT_AGENT_KERNEL_RELEASE=SUFFIX checks its release ends so (the
# kernel-patches suite runs this test so). Exit: 0 pass, 1 fail, 77 skip.
echo "test-agent-guest: trace-agent in a TCG guest streams exact per-CPU marker counts over 3 start/stop cycles with nothing lost, then exits cleanly"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
VT_LOG_PREFIX=test-agent-guest

for t in qemu-system-x86_64 busybox cpio depmod timeout strip; do
    command -v "$t" >/dev/null || { echo "test-agent-guest: SKIP: $t not found"; exit 77; }
done

T0=$(vt_now)
WORK=$(mktemp -d /tmp/vt-test-agent-guest.XXXXXX)
KEEP=${VT_KEEP:-0}
cleanup() {
    vt_guest_stop 2>/dev/null
    if [ "$KEEP" = 1 ]; then echo "test-agent-guest: kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

vt_agent_build; rc=$?
[ $rc = 0 ] || exit $rc

# The guest half: the agent as a daemon, the workload server until the host says quit, then
# SIGTERM the agent and check it put tracefs back.
cat >"$WORK/agent-run" <<'EOF'
#!/bin/sh
read -r rel </proc/sys/kernel/osrelease
echo "E2E: kernel $rel"
read -r on_before </sys/kernel/tracing/tracing_on
read -r clock_before </sys/kernel/tracing/trace_clock
trace-agent --quiet &
agent=$!
vt-e2e-guest --agent-pid "$agent"
rc=$?
kill "$agent"
wait "$agent"
arc=$?
echo "E2E: vt-e2e-guest rc=$rc, trace-agent exit status $arc after SIGTERM"
read -r on_after </sys/kernel/tracing/tracing_on
read -r clock_after </sys/kernel/tracing/trace_clock
if [ -d /sys/kernel/tracing/instances/virtio-trace ]; then
    echo "E2E: FAIL the instance virtio-trace is still there"; rc=1
fi
if [ "$on_before|$clock_before" != "$on_after|$clock_after" ]; then
    echo "E2E: FAIL top level changed: $on_before|$clock_before -> $on_after|$clock_after"; rc=1
fi
[ "$arc" = 0 ] || rc=1
exit $rc
EOF
t=$(vt_now)
vt_agent_image "$WORK" "$WORK/agent-run" agent-guest; rc=$?
[ $rc = 0 ] || exit $rc
T_IMAGE=$(vt_secs "$t" "$(vt_now)")

t=$(vt_now)
VT_TIMEOUT=${VT_TIMEOUT:-180}
vt_agent_boot "$WORK/run" || { echo "test-agent-guest: FAIL: QEMU did not start"; exit 1; }
timeout -k 5 150 "$VT_E2E_HOST" e2e "$WORK/run/ports" "${VT_E2E_MARKERS:-10000}" 3
hrc=$?
T_HOST=$(vt_secs "$t" "$(vt_now)")
fail=0
if [ $hrc != 0 ]; then
    echo "test-agent-guest: FAIL: vt-e2e-host exited $hrc"
    vt_guest_stop
    fail=1
elif ! vt_agent_wait_off 60; then
    fail=1
fi
T_RUN=$(vt_secs "$t" "$(vt_now)")
echo "  guest console:"
tr -d '\r' <"$WORK/run/console.log" | grep -a -E '^(VT-INIT|E2E|trace-agent):' | sed 's/^/    /'
vt_check_console "$WORK/run/console.log" || fail=1
grep -aq 'E2E: vt-e2e-guest rc=0, trace-agent exit status 0' "$WORK/run/console.log" ||
    { echo "test-agent-guest: FAIL: the guest side did not end cleanly"; fail=1; }
if [ -n "${VT_AGENT_KERNEL_RELEASE:-}" ]; then
    tr -d '\r' <"$WORK/run/console.log" | grep -aqE "^E2E: kernel .*$VT_AGENT_KERNEL_RELEASE\$" ||
        { echo "test-agent-guest: FAIL: the guest did not run a kernel ending in $VT_AGENT_KERNEL_RELEASE"; fail=1; }
fi
echo "test-agent-guest: timings: image ${T_IMAGE} s, boot to host done ${T_HOST} s," \
     "boot to power-off ${T_RUN} s, whole test $(vt_secs "$T0" "$(vt_now)") s"
if [ $fail = 0 ]; then echo "test-agent-guest: PASS"; exit 0; fi
KEEP=1
echo "test-agent-guest: FAIL"
exit 1
