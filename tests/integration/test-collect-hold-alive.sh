#!/bin/sh
# Proves (issue 40, daemon scale): record --alive-interval S sends the agent one STATS_REQ every
# S seconds while a held session is silent (the fake logs each, about 1 s apart with S = 1),
# answered and taken apart from the session's statistics: the manifest's per-CPU figures are the
# STOP's exactly (the fake's last STATS; the same as a run without --alive-interval), no warning.
# A check answered 12 s late (a loaded guest) gets one warning at 10 s, not a failure; the next
# check goes then, both are answered in order and the final figures are still the STOP's.
# An agent that restarts mid-hold (the fake forgets its HELLO) answers the next check "send HELLO
# first", and the recording ends within about 2 s with "the agent restarted"; without
# --alive-interval (and --sync-interval 0) nothing notices it in that time.
echo "collect: --alive-interval checks a held session once per interval; a restarted agent ends it"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools

# held NAME SECS [RECORD ARGS...]: a held recording of fake NAME (5 passes into a 3-page ring,
# $FAKE_ARGS added), stopped with SIGINT SECS seconds after its START; output in $WORK/out-NAME,
# exit status in $RC
held() {
	_hn=$1 _hs=$2
	shift 2
	mkdir -p "$WORK/ports-$_hn"
	# shellcheck disable=SC2086
	fake "$_hn" --fifo "$WORK/ports-$_hn" --fixture "$DATA/cap-guest" --repeat 5 --ring-pages 3 \
		$FAKE_ARGS
	_hp=$FAKE_PID
	collect_start "$_hn" --hold --sync-interval 0 --chardev-dir "$WORK/ports-$_hn" --name "$_hn" \
		-o "$WORK/out-$_hn" "$@"
	wait_log "$WORK/$_hn.fake" "START: holding" 20 "$_hn: the agent was not asked to hold"
	sleep "$_hs"
	kill -INT $COLLECT_PID
	collect_wait 60
	fake_end $_hp
	[ $RC = 0 ] || { show "$WORK/$_hn.log" "$WORK/$_hn.fake"; fail "$_hn: exit $RC, want 0"; }
}

# figures DIR NAME: the manifest's per-CPU figures that come from the agent's STATS
figures() {
	guest_json "$1" "$2" '[.cpus[] | {cpu, agent_bytes, agent_pages, stats}]' | jq -c .
}

held alive 5.5 --alive-interval 1
n=$(grep -c 'STATS_REQ seq' "$WORK/alive.fake")
[ "$n" -ge 4 ] && [ "$n" -le 6 ] || { show "$WORK/alive.fake"; fail "$n STATS_REQ in 5.5 s, want 4 to 6"; }
# Each after the last by about the interval (the fake's "(+T s)" stamps).
gaps=$(grep 'STATS_REQ seq' "$WORK/alive.fake" | sed 's/.*(+\([0-9.]*\) s)$/\1/' |
	awk 'NR > 1 { printf "%.2f ", $1 - p } { p = $1 }')
for g in $gaps; do
	awk -v g="$g" 'BEGIN { exit !(g >= 0.8 && g <= 1.6) }' || fail "STATS_REQ $gaps s apart, want about 1 s"
done
echo "ok: $n STATS_REQ, $gaps s apart"
# Every check was answered (a series each, then the STOP's) and none was taken for the final one.
series=$(grep -c 'STATS all pages' "$WORK/alive.fake")
[ "$series" = $((n + 1)) ] || fail "$series STATS series for $n checks and the STOP"
! grep -q 'liveness check' "$WORK/alive.log" || { show "$WORK/alive.log"; fail "a liveness warning"; }
for c in 0 1; do
	want_b=$(fake_stats alive $c bytes) want_p=$(fake_stats alive $c pages)
	[ "$want_b" -gt 0 ] || fail "cpu$c: the STOP's STATS say $want_b bytes"
	got_b=$(guest_json "$WORK/out-alive" alive ".cpus[] | select(.cpu == $c) | .agent_bytes")
	got_p=$(guest_json "$WORK/out-alive" alive ".cpus[] | select(.cpu == $c) | .agent_pages")
	[ "$got_b/$got_p" = "$want_b/$want_p" ] ||
		fail "cpu$c: manifest agent_bytes/pages $got_b/$got_p, the STOP's STATS $want_b/$want_p"
