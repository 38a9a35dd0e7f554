#!/bin/bash
# vt-suite: e2e
# test-daemon-panic.sh: the daemon's panic trigger with a real libvirtd (libvirt-lib.sh: the
# running one, else its own in the work dir) and a 2-vCPU TCG domain with a pvpanic device
# (<panic model='isa'/>, the guest's pvpanic-mmio module loaded before its agent starts) and
# <on_crash>destroy</on_crash>, libvirt's default. `setup --domain --apply --backend unix` gives
# it its channels; `daemon` (stream mode, domains = the domain, sched_switch in the guest and on
# the host) follows it. The guest writes N markers "panic-before cpuK I" per CPU, then filler
# markers so that the agent's pages with them are out (a partial page dies with the guest),
# then panics (echo c >/proc/sysrq-trigger). Checks: the daemon logs the crash (libvirt's
# CRASHED/panicked); one snapshot is sealed with reason panic (snapshot.json, --status);
# guest-DOMAIN.dat holds exactly N markers on each CPU; `trace-cmd report -i host.dat -i
# guest-DOMAIN.dat` merges them with the host's sched_switch before the first marker and
# after the last one, and no timestamp goes backwards; libvirt says the domain crashed; --status
# keeps the domain, gone, with its panic snapshot. Then our libvirtd (if the test started it) is
# restarted: the daemon logs the loss and follows libvirt's events again (--status: connected).
# Env: VT_BUILDDIR (default <repo>/build), VT_E2E_MARKERS (default 200), VT_KEEP=1 keeps the work
# dir. Exit: 0 pass, 1 fail, 77 skip.
echo "test-daemon-panic: a libvirt TCG domain with pvpanic panics; the daemon seals its snapshot, reason panic, with the guest's last markers and the host's events, merged in order"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
. "$HERE/libvirt-lib.sh"
VT_LOG_PREFIX=test-daemon-panic
ME=test-daemon-panic
N=${VT_E2E_MARKERS:-200}
FILL=3000	# per CPU, 64 bytes each: past the agent's buffer_percent (10% of 1408 KiB)
DOM=vt-e2e-panic
DESC="virtio-trace e2e test domain (tests/e2e/test-daemon-panic.sh)"

vt_libvirt_need || exit $?

T0=$(vt_now)
vt_libvirt_work
show() { sed 's/^/    | /' "$@"; }

vt_collect_build; rc=$?
[ $rc = 0 ] || exit $rc
# The pvpanic driver is a module in Debian's kernels; the guest loads it before its agent.
VT_GUEST_EXTRA_MODULES="pvpanic_mmio"
VT_AGENT_PRE='modprobe pvpanic-mmio || echo "E2E: FAIL cannot load pvpanic-mmio"'
vt_collect_image "$WORK" daemon-panic; rc=$?
[ $rc = 0 ] || exit $rc
libvirt_boot_files

libvirt_up
# As test-libvirt-guest's domain, plus the pvpanic device; the agent serves one daemon child
# after another (vt.agent_keep=1).
vt_libvirt_define " vt.agent_keep=1" "
    <panic model='isa'/>"; rc=$?
[ $rc = 0 ] || exit $rc
"$COLLECT" setup --domain "$DOM" --connect "$URI" --apply --backend unix >"$WORK/setup.log" 2>&1 ||
    { show "$WORK/setup.log"; echo "$ME: FAIL: setup --apply exited $?"; exit 1; }

t=$(vt_now)
V start "$DOM" >/dev/null || { tail -n5 "/var/log/libvirt/qemu/$DOM.log" 2>/dev/null; echo "$ME: FAIL: the domain did not start"; exit 1; }
VT_QEMU_PID=$(cat "/run/libvirt/qemu/$DOM.pid" 2>/dev/null)
VT_RUNDIR=$WORK
vt_test_say "$WORK/ports" hello 90 ||
    { tr -d '\r' <"$WORK/console.log" | tail -20; echo "$ME: FAIL: vt-e2e-guest did not answer hello in 90 s"; exit 1; }
echo "$ME: guest says: $ANSWER (boot $(vt_secs "$t" "$(vt_now)") s)"
CPUS=$(sed -n 's/.*cpus=\([0-9]*\).*/\1/p' <<<"$ANSWER")
vt_test_say "$WORK/ports" "sh test -d /sys/bus/platform/drivers/pvpanic-mmio" 20 && [ "$ANSWER" = "ok rc=0" ] ||
    { tr -d '\r' <"$WORK/console.log" | grep E2E; echo "$ME: FAIL: the guest has no pvpanic driver ($ANSWER)"; exit 1; }

