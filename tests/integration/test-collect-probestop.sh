#!/bin/sh
# Proves: a vCPU's clock probe burst ends once 16 replies in a row did not narrow the
# offsets the burst allows (after at least 16 replies), not after all --sync-probes; and
# --sync-probes stays the cap when every reply narrows them (a guest cannot stretch a burst).
# Run 1: a fake that answers at once, --sync-probes 1000: each of its bursts (2 vCPUs, start
# and stop) ends with 17 to 999 probes. Before, each took all 1000. Run 2: a fake whose every
# reply comes 2 ms sooner than the last (--probe-shrink), --sync-probes 30: every burst takes
# exactly 30 (about 1 s each: the recording lasts 4 s, so that the stop does not cut the
# start's short). Run 3: a fake that holds every reply 30 ms (--probe-delay 30), as a loaded
# host may: each new fastest return shaves a few ns off a 30 ms width, which narrows nothing
# (a reply must take 1/64 of the width off): each burst ends with 17 to 33 probes (one real
# narrowing, a slow first return, allowed). Before, such a burst went on at every new fastest
# return, to 100 probes (3 s), and a final sync of two vCPUs ran out of its 3 s.
# All recordings are exact and carry a probed bound.
echo "collect: a clock probe burst ends when its replies stop narrowing the offset, capped by --sync-probes"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools

# bursts NAME: the probe counts of its bursts, one per line
bursts() {
	sed -nE 's/.*sync burst on cpu[0-9]+: ([0-9]+) probes answered.*/\1/p' "$WORK/$1.fake"
}

pq=$WORK/pq pz=$WORK/pz
mkdir -p "$pq" "$pz"
fake quick --fifo "$pq" --fixture "$DATA/cap-guest" --repeat 2 --retime
pid=$FAKE_PID
collect rec1 --chardev-dir "$pq" --name quick -o "$WORK/out1" -d 1 --sync probe --sync-probes 1000 --verbose
fake_end $pid
[ $RC = 0 ] || { show "$WORK/rec1.log" "$WORK/quick.fake"; fail "run 1: collector exited $RC, want 0"; }
n=$(bursts quick | wc -l)
echo "run 1: $n bursts, probes: $(bursts quick | tr '\n' ' ')"
[ "$n" = 4 ] || { show "$WORK/quick.fake"; fail "run 1: $n bursts, want 4 (2 vCPUs, start and stop)"; }
for k in $(bursts quick); do
	[ "$k" -ge 17 ] && [ "$k" -lt 1000 ] || fail "run 1: a burst of $k probes, want 17 to 999"
done
[ "$(grep -c 'the last 16 narrowed nothing' "$WORK/rec1.log")" = 4 ] ||
	{ show "$WORK/rec1.log"; fail "run 1: -v does not say why each burst ended"; }
check_exact "$WORK/out1" quick "$DATA/cap-guest" 2
[ "$(guest_json "$WORK/out1" quick .sync.method)" = probe ] ||
	fail "run 1: sync method $(guest_json "$WORK/out1" quick .sync.method), want probe"

fake shrink --fifo "$pz" --fixture "$DATA/cap-guest" --repeat 2 --retime --probe-shrink
pid=$FAKE_PID
collect rec2 --chardev-dir "$pz" --name shrink -o "$WORK/out2" -d 4 --sync probe --sync-probes 30 --verbose
fake_end $pid
[ $RC = 0 ] || { show "$WORK/rec2.log" "$WORK/shrink.fake"; fail "run 2: collector exited $RC, want 0"; }
echo "run 2: probes: $(bursts shrink | tr '\n' ' ')"
[ "$(bursts shrink | grep -cx 30)" = 4 ] && [ "$(bursts shrink | wc -l)" = 4 ] ||
	{ show "$WORK/shrink.fake"; fail "run 2: want 4 bursts of exactly 30 probes"; }
! grep -q 'narrowed nothing' "$WORK/rec2.log" || fail "run 2: a burst ended early"
check_exact "$WORK/out2" shrink "$DATA/cap-guest" 2
[ "$(guest_json "$WORK/out2" shrink .sync.method)" = probe ] ||
	fail "run 2: sync method $(guest_json "$WORK/out2" shrink .sync.method), want probe"
ph=$WORK/ph
mkdir -p "$ph"
fake held --fifo "$ph" --fixture "$DATA/cap-guest" --repeat 2 --retime --probe-delay 30
pid=$FAKE_PID
collect rec3 --chardev-dir "$ph" --name held -o "$WORK/out3" -d 2 --sync probe --verbose
fake_end $pid
[ $RC = 0 ] || { show "$WORK/rec3.log" "$WORK/held.fake"; fail "run 3: collector exited $RC, want 0"; }
echo "run 3: probes: $(bursts held | tr '\n' ' ')"
[ "$(bursts held | wc -l)" = 4 ] || { show "$WORK/held.fake"; fail "run 3: $(bursts held | wc -l) bursts, want 4"; }
for k in $(bursts held); do
	[ "$k" -ge 17 ] && [ "$k" -le 33 ] ||
		{ show "$WORK/rec3.log"; fail "run 3: a burst of $k probes held 30 ms each, want 17 to 33"; }
done
[ "$(guest_json "$WORK/out3" held .sync.final_sync_cut)" = null ] ||
	fail "run 3: the final sync was cut: $(guest_json "$WORK/out3" held .sync.final_sync_cut)"
check_exact "$WORK/out3" held "$DATA/cap-guest" 2
echo PASS
