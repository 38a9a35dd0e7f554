# shellcheck shell=sh
# scenario-kvm-check.sh: run by vt_l1_run inside L1 for test-kvm-check.sh. L2 under KVM with 2
# vCPUs, the ports `setup` prints and an agent that serves one session after another
# (vt.agent_keep=1); once vt-e2e-guest answers,
#     virtio-trace-collect check --chardev-dir PORTS --qemu-pid L2PID --duration CHECK_SECS
# then the same with --json (each runs its own short recording), bounded by CHECK_BOUND
# seconds each; then quit L2 and wait for it to power off. OUT gets check.txt, check.err,
# check.rc, check.json, check-json.err, check-json.rc, l2pid, l2-threads ("TID COMM"),
# kvm-offsets (KVM's debugfs tsc-offset per vCPU), tracefs-instances.after, l2-l2-console.log.
# Env (VT_L1_ENV): CHECK_SECS=2, CHECK_BOUND=120, L2_* (l1-lib.sh). Exit: 1 only when L2 did
# not come up or power off, or check had to be killed.
. /etc/vt/l1-lib.sh
OUT=$1
rc=0
L2_APPEND="${L2_APPEND:-} vt.agent_keep=1"
l1_l2_up l2 || exit 1
l1_kvm_offsets >"$OUT/kvm-offsets"
l1_log "KVM tsc-offsets: $(tr '\n' ' ' <"$OUT/kvm-offsets")"
l1_bounded "${CHECK_BOUND:-120}" check virtio-trace-collect check --chardev-dir "$L2_PORTS" \
    --qemu-pid "$L2_PID" --duration "${CHECK_SECS:-2}" >"$OUT/check.txt" 2>"$OUT/check.err"
echo $? >"$OUT/check.rc"
[ -z "$L1_STOPPED" ] || { l1_log "FAIL: check had to be stopped ($L1_STOPPED)"; rc=1; }
sed 's/^/    check: /' "$OUT/check.txt" "$OUT/check.err"
l1_bounded "${CHECK_BOUND:-120}" check-json virtio-trace-collect check --chardev-dir "$L2_PORTS" \
    --qemu-pid "$L2_PID" --duration "${CHECK_SECS:-2}" --json >"$OUT/check.json" 2>"$OUT/check-json.err"
echo $? >"$OUT/check-json.rc"
[ -z "$L1_STOPPED" ] || { l1_log "FAIL: check --json had to be stopped ($L1_STOPPED)"; rc=1; }
ls /sys/kernel/tracing/instances >"$OUT/tracefs-instances.after"
l1_say quit 60 || rc=1
l1_l2_wait_off "$([ "$rc" = 0 ] && echo 90 || echo 10)" || rc=1
exit $rc
