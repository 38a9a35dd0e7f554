#!/bin/sh
# Proves: two guests traced at once, with different fixtures, repetition
# counts and port kinds, each get their own exact file: per-CPU events equal
# their fixture times repetitions and the manifest's figures equal what each
# agent sent; exit status 0.
echo "collect: two guests at once, both files exact"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools

pa=$WORK/pa pb=$WORK/pb out=$WORK/out
mkdir -p "$pa" "$pb"
fake alpha --fifo "$pa" --fixture "$DATA/cap-guest" --repeat 4 --retime
a=$FAKE_PID
fake beta --listen "$pb" --fixture "$DATA/cap-host" --repeat 2 --retime --tsc-offset -3000000
b=$FAKE_PID
collect rec --chardev-dir "$pa" --name alpha --chardev-dir "$pb" --name beta -o "$out" --duration 2 --quiet
fake_end $a
fake_end $b
[ $RC = 0 ] || { show "$WORK/rec.log"; fail "collector exited $RC, want 0"; }
check_exact "$out" alpha "$DATA/cap-guest" 4
check_exact "$out" beta "$DATA/cap-host" 2
[ "$(man "$out" '.guests | length')" = 2 ] || fail "manifest lists $(man "$out" '.guests | length') guests"
[ "$(man "$out" '[.guests[].trace_id] | unique | length')" = 2 ] || fail "both guests have the same trace id"
echo "PASS"
