#!/bin/sh
# Proves: the daemon's panic trigger (issue 40) seals a snapshot of the guest that crashed,
# reason "panic", from a crash event alone: a fake event source ($VT_DAEMON_EVENTS, a FIFO
# that carries the lines the libvirt module's event thread writes) says "crashed panicked
# alpha"; one snapshot of alpha is sealed (alpha-*-panic, snapshot.json reason panic, its
# guest-alpha.dat holding the fixture's events), none of beta; --status names it "(panic)",
# also once alpha is gone (kept, state gone); a crash that comes once its guest (gamma, whose
# agent never answers STOP) was seen gone and its child is still stopping is sealed too;
# --status says how the events flow (connected, then lost, one warning for two losses); a
# crash of a domain not followed and a line not understood are logged and seal nothing; with
# --trigger-panic no the same crash seals nothing and --status has no panic-trigger line.
echo "daemon: a guest's crash event seals its snapshot, reason panic; --trigger-panic no does not"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
. "$VT_SRCDIR/tests/integration/daemon-lib.sh"
need_tools
[ "$(id -u)" = 0 ] || { echo "SKIP: host events need root"; exit 77; }
[ -d /sys/kernel/tracing/instances ] || { echo "SKIP: no tracefs"; exit 77; }

S=$WORK/state EV=$WORK/events
mkfifo "$EV"
quiet_guest alpha
alpha_pid=$FAKE_PID
quiet_guest beta
# gamma's agent never answers STOP: its child takes 10 s to stop (the daemon's second SIGINT).
mkdir -p "$WORK/gamma"
fake gamma --listen "$WORK/gamma" --fixture "$DATA/cap-guest" --repeat 0 --rate 20K --retime --stall-stop
named_conf "$WORK/daemon.conf" "$S" alpha beta gamma
printf 'mode = stream\nhost-events = sched:sched_switch\n' >>"$WORK/daemon.conf"
# events LINE...: into the FIFO, opened read-write so that no reader is waited for
events() {
	printf '%s\n' "$@" 1<>"$EV"
}
VT_DAEMON_EVENTS=$EV daemon_start daemon.log --config "$WORK/daemon.conf" --after 1
wait_attached "$S" alpha beta gamma
"$COLLECT" daemon --status --state-dir "$S" | grep -qx "panic-trigger: events from $EV" ||
	fail "--status does not say where the events come from: $("$COLLECT" daemon --status --state-dir "$S")"
events "connected test:///fake"
sleep 0.5
"$COLLECT" daemon --status --state-dir "$S" | grep -qx "panic-trigger: libvirt events: connected" ||
	fail "--status does not say connected: $("$COLLECT" daemon --status --state-dir "$S")"
sleep 2	# some of the window before the crash

events "crashed panicked nosuch" "what is this" "crashed panicked alpha"
wait_log "$WORK/daemon.log" "alpha: the guest crashed (panicked): snapshot asked for (panic; before 30.0 s, after 1.0 s)" 3 \
	"the crash did not ask for a snapshot"
wait_log "$WORK/daemon.log" "alpha: snapshot .*-panic (panic)" 20 "no panic snapshot sealed"
grep -q "domain nosuch crashed (panicked): not a guest followed here" "$WORK/daemon.log" ||
	fail "the crash of a domain not followed is not logged"
grep -q "panic trigger: an event line not understood: 'what is this'" "$WORK/daemon.log" ||
	fail "a line not understood is not logged"
