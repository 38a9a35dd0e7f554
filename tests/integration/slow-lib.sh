# Shared by the slow-guest tests (sourced after collect-lib.sh, not run).
# Time is measured from the guests' side: each fake agent writes a --timelog
# ("EVENT REALTIME_NS MONOTONIC_NS" when HELLO, START, STOP, BYE arrived and
# META, STOPPED went out) and the test notes CLOCK_REALTIME (date +%s%N)
# when it starts the collector, signals it and sees it gone. The collector's
# stderr is only shown, never timed.
#
# A collector that does not end by itself is SIGKILLed at the test's hard
# limit: SIGTERM is no use against one that does not read its signals.

# now_ns: CLOCK_REALTIME in nanoseconds
now_ns() {
	date +%s%N
}

# slow_fake NAME ARGS...: fake NAME with a timelog in $WORK/NAME.tl
slow_fake() {
	_sn=$1
	shift
	: >"$WORK/$_sn.tl"
	fake "$_sn" "$@" --timelog "$WORK/$_sn.tl"
}

# tl NAME EVENT: when guest NAME's fake agent first logged EVENT (realtime
# ns), empty if never
tl() {
	awk -v e="$2" '$1 == e { print $2; exit }' "$WORK/$1.tl" 2>/dev/null
}

# secs NS: nanoseconds as seconds with 3 decimals (NS may be negative)
secs() {
	awk -v n="$1" 'BEGIN { printf "%.3f", n / 1e9 }'
}

# ns_le A B: A <= B (integers that may exceed 32 bits)
ns_le() {
	awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'
}

# record_bg OUTNAME ARGS...: start `virtio-trace-collect record ARGS` in the
# background, output in $WORK/OUTNAME.log; $COLLECT_PID, and $T_RUN0 the
# realtime just before it was started
record_bg() {
	_cl=$WORK/$1.log
	shift
	T_RUN0=$(now_ns)
	# A background job of a non-interactive shell starts with SIGINT
	# ignored, and an ignored signal never reaches a signalfd: put it back
	# to the default, as a terminal's Ctrl-C finds it (perl execs in place,
	# so $! is the collector's pid).
	perl -e '$SIG{INT} = "DEFAULT"; exec { $ARGV[0] } @ARGV or die "exec $ARGV[0]: $!\n"' \
		"$COLLECT" record "$@" >"$_cl" 2>&1 &
	COLLECT_PID=$!
	track $COLLECT_PID
	T_COLLECTORS="$T_COLLECTORS $COLLECT_PID"
}

# wait_gone SECS: wait up to SECS for the collector to exit (polled every
# 50 ms); past that it is SIGKILLed and $KILLED is 1. Sets $RC and $T_GONE
# (realtime when it was seen gone; at most 50 ms late).
wait_gone() {
	KILLED=0
	_wd=$(($(now_ns) + $1 * 1000000000))
	while kill -0 $COLLECT_PID 2>/dev/null; do
		if [ "$(now_ns)" -ge $_wd ]; then
			echo "test: collector still running after $1 s: SIGKILL" >>"$_cl"
			kill -KILL $COLLECT_PID 2>/dev/null
			KILLED=1
			break
		fi
		sleep 0.05
	done
	T_GONE=$(now_ns)
	wait $COLLECT_PID
	RC=$?
}

# sleep_until NS: sleep until realtime NS
sleep_until() {
	_su=$(awk -v a="$1" -v b="$(now_ns)" 'BEGIN { d = (a - b) / 1e9; printf "%.3f", (d > 0 ? d : 0) }')
	sleep "$_su"
}

# problem_named DIR NAME LOG: guest NAME failed visibly: a message in LOG
# names it and manifest.json lists a problem for it
problem_named() {
	grep -q "guest $2" "$3" || { show "$3"; fail "no message names the guest $2"; }
	[ -n "$(guest_json "$1" "$2" '.problems // empty')" ] ||
		fail "manifest.json lists no problem for guest $2"
}

# at NS BASE: "N.NNN s" after BASE, or "never" when NS is empty
at() {
	if [ -n "$1" ]; then
		echo "$(secs $(($1 - $2))) s"
	else
		echo never
	fi
}

# setup_done NAME: when guest NAME's last setup step happened (the last
# timelog event before its first START: its last SYNC_END, or the end of its
# META), empty without a START
setup_done() {
	awk '$1 == "start" { print t; exit } { t = $2 }' "$WORK/$1.tl" 2>/dev/null
}

# on_time START_NS STOP_NS: a good guest next to a slow one, in a -d 3 --stop-timeout 3 run,
# got START within $START_MAX s of the collector's start and STOP by 3 + $START_MAX s, and the
# collector ended by itself within 12 s.
on_time() {
	[ -n "$1" ] || { show "$WORK/rec.log" "$WORK/good.fake"; fail "the good guest never got START"; }
	ns_le "$1" $((T_RUN0 + START_MAX * 1000000000)) ||
		fail "the good guest got START $(secs $(($1 - T_RUN0))) s after the collector's start, want <= $START_MAX s"
	[ -n "$2" ] || { show "$WORK/rec.log"; fail "the good guest never got STOP"; }
	ns_le "$2" $((T_RUN0 + (3 + START_MAX) * 1000000000)) ||
		fail "STOP reached the good guest $(secs $(($2 - T_RUN0))) s after the start, want <= 3 + $START_MAX s"
	[ $KILLED = 0 ] || { show "$WORK/rec.log"; fail "the collector did not end within $HARD_LIMIT s"; }
	ns_le "$T_GONE" $((T_RUN0 + 12000000000)) ||
		fail "the collector ran $(secs $((T_GONE - T_RUN0))) s, want <= 12 s (-d 3, --stop-timeout 3)"
}

# good_exact OUT: the good guest's file is exact and it has no problems.
good_exact() {
	check_exact "$1" good "$DATA/cap-guest" 2
	[ -z "$(guest_json "$1" good '.problems // empty')" ] ||
		fail "the good guest got problems: $(guest_json "$1" good .problems)"
}
