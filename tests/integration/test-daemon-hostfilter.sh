#!/bin/sh
# Proves: `daemon --trigger-host-filter` (issue 40) hands the kernel its filter in one private
# tracefs instance, virtio-trace-collect-daemon-PID, and seals snapshots on what the kernel
# matched: a real event the test makes (sched:sched_process_exec of a program whose path holds
# vt-trig-probe; the guest is a fake agent named with its ports, whose QEMU the daemon does not
# know, so every followed guest is snapshotted): execs of another name match nothing (0 matched,
# no snapshot); a storm of 20 matching execs seals exactly one snapshot, reason
# host-filter-sched_process_exec in snapshot.json and --status, and --status counts 20
# matched, 1 snapshot, 19 held back; 5 more after it was sealed, within the cooldown, are
# held back too (25 matched, still 1 snapshot); a second filter (sched_process_exit of a comm
# nobody has) stands beside it with 0 matched; one event filtered twice is refused (exit 2:
# the kernel keeps one filter per event); a daemon run as nobody cannot make its instance (exit
# 1, said); a filter the kernel refuses is exit 2 with the option and
# the kernel's own words (error_log); an unknown event is exit 2; an instance a killed daemon
# left is removed by the next daemon; the record child holds none of the instance's files;
# after SIGTERM no instance of the daemon is left (the
# instances listed before and after are the same).
echo "daemon: trigger-host-filter: a kernel-matched host event seals one snapshot per storm, a refused filter is exit 2, no instance left"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
. "$VT_SRCDIR/tests/integration/daemon-lib.sh"
need_tools
need_host_tracefs sched:sched_process_exec sched:sched_process_exit
T=/sys/kernel/tracing
PROBE_FILTER='sched:sched_process_exec if filename ~ "*vt-trig-probe*"'

# daemon_instances: our daemons' instances, one a line
daemon_instances() {
	ls "$T/instances" | grep '^virtio-trace-collect-daemon-' | sort
}

# An instance a daemon killed outright left (its pid is gone): the next daemon removes it.
sh -c 'exit 0' &
dead=$!
wait $dead
stale=virtio-trace-collect-daemon-$dead
kill -0 $dead 2>/dev/null || mkdir "$T/instances/$stale" || fail "cannot make $stale"

# One event filtered twice: the kernel keeps one filter per event, so the second is refused.
"$COLLECT" daemon --domains none --libvirt no --state-dir "$WORK/bad" --trigger-host-filter "$PROBE_FILTER" \
	--trigger-host-filter 'sched:sched_process_exec if pid == 1' 2>"$WORK/twice.err"
rc=$?
[ $rc = 2 ] && grep -q 'sched:sched_process_exec has a filter already (--trigger-host-filter): join the two with ||' "$WORK/twice.err" ||
	{ show "$WORK/twice.err"; fail "one event filtered twice: exit $rc"; }

# A filter with a control character is refused before the kernel sees it, as a guest filter is
# (one parser, trigspec.c, for both).
"$COLLECT" daemon --domains none --libvirt no --state-dir "$WORK/bad" \
	--trigger-host-filter "$(printf 'sched:sched_process_exec if pid == 1\001')" 2>"$WORK/ctl.err"
rc=$?
[ $rc = 2 ] && grep -q "^virtio-trace-collect daemon: --trigger-host-filter '.*': SYSTEM:EVENT or SYSTEM:EVENT if FILTER" \
	"$WORK/ctl.err" || { show "$WORK/ctl.err"; fail "a filter with a control character: exit $rc, want 2"; }

# A filter the kernel refuses: exit 2, the option and the kernel's words.
"$COLLECT" daemon --domains none --libvirt no --state-dir "$WORK/bad" \
	--trigger-host-filter 'sched:sched_process_exec if no_such_field == 1' 2>"$WORK/bad.err" &
p=$!
wait $p
rc=$?
[ $rc = 2 ] || { show "$WORK/bad.err"; fail "a refused filter: exit $rc, want 2"; }
grep -q -- "--trigger-host-filter 'sched:sched_process_exec if no_such_field == 1': the kernel refused the filter: " "$WORK/bad.err" ||
	{ show "$WORK/bad.err"; fail "the refusal does not name the option and the filter"; }