n=$(ls "$S/snapshots" | grep -c -- '-panic$')
[ "$n" = 1 ] || fail "$n panic snapshots, want 1: $(ls "$S/snapshots")"
snap=$S/snapshots/$(ls "$S/snapshots" | grep -- '-panic$')
case $snap in "$S/snapshots/alpha-"*) ;; *) fail "the panic snapshot is not alpha's: $snap" ;; esac
[ "$(jq -r .reason "$snap/snapshot.json")" = panic ] || fail "snapshot.json reason $(jq -r .reason "$snap/snapshot.json")"
[ "$(jq -r .guest "$snap/snapshot.json")" = alpha ] || fail "snapshot.json guest $(jq -r .guest "$snap/snapshot.json")"
[ "$(jq -r .before "$snap/snapshot.json")" = 30 ] || fail "snapshot.json before $(jq -r .before "$snap/snapshot.json"), want the default 30"
report "$WORK/guest.txt" -i "$snap/guest-alpha.dat"
grep -q 'softirq_entry' "$WORK/guest.txt" || fail "guest-alpha.dat has no softirq_entry (the fixture's)"
report "$WORK/host.txt" -i "$snap/host.dat"
grep -q 'sched_switch:' "$WORK/host.txt" || fail "host.dat: no sched_switch"
echo "panic snapshot: $(all_events "$WORK/guest.txt") guest events, $(grep -c 'sched_switch:' "$WORK/host.txt") host sched_switch"
"$COLLECT" daemon --status --state-dir "$S" | grep -q "^alpha .*alpha-.*-panic (panic); panics: 1 taken, 0 ignored\($\|;\)" ||
	fail "--status does not name alpha's panic snapshot and count it: $("$COLLECT" daemon --status --state-dir "$S")"
"$COLLECT" daemon --status --state-dir "$S" | grep -q "^beta .* -$" ||
	fail "beta has a snapshot: $("$COLLECT" daemon --status --state-dir "$S")"

# alpha goes (as a domain destroyed on its crash): it stays in --status, gone, with its snapshot.
kill -TERM $alpha_pid
rm -rf "$WORK/alpha"
wait_log "$WORK/daemon.log" "alpha: detached (kept in --status for its last snapshot)" 10 "alpha not detached"
"$COLLECT" daemon --status --state-dir "$S" | grep -q "^alpha  *gone .*alpha-.*-panic (panic)" ||
	fail "alpha gone is not in --status with its snapshot: $("$COLLECT" daemon --status --state-dir "$S")"

# A crash that comes after the guest was seen gone (libvirt destroys a crashed domain at once):
# the child that is still stopping is sealed all the same.
rm -rf "$WORK/gamma"
wait_log "$WORK/daemon.log" "gamma: gone: stopping its recording" 5 "gamma not seen gone"
events "crashed panicked gamma"
wait_log "$WORK/daemon.log" "gamma: the guest crashed (panicked): snapshot asked for" 3 "gamma's crash, once gone, asked for nothing"
wait_log "$WORK/daemon.log" "gamma: snapshot .*-panic (panic)" 30 "gamma's crash, once gone, sealed nothing"
[ "$(ls "$S/snapshots" | grep -c -- '^gamma-.*-panic$')" = 1 ] || fail "gamma: not one panic snapshot: $(ls "$S/snapshots")"

# libvirtd goes away twice: one warning, --status says lost.
events "lost the connection closed" "lost cannot connect to x: refused"
sleep 0.5
n=$(grep -c "panic trigger: libvirt's events: .* (retrying)" "$WORK/daemon.log")
[ "$n" = 1 ] || fail "$n warnings for two losses in a row, want 1"
"$COLLECT" daemon --status --state-dir "$S" | grep -qx "panic-trigger: libvirt events: lost (cannot connect to x: refused)" ||
	fail "--status does not say lost: $("$COLLECT" daemon --status --state-dir "$S")"
daemon_stop
[ $RC = 0 ] || { show "$WORK/daemon.log"; fail "daemon exited $RC after SIGTERM, want 0"; }

# trigger-panic no: the same crash seals nothing.
S2=$WORK/state2
sed "s|^state-dir = .*|state-dir = $S2|" "$WORK/daemon.conf" >"$WORK/daemon2.conf"
VT_DAEMON_EVENTS=$EV daemon_start daemon2.log --config "$WORK/daemon2.conf" --after 1 --trigger-panic no
wait_attached "$S2" beta
"$COLLECT" daemon --status --state-dir "$S2" | grep -q "^panic-trigger" &&
	fail "--trigger-panic no: --status has a panic-trigger line"
events "crashed panicked beta"
sleep 4	# past --after 1 and a child's stop
[ -z "$(ls "$S2/snapshots" 2>/dev/null)" ] || fail "--trigger-panic no sealed $(ls "$S2/snapshots")"
! grep -q "crashed" "$WORK/daemon2.log" || fail "--trigger-panic no: the crash was read: $(grep crashed "$WORK/daemon2.log")"
daemon_stop
[ $RC = 0 ] || { show "$WORK/daemon2.log"; fail "the second daemon exited $RC after SIGTERM, want 0"; }
echo "PASS"