# The daemon follows the domain (and nothing else on this host).
S=$WORK/state
cat >"$WORK/daemon.conf" <<CONF
domains = $DOM
connect = $URI
mode = stream
events = sched:sched_switch
host-events = sched:sched_switch
state-dir = $S
min-free = 0
before = 30
after = 3
CONF
t=$(vt_now)
"$COLLECT" daemon --config "$WORK/daemon.conf" >"$WORK/daemon.log" 2>&1 &
COLLECT_PID=$!
# The child records once the agent's instance traces (tracing_on 1).
vt_test_say "$WORK/ports" "waiton 90" 100 && [[ $ANSWER == ok* ]] ||
    { show "$WORK/daemon.log"; echo "$ME: FAIL: the daemon's child did not start the guest's tracing ($ANSWER)"; exit 1; }
echo "$ME: recording after $(vt_secs "$t" "$(vt_now)") s; $("$COLLECT" daemon --status --state-dir "$S" | grep "^$DOM ")"
"$COLLECT" daemon --status --state-dir "$S" | grep -qx "panic-trigger: libvirt events: connected" ||
    bad "--status does not say libvirt's events are followed: $("$COLLECT" daemon --status --state-dir "$S")"
grep -q "panic trigger: following libvirt's lifecycle events at $URI" "$WORK/daemon.log" || bad "the daemon did not log its events' connection"
sleep 1

# The markers, the filler that pushes their pages out, then the panic.
vt_test_say "$WORK/ports" "flood panic-before $N 0 64" 120 && [[ $ANSWER == ok* ]] || bad "flood: $ANSWER"
vt_test_say "$WORK/ports" "flood panic-fill $FILL 0 64" 120 && [[ $ANSWER == ok* ]] || bad "filler flood: $ANSWER"
sleep 2
t=$(vt_now)
vt_test_say "$WORK/ports" "sh echo c >/proc/sysrq-trigger" 3
for ((i = 0; i < 300; i++)); do
    grep -q "$DOM: the guest crashed (panicked): snapshot asked for" "$WORK/daemon.log" && break
    sleep 0.1
done
grep -q "$DOM: the guest crashed (panicked): snapshot asked for (panic; before 30.0 s, after 3.0 s)" "$WORK/daemon.log" ||
    { show "$WORK/daemon.log"; tr -d '\r' <"$WORK/console.log" | tail -5; echo "$ME: FAIL: no crash event within 30 s"; exit 1; }
echo "$ME: crash event after $(vt_secs "$t" "$(vt_now)") s"
for ((i = 0; i < 600; i++)); do
    grep -q "$DOM: snapshot .*-panic (panic)" "$WORK/daemon.log" && break
    grep -q "$DOM: the recording could not be sealed" "$WORK/daemon.log" && break
    sleep 0.1
done
grep -q "$DOM: snapshot .*-panic (panic)" "$WORK/daemon.log" ||
    { show "$WORK/daemon.log"; echo "$ME: FAIL: no panic snapshot sealed within 60 s of the crash"; exit 1; }
echo "$ME: sealed after $(vt_secs "$t" "$(vt_now)") s: $(grep -o "$DOM: snapshot .*" "$WORK/daemon.log")"
[ "$(V domstate --reason "$DOM" 2>/dev/null)" = "shut off (crashed)" ] ||
    bad "libvirt says the domain is '$(V domstate --reason "$DOM" 2>&1)', want 'shut off (crashed)'"

n=$(ls "$S/snapshots" | grep -c -- '-panic$')
[ "$n" = 1 ] || bad "$n panic snapshots, want 1: $(ls "$S/snapshots")"
SNAP=$S/snapshots/$(ls "$S/snapshots" | grep -- '-panic$' | head -n1)
[ "$(jq -r .reason "$SNAP/snapshot.json")" = panic ] || bad "snapshot.json reason $(jq -r .reason "$SNAP/snapshot.json")"
[ "$(jq -r .guest "$SNAP/snapshot.json")" = "$DOM" ] || bad "snapshot.json guest $(jq -r .guest "$SNAP/snapshot.json")"
"$COLLECT" daemon --status --state-dir "$S" | grep -q "^$DOM  *gone .*$DOM-.*-panic (panic)" ||
    bad "--status does not name the panic snapshot: $("$COLLECT" daemon --status --state-dir "$S")"