if [ -f "$T/error_log" ]; then
	grep -q 'Field not found' "$WORK/bad.err" || { show "$WORK/bad.err"; fail "the refusal does not carry error_log's 'Field not found'"; }
fi
[ ! -d "$T/instances/virtio-trace-collect-daemon-$p" ] || fail "the refused daemon left its instance"
[ ! -d "$T/instances/$stale" ] || fail "the stale instance $stale was not removed"
grep -q "removed the tracefs instance $stale" "$WORK/bad.err" || fail "the stale instance's removal is not said"
echo "refused: $(grep -o 'the kernel refused.*' "$WORK/bad.err")"
"$COLLECT" daemon --domains none --libvirt no --state-dir "$WORK/bad" \
	--trigger-host-filter 'sched:no_such_event_at_all' 2>"$WORK/bad2.err"
rc=$?
[ $rc = 2 ] && grep -q 'the host kernel has no event sched:no_such_event_at_all' "$WORK/bad2.err" ||
	{ show "$WORK/bad2.err"; fail "an unknown event: exit $rc"; }

# Without the right to make an instance (another user than root): exit 1, said.
AS="setpriv --reuid=nobody --regid=nogroup --clear-groups"
if command -v setpriv >/dev/null 2>&1; then
	for_user "$AS" "$COLLECT"
	mkdir "$WORK/nobody-state" && chown nobody "$WORK/nobody-state" && chmod 0700 "$WORK/nobody-state"
	# shellcheck disable=SC2086
	$AS "$FOR_USER/virtio-trace-collect" daemon --domains none --libvirt no --state-dir "$WORK/nobody-state" \
		--trigger-host-filter "$PROBE_FILTER" 2>"$WORK/nobody.err"
	rc=$?
	[ $rc = 1 ] && grep -q 'trigger-host-filter: cannot create the tracefs instance virtio-trace-collect-daemon-[0-9]*: .*(root and a mounted tracefs are needed)' "$WORK/nobody.err" ||
		{ show "$WORK/nobody.err"; fail "as nobody: exit $rc, want 1 and the reason"; }
else
	echo "note: setpriv missing: a daemon without the right to make an instance not tried"
fi

before=$(daemon_instances)	# what other daemons have, now that no dead one's is left
S=$WORK/state
mkdir -p "$WORK/alpha"	# quiet_guest's, serving every session (the children after a snapshot too)
fake alpha --listen "$WORK/alpha" --fixture "$DATA/cap-guest" --repeat 0 --rate 20K --retime --again
cat >"$WORK/daemon.conf" <<CONF
domains = none
libvirt = no
guest = alpha $WORK/alpha
mode = stream
state-dir = $S
min-free = 0
trigger-host-filter = $PROBE_FILTER
trigger-host-filter = sched:sched_process_exit if comm == "vt-no-such-comm"
trigger-host-cooldown = 600
CONF
daemon_start daemon.log --config "$WORK/daemon.conf" --after 1
wait_attached "$S" alpha 10
I=$T/instances/virtio-trace-collect-daemon-$DAEMON_PID
[ -d "$I" ] || { show "$WORK/daemon.log"; fail "no instance $I"; }
[ "$(cat "$I/events/sched/sched_process_exec/enable")" = 1 ] || fail "sched_process_exec is not enabled in $I"
grep -q 'vt-trig-probe' "$I/events/sched/sched_process_exec/filter" || fail "the filter is not in $I"
# The instance's buffers are the daemon's alone: not open in its record child (O_CLOEXEC).
child=$("$COLLECT" daemon --status --state-dir "$S" | awk '$1 == "alpha" { print $3 }')
[ -d "/proc/$child/fd" ] || fail "no record child for alpha ($child)"
leaked=$(ls -l "/proc/$child/fd" 2>/dev/null | grep -c "virtio-trace-collect-daemon-$DAEMON_PID")
[ "$leaked" = 0 ] || fail "alpha's record child $child holds $leaked of the daemon's instance's files"
sleep 3	# past the child's 3 s minimum age

