#!/bin/sh
# Proves (issue 29): the end of a recording is one line for the host and one
# per guest, each figure the manifest's: the file, the CPUs, MB received, the
# events, the events lost in pages (and the overrun when not 0), pages over
# --max-size, the clock's method and bound (or "not synced"), "(no file)"
# and the problems for a guest that could not be set up; then a line that
# says what to run next, whose trace-cmd command reads every file. With
# --quiet nothing of it is printed. Two fake guests (one with lost events and
# an overrun, one cut by --max-size), a guest whose ports do not exist, and
# host events.
echo "collect: the end of a recording: a line per trace with the manifest's figures, and what to run next"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools
need_host_tracefs sched:sched_switch

mkdir -p "$WORK/pa" "$WORK/pb"
fake alpha --fifo "$WORK/pa" --fixture "$DATA/cap-guest" --repeat 3 --retime --missed 0:2:17 --overrun 1:40
pa=$FAKE_PID
fake beta --fifo "$WORK/pb" --fixture "$DATA/cap-guest" --repeat 0 --retime --rate 200K
pb=$FAKE_PID
out=$WORK/out
collect rec --chardev-dir "$WORK/pa" --name alpha --chardev-dir "$WORK/pb" --name beta \
	--chardev-dir "$WORK/nosuch" --name ghost -o "$out" -d 2 --max-size 300K \
	--host-events sched:sched_switch --sync probe
fake_end $pa
fake_end $pb
[ $RC = 3 ] || { show "$WORK/rec.log"; fail "collector exited $RC, want 3 (ghost failed, beta over --max-size)"; }
sed -n '/recorded in /,$p' "$WORK/rec.log" >"$WORK/summary"
cat "$WORK/summary"
grep -q "^virtio-trace-collect record: recorded in $out (exit status 3: see the problems above):\$" "$WORK/summary" ||
	fail "no 'recorded in $out (exit status 3 ...)' line"
grep -q "wrote $out" "$WORK/rec.log" && fail "the old 'wrote DIR' line is still printed"

# want NAME: the line the manifest's figures make for trace NAME (host or a guest)
want() {
	if [ "$1" = host ]; then sel=.host; else sel=".guests[] | select(.name == \"$1\")"; fi
	jq -r "$sel"' |
		def mb: (. / 10000 | floor) as $c | "\($c / 100 | floor).\($c % 100 | tostring | if length < 2 then "0" + . else . end)";
		[ (.file // "(no file)"), (.cpus | length),
		  ([.cpus[].bytes] | add // 0), ([.cpus[].events] | add // 0),
		  .lost_events.in_pages, .lost_events.overrun,
		  ([.cpus[].dropped_pages_max_size] | add // 0),
		  (.sync.method // "host"), (.sync.bound_ns // "null"), .problems ] | @tsv' "$out/manifest.json"
}

for t in host alpha beta ghost; do
	line=$(grep -E "^  $t +" "$WORK/summary") || fail "no summary line for $t"
	IFS='	' read -r file cpus bytes events lost overrun dropped method bound problems <<EOF
$(want $t)
EOF
	kind=vCPUs
	[ $t = host ] && kind=CPUs
	# MB as the collector rounds it: printf's %.2f of bytes / 1e6
	mb=$(awk -v b="$bytes" 'BEGIN { printf "%.2f", b / 1e6 }')
	exp="  $t +$(printf '%s' "$file" | sed 's/[.()]/\\&/g') +$cpus $kind +$mb MB +$events events  lost $lost"
	[ "$overrun" != 0 ] && exp="$exp \\(overrun $overrun\\)"
	[ "$dropped" != 0 ] && exp="$exp, $dropped pages over --max-size"
	case $method in
	host) ;;
	none) exp="$exp, clock not synced" ;;
	*) exp="$exp, clock $method \\+-[0-9.]+ (ns|us|ms)" ;;
	esac
	[ -n "$problems" ] && exp="$exp; problems: see manifest.json"
	printf '%s\n' "$line" | grep -qE "^$exp\$" ||
		fail "$t: summary line '$line' does not match the manifest's '$exp'"
	echo "$t: matches the manifest ($cpus $kind, $bytes bytes, $events events, lost $lost, overrun $overrun, dropped $dropped, sync $method)"
done
# The figures this test means to show are there at all.
[ "$(jq -r '.guests[] | select(.name == "alpha") | .lost_events.in_pages' "$out/manifest.json")" -gt 0 ] ||
	fail "alpha lost no events: the test did not test lost events"
[ "$(jq -r '[.guests[] | select(.name == "beta") | .cpus[].dropped_pages_max_size] | add' "$out/manifest.json")" -gt 0 ] ||
	fail "beta dropped nothing: the test did not test --max-size"

# What to run next: the trace-cmd command reads every file the manifest names.
cmd=$(sed -n 's/^  next: //p' "$WORK/summary")
exp="trace-cmd report -i $out/host.dat -i $out/guest-alpha.dat -i $out/guest-beta.dat"
[ "$cmd" = "$exp" ] || fail "next: '$cmd', want '$exp'"
$cmd >"$WORK/next.txt" 2>&1 || { tail "$WORK/next.txt"; fail "the suggested command failed"; }
grep -q "^ *guest-beta.dat: " "$WORK/next.txt" || fail "the suggested command shows no guest-beta.dat event"
html=$(sed -n 's/^        virtio-trace-collect report --html //p' "$WORK/summary")
[ "$html" = "$out/timeline.html $out" ] || fail "next (html): '$html'"

# --quiet: no summary.
mkdir -p "$WORK/pq"
fake q --fifo "$WORK/pq" --fixture "$DATA/cap-guest" --repeat 1 --retime
collect quiet --chardev-dir "$WORK/pq" --name q -o "$WORK/outq" -d 1 -q
fake_end $FAKE_PID
[ $RC = 0 ] || { show "$WORK/quiet.log"; fail "--quiet: exit $RC"; }
[ ! -s "$WORK/quiet.log" ] || { show "$WORK/quiet.log"; fail "--quiet printed something"; }
echo "PASS"
