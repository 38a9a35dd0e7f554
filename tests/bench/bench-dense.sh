#!/bin/bash
# bench-dense.sh: a dense host: one virtio-trace-collect recording GUESTS fake guests of 2 vCPUs
# each, against BASE guests (the baseline) in the same run. Each guest is a vt-fake-agent
# (--fifo ports, tests/data/cap-guest's pages REPEAT times over, --retime) with a --timelog, so
# that time is measured from the guests' side. Per row:
#   setup      when each guest got START, from the collector's start (CLOCK_REALTIME): the
#              first, the median, the last, and the spread (last - first)
#   wall, CPU  the collector's wall time, user+sys CPU (whole run: setup, -d SECS of recording,
#              stop, finish), and CPU per guest
#   RSS        the collector's maximum resident set (/usr/bin/time), and per guest above the
#              baseline's
#   fds        the collector's open files, sampled mid-recording, and the soft limit it ran with
#   exact      guests whose every CPU's events and bytes in manifest.json equal what their fake
#              agent says it sent (its exit totals); the row fails unless all are
# The baseline runs first, then the dense row; both with `nice`.
# Usage: tests/bench/bench-dense.sh [-q] [GUESTS (256)] [BASE (64)] [SECS (8)] [REPEAT (8)]
#   -q: GUESTS=128, BASE=32, SECS=5
# Env: VT_BUILDDIR (default build-bench, else build), TMPDIR.
echo "bench-dense: one collector, many 2-vCPU fake guests, against a baseline of fewer in the same run"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
GUESTS=256 BASE=64 SECS=8 REPEAT=8
if [ "${1:-}" = -q ]; then
	GUESTS=128 BASE=32 SECS=5
	shift
fi
GUESTS=${1:-$GUESTS}
BASE=${2:-$BASE}
SECS=${3:-$SECS}
REPEAT=${4:-$REPEAT}
B=${VT_BUILDDIR:-$REPO/build-bench}
[ -x "$B/host-collector/virtio-trace-collect" ] || B=$REPO/build
COLLECT=$B/host-collector/virtio-trace-collect
FAKE=$B/tests/tools/vt-fake-agent
FIX=$REPO/tests/data/cap-guest
for x in "$COLLECT" "$FAKE"; do
	[ -x "$x" ] || { echo "bench-dense: $x is not built"; exit 1; }