# status_filter: the filter's --status line
status_filter() {
	"$COLLECT" daemon --status --state-dir "$S" | grep "^host-filter sched:sched_process_exec"
}
cp /bin/true "$WORK/vt-other-name"
cp /bin/true "$WORK/vt-trig-probe-x"
for n in 1 2 3 4 5; do "$WORK/vt-other-name"; done
sleep 1.5	# several turns of the daemon's loop (200 ms)
case $(status_filter) in *": 0 matched, 0 snapshots,"*) ;; *) fail "after 5 other execs: $(status_filter)" ;; esac
[ -z "$(ls "$S/snapshots")" ] || fail "a snapshot without a matching event: $(ls "$S/snapshots")"

# A storm: 20 matching execs, one snapshot.
for n in $(seq 20); do "$WORK/vt-trig-probe-x"; done
wait_sealed "$S" 30
sleep 3	# another snapshot would be asked for by now
n=$(ls "$S/snapshots" | wc -l)
[ "$n" = 1 ] || fail "$n snapshots after one storm, want 1: $(ls "$S/snapshots")"
snap=$(ls -d "$S"/snapshots/*)
r=$(jq -r .reason "$snap/snapshot.json")
[ "$r" = host-filter-sched_process_exec ] || fail "snapshot.json reason '$r'"
case $snap in */alpha-*-host-filter-sched_process_exec) ;; *) fail "snapshot name $snap" ;; esac
[ "$(jq -r .guest "$snap/snapshot.json")" = alpha ] || fail "snapshot.json guest"
report "$WORK/guest.txt" -i "$snap/guest-alpha.dat"
[ "$(all_events "$WORK/guest.txt")" -gt 0 ] || fail "the snapshot's guest-alpha.dat has no events"
st=$(status_filter)
case $st in *": 20 matched, 1 snapshots, 19 held back, 0 with no guest recording") ;; *) fail "--status: $st" ;; esac
"$COLLECT" daemon --status --state-dir "$S" | grep -q '^host-filter sched:sched_process_exit if comm == "vt-no-such-comm": 0 matched, 0 snapshots' ||
	fail "--status: the second filter is not there with 0 matched: $("$COLLECT" daemon --status --state-dir "$S")"
"$COLLECT" daemon --status --state-dir "$S" | grep -q "^alpha .*(host-filter-sched_process_exec)" ||
	fail "--status does not give alpha's last snapshot's reason: $("$COLLECT" daemon --status --state-dir "$S")"
"$COLLECT" daemon --status --state-dir "$S" | grep -q "^host-filter guest alpha: 1 snapshots, 19 held back" ||
	fail "--status has no cooldown line for alpha: $("$COLLECT" daemon --status --state-dir "$S")"
grep -q "alpha: snapshot asked for by host event sched:sched_process_exec of pid" "$WORK/daemon.log" ||
	fail "the log does not say which event asked for the snapshot"
echo "storm: $st"

# Within the cooldown (600 s), after the snapshot was sealed: 5 more matches, held back.
for n in 1 2 3 4 5; do "$WORK/vt-trig-probe-x"; done
sleep 3
n=$(ls "$S/snapshots" | wc -l)
[ "$n" = 1 ] || fail "$n snapshots after a second storm within the cooldown, want 1: $(ls "$S/snapshots")"
st=$(status_filter)
case $st in *": 25 matched, 1 snapshots, 24 held back, 0 with no guest recording") ;; *) fail "--status after the cooldown's storm: $st" ;; esac

daemon_stop
[ $RC = 0 ] || { show "$WORK/daemon.log"; fail "daemon exited $RC after SIGTERM, want 0"; }
[ ! -d "$I" ] || fail "the instance $I is left after SIGTERM"
# Only dead daemons' instances count: another test's daemon may run beside this one (make -j).
left=
for i in $(daemon_instances); do
	kill -0 "${i##*-}" 2>/dev/null || left="$left $i"
done
[ -z "$left" ] || fail "instances of daemons that are gone:$left (before: '$before')"
echo "PASS"
