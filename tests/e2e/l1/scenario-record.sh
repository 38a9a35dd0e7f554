# shellcheck shell=sh
# scenario-record.sh: run by vt_l1_run inside L1 (sh scenario-record.sh OUT). L2 under KVM with
# the ports `virtio-trace-collect setup` prints; once vt-e2e-guest in L2 answers, record it
#     virtio-trace-collect record --chardev-dir PORTS --name l2 --qemu-pid L2PID \
#         -e sched -e irq -e timer [-d REC_SECS] $REC_ARGS -o OUT/rec --quiet
# bounded by REC_BOUND seconds (then its stacks, and SIGTERM: with REC_SECS empty that is how
# the recording ends, and the scenario fails only if record does not exit after it); then quit
# L2 and wait for it to power off. OUT gets rec/, record.log, kvm-offsets.before/.after (KVM's
# debugfs tsc-offset per vCPU, before and after the recording), l2pid, l2-l2-console.log.
# Env (VT_L1_ENV): REC_SECS=5 (empty: no -d, SIGTERM at REC_BOUND), REC_QMP=1 (--qmp with L2's
# QMP socket), REC_ARGS (more record options), REC_BOUND=90, REC_FLOOD="N RATE" (record's
# COMMAND has vt-e2e-guest write N markers per CPU at RATE per second, 0: flat out; with
# REC_SECS empty it ends the recording), L2_* (l1-lib.sh); with L2_NOPORTS=1 the recording
# starts L2_BOOT_WAIT (40) s after L2 and L2 is stopped afterwards (its ports missing: the
# collector's FIFOs lead nowhere).
. /etc/vt/l1-lib.sh
OUT=$1
rc=0
l1_l2_start l2 || exit 1
echo "$L2_PID" >"$OUT/l2pid"
if [ "${L2_NOPORTS:-0}" = 1 ]; then
    # Nothing answers in L2: the collector meets FIFOs with no QEMU behind them.
    l1_log "L2 has no ports: ${L2_BOOT_WAIT:-40} s for its boot"
    sleep "${L2_BOOT_WAIT:-40}"
elif ! l1_say hello 150; then
    l1_log "L2 did not answer; its console:"
    tail -n 20 "$L2_CONSOLE" | sed 's/^/    /'
    l1_stacks "$L2_PID" "L2's QEMU"
    l1_l2_wait_off 1
    exit 1
fi
l1_kvm_offsets >"$OUT/kvm-offsets.before"
l1_log "KVM tsc-offsets: $(tr '\n' ' ' <"$OUT/kvm-offsets.before")"
opts=
[ -z "${REC_SECS-5}" ] || opts="-d ${REC_SECS-5}"
[ "${REC_QMP:-0}" != 1 ] || opts="$opts --qmp $L2_PORTS/qmp.sock"
set --
if [ -n "${REC_FLOOD:-}" ]; then
    # record's COMMAND: vt-e2e-guest writes the markers on every CPU of L2; its answer ends it.
    cat >/tmp/flood.sh <<FLOOD
exec 7<>"$L2_PORTS/vt-test.in" 8<>"$L2_PORTS/vt-test.out"
echo "flood vt-l2 $REC_FLOOD 64" >&7
read -r -t 300 answer <&8
echo "L1: flood $REC_FLOOD -> \${answer:-no answer}"
case "\$answer" in ok*) exit 0 ;; esac
exit 1
FLOOD
    set -- -- sh /tmp/flood.sh
fi
# shellcheck disable=SC2086
l1_bounded "${REC_BOUND:-90}" record virtio-trace-collect record --chardev-dir "$L2_PORTS" --name l2 \
    --qemu-pid "$L2_PID" -e sched -e irq -e timer $opts ${REC_ARGS:-} \
    -o "$OUT/rec" --quiet "$@" >"$OUT/record.log" 2>&1
rc=$?
# Stopped by SIGTERM: fine when that is how it was to end (no -d) and it ended at once.
if [ -n "$L1_STOPPED" ] && { [ -n "${REC_SECS-5}" ] || [ "$L1_STOPPED" != term ]; }; then
    l1_log "FAIL: record had to be stopped ($L1_STOPPED)"
    [ "$rc" != 0 ] || rc=1
fi
sed 's/^/    record: /' "$OUT/record.log" | head -n 300
l1_kvm_offsets >"$OUT/kvm-offsets.after"
l1_log "KVM tsc-offsets after: $(tr '\n' ' ' <"$OUT/kvm-offsets.after")"
if [ "${L2_NOPORTS:-0}" = 1 ]; then
    l1_l2_wait_off 1
else
    l1_say quit 60 || rc=1
    # L2 powers off once its agent has had the collector's BYE.
    l1_l2_wait_off "$([ "$rc" = 0 ] && echo 90 || echo 10)" || rc=1
fi
exit $rc
