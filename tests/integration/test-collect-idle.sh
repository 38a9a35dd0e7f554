#!/bin/sh
# Proves (issue 40: a daemon keeps one record per guest, 1024 quiet guests in under 5% of a
# core): a record whose guest is quiet sleeps. A streamed guest that sent its pages and went
# quiet, and a held guest (--hold), both with --sync none: over 3 s every thread of the
# collector together sleeps and wakes at most once (the compression thread woke every 100 ms to
# look for a lost wake-up and the loop every second: 33 times). The compression ahead still
# follows the stream without that timeout: cpuN.zst comes to hold every whole chunk (16 pages)
# of what arrived, and at the stop cpuN.zsum and the log say so exactly; the events are exact. A memory regression is not
# tested here (tests/bench/bench-daemon.sh prints PSS and Private_Dirty per child).
echo "collect: a record of a quiet guest sleeps (at most 1 wake-up in 3 s), and compresses every whole chunk ahead"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools

# Voluntary context switches of every thread of $1: each is a sleep, and the wake-up that ended it
# (the involuntary ones are preemptions, which a loaded machine adds to a running thread).
wakeups() {
	cat /proc/"$1"/task/*/status 2>/dev/null | awk '/^voluntary_ctxt_switches:/ { s += $2 } END { print s + 0 }'
}

# quiet_for PID WHAT: PID's threads woke at most once in 3 s
quiet_for() {
	_w0=$(wakeups "$1")
	sleep 3
	_w1=$(wakeups "$1")
	[ $((_w1 - _w0)) -le 1 ] || {
		grep -H voluntary_ctxt_switches /proc/"$1"/task/*/status
		fail "$2: the collector's threads woke $((_w1 - _w0)) times in 3 s, want at most 1"
	}
	echo "ok: $2: $((_w1 - _w0)) wake-ups in 3 s"
}

# Streamed: 37 passes of the fixture (1 page on cpu0, 6 on cpu1 each): 37 and 222 pages, each
# CPU some whole chunks of 16 pages (64 KiB) and a part of one.
K=37
p=$WORK/ports out=$WORK/out
mkdir -p "$p"
fake vq --fifo "$p" --fixture "$DATA/cap-guest" --repeat $K
pid=$FAKE_PID
collect_start rec --chardev-dir "$p" --name vq -o "$out" --sync none --verbose
sp=$out/.spool/guest-vq
b0=$((K * $(stat -c %s "$DATA/cap-guest/cpu0.raw"))) b1=$((K * $(stat -c %s "$DATA/cap-guest/cpu1.raw")))
w0=$((b0 / 65536 * 65536)) w1=$((b1 / 65536 * 65536))
# The page bytes cpuN.zst's chunks hold (each: le32 compressed size, le32 page bytes, the frame).
zst_raw() {
	perl -e 'open(my $f, "<", $ARGV[0]) or do { print 0; exit };
		my $t = 0;
		while (read($f, my $h, 8) == 8) { my ($c, $r) = unpack("VV", $h); $t += $r; seek($f, $c, 1) }
		print $t' "$1"
}
# Every page spooled and every whole chunk compressed ahead (with no timeout left in the
# compression thread, a lost wake-up would leave one undone for good: a busy machine only delays
# it); then 2.5 s more, for the thread to give its memory back.
_i=0
until [ "$(spool_pages "$sp" 0 | wc -c)" = $b0 ] && [ "$(spool_pages "$sp" 1 | wc -c)" = $b1 ] &&
	[ "$(zst_raw "$sp/cpu0.zst")" = $w0 ] && [ "$(zst_raw "$sp/cpu1.zst")" = $w1 ]; do
	[ $_i -lt 300 ] || { show "$WORK/rec.log"; fail "not spooled and compressed ahead in 30 s: cpu0 $(zst_raw "$sp/cpu0.zst") of $w0, cpu1 $(zst_raw "$sp/cpu1.zst") of $w1 bytes"; }
	sleep 0.1
	_i=$((_i + 1))
done
sleep 2.5
quiet_for $COLLECT_PID "a streamed guest gone quiet"
kill -INT $COLLECT_PID
collect_wait 60
fake_end $pid
[ $RC = 0 ] || { show "$WORK/rec.log"; fail "collector exited $RC, want 0"; }
check_exact "$out" vq "$DATA/cap-guest" $K
for c in 0 1; do
	eval "all=\$b$c whole=\$w$c"
	line=$(grep "guest vq cpu$c: .* region bytes compressed while streaming" "$WORK/rec.log")
	[ -n "$line" ] || { show "$WORK/rec.log"; fail "cpu$c: no compression while streaming logged"; }
	echo "$line" | grep -q "cpu$c: $whole of $all region bytes" ||
		fail "cpu$c: want every whole chunk ($whole of $all bytes) compressed ahead: $line"
	echo "ok: cpu$c: $whole of $all bytes compressed while streaming, no chunk left to a lost wake-up"
done

# Held: nothing crosses the ports until the stop.
p=$WORK/ports-hold out=$WORK/out-hold
mkdir -p "$p"
fake vh --fifo "$p" --fixture "$DATA/cap-guest" --repeat 2 --ring-pages 2
pid=$FAKE_PID
collect_start hold --hold --chardev-dir "$p" --name vh -o "$out" --sync none
wait_log "$WORK/vh.fake" "START: holding" 20 "the agent was not asked to hold"
sleep 1
quiet_for $COLLECT_PID "a held guest"
kill -INT $COLLECT_PID
collect_wait 60
fake_end $pid
[ $RC = 0 ] || { show "$WORK/hold.log"; fail "held recording: exit $RC, want 0"; }
[ "$(man "$out" .held)" = true ] || fail "manifest: held is $(man "$out" .held)"
echo "PASS"
