#!/bin/bash
# bench-daemon.sh: what the always-on daemon costs in steady state with N quiet fake guests
# (vt-fake-agent --listen, 1 KiB/s per CPU, 2 CPUs), mode stream with a window longer than the
# run: the daemon's own CPU (utime+stime of /proc/PID/stat over SECONDS) and RSS, and its record
# children's CPU and RSS summed (one child per guest: the daemon runs `record`, it does not
# record); then per child: CPU, threads, wakeups per second (voluntary + nonvoluntary context
# switches summed over /proc/PID/task/*/status, over SECONDS), and PSS and Private_Dirty
# (/proc/PID/smaps_rollup) at the end. Not a test: it prints figures.
# Usage: tests/bench/bench-daemon.sh [SECONDS, default 10] [N...] (default 1 64)
# Env: VT_BUILDDIR (default ./build), VT_SRCDIR (default .), VT_BENCH_MODE (the daemon's mode:
# stream, the default, or hold). Needs root (the state directory and the children's tracefs
# access), about 1 minute for 1 and 64.
echo "bench-daemon: daemon and children CPU/RSS/wakeups with N quiet fake guests"
set -uo pipefail
SRC=${VT_SRCDIR:-.}
B=${VT_BUILDDIR:-./build}
COLLECT=$B/host-collector/virtio-trace-collect
FAKE=$B/tests/tools/vt-fake-agent
SECS=${1:-10}
shift || true
SIZES=${*:-1 64}
MODE=${VT_BENCH_MODE:-stream}
TCK=$(getconf CLK_TCK)
WORK=$(mktemp -d /tmp/vt-bench-daemon.XXXXXX)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	sleep 1
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
# Context switches of every thread of $1 (a wakeup each: a sleeping thread that runs again).
ctxsw() { cat /proc/$1/task/*/status 2>/dev/null | awk '/_ctxt_switches:/ { s += $2 } END { print s + 0 }'; }
threads() { awk '/^Threads:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
# Pss and Private_Dirty (kB) of $1.
smaps_kb() { awk '/^Pss:/ { p = $2 } /^Private_Dirty:/ { d = $2 } END { print p + 0, d + 0 }' \
	"/proc/$1/smaps_rollup" 2>/dev/null || echo 0 0; }

run() {
	local n=$1 d i t0 t1 c0 c1 k0 k1 kids att rss krss w0 w1 nth pss pd x y
	rm -rf "$WORK/run" && mkdir -p "$WORK/run"
	PIDS=()
	{ echo "domains = none"; echo "mode = $MODE"; echo "window = 3600"; echo "min-free = 0"
	  echo "state-dir = $WORK/run/state"; } >"$WORK/run/conf"
	for ((i = 0; i < n; i++)); do
		mkdir -p "$WORK/run/g$i"
		"$FAKE" --name "g$i" --listen "$WORK/run/g$i" --fixture "$SRC/tests/data/cap-guest" \
			--repeat 0 --rate 1K --retime 2>/dev/null &
		PIDS+=($!)
		echo "guest = g$i $WORK/run/g$i" >>"$WORK/run/conf"
	done
	sleep 1
	"$COLLECT" daemon --config "$WORK/run/conf" >"$WORK/run/log" 2>&1 &
	d=$!
	PIDS+=($d)
	for ((i = 0; i < 600; i++)); do
		att=$("$COLLECT" daemon --status --state-dir "$WORK/run/state" 2>/dev/null | grep -c ' attached ')
		[ "${att:-0}" -ge "$n" ] && break
		sleep 0.2
	done
	echo "$n guests ($MODE): $att attached after $((i / 5)).$((i % 5 * 2)) s"
	sleep 2
	kids=$(pgrep -P $d | tr '\n' ' ')
	t0=$(date +%s.%N); c0=$(cpu_ticks $d); k0=0; w0=0
	for p in $kids; do k0=$((k0 + $(cpu_ticks $p))); w0=$((w0 + $(ctxsw $p))); done
	sleep "$SECS"
	t1=$(date +%s.%N); c1=$(cpu_ticks $d); k1=0; krss=0; w1=0; nth=0; pss=0; pd=0
	for p in $kids; do
		k1=$((k1 + $(cpu_ticks $p))); krss=$((krss + $(rss_kb $p))); w1=$((w1 + $(ctxsw $p)))
		nth=$((nth + $(threads $p)))
		read -r x y < <(smaps_kb $p)
		pss=$((pss + x)); pd=$((pd + y))
	done
	rss=$(rss_kb $d)
	awk -v n="$n" -v c=$((c1 - c0)) -v k=$((k1 - k0)) -v t="$(echo "$t1 - $t0" | bc)" -v tck="$TCK" \
		-v rss="$rss" -v krss="$krss" -v w=$((w1 - w0)) -v nth="$nth" -v pss="$pss" -v pd="$pd" 'BEGIN {
		printf "  daemon:   %.2f%% of a core, RSS %.1f MiB\n", 100 * c / tck / t, rss / 1024
		printf "  children: %.2f%% of a core in all (%.3f%% per guest), RSS %.1f MiB in all (%.1f MiB per guest)\n",
			100 * k / tck / t, 100 * k / tck / t / n, krss / 1024, krss / 1024 / n
		printf "  per child: %.3f%% of a core, %.1f threads, %.2f wakeups/s, PSS %.0f KiB, Private_Dirty %.0f KiB\n",
			100 * k / tck / t / n, nth / n, w / t / n, pss / n, pd / n }'
	kill -TERM $d
	for ((i = 0; i < 300 && $(kill -0 $d 2>/dev/null && echo 1 || echo 0); i++)); do sleep 0.1; done
	cleanup_fakes
}
cleanup_fakes() {
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	sleep 0.5
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	PIDS=()
}
for n in $SIZES; do run "$n"; done
