#!/bin/bash
# bench-streams.sh: what the collector costs with many slow streams, against the least a host can
# do with the same streams, in one run. Rows, interleaved over REPEATS in an order rotated every
# repeat:
#   splice   G*C `splice-copy FIFO FILE` loops (splice(2) into files, 1 MiB FIFOs), each FIFO
#            fed by `splice-copy -p PAGES FIFO RATE` (tests/data/cap-guest's pages over and
#            over, whole pages every 20 ms as the budget allows)
#   raw      one virtio-trace-collect (--sync none, --no-compress) recording G fake guests
#            (vt-fake-agent --fifo, the same pages, --cpus C --rate R --repeat 0)
#   zstd     the same with the default output (v7 zstd), which compresses while streaming
#   zend     the same with --compress-at-end: the compression left to the finish (outside the
#            measured window; the whole run's CPU counts it)
# Figures per row: CPU over SECS seconds of steady streaming (utime+stime from /proc/PID/stat,
# sampled 2 s after start and SECS later; for splice, summed over its G*C loops) as % of one core
# and per MiB; for the collector, VmHWM at the end of streaming and user+sys / max RSS of the
# whole run (/usr/bin/time, finishing the files included). The written files are flushed and
# dropped from the page cache after each row and the filesystem synced before the next.
# Targets (issue 17): collector streaming CPU <= 5% of a core uncompressed, <= 12% with zstd.
# Usage: tests/bench/bench-streams.sh [-q] [SECS (default 10)] [GUESTS (16)] [CPUS (4)] [RATE (1M)] [REPEATS (3)]
#   -q: SECS=5, REPEATS=1
# Env: VT_BUILDDIR (default build-bench, else build), TMPDIR.
echo "bench-streams: collector CPU and memory with many rate-limited streams, against splice loops"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
SECS=10 REPEATS=3
[ "${1:-}" = -q ] && { SECS=5; REPEATS=1; shift; }
SECS=${1:-$SECS}
GUESTS=${2:-16}
CPUS=${3:-4}
RATE=${4:-1M}
REPEATS=${5:-$REPEATS}
B=${VT_BUILDDIR:-$REPO/build-bench}
[ -x "$B/host-collector/virtio-trace-collect" ] || B=$REPO/build
COLLECT=$B/host-collector/virtio-trace-collect
FAKE=$B/tests/tools/vt-fake-agent
SPLICE=$B/tests/bench/splice-copy
FIX=$REPO/tests/data/cap-guest
for x in "$COLLECT" "$FAKE" "$SPLICE"; do
	[ -x "$x" ] || { echo "bench-streams: $x is not built"; exit 1; }
done
command -v /usr/bin/time >/dev/null || { echo "bench-streams: needs /usr/bin/time (apt-get install time)"; exit 1; }
case $RATE in
*K) RATE_B=$((${RATE%K} * 1024)) ;;
*M) RATE_B=$((${RATE%M} * 1048576)) ;;
*) RATE_B=$RATE ;;
esac

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
NS=$((GUESTS * CPUS))
ticks() { local p t=0; for p in "$@"; do t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0))); done; echo $t; }
settle() {
	find "$1" -type f -print0 2>/dev/null |
		xargs -0 -r -I{} dd of={} oflag=nocache conv=notrunc,fdatasync count=0 status=none
	sync -f "$WORK"
}
# A page source for the baseline: the fixture's pages of both CPUs.
cat "$FIX"/cpu*.raw >"$WORK/pages"

# splice row: prints "cpu_s secs bytes"
row_splice() {
	local d=$WORK/s i cons=() prods=() c0 c1 t0 t1 bytes
	rm -rf "$d" && mkdir -p "$d"
	for ((i = 0; i < NS; i++)); do
		mkfifo "$d/f$i"
		"$SPLICE" "$d/f$i" "$d/o$i" &
		cons+=($!)
		"$SPLICE" -p "$WORK/pages" "$d/f$i" "$RATE_B" &
		prods+=($!)
	done
	PIDS="${cons[*]} ${prods[*]}"
	sleep 2
	t0=$EPOCHREALTIME c0=$(ticks "${cons[@]}")
	sleep "$SECS"
	t1=$EPOCHREALTIME c1=$(ticks "${cons[@]}")
	kill -TERM "${prods[@]}" 2>/dev/null
	wait "${prods[@]}" "${cons[@]}" 2>/dev/null
	PIDS=""
	bytes=$(cat "$d"/o* | wc -c)
	settle "$d"
	rm -rf "$d"
	awk -v c=$((c1 - c0)) -v tck="$TCK" -v a="$t0" -v b="$t1" -v by="$bytes" \
		'BEGIN { printf "%.3f %.3f %d - - - -\n", c / tck, b - a, by }'
}