G=$SNAP/guest-$DOM.dat
trace-cmd report -i "$G" >"$WORK/guest.txt" 2>"$WORK/guest.err" || bad "trace-cmd report of $G failed: $(head -3 "$WORK/guest.err")"
for ((cpu = 0; cpu < CPUS; cpu++)); do
    mk=$(grep -c "\[$(printf %03d $cpu)\].*panic-before cpu$cpu " "$WORK/guest.txt")
    echo "$ME: cpu$cpu: $mk of $N markers"
    [ "$mk" = "$N" ] || bad "cpu$cpu: $mk markers panic-before in the snapshot, want $N"
done
trace-cmd report -i "$SNAP/host.dat" -i "$G" >"$WORK/merged.txt" 2>"$WORK/merged.err" ||
    bad "the merged trace-cmd report failed: $(head -3 "$WORK/merged.err")"
# Each line's timestamp (the field before the event's name), in file order: none goes back.
awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) { t = substr($i, 1, length($i) - 1); break }
       if (t == "") next
       n++; if (n > 1 && t + 0 < last + 0) { back++; if (back <= 3) print "backwards: " last " then " $0 }
       last = t; t = "" }
     END { print "lines " n " backwards " back + 0 }' "$WORK/merged.txt" >"$WORK/order.txt"
cat "$WORK/order.txt" | sed "s/^/$ME: merged: /"
grep -q "backwards 0$" "$WORK/order.txt" || bad "the merged report has timestamps going backwards"
first=$(grep -n 'panic-before cpu' "$WORK/merged.txt" | head -n1 | cut -d: -f1)
last=$(grep -n 'panic-before cpu' "$WORK/merged.txt" | tail -n1 | cut -d: -f1)
mm=$(grep -c 'panic-before cpu' "$WORK/merged.txt")
hb=$(head -n "${first:-0}" "$WORK/merged.txt" | grep -c '^ *host.dat:.*sched_switch:')
ha=$(tail -n +"${last:-1}" "$WORK/merged.txt" | grep -c '^ *host.dat:.*sched_switch:')
echo "$ME: merged: $mm markers, host sched_switch $hb before the first and $ha after the last"
[ "$mm" = $((N * CPUS)) ] || bad "$mm markers in the merged report, want $((N * CPUS))"
[ "$hb" -gt 0 ] && [ "$ha" -gt 0 ] || bad "the host's events do not surround the guest's markers ($hb before, $ha after)"

# libvirtd restarted (when it is ours): the daemon's events come back by themselves.
if [ -n "$LIBVIRTD_PID" ]; then
    t=$(vt_now)
    stop_pid "$LIBVIRTD_PID"
    LIBVIRTD_PID=
    libvirt_up
    for ((i = 0; i < 600; i++)); do
        [ "$(grep -c "panic trigger: following libvirt's lifecycle events" "$WORK/daemon.log")" = 2 ] && break
        sleep 0.1
    done
    grep -q "panic trigger: libvirt's events: the connection closed .*(retrying)" "$WORK/daemon.log" ||
        bad "the daemon did not log libvirtd's going"
    n=$(grep -c "panic trigger: following libvirt's lifecycle events" "$WORK/daemon.log")
    [ "$n" = 2 ] || bad "the daemon connected to libvirt's events $n times, want 2 (before and after the restart)"
    "$COLLECT" daemon --status --state-dir "$S" | grep -qx "panic-trigger: libvirt events: connected" ||
        bad "--status after libvirtd's restart: $("$COLLECT" daemon --status --state-dir "$S" | tail -n1)"
    echo "$ME: libvirtd restarted (pid $LIBVIRTD_PID): events followed again after $(vt_secs "$t" "$(vt_now)") s"
fi

kill -TERM "$COLLECT_PID"; wait "$COLLECT_PID"; rc=$?; COLLECT_PID=
[ $rc = 0 ] || { show "$WORK/daemon.log"; bad "the daemon exited $rc after SIGTERM"; }
echo "$ME: took $(vt_secs "$T0" "$(vt_now)") s"
[ $fail = 0 ] || { show "$WORK/daemon.log"; echo "$ME: FAIL"; exit 1; }
echo "$ME: PASS"
