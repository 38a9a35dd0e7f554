#!/bin/sh
# Proves: when every guest fails in its setup, the run still ends by itself, promptly, as any stop
# does: the host recorder is stopped and drained (host.dat complete and readable), the manifest
# names the guest's failure, and the exit status is 1 (no guest could be set up). The guest
# announces a 1 TiB metadata bundle (refused at once) while the host records a busy loop's
# sched_switch. A collector that quit its loop without stopping the host recorder could wait for
# ever on a host CPU thread splicing into a full pipe.
echo "collect: every guest failing in its setup ends the run promptly, with host.dat written"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools
tracefs=/sys/kernel/tracing
if [ ! -w $tracefs/instances ] || [ ! -r $tracefs/events/sched/sched_switch/format ]; then
	echo "SKIP: no writable $tracefs/instances with sched:sched_switch (not root?)"
	exit 77
fi

p=$WORK/ports out=$WORK/out
mkdir -p "$p"
fake bad --fifo "$p" --fixture "$DATA/cap-guest" --huge-meta
pid=$FAKE_PID
(while :; do sleep 0.001; done) &
busy=$!
track $busy
t0=$(date +%s.%N)
COLLECT_LIMIT=30 collect rec --chardev-dir "$p" --name bad -o "$out" \
	--host-events sched:sched_switch --stop-timeout 5
t1=$(date +%s.%N)
kill $busy
fake_end $pid
secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
echo "measured: collector ended by itself after $secs s, exit $RC"
grep -q "still running after" "$WORK/rec.log" && { show "$WORK/rec.log"; fail "the collector did not end by itself"; }
awk -v s="$secs" 'BEGIN { exit !(s <= 10) }' || fail "the run took $secs s, want <= 10"
[ $RC = 1 ] || { show "$WORK/rec.log"; fail "collector exited $RC, want 1 (no guest could be set up)"; }
[ -s "$out/host.dat" ] || { show "$WORK/rec.log"; fail "no host.dat"; }
report "$WORK/host.txt" -i "$out/host.dat"
n=$(grep -c 'sched_switch:' "$WORK/host.txt")
echo "host.dat: $n sched_switch events"
[ "$n" -gt 0 ] || fail "host.dat holds no sched_switch"
jq -e '.guests[0].problems | test("metadata")' "$out/manifest.json" >/dev/null ||
	{ show "$out/manifest.json"; fail "the manifest does not name the guest's metadata failure"; }
echo PASS