done
command -v /usr/bin/time >/dev/null || { echo "bench-dense: needs /usr/bin/time (apt-get install time)"; exit 1; }
command -v jq >/dev/null || { echo "bench-dense: needs jq"; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/vt-bench-dense.XXXXXX") || exit 1
PIDS=""
cleanup() {
	for p in $PIDS; do kill -TERM "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

now_ns() { date +%s%N; }

# run N: one row with N guests; prints the row and leaves $WORK/N/
run() {
	local n=$1 d=$WORK/$1 i args="" t0 pid fds rc exact=0 bad=""
	mkdir -p "$d"
	PIDS=""
	for ((i = 0; i < n; i++)); do
		mkdir -p "$d/p$i"
		nice "$FAKE" --name g$i --fifo "$d/p$i" --fixture "$FIX" --cpus 2 --repeat "$REPEAT" --retime \
			--timelog "$d/g$i.tl" 2>"$d/g$i.fake" &
		PIDS="$PIDS $!"
		args="$args --chardev-dir $d/p$i --name g$i"
	done
	for ((i = 0; i < n; i++)); do
		local w=0
		until grep -q 'ports ready' "$d/g$i.fake" 2>/dev/null; do
			[ $w -lt 300 ] || { echo "bench-dense: fake guest g$i has no ports after 30 s"; exit 1; }
			sleep 0.1
			w=$((w + 1))
		done
	done
	t0=$(now_ns)
	# shellcheck disable=SC2086
	nice /usr/bin/time -f '%e %U %S %M' -o "$d/time" "$COLLECT" record $args -o "$d/out" -d "$SECS" \
		--stop-timeout 30 >"$d/rec.log" 2>&1 &
	pid=$!
	sleep $((SECS / 2 + 1))
	# /usr/bin/time's child is the collector
	local cpid
	cpid=$(pgrep -P $pid -f 'virtio-trace-collect record' | head -1)
	fds=$(ls "/proc/$cpid/fd" 2>/dev/null | wc -l)
	local lim
	lim=$(awk '/^Max open files/ { print $4 }' "/proc/$cpid/limits" 2>/dev/null)
	wait $pid
	rc=$?
	for p in $PIDS; do
		local w=0
		while kill -0 "$p" 2>/dev/null && [ $w -lt 50 ]; do sleep 0.1; w=$((w + 1)); done
		kill -TERM "$p" 2>/dev/null
	done
	wait 2>/dev/null
	PIDS=""
	# exact: the manifest's per-CPU events and bytes against the fake agents' totals
	jq -r '.guests[] | .name as $n | .cpus[] | "\($n) \(.cpu) \(.events) \(.bytes)"' "$d/out/manifest.json" \
		>"$d/manifest.txt" 2>/dev/null
	for ((i = 0; i < n; i++)); do
		local ok=1 c
		for c in 0 1; do
			local sent got
			sent=$(awk -v c="cpu$c" '$2 == "total" && $3 == c { print $9, $7 }' "$d/g$i.fake")
			got=$(awk -v g="g$i" -v c=$c '$1 == g && $2 == c { print $3, $4 }' "$d/manifest.txt")
			[ -n "$sent" ] && [ "$sent" = "$got" ] || ok=0
		done
		if [ $ok = 1 ]; then exact=$((exact + 1)); else bad="$bad g$i"; fi
	done
	# setup: START as each fake agent logged it, from t0
	for ((i = 0; i < n; i++)); do
		awk -v t0="$t0" '$1 == "start" { printf "%.3f\n", ($2 - t0) / 1e9; exit }' "$d/g$i.tl"
	done | sort -n >"$d/starts"
	read -r wall user sys rss <"$d/time"
	local ns first med last
	ns=$(wc -l <"$d/starts")
	first=$(head -1 "$d/starts")
	last=$(tail -1 "$d/starts")
	med=$(awk -v m=$(((ns + 1) / 2)) 'NR == m' "$d/starts")
	printf '| %d | %d | %s | %s | %s | %.3f | %.2f | %.2f | %.2f | %.1f | %d / %s | %d / %d%s |\n' \
		"$n" $((2 * n)) "${first:-?}" "${med:-?}" "${last:-?}" \
		"$(awk -v a="${last:-0}" -v b="${first:-0}" 'BEGIN { print a - b }')" \
		"$wall" "$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')" \
		"$(awk -v u="$user" -v s="$sys" -v n="$n" 'BEGIN { print (u + s) * 1000 / n }')" \
		"$(awk -v r="$rss" 'BEGIN { print r / 1024 }')" "$fds" "${lim:-?}" "$exact" "$n" \
		"$([ "$ns" = "$n" ] || echo ", $((n - ns)) never started")"
	echo "$rss" >"$d/rss"
	[ $rc = 0 ] || echo "  (collector exit status $rc: $(grep -m1 -E 'error|warning' "$d/rec.log"))"
	[ -z "$bad" ] || echo "  (not exact:$(echo "$bad" | cut -c1-200))"
	grep -m1 'open files' "$d/rec.log" | sed 's/^/  (/; s/$/)/'
	[ "$exact" = "$n" ]
}

echo "guests: $BASE (baseline) and $GUESTS, 2 vCPUs each, cap-guest pages x$REPEAT per vCPU, -d $SECS"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| guests | vCPUs | first START s | median START s | last START s | setup spread s | wall s | CPU s | CPU ms per guest | max RSS MiB | fds / soft limit | exact |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
status=0
run "$BASE" || status=1
run "$GUESTS" || status=1
rb=$(cat "$WORK/$BASE/rss") rg=$(cat "$WORK/$GUESTS/rss")
echo
awk -v a="$rb" -v b="$rg" -v na="$BASE" -v nb="$GUESTS" 'BEGIN {
	printf "RSS per guest above the baseline: %.1f KiB ((%.1f - %.1f MiB) / %d guests)\n",
		(b - a) / (nb - na), b / 1024, a / 1024, nb - na }'
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
[ $status = 0 ] && echo "exact: every guest of both rows" || echo "exact: NOT every guest (see above)"
exit $status
