#!/bin/sh
# Proves: a host-filter snapshot whose record child ends on its own before it could be sealed
# does not spend the guest's cooldown (issue 40; test-daemon-hostfilter-qemu lost its snapshot
# so, in 2 of 3 suite runs: a 600 s cooldown asked for no other). A fake agent run as a
# root-owned qemu-system-x86_64 (guest qa, found by discovery) leaves its first session's
# META_REQ unanswered and hangs up 1.5 s later (--hangup-in-setup): the child exits 1 with
# nothing recorded, while the snapshot that the QEMU's own sched_switch storm asked for waits
# for the child to be 3 s old. The daemon says it could not be sealed and gives the cooldown
# back, the next child records, and the storm's next event seals exactly one snapshot
# of qa; --status counts it and 1 not sealed.
echo "daemon: trigger-host-filter: a snapshot that could not be sealed does not spend the cooldown"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
. "$VT_SRCDIR/tests/integration/daemon-lib.sh"
need_tools
need_host_tracefs sched:sched_switch

fake_qemu qa --repeat 0 --rate 20K --retime --again --hangup-in-setup 1500
QA=$FAKE_PID

S=$WORK/state
daemon_start daemon.log --domains qa --libvirt no --mode stream --state-dir "$S" --min-free 0 \
	--trigger-host-filter "sched:sched_switch if prev_pid == $QA" --trigger-host-cooldown 600 --after 1
wait_log "$WORK/daemon.log" "qa: the recording could not be sealed (record exited" 30 \
	"the first child's snapshot was not given up"
grep -q "qa: its host-filter snapshot was not sealed: no cooldown, the next matching event asks again" \
	"$WORK/daemon.log" || { show "$WORK/daemon.log"; fail "the cooldown was not given back"; }
grep -q "hanging up on the host in its setup (--hangup-in-setup)" "$WORK/qa.fake" || fail "the fake agent did not hang up"
wait_sealed "$S" 30
sleep 2	# a second one would be asked for by now
n=$(ls "$S/snapshots" | wc -l)
[ "$n" = 1 ] || fail "$n snapshots, want 1: $(ls "$S/snapshots")"
snap=$(ls -d "$S"/snapshots/*)
case $snap in */qa-*-host-filter-sched_switch) ;; *) fail "the snapshot is $snap, want qa's" ;; esac
[ -s "$snap/guest-qa.dat" ] || fail "the snapshot has no guest-qa.dat"
"$COLLECT" daemon --status --state-dir "$S" >"$WORK/status"
cat "$WORK/status"
grep -q "^host-filter guest qa: 1 snapshots, [0-9]* held back, 1 not sealed, cooldown [1-9][0-9]* s left" "$WORK/status" ||
	fail "--status: no qa line with 1 snapshot, 1 not sealed and the cooldown running"
grep -q "^host-filter sched:sched_switch if prev_pid == $QA: [0-9]* matched, 1 snapshots," "$WORK/status" ||
	fail "--status: the filter does not count 1 snapshot"
[ "$(grep -c "qa: snapshot asked for by host event sched:sched_switch of pid $QA " "$WORK/daemon.log")" = 2 ] ||
	fail "the log does not have 2 snapshots asked for (the unsealed one and the next)"
daemon_stop
[ $RC = 0 ] || { show "$WORK/daemon.log"; fail "daemon exited $RC after SIGTERM, want 0"; }
echo "PASS"
