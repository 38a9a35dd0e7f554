#!/bin/bash
# vt-suite: e2e
# test-collect-hotplug.sh: a running plain-QEMU guest traced without a reboot. A 2-vCPU TCG guest
# boots with no trace port at all: one virtio-serial controller carrying only the test port
# "vt-test" (vt-e2e-guest), a QMP socket, and no agent running. Its /init plays udev and
# systemd for the trace-agent package (guest/init, vt.hotplug=): a netlink listener starts
# /etc/vt/agent-hotplug (trace-agent, as trace-agent.service does) when the port agent-ctl-path
# appears, and stops it when the port goes. The host starts `record --chardev-dir DIR --wait=90
# ... -- FLOOD` first (nothing there yet: it waits), then `setup --qmp SOCKET --hotplug --dir
# DIR` plugs the ports into the running guest. Checks: before, the guest has no
# /dev/virtio-ports/agent-ctl-path and record says it waits; setup prints "hot-plugged 3 ports"
# on vser0.0; the console shows the listener starting the agent after the hot-plug, and the
# agent's "ready" line; record exits 0 with exactly N markers per CPU, each on its own CPU, and
# report = manifest = guest stats; a second --hotplug changes nothing; `setup --qmp --remove`
# unplugs them, the console shows the agent stopped with exit status 0, the FIFOs are gone and a
# second --remove finds nothing; the guest was never rebooted (one "VT-INIT: start") and powers
# off cleanly. Prints the hot-plug's time and how long after it the agent answered.
# Env: VT_BUILDDIR (default <repo>/build), VT_STATIC_AGENT, VT_E2E_MARKERS (default 1000),
# VT_KEEP=1 keeps the work dir. Exit: 0 pass, 1 fail, 77 skip.
echo "test-collect-hotplug: setup --qmp --hotplug gives a running QEMU guest its ports, its agent starts by itself, record --wait records it exactly, --remove unplugs, no reboot"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
. "$HERE/scenario-lib.sh"
VT_LOG_PREFIX=test-collect-hotplug
ME=test-collect-hotplug
N=${VT_E2E_MARKERS:-1000}

for t in qemu-system-x86_64 busybox cpio depmod timeout strip trace-cmd jq; do
    command -v "$t" >/dev/null || { echo "$ME: SKIP: $t not found"; exit 77; }
done
T0=$(vt_now)
WORK=$(mktemp -d "/tmp/vt-$ME.XXXXXX")
KEEP=${VT_KEEP:-0}
trap scn_cleanup EXIT
trap 'exit 1' INT TERM HUP
vt_collect_build; rc=$?
[ $rc = 0 ] || exit $rc

# The image: with vt.hotplug= no agent at boot; /etc/vt/agent-hotplug is what the listener starts.
t=$(vt_now)
vt_collect_image "$WORK" collect-guest; rc=$?
[ $rc = 0 ] || exit $rc
T_IMAGE=$(vt_secs "$t" "$(vt_now)")
RUN=$WORK/run PORTS=$WORK/run/ports OUT=$WORK/out TP=$WORK/run/trace
mkdir -p "$PORTS"
mkfifo "$PORTS/vt-test.in" "$PORTS/vt-test.out"

# Boot: one controller, the test port only, no trace port, no agent.
VT_RUNDIR=$RUN VT_SMP=2 VT_PORTS=0 VT_GUEST_RUN=/etc/vt/agent-run VT_TIMEOUT=240
VT_APPEND="vt.ports=1 vt.hotplug=/etc/vt/agent-hotplug"
VT_QEMU_EXTRA=(-device virtio-serial-pci,id=vser0,max_ports=31
               -chardev "pipe,id=vttest,path=$PORTS/vt-test"
               -device virtserialport,bus=vser0.0,nr=1,chardev=vttest,name=vt-test)
