#!/bin/sh
# Proves (issue 13): sixteen guests, the eighth of which never answers HELLO:
# the fifteen others finish their setup within $SPREAD_MAX s of each other
# (as their fake agents saw it: the last setup step before START, i.e. the
# end of the clock sync, and START itself) and get START within $START_MAX s
# of the collector's start; each gets STOP and its file is
# exact; the collector is gone within 3 + 3 + $START_MAX + 4 s of its start
# (-d 3, --stop-timeout 3, setup and output), exits 3 and names the silent
# guest as a problem. A collector that does not end by itself is SIGKILLed
# after $HARD_LIMIT s (a failure).
echo "collect: 16 guests, one silent: the 15 others finish their setup within 2 s of each other, all exact"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
. "$VT_SRCDIR/tests/integration/slow-lib.sh"
need_tools
SPREAD_MAX=${SPREAD_MAX:-2}
START_MAX=${START_MAX:-5}
SILENT=${SILENT:-g08}
HARD_LIMIT=60

out=$WORK/out
args=
for i in 01 02 03 04 05 06 07 08 09 10 11 12 13 14 15 16; do
	n=g$i
	mkdir -p "$WORK/p-$n"
	# Both port kinds, as QEMU offers them.
	case $i in
	*[13579]) kind=--listen ;;
	*) kind=--fifo ;;
	esac
	if [ $n = "$SILENT" ]; then
		slow_fake $n $kind "$WORK/p-$n" --fixture "$DATA/cap-guest" --repeat 2 --retime --silent-hello
	else
		slow_fake $n $kind "$WORK/p-$n" --fixture "$DATA/cap-guest" --repeat 2 --retime
	fi
	eval "PID_$n=\$FAKE_PID"
	args="$args --chardev-dir $WORK/p-$n --name $n"
done
# shellcheck disable=SC2086
record_bg rec $args -o "$out" -d 3 --stop-timeout 3
wait_gone $HARD_LIMIT
for i in 01 02 03 04 05 06 07 08 09 10 11 12 13 14 15 16; do
	eval "fake_end \$PID_g$i"
done
first= last= sfirst= slast= missing= nostop=
for i in 01 02 03 04 05 06 07 08 09 10 11 12 13 14 15 16; do
	n=g$i
	[ $n = "$SILENT" ] && continue
	st=$(tl $n start) sd=$(setup_done $n)
	echo "$n: setup done at $(at "$sd" $T_RUN0), START at $(at "$st" $T_RUN0), STOP at $(at "$(tl $n stop)" $T_RUN0)"
	[ -n "$(tl $n stop)" ] || nostop="$nostop $n"
	if [ -z "$st" ]; then
		missing="$missing $n"
		continue
	fi
	[ -z "$first" ] || ns_le "$first" "$st" || first=$st
	[ -n "$first" ] || first=$st
	[ -z "$last" ] || ns_le "$st" "$last" || last=$st
	[ -n "$last" ] || last=$st
	[ -z "$sfirst" ] || ns_le "$sfirst" "$sd" || sfirst=$sd
	[ -n "$sfirst" ] || sfirst=$sd
	[ -z "$slast" ] || ns_le "$sd" "$slast" || slast=$sd
	[ -n "$slast" ] || slast=$sd
done
echo "measured: setup of the 15 done from $(at "$sfirst" $T_RUN0) to $(at "$slast" $T_RUN0) (spread $(at "$slast" "$sfirst"))"
echo "measured: START of the 15 from $(at "$first" $T_RUN0) to $(at "$last" $T_RUN0) (spread $(at "$last" "$first"));" \
	"collector gone at $(secs $((T_GONE - T_RUN0))) s, exit $RC$([ $KILLED = 1 ] && echo ' (SIGKILLed by the test)')"
[ "$SILENT" = none ] || [ -n "$(tl $SILENT hello)" ] ||
	fail "the silent guest $SILENT never got HELLO: the test did not test a silent guest"
[ -z "$missing" ] || { show "$WORK/rec.log"; fail "guests that never got START:$missing"; }
ns_le "$slast" $((sfirst + SPREAD_MAX * 1000000000)) ||
	fail "the 15 guests finished their setup over $(secs $((slast - sfirst))) s, want <= $SPREAD_MAX s"
ns_le "$last" $((first + SPREAD_MAX * 1000000000)) ||
	fail "the 15 guests got START over $(secs $((last - first))) s, want <= $SPREAD_MAX s"
ns_le "$last" $((T_RUN0 + START_MAX * 1000000000)) ||
	fail "the last of the 15 guests got START $(secs $((last - T_RUN0))) s after the collector's start, want <= $START_MAX s"
[ -z "$nostop" ] || { show "$WORK/rec.log"; fail "guests that never got STOP:$nostop"; }
[ $KILLED = 0 ] || { show "$WORK/rec.log"; fail "the collector did not end within $HARD_LIMIT s"; }
ns_le "$T_GONE" $((T_RUN0 + (10 + START_MAX) * 1000000000)) ||
	fail "the collector ran $(secs $((T_GONE - T_RUN0))) s, want <= 3 + 3 + $START_MAX + 4 s"
if [ "$SILENT" != none ]; then
	[ $RC = 3 ] || { show "$WORK/rec.log"; fail "collector exited $RC, want 3 (the silent guest is a problem)"; }
	problem_named "$out" $SILENT "$WORK/rec.log"
fi
for i in 01 02 03 04 05 06 07 08 09 10 11 12 13 14 15 16; do
	[ g$i = "$SILENT" ] && continue
	check_exact "$out" g$i "$DATA/cap-guest" 2
	[ -z "$(guest_json "$out" g$i '.problems // empty')" ] ||
		fail "guest g$i got problems: $(guest_json "$out" g$i .problems)"
done
[ "$(man "$out" '.guests | length')" = 16 ] || fail "manifest lists $(man "$out" '.guests | length') guests, want 16"
echo "PASS"
