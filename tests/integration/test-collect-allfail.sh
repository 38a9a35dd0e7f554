#!/bin/sh
# Proves: when every guest fails in its setup, the run still ends by itself, promptly, as any stop
# does (the host recorder stopped and its threads joined), with exit status 1 (no guest could be
# set up) and nothing left behind. The guest announces a 1 TiB metadata bundle (refused at once)
# while the host records a busy loop's sched_switch. A collector that quit its loop without
# stopping the host recorder could wait for ever on a host CPU thread splicing into a full pipe.
echo "collect: every guest failing in its setup ends the run promptly and leaves nothing"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools
need_host_tracefs sched:sched_switch

p=$WORK/ports out=$WORK/out
mkdir -p "$p"
fake bad --fifo "$p" --fixture "$DATA/cap-guest" --huge-meta
pid=$FAKE_PID
(while :; do sleep 0.001; done) &
busy=$!
track $busy
t0=$(date +%s.%N)
COLLECT_LIMIT=60 collect rec --chardev-dir "$p" --name bad -o "$out" \
	--host-events sched:sched_switch --stop-timeout 5
t1=$(date +%s.%N)
kill $busy
fake_end $pid
secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
echo "measured: collector ended by itself after $secs s, exit $RC"
grep -q "still running after" "$WORK/rec.log" && { show "$WORK/rec.log"; fail "the collector did not end by itself"; }
awk -v s="$secs" 'BEGIN { exit !(s <= 30) }' || fail "the run took $secs s, want <= 30 (--stop-timeout 5; sanitizers and a loaded host are slow)"
[ $RC = 1 ] || { show "$WORK/rec.log"; fail "collector exited $RC, want 1 (no guest could be set up)"; }
# Nothing was recorded from a guest: nothing is kept (virtio-trace-collect(1): a run that sets up
# no guest leaves nothing behind, host events included), and no host thread was left behind.
[ ! -e "$out" ] || { ls -la "$out" "$out/.spool" 2>&1 | head -20; fail "the run left $out behind"; }
echo PASS