t=$(vt_now)
vt_guest_start || { echo "$ME: FAIL: QEMU did not start"; exit 1; }
up=1
vt_test_say "$PORTS" hello 60 || up=0
if [ $up = 0 ] && vt_guest_died; then
    vt_guest_boot_again "$ME" "before any of the test's commands" || { echo "$ME: FAIL: QEMU did not start"; exit 1; }
    up=1
    vt_test_say "$PORTS" hello 60 || up=0
fi
[ $up = 1 ] || { tr -d '\r' <"$RUN/console.log" | tail -20; echo "$ME: FAIL: vt-e2e-guest did not answer hello in 60 s"; exit 1; }
T_BOOT=$(vt_secs "$t" "$(vt_now)")
echo "$ME: guest says: $ANSWER (boot ${T_BOOT} s)"
grep -aq 'VT-INIT: hotplug listener' "$RUN/console.log" || bad "the guest's /init started no uevent listener"
vt_test_say "$PORTS" "sh test -e /dev/virtio-ports/agent-ctl-path && echo E2E: before: control port || echo E2E: before: no control port" 30 ||
    bad "vt-e2e-guest did not run the check"

# record first: nothing to open yet, it waits (and says so).
scn_script "$WORK/flood" "flood vt-e2e $N 0 64"
t=$(vt_now)
# Its lines stamped with seconds since it started.
timeout -k 5 200 "$COLLECT" record --chardev-dir "$TP" --name e2e --wait=90 -e sched -e irq \
    -o "$OUT" -- "$WORK/flood" 2>&1 |
    while IFS= read -r l; do echo "$(vt_secs "$t" "$(vt_now)") $l"; done >"$WORK/record.log" &
SCN_COLLECT_PID=$!
for ((i = 0; i < 100; i++)); do
    grep -q 'waiting for its trace ports to appear' "$WORK/record.log" && break
    sleep 0.1
done
grep -q 'guest e2e: waiting for its trace ports to appear' "$WORK/record.log" ||
    bad "record --wait did not say it waits for the ports: $(head -3 "$WORK/record.log")"

# The hot-plug.
th=$(vt_now)
T_PLUG_AT=$(vt_secs "$t" "$th")
"$COLLECT" setup --qmp "$RUN/qmp.sock" --hotplug --name e2e --dir "$TP" >"$WORK/hotplug.log" 2>&1
hrc=$?
T_PLUG=$(vt_secs "$th" "$(vt_now)")
sed "s/^/$ME: setup: /" "$WORK/hotplug.log"
[ $hrc = 0 ] || bad "setup --hotplug exited $hrc"
grep -q 'hot-plugged 3 ports (trace-path-cpu0..1, agent-ctl-path) on virtio-serial bus vser0.0, ports 2..4' "$WORK/hotplug.log" ||
    bad "setup --hotplug did not plug 3 ports on vser0.0 ports 2..4"
for p in trace-path-cpu0 trace-path-cpu1 agent-ctl-path; do
    [ -p "$TP/$p.in" ] && [ -p "$TP/$p.out" ] || bad "no FIFO pair $TP/$p"
done

wait "$SCN_COLLECT_PID"
CRC=$?
SCN_COLLECT_PID=
T_REC=$(vt_secs "$t" "$(vt_now)")
echo "$ME: record exited $CRC after ${T_REC} s; flood: $(cat "$WORK/flood.answers" 2>/dev/null)"
[ $CRC = 0 ] || { sed 's/^/    | /' "$WORK/record.log"; bad "record exited $CRC, want 0"; }
T_ANSWER=$(awk '/guest e2e: trace-agent .*CPUs/ { print $1; exit }' "$WORK/record.log")
[ -n "$T_ANSWER" ] || bad "record's log has no answer from the hot-plugged agent"
grep -E 'waiting for|trace-agent .*CPUs|recording$|wrote ' "$WORK/record.log" | sed "s/^/$ME: record: /"

# A second hot-plug changes nothing.
"$COLLECT" setup --qmp "$RUN/qmp.sock" --hotplug --name e2e --dir "$TP" >"$WORK/hotplug2.log" 2>&1 ||
    bad "the second setup --hotplug exited $?"
