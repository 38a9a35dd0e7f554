#!/bin/sh
# Proves: trace-cmd report and dump read every variant the writer produces
# (v6, v7 uncompressed, v7 zstd) and report exactly the events the writer
# counted, per CPU and in total, with identical output for all variants.
echo "trace.dat v6, v7/none, v7/zstd: trace-cmd report/dump read them; event counts exact per CPU"
. "$VT_SRCDIR/tests/integration/td-lib.sh"
need_trace_cmd

first=
for variant in "6 none" "7 none" "7 zstd"; do
	set -- $variant
	f=$WORK/v$1-$2.dat
	if [ "$1" = 6 ]; then
		mkdat "$f" -i "$DATA/cap-host" -V 6
	else
		mkdat "$f" -i "$DATA/cap-host" -V 7 -z "$2"
	fi
	want=$(stat_of "$f" events)
	[ "$want" -gt 100 ] || fail "$f: the writer counted only '$want' events"
	[ "$(stat_of "$f" bad_pages)" = 0 ] || fail "$f: malformed pages in the fixture"

	report "$f.txt" "$f"
	got=$(count_events "$f.txt")
	[ "$got" = "$want" ] || fail "$f: report shows $got events, the writer wrote $want"
	for cpu in 0 1; do
		report "$f.cpu$cpu" --cpu $cpu "$f"
		got=$(count_events "$f.cpu$cpu")
		want=$(stat_of "$f" cpu${cpu}_events)
		[ "$got" = "$want" ] || fail "$f cpu$cpu: report shows $got events, the writer wrote $want"
	done

	trace-cmd dump --summary "$f" >"$f.dump" 2>&1 || fail "trace-cmd dump --summary $f"
	grep -qE "^[[:space:]]+$1[[:space:]]+\[Version\]" "$f.dump" || fail "$f: dump shows no version $1"
	if [ "$1" = 7 ]; then
		grep -qE "^[[:space:]]+$2[[:space:]]+\[Compression algorithm\]" "$f.dump" ||
			fail "$f: dump shows no compression $2"
		grep -q '\[buffer "", "x86-tsc" clock, 4096 page size, 2 cpus' "$f.dump" ||
			fail "$f: dump shows no flyrecord buffer"
	else
		grep -q '2 \[CPUs with tracing data\]' "$f.dump" || fail "$f: dump shows no CPU count"
		grep -q '\[x86-tsc\]' "$f.dump" || fail "$f: dump shows no trace clock"
	fi
	trace-cmd dump --all "$f" >/dev/null 2>&1 || fail "trace-cmd dump --all $f"

	if [ -z "$first" ]; then
		first=$f.txt
	elif ! cmp -s "$first" "$f.txt"; then
		diff "$first" "$f.txt" | head
		fail "$f reports differently from $first"
	fi
done
echo "PASS"
