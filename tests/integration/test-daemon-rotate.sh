#!/bin/sh
# Proves: in stream mode the daemon restarts a guest's record child every `window` seconds into
# a new segment and keeps exactly the last two (guests/NAME/current and previous; each finished
# segment a recording trace-cmd reads), and a snapshot whose --before reaches before the last
# segment's start takes the previous one along as earlier/, snapshot.json listing both segments
# in order. The fake agent serves one recording after another (--again).
echo "daemon: stream segments rotated every window, the last two kept, a snapshot with earlier/"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
. "$VT_SRCDIR/tests/integration/daemon-lib.sh"
need_tools
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }

S=$WORK/state
mkdir -p "$WORK/alpha"
fake alpha --listen "$WORK/alpha" --fixture "$DATA/cap-guest" --repeat 0 --rate 20K --retime --again
daemon_start daemon.log --domains none --guest "alpha $WORK/alpha" --mode stream --window 2 \
	--state-dir "$S" --min-free 0
# Three children: two rotations.
i=0
until [ "$(grep -c 'alpha: recording (pid' "$WORK/daemon.log")" -ge 3 ]; do
	[ $i -lt 200 ] || { show "$WORK/daemon.log" "$WORK/alpha.fake"; fail "no third segment within 20 s"; }
	sleep 0.1
	i=$((i + 1))
done
# Read once per try: a rotation renames current to previous and makes a new current, and on a
# busy machine the next one may be under way as the log line comes (a second ls then named the
# same two the first had not seen).
i=0
until held=$(ls "$S/guests/alpha" | tr '\n' ' '); [ "$held" = "current previous " ]; do
	[ $i -lt 30 ] || fail "guests/alpha holds '$held', want current and previous"
	sleep 0.1
	i=$((i + 1))
done
report "$WORK/prev.txt" -i "$S/guests/alpha/previous/guest-alpha.dat"
[ "$(all_events "$WORK/prev.txt")" -gt 0 ] || fail "the previous segment has no events"
grep -q 'alpha: record exited' "$WORK/daemon.log" && fail "a child ended unasked: $(grep 'record exited' "$WORK/daemon.log")"
sleep 0.5
snap=$("$COLLECT" snapshot alpha --state-dir "$S" --before 600 --after 0 --reason rotated 2>"$WORK/snap.err") ||
	{ show "$WORK/snap.err" "$WORK/daemon.log"; fail "snapshot failed"; }
[ -f "$snap/earlier/manifest.json" ] || fail "no earlier/ segment in $snap: $(ls "$snap")"
[ "$(jq -r '[.segments[].dir] | join(" ")' "$snap/snapshot.json")" = "earlier ." ] ||
	fail "snapshot.json segments: $(jq -c .segments "$snap/snapshot.json")"
report "$WORK/earlier.txt" -i "$snap/earlier/guest-alpha.dat"
report "$WORK/last.txt" -i "$snap/guest-alpha.dat"
[ ! -e "$S/guests/alpha/previous" ] || fail "the previous segment is still in guests/alpha"
echo "segments: $(all_events "$WORK/earlier.txt") and $(all_events "$WORK/last.txt") events"
daemon_stop
[ $RC = 0 ] || fail "daemon exited $RC"
echo "PASS"
