#!/bin/sh
# Proves: a host event that the kernel matched for a thread of a QEMU the daemon follows seals
# a snapshot of that QEMU's guest only (issue 40): a fake agent run as a root-owned
# qemu-system-x86_64 (found by discovery as a QEMU by /proc/PID/exe: guest qa) and a guest
# named with its ports (beta, attached too); the filter `sched:sched_switch if prev_pid ==
# QEMU's pid` matches the QEMU's own switches, a storm: qa gets exactly one snapshot, reason
# host-filter-sched_switch, and beta none; --status counts qa's snapshot and held-back events
# and has no cooldown line for beta.
echo "daemon: trigger-host-filter: an event of a followed QEMU's thread snapshots that guest only"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
. "$VT_SRCDIR/tests/integration/daemon-lib.sh"
need_tools
need_host_tracefs sched:sched_switch

fake_qemu qa --repeat 0 --rate 20K --retime --again
QA=$FAKE_PID
quiet_guest beta

S=$WORK/state
# The options rather than a file, this time.
daemon_start daemon.log --domains qa --libvirt no --guest "beta $WORK/beta" --mode stream \
	--state-dir "$S" --min-free 0 --trigger-host-filter "sched:sched_switch if prev_pid == $QA" \
	--trigger-host-cooldown 600 --after 1
wait_attached "$S" qa 15
wait_attached "$S" beta 15
# The first switches of qa's QEMU may come before qa's child is 3 s old: its snapshot then
# waits for that age. One is sealed, of qa.
wait_sealed "$S" 30
sleep 3	# a second one, or one of beta, would be asked for by now
n=$(ls "$S/snapshots" | wc -l)
[ "$n" = 1 ] || fail "$n snapshots, want 1 (qa's): $(ls "$S/snapshots")"
snap=$(ls -d "$S"/snapshots/*)
case $snap in */qa-*-host-filter-sched_switch) ;; *) fail "the snapshot is $snap, want qa's" ;; esac
[ "$(jq -r .reason "$snap/snapshot.json")" = host-filter-sched_switch ] || fail "snapshot.json reason"
"$COLLECT" daemon --status --state-dir "$S" >"$WORK/status"
cat "$WORK/status"
grep -q "^host-filter guest qa: 1 snapshots, [1-9][0-9]* held back" "$WORK/status" || fail "--status: no qa line with 1 snapshot and events held back"
! grep -q "^host-filter guest beta" "$WORK/status" || fail "--status: beta was acted on"
grep -q "qa: snapshot asked for by host event sched:sched_switch of pid $QA " "$WORK/daemon.log" ||
	fail "the log does not give qa's snapshot to the QEMU's pid $QA"
daemon_stop
[ $RC = 0 ] || { show "$WORK/daemon.log"; fail "daemon exited $RC after SIGTERM, want 0"; }
[ ! -d "/sys/kernel/tracing/instances/virtio-trace-collect-daemon-$DAEMON_PID" ] || fail "the instance is left after SIGTERM"
echo "PASS"
