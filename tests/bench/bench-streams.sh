#!/bin/bash
# bench-streams.sh: what the collector costs with many slow streams: G fake guests (vt-fake-agent
# --fifo, tests/data/cap-guest pages, --cpus C --rate R --repeat 0) recorded by one
# virtio-trace-collect (--sync none, default output: v7 zstd). Figures:
#   recording CPU   utime+stime of /proc/PID/stat over SECS seconds of steady streaming
#                   (sampled 2 s after start and SECS later), as % of one core and per MiB
#   total CPU       user+sys of the whole run (/usr/bin/time), finishing the files included
#   RSS             VmHWM of /proc/PID/status at the end of streaming; max RSS of the whole run
# Usage: tests/bench/bench-streams.sh [-q] [SECS (default 20)] [GUESTS (16)] [CPUS (4)] [RATE (1M)]
#   -q: SECS=8
# Env: VT_BUILDDIR (default build-bench, else build), TMPDIR.
echo "bench-streams: collector CPU and memory with many rate-limited streams"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
SECS=20
[ "${1:-}" = -q ] && { SECS=8; shift; }
SECS=${1:-$SECS}
GUESTS=${2:-16}
CPUS=${3:-4}
RATE=${4:-1M}
B=${VT_BUILDDIR:-$REPO/build-bench}
[ -x "$B/host-collector/virtio-trace-collect" ] || B=$REPO/build
COLLECT=$B/host-collector/virtio-trace-collect
FAKE=$B/tests/tools/vt-fake-agent
FIX=$REPO/tests/data/cap-guest
for x in "$COLLECT" "$FAKE"; do
	[ -x "$x" ] || { echo "bench-streams: $x is not built"; exit 1; }
done
command -v /usr/bin/time >/dev/null || { echo "bench-streams: needs /usr/bin/time (apt-get install time)"; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/vt-bench-streams.XXXXXX") || exit 1
PIDS=""
cleanup() {
	for p in $PIDS; do kill -TERM "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

TCK=$(getconf CLK_TCK)
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
args=()
for ((g = 0; g < GUESTS; g++)); do
	mkdir -p "$WORK/p$g"
	: >"$WORK/g$g.fake"
	"$FAKE" --name g$g --fifo "$WORK/p$g" --fixture "$FIX" --cpus "$CPUS" --rate "$RATE" \
		--repeat 0 2>"$WORK/g$g.fake" &
	PIDS="$PIDS $!"
	args+=(--chardev-dir "$WORK/p$g" --name g$g)
done
for ((g = 0; g < GUESTS; g++)); do
	for ((n = 0; n < 100; n++)); do
		grep -q 'ports ready' "$WORK/g$g.fake" && break
		sleep 0.05
	done
done

/usr/bin/time -f '%e %U %S %M' -o "$WORK/time" "$COLLECT" record "${args[@]}" -o "$WORK/out" \
	--sync none -q >"$WORK/col.log" 2>&1 &
TPID=$!
PIDS="$PIDS $TPID"
sleep 0.2
CPID=$(pgrep -P $TPID)
sleep 1.8
t0=$EPOCHREALTIME c0=$(ticks "$CPID")
sleep "$SECS"
t1=$EPOCHREALTIME c1=$(ticks "$CPID")
HWM=$(awk '/VmHWM/ { print $2 }' "/proc/$CPID/status")
kill -INT "$CPID"
wait $TPID
RC=$?
[ $RC = 0 ] || { echo "bench-streams: collector exited $RC"; tail "$WORK/col.log"; exit 1; }
for ((g = 0; g < GUESTS; g++)); do kill -TERM $(echo $PIDS | cut -d' ' -f$((g + 1))) 2>/dev/null; done
wait 2>/dev/null
PIDS=""
read -r wall u s maxrss <"$WORK/time"
BYTES=$(cat "$WORK"/g*.fake | awk '$2 == "total" && $3 ~ /^cpu/ { for (i = 4; i < NF; i++) if ($i == "bytes") b += $(i + 1) } END { print b + 0 }')
OUT=$(du -sm "$WORK/out" | cut -f1)

echo
echo "=== $((GUESTS * CPUS)) streams ($GUESTS guests x $CPUS CPUs) at $RATE/s each, $SECS s measured ==="
awk -v c0="$c0" -v c1="$c1" -v t0="$t0" -v t1="$t1" -v tck="$TCK" -v hwm="$HWM" -v maxrss="$maxrss" \
    -v wall="$wall" -v u="$u" -v s="$s" -v bytes="$BYTES" -v out="$OUT" -v n=$((GUESTS * CPUS)) 'BEGIN {
	cpu = (c1 - c0) / tck; dt = t1 - t0
	printf "  streaming: %.2f CPU s in %.2f s = %.2f%% of one core (%.3f%% per stream)\n", cpu, dt, 100 * cpu / dt, 100 * cpu / dt / n
	printf "  streaming: VmHWM %.1f MiB\n", hwm / 1024
	printf "  whole run: %.1f s wall, %.2f s user + %.2f s sys, max RSS %.1f MiB\n", wall, u, s, maxrss / 1024
	printf "  data: %.1f MiB sent by the agents (%.2f MiB/s overall), %d MiB written\n", bytes / 1048576, bytes / 1048576 / wall, out
	printf "  whole run CPU per GiB received: %.2f s\n", (u + s) / (bytes / 1073741824)
}'