done
held plain 2.5
grep -q 'STATS_REQ' "$WORK/plain.fake" && fail "STATS_REQ sent without --alive-interval"
a=$(figures "$WORK/out-alive" alive) p=$(figures "$WORK/out-plain" plain)
[ -n "$a" ] && [ "$a" = "$p" ] || fail "the final figures differ: with checks $a, without $p"
echo "ok: the final figures are the STOP's, as without checks: $a"

# A loaded guest: the first check answered 12 s late. One warning at 10 s, the next check then
# (two owed), both answered in order, the checks go on, and the stop's figures are still its own.
FAKE_ARGS="--stats-delay 12" held slow 17 --alive-interval 1
FAKE_ARGS=
w=$(grep -c 'no answer to a liveness check (STATS_REQ) within 10 s' "$WORK/slow.log")
[ "$w" = 1 ] || { show "$WORK/slow.log"; fail "$w warnings of a late answer, want 1"; }
grep -q 'answering 2 held STATS_REQ' "$WORK/slow.fake" ||
	{ show "$WORK/slow.fake"; fail "the second check was not sent after the first went overdue"; }
n=$(grep -c 'STATS_REQ seq [0-9]* (' "$WORK/slow.fake") series=$(grep -c 'STATS all pages' "$WORK/slow.fake")
[ "$n" -ge 4 ] && [ "$series" = $((n + 1)) ] || fail "$n checks, $series STATS series (want checks + 1)"
s=$(figures "$WORK/out-slow" slow)
[ "$s" = "$p" ] || fail "a late answer changed the final figures: $s, want $p"
echo "ok: a check answered 12 s late: one warning, $n checks in all, the final figures the STOP's"

# restarted [RECORD ARGS...]: a held recording of a fake that forgets its HELLO 2.5 s after START
# (half-way between two checks of --alive-interval 1);
# sets $WAITED, the tenths of a second record ran on after that (at most 50)
restarted() {
	rm -rf "$WORK/ports-re" "$WORK/out-re"
	mkdir -p "$WORK/ports-re"
	fake re --fifo "$WORK/ports-re" --fixture "$DATA/cap-guest" --repeat 5 --ring-pages 3 \
		--forget-hello 2.5
	_rp=$FAKE_PID
	collect_start re --hold --sync-interval 0 --chardev-dir "$WORK/ports-re" --name re \
		-o "$WORK/out-re" "$@"
	wait_log "$WORK/re.fake" "forgetting the session" 20 "the fake agent did not restart"
	WAITED=0
	while kill -0 $COLLECT_PID 2>/dev/null && [ $WAITED -lt 50 ]; do
		sleep 0.1
		WAITED=$((WAITED + 1))
	done
	kill -INT $COLLECT_PID 2>/dev/null
	collect_wait 30
	fake_end $_rp
}

restarted
[ $WAITED -ge 50 ] || { show "$WORK/re.log" "$WORK/re.fake"; fail "without --alive-interval: ended $((WAITED / 10)).$((WAITED % 10)) s after the restart (nothing should notice)"; }
echo "ok: without --alive-interval the restart goes unnoticed for 5 s"
restarted --alive-interval 1
[ $WAITED -le 25 ] || { show "$WORK/re.log" "$WORK/re.fake"; fail "record ran on $((WAITED / 10)).$((WAITED % 10)) s after the agent restarted, want about 2 s at most"; }
grep -q 'STATS_REQ before HELLO' "$WORK/re.fake" &&
	grep -q 'answering seq [0-9]* with ERROR .*send HELLO first' "$WORK/re.fake" ||
	{ show "$WORK/re.fake"; fail "the check was not answered send HELLO first"; }
grep -q 'guest re: the agent restarted (it asks for HELLO again): its recording ends there' "$WORK/re.log" ||
	{ show "$WORK/re.log"; fail "no 'the agent restarted' message"; }
[ $RC = 3 ] || { show "$WORK/re.log"; fail "exit $RC, want 3 (the guest failed)"; }
echo "ok: the restarted agent ended the recording $((WAITED / 10)).$((WAITED % 10)) s later: $(grep -m1 'agent restarted' "$WORK/re.log" | cut -c1-120)"
echo "PASS"
