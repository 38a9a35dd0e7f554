#!/bin/sh
# Proves: a TIME_SHIFT option in a guest file moves every event timestamp by
# exactly the recorded offset (positive and negative, v6 and v7), per CPU, and
# report --raw-ts shows the untouched timestamps.
echo "TIME_SHIFT: guest timestamps move by exactly the offset; --raw-ts shows them raw"
. "$VT_SRCDIR/tests/integration/td-lib.sh"
need_trace_cmd

mkdat "$WORK/plain.dat" -i "$DATA/cap-guest" -z none
report "$WORK/plain.txt" "$WORK/plain.dat"
timestamps "$WORK/plain.txt" >"$WORK/plain.ts"
[ -s "$WORK/plain.ts" ] || fail "no timestamps in the report"

for v in 6 7; do
	for off in 123456789 -1000; do
		f=$WORK/shift-v$v$off.dat
		mkdat "$f" -i "$DATA/cap-guest" -V $v --trace-id 0x2222 --ts-peer 0x1111 --ts-sample 0:$off
		report "$f.txt" "$f"
		timestamps "$f.txt" >"$f.ts"
		paste -d ' ' "$WORK/plain.ts" "$f.ts" |
			awk -v off=$off '$2 - $1 != off { bad++ } END { exit bad > 0 || NR == 0 }' ||
			fail "v$v: timestamps did not move by exactly $off"
		[ "$(wc -l <"$f.ts")" = "$(wc -l <"$WORK/plain.ts")" ] || fail "v$v: event count changed"
		report "$f.raw" --raw-ts "$f"
		timestamps "$f.raw" | cmp -s - "$WORK/plain.ts" || fail "v$v: --raw-ts timestamps are not the raw ones"
	done
done
echo "PASS"