grep -q 'nothing changed' "$WORK/hotplug2.log" || bad "the second --hotplug did not say 'nothing changed': $(cat "$WORK/hotplug2.log")"

# Unplug: the agent stops with its port.
"$COLLECT" setup --qmp "$RUN/qmp.sock" --remove --dir "$TP" >"$WORK/remove.log" 2>&1 || bad "setup --remove exited $?"
sed "s/^/$ME: setup: /" "$WORK/remove.log"
grep -q 'unplugged 3 ports' "$WORK/remove.log" || bad "setup --remove did not unplug 3 ports"
[ ! -e "$TP" ] || bad "setup --remove left $TP: $(ls "$TP" | tr '\n' ' ')"
vt_wait_console 'E2E: trace-agent exit status' 30 || bad "the agent did not stop when its port was unplugged"
"$COLLECT" setup --qmp "$RUN/qmp.sock" --remove --dir "$TP" >"$WORK/remove2.log" 2>&1 || bad "the second --remove exited $?"
grep -q 'nothing to remove' "$WORK/remove2.log" || bad "the second --remove: $(cat "$WORK/remove2.log")"

vt_test_say "$PORTS" quit 30 || bad "vt-e2e-guest did not answer quit"
vt_agent_wait_off 60 || fail=1
T_RUN=$(vt_secs "$T0" "$(vt_now)")
echo "  guest console:"
tr -d '\r' <"$RUN/console.log" | grep -a -E '^(VT-INIT|E2E|trace-agent):' | sed 's/^/    /'
vt_check_console "$RUN/console.log" || fail=1
C=$(tr -d '\r' <"$RUN/console.log")
[ "$(grep -ac '^VT-INIT: start' <<<"$C")" = 1 ] || bad "the guest booted more than once"
grep -aq '^E2E: before: no control port' <<<"$C" || bad "the guest had a control port before the hot-plug"
# In this order: the listener starts the agent, the agent is ready, the port goes, the agent stops cleanly.
order=$(grep -anE '^VT-INIT: hotplug agent-ctl-path appeared: starting /etc/vt/agent-hotplug|^trace-agent: ready|^VT-INIT: hotplug agent-ctl-path removed|^E2E: trace-agent exit status 0' <<<"$C" |
        sed -E 's/^[0-9]+:(VT-INIT: hotplug agent-ctl-path (appeared|removed)|trace-agent: ready|E2E: trace-agent exit status 0).*/\1/' | paste -sd'|')
echo "$ME: console order: $order"
[ "$order" = "VT-INIT: hotplug agent-ctl-path appeared|trace-agent: ready|VT-INIT: hotplug agent-ctl-path removed|E2E: trace-agent exit status 0" ] ||
    bad "the console does not show the agent started by the hot-plug, ready, stopped by the unplug, exit 0"
grep -aq 'E2E: vt-e2e-guest rc=0, trace-agent exit status 0 after its port was unplugged' <<<"$C" ||
    bad "the guest side did not end cleanly"

scn_counts e2e "0 1"
for cpu in 0 1; do
    mk=$(grep -cE "\[00$cpu\] .*vt-e2e cpu$cpu " "$WORK/guest.txt")
    mkother=$(grep -E "vt-e2e cpu$cpu " "$WORK/guest.txt" | grep -cvE "\[00$cpu\] ")
    echo "$ME: cpu$cpu: markers $mk on cpu$cpu, $mkother elsewhere"
    [ "$mk" = "$N" ] && [ "$mkother" = 0 ] || bad "cpu$cpu: $mk markers on cpu$cpu and $mkother elsewhere, want $N and 0"
done
echo "$ME: hot-plug at ${T_PLUG_AT} s of record's run took ${T_PLUG} s; the agent answered at ${T_ANSWER:-?} s, $(vt_secs "$T_PLUG_AT" "${T_ANSWER:-0}") s after the hot-plug began; record ${T_REC} s"
scn_result
