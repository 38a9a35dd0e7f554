#!/bin/sh
# Proves: a host file (GUEST option naming the guest's trace id) and a guest
# file (TRACEID + TIME_SHIFT naming the host's id) merge in
# `trace-cmd report -i host -i guest`: every event of both files appears once,
# the merged timeline is in time order, and guest events carry the shift.
echo "host+guest merge: report -i host -i guest is complete, time-ordered, guest shifted"
. "$VT_SRCDIR/tests/integration/td-lib.sh"
need_trace_cmd

off=2500000
mkdat "$WORK/host.dat" -i "$DATA/cap-host" --trace-id 0x1111 --guest vm1:0x2222:4001,4002
mkdat "$WORK/guest.dat" -i "$DATA/cap-guest" -V 6 --trace-id 0x2222 --ts-peer 0x1111 --ts-sample 0:$off
mkdat "$WORK/guest0.dat" -i "$DATA/cap-guest" -V 6

cd "$WORK" || fail "cd"
report merged.txt -i host.dat -i guest.dat
h=$(stat_of host.dat events)
g=$(stat_of guest.dat events)
[ "$(count_events merged.txt)" = $((h + g)) ] ||
	fail "merged report has $(count_events merged.txt) events, want $h + $g"
[ "$(grep -c '^ *host.dat: ' merged.txt)" = $((h + 1)) ] || fail "host events missing"
[ "$(grep -c '^ *guest.dat: ' merged.txt)" = $((g + 1)) ] || fail "guest events missing"

timestamps merged.txt | awk 'NR > 1 && $1 < prev { bad++ } { prev = $1 } END { exit bad > 0 }' ||
	fail "merged timeline is not in time order"

# Guest events, in file order, are the unshifted ones plus the offset.
report guest0.txt guest0.dat
grep '^ *guest.dat: ' merged.txt >guest-part.txt
timestamps guest0.txt >a.ts
timestamps guest-part.txt >b.ts
[ "$(wc -l <b.ts)" = "$g" ] || fail "guest event count in the merge"
paste -d ' ' a.ts b.ts | awk -v off=$off '$2 - $1 != off { bad++ } END { exit bad > 0 || NR == 0 }' ||
	fail "guest events in the merge are not shifted by $off"
# Both files overlap in time, so the merge really interleaves them.
awk '{ f = $1 } f != last { runs++ } { last = f } END { exit runs < 4 }' merged.txt ||
	fail "host and guest events do not interleave"
echo "PASS"
