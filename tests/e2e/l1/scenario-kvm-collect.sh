# shellcheck shell=sh
# scenario-kvm-collect.sh: run by vt_l1_run inside L1 for test-kvm-collect.sh. L2 under KVM
# with 2 vCPUs and the ports `virtio-trace-collect setup` prints; once vt-e2e-guest answers,
#     virtio-trace-collect record --chardev-dir PORTS --name l2 --qemu-pid L2PID --sync kvm \
#         --sync-check --sync-interval 0.3 --kvm-exits -e sched -e irq -e timer $REC_ARGS \
#         -o OUT/rec -- sh /tmp/wait.sh
# (the command ends the recording REC_SECS after the guest's whole metadata came), bounded by
# REC_BOUND seconds; then quit L2 and wait for it to power off. OUT gets rec/,
# record.log, record.rc (record's exit status: the outer test judges it), kvm-offsets.before and
# .after (KVM's debugfs tsc-offset per vCPU), l2-threads (L2's QEMU threads: "TID COMM"),
# l2pid, l2-l2-console.log, tracefs-instances.after (what was left in L1's tracefs).
# Env (VT_L1_ENV): REC_SECS=8, REC_ARGS (more record options, e.g. "--sync probe" to take the
# exact method away), REC_BOUND=150, L2_* (l1-lib.sh). Exit: 1 only when L2 did not come up or
# power off, or record had to be killed.
. /etc/vt/l1-lib.sh
OUT=$1
rc=0
l1_l2_up l2 || exit 1
l1_kvm_offsets >"$OUT/kvm-offsets.before"
l1_log "KVM tsc-offsets: $(tr '\n' ' ' <"$OUT/kvm-offsets.before")"
# record's command: the recording goes on REC_SECS once the guest's whole metadata is in (its
# kallsyms, 4 MB through nested TCG, hold the control port for 3 to 10 s, no probe burst between).
cat >/tmp/wait.sh <<WAIT
n=0
while [ \$n -lt 900 ]; do
    [ "\$(stat -c %s "$OUT/rec/.spool/guest-l2/meta.bin" 2>/dev/null || echo 0)" -ge 1048576 ] && break
    usleep 100000
    n=\$((n + 1))
done
echo "L1: the guest's whole metadata in after \$((n / 10)) s"
sleep ${REC_SECS:-8}
WAIT
# shellcheck disable=SC2086
l1_bounded "${REC_BOUND:-150}" record virtio-trace-collect record --chardev-dir "$L2_PORTS" --name l2 \
    --qemu-pid "$L2_PID" --sync kvm --sync-check --sync-interval 0.3 --kvm-exits \
    -e sched -e irq -e timer ${REC_ARGS:-} -o "$OUT/rec" -- sh /tmp/wait.sh >"$OUT/record.log" 2>&1
echo $? >"$OUT/record.rc"
[ -z "$L1_STOPPED" ] || { l1_log "FAIL: record had to be stopped ($L1_STOPPED)"; rc=1; }
sed 's/^/    record: /' "$OUT/record.log" | head -n 100
l1_kvm_offsets >"$OUT/kvm-offsets.after"
l1_log "KVM tsc-offsets after: $(tr '\n' ' ' <"$OUT/kvm-offsets.after")"
ls /sys/kernel/tracing/instances >"$OUT/tracefs-instances.after"
l1_say quit 60 || rc=1
# L2 powers off once its agent has had the collector's BYE.
l1_l2_wait_off "$([ "$rc" = 0 ] && echo 90 || echo 10)" || rc=1
exit $rc
