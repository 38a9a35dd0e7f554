#!/bin/sh
# Proves (issue 40: a daemon keeps one record per guest, 1024 quiet guests in under 5% of a
# core): a record whose guest is quiet sleeps. A streamed guest that sent its pages and went
# quiet, and a held guest (--hold), both with --sync none: over 3 s every thread of the
# collector together is woken at most twice (the compression thread woke every 100 ms to look
# for a lost wake-up and the loop every second: 33 times; now the compression thread wakes
# once, 2 s after its last chunk, to give its memory back). The compression ahead still
# follows the stream without that timeout: at the stop, cpuN.zst holds every whole chunk
# (16 pages) of what arrived, exactly, and the events are exact. A memory regression is not
# tested here (tests/bench/bench-daemon.sh prints PSS and Private_Dirty per child).
echo "collect: a record of a quiet guest sleeps (at most 2 wake-ups in 3 s), and compresses every whole chunk ahead"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools

# Voluntary context switches of every thread of $1: each is a sleep, and the wake-up that ended it
# (the involuntary ones are preemptions, which a loaded machine adds to a running thread).
wakeups() {
	cat /proc/"$1"/task/*/status 2>/dev/null | awk '/^voluntary_ctxt_switches:/ { s += $2 } END { print s + 0 }'
}

# quiet_for PID WHAT: PID's threads woke at most twice in 3 s
quiet_for() {
	_w0=$(wakeups "$1")
	sleep 3
	_w1=$(wakeups "$1")
	[ $((_w1 - _w0)) -le 2 ] || {
		grep -H voluntary_ctxt_switches /proc/"$1"/task/*/status
		fail "$2: the collector's threads woke $((_w1 - _w0)) times in 3 s, want at most 2"
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
# Every page spooled, and a second more for the streams to settle (their last rests end).
_i=0
until [ "$(spool_pages "$sp" 0 | wc -c)" = $b0 ] && [ "$(spool_pages "$sp" 1 | wc -c)" = $b1 ]; do
	[ $_i -lt 200 ] || { show "$WORK/rec.log"; fail "the $K passes were not spooled in 20 s"; }
	sleep 0.1
	_i=$((_i + 1))
done
sleep 1
quiet_for $COLLECT_PID "a streamed guest gone quiet"
kill -INT $COLLECT_PID
collect_wait 60
fake_end $pid
[ $RC = 0 ] || { show "$WORK/rec.log"; fail "collector exited $RC, want 0"; }
check_exact "$out" vq "$DATA/cap-guest" $K
for c in 0 1; do
	eval "all=\$b$c"
	whole=$((all / 65536 * 65536))
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
