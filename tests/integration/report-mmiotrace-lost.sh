#!/bin/sh
# Proves: `report --mmiotrace-log` writes "MARK sec.usec Lost N events." exactly where
# trace-cmd report prints "CPU:C [N EVENTS DROPPED]" (same count, the timestamp of the event
# right after it), and "Lost an unknown number of events." for "[EVENTS DROPPED]", in the
# same order, and nowhere else. Fixture: tests/data/cap-host (real host pages) with two pages
# flagged as lossy by vt-mkdat, wrapped in a one-guest run directory.
echo "report --mmiotrace-log: lost-event lines exactly where trace-cmd reports dropped events (fixture)"
. "$VT_SRCDIR/tests/integration/td-lib.sh"
need_trace_cmd
COLLECT=$VT_BUILDDIR/host-collector/virtio-trace-collect

run=$WORK/run
mkdir -p "$run"
mkdat "$run/guest-fx.dat" -i "$DATA/cap-host" --missed 1:2:1234 --missed 0:1:? --missed 1:4:7
printf '{"tool":"fixture","version":"0","guests":[{"name":"fx","file":"guest-fx.dat"}]}\n' \
	>"$run/manifest.json"
report "$WORK/tc.txt" -i "$run/guest-fx.dat"
# The fixture has host events, no mmiotrace entry: the log holds the header and the lost-event
# lines, and report says there was nothing to log (exit 5).
"$COLLECT" report --mmiotrace-log "$WORK/mmio.log" "$run" >"$WORK/report.txt" 2>"$WORK/report.err"
rc=$?
[ $rc = 5 ] && grep -q "^virtio-trace-collect report: error: --mmiotrace-log: no guest recorded mmiotrace entries (record them with \`record --tracer mmiotrace\`)" "$WORK/report.err" ||
	fail "report --mmiotrace-log exited $rc, said '$(head -c 300 "$WORK/report.err")', want 5 and no entries"
# trace-cmd: each DROPPED line with the timestamp of the next event line (as sec.usec; a
# counter clock prints plain nanoseconds).
awk '/EVENTS DROPPED\]$/ { n = ($2 == "[EVENTS") ? "?" : substr($2, 2); want = 1; next }
     want && match($0, /\] *[0-9]+(\.[0-9]+)?:/) {
	t = substr($0, RSTART, RLENGTH); gsub(/[]: ]/, "", t)
	if (t !~ /\./) { us = int((t + 500) / 1000); s = int(us / 1000000); t = sprintf("%d.%06d", s, us - s * 1000000) }
	print t, n; want = 0 }' \
	"$WORK/tc.txt" >"$WORK/lost.tc"
sed -n 's/^MARK \([0-9.]*\) Lost \([0-9]*\) events\.$/\1 \2/p; s/^MARK \([0-9.]*\) Lost an unknown number of events\.$/\1 ?/p' \
	"$WORK/mmio.log" >"$WORK/lost.log"
echo "trace-cmd: $(tr '\n' ';' <"$WORK/lost.tc")  log: $(tr '\n' ';' <"$WORK/lost.log")"
[ "$(wc -l <"$WORK/lost.tc")" = 3 ] || fail "the fixture should make 3 DROPPED lines"
cmp -s "$WORK/lost.tc" "$WORK/lost.log" || fail "lost-event lines differ from trace-cmd's"
[ "$(head -1 "$WORK/mmio.log")" = "VERSION 20070824" ] || fail "the log does not start with VERSION 20070824"
grep -q 'lost: 1241 events at 3 points' "$WORK/report.txt" || fail "the summary does not count 1241 lost events at 3 points"
echo "PASS"
