#!/bin/bash
# bench-perfetto.sh: `virtio-trace-collect report --perfetto` against `trace-cmd report` on the
# same files, in the same run. A recording of GUESTS fake guests (tests/data/cap-guest's pages
# REPEAT times over, --retime, 2 vCPUs each) and, where tracefs allows, the host's sched_switch;
# then, ROUNDS times each, alternating:
#   trace-cmd   trace-cmd report -i host.dat -i guest-*.dat > /dev/null (the merged timeline)
#   perfetto    virtio-trace-collect report --perfetto OUT DIR > /dev/null (the whole command:
#               the Perfetto file, and the text summary it prints besides)
# Per row: the best and median wall time, events per second (the events trace-cmd shows), and
# the speed relative to trace-cmd (its median time over ours: 1.0 is as fast, more is faster).
# Target (issue 41): at least 0.5x trace-cmd's speed; "met" or "NOT met" is printed beside it.
# Usage: tests/bench/bench-perfetto.sh [GUESTS (2)] [REPEAT (400)] [ROUNDS (5)]
# Env: VT_BUILDDIR (default build-bench, else build), TMPDIR.
echo "bench-perfetto: report --perfetto against trace-cmd report on the same files"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
GUESTS=${1:-2}
REPEAT=${2:-400}
ROUNDS=${3:-5}
B=${VT_BUILDDIR:-$REPO/build-bench}
[ -x "$B/host-collector/virtio-trace-collect" ] || B=$REPO/build
COLLECT=$B/host-collector/virtio-trace-collect
FAKE=$B/tests/tools/vt-fake-agent
FIX=$REPO/tests/data/cap-guest
for x in "$COLLECT" "$FAKE"; do
	[ -x "$x" ] || { echo "bench-perfetto: $x is not built"; exit 1; }
done
command -v trace-cmd >/dev/null || { echo "bench-perfetto: needs trace-cmd"; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/vt-bench-perfetto.XXXXXX") || exit 1
PIDS=""
cleanup() {
	for p in $PIDS; do kill -TERM "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

args=""
for ((i = 0; i < GUESTS; i++)); do
	mkdir -p "$WORK/p$i"
	"$FAKE" --name "g$i" --fifo "$WORK/p$i" --fixture "$FIX" --repeat "$REPEAT" --retime \
		--tsc-offset $((1000000 * (i + 1))) 2>"$WORK/g$i.fake" &
	PIDS="$PIDS $!"
	args="$args --chardev-dir $WORK/p$i --name g$i"
done
for ((i = 0; i < GUESTS; i++)); do
	for ((t = 0; t < 100; t++)); do
		grep -q 'ports ready' "$WORK/g$i.fake" && break
		sleep 0.1
	done
done
host=""
if [ -w /sys/kernel/tracing/instances ] && [ -r /sys/kernel/tracing/events/sched/sched_switch/format ]; then
	host="--host-events sched:sched_switch"
fi
# shellcheck disable=SC2086
"$COLLECT" record $args -o "$WORK/out" --duration 4 --quiet --sync probe $host >"$WORK/rec.log" 2>&1 ||
	{ tail "$WORK/rec.log"; echo "bench-perfetto: record failed"; exit 1; }
for p in $PIDS; do wait "$p" 2>/dev/null; done
PIDS=""

files=""
[ -f "$WORK/out/host.dat" ] && files="-i $WORK/out/host.dat"
for ((i = 0; i < GUESTS; i++)); do
	files="$files -i $WORK/out/guest-g$i.dat"
done
# shellcheck disable=SC2086
events=$(trace-cmd report $files 2>/dev/null | grep -cE -- '-[0-9]+ +\[[0-9]{3}\] *[0-9.]+: ')
bytes=$(du -cb "$WORK"/out/*.dat | tail -1 | cut -f1)

now_ns() { date +%s%N; }
declare -a T_TC T_PF
for ((r = 0; r < ROUNDS; r++)); do
	t0=$(now_ns)
	# shellcheck disable=SC2086
	trace-cmd report $files >/dev/null 2>&1
	t1=$(now_ns)
	"$COLLECT" report --perfetto "$WORK/out.pftrace" "$WORK/out" >/dev/null 2>"$WORK/pf.err" ||
		{ cat "$WORK/pf.err"; echo "bench-perfetto: report --perfetto failed"; exit 1; }
	t2=$(now_ns)
	T_TC+=($((t1 - t0)))
	T_PF+=($((t2 - t1)))
done
pfbytes=$(stat -c %s "$WORK/out.pftrace")

median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
best() { printf '%s\n' "$@" | sort -n | head -1; }
m_tc=$(median "${T_TC[@]}")
m_pf=$(median "${T_PF[@]}")
echo "files: $(ls "$WORK"/out/*.dat | wc -l) trace.dat ($bytes bytes), $events events; Perfetto file $pfbytes bytes"
printf '%-10s %10s %10s %12s %8s\n' row "best ms" "median ms" "events/s" speed
printf '%-10s %10.1f %10.1f %12.0f %8.2f\n' trace-cmd "$(best "${T_TC[@]}")e-6" "${m_tc}e-6" \
	"$(awk -v e="$events" -v t="$m_tc" 'BEGIN { print e / (t / 1e9) }')" 1
printf '%-10s %10.1f %10.1f %12.0f %8.2f\n' perfetto "$(best "${T_PF[@]}")e-6" "${m_pf}e-6" \
	"$(awk -v e="$events" -v t="$m_pf" 'BEGIN { print e / (t / 1e9) }')" \
	"$(awk -v a="$m_tc" -v b="$m_pf" 'BEGIN { print a / b }')"
awk -v a="$m_tc" -v b="$m_pf" 'BEGIN { printf "target: at least 0.5x trace-cmd report: %.2fx, %s\n", a / b, (a / b >= 0.5) ? "met" : "NOT met" }'
