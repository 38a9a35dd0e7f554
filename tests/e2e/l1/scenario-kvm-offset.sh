# shellcheck shell=sh
# scenario-kvm-offset.sh: run by vt_l1_run inside L1 for test-kvm-offset-change.sh. L2 under
# KVM with 2 vCPUs, the msr module, a reset that restarts it (L2_REBOOT=1) and a second monitor
# (L2_HMP=1: the collector's --qmp holds QMP). Once vt-e2e-guest answers:
#     virtio-trace-collect record --chardev-dir PORTS --name l2 --qemu-pid L2PID --qmp QMP \
#         --sync kvm --sync-check --sync-interval 0.3 --sync-probes 24 \
#         --host-events sched:sched_process_exit,kvm:kvm_msr -e sched -e irq -e timer $REC_ARGS \
#         -o OUT/rec \
#         -- sh /tmp/actions.sh
# where the command, once the guest's whole metadata is in, changes L2's TSC offsets while it
# records, each step between two markers
# "vt-kvm-offset: STEP begin|end" in the collector's own host instance (so in host.dat):
#   wrtsc   vt-e2e-guest writes vCPU 1's IA32_TSC + WRTSC_DELTA (200000000) through
#           /dev/cpu/1/msr (its own markers "vt-e2e: wrtsc cpu1 before|after" in L2's trace);
#   stop    HMP stop, until `info status` says paused; then 1 s;
#   cont    HMP cont, until it says running;
#   reset   (after 400 markers per vCPU, so that the pages holding the changes are sent) HMP
#           system_reset: L2 reboots, its agent's session ends, and with it the recording.
# 3 s of recording before each step. Then L2, rebooted, is quit through HMP. OUT gets rec/,
# record.log, record.rc, actions.log, hmp.log, l2pid, l2-l2-console.log, kvm-offsets.before,
# tracefs-instances.after.
# Env (VT_L1_ENV): REC_ARGS, REC_BOUND=120, WRTSC_DELTA. Exit: 1 only when L2 did not come up,
# the msr module did not load, or record had to be killed.
. /etc/vt/l1-lib.sh
OUT=$1
rc=0
L2_REBOOT=1
L2_HMP=1
L2_APPEND="${L2_APPEND:-} msr.allow_writes=on"
l1_l2_start l2 || exit 1
echo "$L2_PID" >"$OUT/l2pid"
if ! l1_say hello 150; then
    l1_log "L2 did not answer; its console:"
    tail -n 20 "$L2_CONSOLE" | sed 's/^/    /'
    l1_hmp quit
    l1_l2_wait_off 10
    exit 1
fi
l1_say "sh modprobe msr" 30
case "$ANSWER" in "ok rc=0") ;; *) l1_log "modprobe msr in L2: $ANSWER"; l1_hmp quit; l1_l2_wait_off 10; exit 1 ;; esac
l1_kvm_offsets >"$OUT/kvm-offsets.before"

# What runs beside the recording (record's COMMAND). Its steps go to actions.log too.
cat >/tmp/actions.sh <<ACTIONS
. /etc/vt/l1-lib.sh
L2_DIR=$L2_DIR L2_PORTS=$L2_PORTS
inst=\$(ls -d /sys/kernel/tracing/instances/virtio-trace-collect-* | grep -v -- '-tsc-' | head -n 1)
mark() { echo "vt-kvm-offset: \$1" >"\$inst/trace_marker"; l1_log "actions: \$1 (up=\$(l1_up))"; }
# The guest's whole metadata first (its kallsyms hold the control port: no probe burst meanwhile).
n=0
while [ \$n -lt 900 ]; do
    [ "\$(stat -c %s "$OUT/rec/.spool/guest-l2/meta.bin" 2>/dev/null || echo 0)" -ge 1048576 ] && break
    usleep 100000
    n=\$((n + 1))
done
l1_log "actions: the guest's whole metadata in after \$((n / 10)) s"
sleep 3
mark "wrtsc begin"
l1_say "wrtsc 1 ${WRTSC_DELTA:-200000000}" 30
mark "wrtsc end"
echo "wrtsc \$ANSWER"
sleep 3
mark "stop begin"
l1_hmp stop
l1_hmp_status paused 10 || l1_log "actions: L2 did not pause"
mark "stop end"
sleep 1
mark "cont begin"
l1_hmp cont
l1_hmp_status running 10 || l1_log "actions: L2 did not run again"
mark "cont end"
sleep 3
# Pages full of markers on every vCPU: the events since the changes reach the collector before
# the reset takes the guest's last partial pages with it.
l1_say "flood vt-pad 400 0 64" 60
mark "reset begin"
l1_hmp system_reset
mark "reset end"
sleep 10
ACTIONS
# shellcheck disable=SC2086
l1_bounded "${REC_BOUND:-120}" record virtio-trace-collect record --chardev-dir "$L2_PORTS" --name l2 \
    --qemu-pid "$L2_PID" --qmp "$L2_PORTS/qmp.sock" --sync kvm --sync-check --sync-interval 0.3 \
    --sync-probes 24 --host-events sched:sched_process_exit,kvm:kvm_msr -e sched -e irq -e timer ${REC_ARGS:-} \
    -o "$OUT/rec" -- sh /tmp/actions.sh >"$OUT/record.log" 2>&1
echo $? >"$OUT/record.rc"
[ -z "$L1_STOPPED" ] || { l1_log "FAIL: record had to be stopped ($L1_STOPPED)"; rc=1; }
grep -E '^(L1: actions|wrtsc )' "$OUT/record.log" >"$OUT/actions.log"
sed 's/^/    record: /' "$OUT/record.log" | head -n 100
ls /sys/kernel/tracing/instances >"$OUT/tracefs-instances.after"
# L2 reboots after the reset (the recording ended 0.5 s after it): once its second boot reached
# /init, it is done with. (Quit at once, it was 2.5 s into that boot on a loaded machine.)
n=0
while [ $n -lt 900 ]; do
    c=$(grep -c '^VT-INIT: start' "$L2_CONSOLE" 2>/dev/null)
    [ "${c:-0}" -ge 2 ] && break
    usleep 100000
    n=$((n + 1))
done
l1_log "L2 booted again, $((n / 10)) s after the recording ended"
l1_hmp quit
l1_l2_wait_off 30 || rc=1
cp "$L2_DIR/hmp.log" "$OUT/hmp.log" 2>/dev/null
exit $rc
