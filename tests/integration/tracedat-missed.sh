#!/bin/sh
# Proves: a page flagged as "events lost before this page" with a stored
# count reaches trace-cmd report as "CPU:N [COUNT EVENTS DROPPED]" (and one
# flagged without a count as "CPU:N [EVENTS DROPPED]"), exactly once each,
# right before that page's first event; the writer's lost counters agree.
echo "lost events: a flagged page shows as [N EVENTS DROPPED] in trace-cmd report"
. "$VT_SRCDIR/tests/integration/td-lib.sh"
need_trace_cmd

for v in 6 7; do
	f=$WORK/missed-v$v.dat
	mkdat "$f" -i "$DATA/cap-host" -V $v --missed 1:2:1234 --missed 0:1:?
	[ "$(stat_of "$f" lost_events)" = 1234 ] || fail "writer counted $(stat_of "$f" lost_events) lost"
	[ "$(stat_of "$f" missed_pages)" = 2 ] || fail "writer counted $(stat_of "$f" missed_pages) pages"
	report "$f.txt" "$f"
	n=$(grep -c 'EVENTS DROPPED' "$f.txt")
	[ "$n" = 2 ] || fail "v$v: $n DROPPED lines, want 2"
	grep -qx 'CPU:1 \[1234 EVENTS DROPPED\]' "$f.txt" || fail "v$v: no 'CPU:1 [1234 EVENTS DROPPED]'"
	grep -qx 'CPU:0 \[EVENTS DROPPED\]' "$f.txt" || fail "v$v: no 'CPU:0 [EVENTS DROPPED]'"
	# The line after the marker is an event of that CPU.
	grep -A1 -x 'CPU:1 \[1234 EVENTS DROPPED\]' "$f.txt" | tail -1 | grep -q ' \[001\]' ||
		fail "v$v: the DROPPED marker is not followed by a CPU 1 event"
	# Nothing else changed: same events as the unflagged file.
	mkdat "$f.plain" -i "$DATA/cap-host" -V $v
	report "$f.plain.txt" "$f.plain"
	grep -v 'EVENTS DROPPED' "$f.txt" | cmp -s - "$f.plain.txt" || fail "v$v: events differ from the unflagged file"
done
echo "PASS"
