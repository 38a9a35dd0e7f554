#!/bin/sh
# Proves: a spool file whose size is not a multiple of the page size is
# written as whole pages, never truncated: cut after the last page's data it
# reports exactly like the uncut file; cut in the middle of an event, the
# events before the cut survive and trace-cmd reads no garbage.
echo "partial trailing page: padded to a whole page, no event lost or invented"
. "$VT_SRCDIR/tests/integration/td-lib.sh"
need_trace_cmd

cp -r "$DATA/cap-host" "$WORK/cut" || fail "copy fixture"
chmod -R u+w "$WORK/cut"
raw=$WORK/cut/cpu1.raw
size=$(wc -c <"$DATA/cap-host/cpu1.raw")
pages=$((size / 4096))
last=$(((pages - 1) * 4096))
# The last page's commit length (low 27 bits of the little-endian word at 8).
len=$(od -An -tu4 -j $((last + 8)) -N4 "$DATA/cap-host/cpu1.raw" | tr -d ' ')
len=$((len & 134217727))
[ "$len" -gt 64 ] || fail "fixture's last page holds only $len bytes"

mkdat "$WORK/full.dat" -i "$DATA/cap-host"
report "$WORK/full.txt" "$WORK/full.dat"

for v in 6 7; do
	head -c $((last + 16 + len)) "$DATA/cap-host/cpu1.raw" >"$raw"
	f=$WORK/a$v.dat
	mkdat "$f" -i "$WORK/cut" -V $v
	[ "$(stat_of "$f" padded_pages)" = 1 ] || fail "v$v: cut after data: not padded"
	[ "$(stat_of "$f" repaired_pages)" = 0 ] || fail "v$v: cut after data: repaired"
	[ "$(stat_of "$f" bytes)" = "$(stat_of "$WORK/full.dat" bytes)" ] ||
		fail "v$v: cut after data: not whole pages"
	report "$f.txt" "$f"
	cmp -s "$f.txt" "$WORK/full.txt" || fail "v$v: cut after data reports differently"

	head -c $((last + 16 + len / 2 + 2)) "$DATA/cap-host/cpu1.raw" >"$raw"
	f=$WORK/b$v.dat
	mkdat "$f" -i "$WORK/cut" -V $v
	[ "$(stat_of "$f" repaired_pages)" = 1 ] || fail "v$v: cut mid-data: not repaired"
	[ "$(stat_of "$f" pages)" = "$(stat_of "$WORK/full.dat" pages)" ] || fail "v$v: a page was dropped"
	report "$f.txt" "$f"
	got=$(count_events "$f.txt")
	[ "$got" = "$(stat_of "$f" events)" ] || fail "v$v: report shows $got events, the writer wrote $(stat_of "$f" events)"
	full=$(count_events "$WORK/full.txt")
	[ "$got" -lt "$full" ] && [ "$got" -gt $((full - len / 8)) ] ||
		fail "v$v: $got events after the cut, $full before"
	# Every event reported is one of the uncut file's events.
	sort "$f.txt" >"$f.sorted"
	sort "$WORK/full.txt" >"$WORK/full.sorted"
	[ -z "$(comm -23 "$f.sorted" "$WORK/full.sorted")" ] || fail "v$v: events that were never captured"
done
echo "PASS"