# collector row ARGS...: prints "cpu_s secs bytes hwm_kib wall user+sys maxrss_kib"
row_collect() {
	local d=$WORK/c g n args=() fakes=() tpid cpid c0 c1 t0 t1 hwm rc wall u s maxrss bytes
	rm -rf "$d" && mkdir -p "$d"
	for ((g = 0; g < GUESTS; g++)); do
		mkdir -p "$d/p$g"
		: >"$d/g$g.fake"
		"$FAKE" --name g$g --fifo "$d/p$g" --fixture "$FIX" --cpus "$CPUS" --rate "$RATE" \
			--repeat 0 2>"$d/g$g.fake" &
		fakes+=($!)
		args+=(--chardev-dir "$d/p$g" --name g$g)
	done
	PIDS="${fakes[*]}"
	for ((g = 0; g < GUESTS; g++)); do
		for ((n = 0; n < 100; n++)); do
			grep -q 'ports ready' "$d/g$g.fake" && break
			sleep 0.05
		done
	done
	/usr/bin/time -f '%e %U %S %M' -o "$d/time" "$COLLECT" record "${args[@]}" -o "$d/out" \
		--sync none -q "$@" >"$d/col.log" 2>&1 &
	tpid=$!
	PIDS="$PIDS $tpid"
	sleep 0.2
	cpid=$(pgrep -P $tpid)
	sleep 1.8
	t0=$EPOCHREALTIME c0=$(ticks "$cpid")
	sleep "$SECS"
	t1=$EPOCHREALTIME c1=$(ticks "$cpid")
	hwm=$(awk '/VmHWM/ { print $2 }' "/proc/$cpid/status")
	kill -INT "$cpid"
	wait $tpid
	rc=$?
	[ $rc = 0 ] || { echo "bench-streams: collector exited $rc" >&2; tail "$d/col.log" >&2; return 1; }
	kill -TERM "${fakes[@]}" 2>/dev/null
	wait "${fakes[@]}" 2>/dev/null
	PIDS=""
	read -r wall u s maxrss <"$d/time"
	bytes=$(cat "$d"/g*.fake | awk '$2 == "total" && $3 ~ /^cpu/ { for (i = 4; i < NF; i++) if ($i == "bytes") b += $(i + 1) } END { print b + 0 }')
	settle "$d"
	rm -rf "$d"
	awk -v c=$((c1 - c0)) -v tck="$TCK" -v a="$t0" -v b="$t1" -v by="$bytes" -v h="$hwm" \
		-v w="$wall" -v u="$u" -v s="$s" -v m="$maxrss" \
		'BEGIN { printf "%.3f %.3f %d %s %s %.2f %s\n", c / tck, b - a, by, h, w, u + s, m }'
}

declare -A P PM H W
ROWS=(splice raw zstd zend)
sync -f "$WORK"
for ((r = 0; r < REPEATS; r++)); do
	for ((i = 0; i < ${#ROWS[@]}; i++)); do
		v=${ROWS[$(((i + r) % ${#ROWS[@]}))]}
		case $v in
		splice) x=$(row_splice) ;;
		raw) x=$(row_collect --no-compress) ;;
		zstd) x=$(row_collect) ;;
		zend) x=$(row_collect --compress-at-end) ;;
		esac
		[ -n "$x" ] || exit 1
		read -r cpu secs bytes hwm wall cpuall maxrss <<<"$x"
		P[$v]+=" $(awk -v c="$cpu" -v t="$secs" 'BEGIN { printf "%.2f", 100 * c / t }')"
		# per MiB of the rate the streams were given over the measured window
		PM[$v]+=" $(awk -v c="$cpu" -v t="$secs" -v n=$NS -v rb=$RATE_B 'BEGIN { printf "%.2f", 1000 * c / (t * n * rb / 1048576) }')"
		[ "$hwm" = - ] || H[$v]+=" $hwm"
		[ "$wall" = - ] || W[$v]+=" $cpuall/$maxrss"
		echo "bench-streams: repeat $((r + 1)) $v: $(awk -v c="$cpu" -v t="$secs" 'BEGIN { printf "%.2f%% of a core", 100 * c / t }')" \
			"$([ "$hwm" = - ] || echo ", VmHWM ${hwm} KiB, whole run ${cpuall} CPU s, max RSS ${maxrss} KiB")"
	done
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
spread() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { printf "%s-%s", v[1], v[NR] }'; }
ms() { printf '%s (%s)' "$(median <<<"$1")" "$(spread <<<"$1")"; }
echo
echo "=== $NS streams ($GUESTS guests x $CPUS CPUs) at $RATE/s each, $SECS s measured, median (min-max) of $REPEATS interleaved runs ==="
printf '%-40s %-22s %-22s %-22s %s\n' path "% of one core" "CPU ms per MiB" "VmHWM KiB" "x splice"
SPL=$(median <<<"${P[splice]}")
for v in splice raw zstd zend; do
	case $v in
	splice) name="splice loops into files (baseline)" ;;
	raw) name="collect, v7 uncompressed" ;;
	zstd) name="collect, v7 zstd (default)" ;;
	zend) name="collect, v7 zstd, --compress-at-end" ;;
	esac
	printf '%-40s %-22s %-22s %-22s %s\n' "$name" "$(ms "${P[$v]}")" "$(ms "${PM[$v]}")" \
		"$([ -n "${H[$v]:-}" ] && ms "${H[$v]}" || echo -)" \
		"$(awk -v a="$(median <<<"${P[$v]}")" -v b="$SPL" 'BEGIN { printf "%.2fx", (b > 0) ? a / b : 0 }')"
done
for v in raw zstd zend; do
	echo "  $v whole runs (CPU s/max RSS KiB):${W[$v]}"
done
RAW=$(median <<<"${P[raw]}") ZST=$(median <<<"${P[zstd]}")
echo "  target: uncompressed <= 5% of a core: $(awk -v a="$RAW" 'BEGIN { print (a <= 5 ? "met" : "NOT met") }') ($RAW%);" \
	"zstd <= 12%: $(awk -v a="$ZST" 'BEGIN { print (a <= 12 ? "met" : "NOT met") }') ($ZST%)"
