# shellcheck shell=sh
# scenario-kvm-daemon-panic.sh: run by vt_l1_run inside L1 for test-kvm-daemon-panic.sh. L2
# under KVM with 2 vCPUs, the ports `setup` prints, an ISA pvpanic device (-device pvpanic,
# driven by L2's pvpanic-mmio module, loaded here through vt-e2e-guest), a QMP socket on its
# command line and an agent that serves one child after another (vt.agent_keep=1). No libvirt:
# `virtio-trace-collect daemon` (libvirt = no, domains = l2, mode stream) finds L2's QEMU as
# `record --all` does and its child follows QEMU's QMP. Once the child traces (waiton), L2
# writes PANIC_N markers "panic-before cpuK I" per CPU, then PANIC_FILL filler markers (so that
# the agent's pages with them cross the port: a partial page dies with the guest), then panics
# (echo c >/proc/sysrq-trigger); QEMU says GUEST_PANICKED (action poweroff) and quits, and the
# daemon seals the child's recording as a panic-qmp snapshot.
# OUT gets state/ (the daemon's state directory: snapshots/NAME-...-panic-qmp/), daemon.conf,
# daemon.log, daemon.rc (its exit status after SIGTERM), status.txt (--status after the seal),
# times.txt ("crash S" and "sealed S": seconds from the sysrq write to the daemon's log lines,
# or "never"), child.txt (the child's pid before the markers and before the panic), l2pid,
# l2-threads, kvm-offsets.before, tracefs-instances.after, l2-l2-console.log.
# Env (VT_L1_ENV): PANIC_N=200, PANIC_FILL=3000, PANIC_HOST_EVENTS (the daemon's host-events),
# PANIC_BEFORE=120, PANIC_AFTER=3, L2_* (l1-lib.sh). Exit: 1 only when L2 did not come up or its
# pvpanic driver did not load, or the daemon did not end on SIGTERM.
. /etc/vt/l1-lib.sh
OUT=$1
rc=0
L2_APPEND="${L2_APPEND:-} vt.agent_keep=1"
L2_QEMU_EXTRA="${L2_QEMU_EXTRA:-} -device pvpanic -qmp unix:/run/vt/l2/qmp.sock,server=on,wait=off"
l1_l2_up l2 || exit 1
l1_kvm_offsets >"$OUT/kvm-offsets.before"
# Debian's pvpanic driver is a module; the ISA device is ACPI's QEMU0001, pvpanic-mmio's.
l1_say "sh modprobe pvpanic-mmio && ls /sys/bus/platform/drivers/pvpanic-mmio | grep -q QEMU0001" 60
if [ "$ANSWER" != "ok rc=0" ]; then
    l1_log "FAIL: L2 has no pvpanic device driven by pvpanic-mmio ($ANSWER)"
    l1_say quit 30
    l1_l2_wait_off 60
    exit 1
fi

S=$OUT/state
cat >"$OUT/daemon.conf" <<CONF
domains = l2
libvirt = no
mode = stream
window = 600
events = sched:sched_switch
host-events = ${PANIC_HOST_EVENTS:-kvm:kvm_exit,kvm:kvm_pio,sched:sched_switch}
state-dir = $S
min-free = 0
before = ${PANIC_BEFORE:-120}
after = ${PANIC_AFTER:-3}
CONF
virtio-trace-collect daemon --config "$OUT/daemon.conf" >"$OUT/daemon.log" 2>&1 &
dpid=$!
l1_log "daemon $dpid started at up=$(l1_up)"
# child: the pid of l2's child as --status says it
child() {
    virtio-trace-collect daemon --status --state-dir "$S" 2>/dev/null | awk '$1 == "l2" { print $2, $3 }'
}
# The child records once the agent's instance traces.
l1_say "waiton 150" 160
case "$ANSWER" in ok*) ;; *) l1_log "FAIL: the daemon's child did not start L2's tracing"; rc=1 ;; esac
sleep 1
c0=$(child)
l1_log "l2's child: $c0"
echo "markers $c0" >"$OUT/child.txt"
l1_say "flood panic-before ${PANIC_N:-200} 0 64" 120
case "$ANSWER" in ok*) ;; *) l1_log "FAIL: flood: $ANSWER"; rc=1 ;; esac
l1_say "flood panic-fill ${PANIC_FILL:-3000} 0 64" 120
case "$ANSWER" in ok*) ;; *) l1_log "FAIL: filler flood: $ANSWER"; rc=1 ;; esac
sleep 2
c1=$(child)
echo "panic $c1" >>"$OUT/child.txt"
virtio-trace-collect daemon --status --state-dir "$S" >"$OUT/status-before.txt" 2>&1
# The panic: no answer comes.
t0=$(l1_up)
l1_say "sh echo c >/proc/sysrq-trigger" 3
# since LINE SECS: seconds from the sysrq write until the daemon's log has LINE, or "never"
since() {
    _n=0
    while [ $_n -lt $(($2 * 10)) ]; do
        grep -q "$1" "$OUT/daemon.log" && { awk -v a="$t0" -v b="$(l1_up)" 'BEGIN { printf "%.1f\n", b - a }'; return 0; }
        usleep 100000
        _n=$((_n + 1))
    done
    echo never
}
echo "crash $(since "l2: the guest crashed (QMP GUEST_PANICKED" 120)" >"$OUT/times.txt"
echo "sealed $(since "l2: snapshot .*-panic-qmp (panic-qmp)\|l2: the recording could not be sealed" 180)" >>"$OUT/times.txt"
l1_log "after the panic: $(tr '\n' ' ' <"$OUT/times.txt")"
virtio-trace-collect daemon --status --state-dir "$S" >"$OUT/status.txt" 2>&1
sed 's/^/    status: /' "$OUT/status.txt"
l1_l2_wait_off 30 || l1_log "L2's QEMU did not end by itself after the panic"
kill -TERM "$dpid"
n=0
while kill -0 "$dpid" 2>/dev/null && [ $n -lt 300 ]; do usleep 100000; n=$((n + 1)); done
if kill -0 "$dpid" 2>/dev/null; then
    l1_stacks "$dpid" "the daemon still runs 30 s after SIGTERM"
    kill -KILL "$dpid"
    rc=1
fi
wait "$dpid"
echo $? >"$OUT/daemon.rc"
sed 's/^/    daemon: /' "$OUT/daemon.log" | tail -n 60
ls /sys/kernel/tracing/instances >"$OUT/tracefs-instances.after"
exit $rc
