#!/bin/bash
# bench-ingest.sh: host ingest throughput, FIFO -> finished trace.dat, of the real collector
# against the least a host can do with the same bytes through the same kind of FIFO, in one run:
#   cat          `cat FIFO > file` per CPU (the original virtio-trace host side)
#   splice       tests/bench/splice-copy per CPU (splice(2) FIFO -> file, 1 MiB FIFO), and the
#                same followed by fsync (to compare with the collector's --fsync)
#   collect      virtio-trace-collect record --sync none against vt-fake-agent --fifo
#                --external-pages (the protocol only): v7 uncompressed, the same with --fsync,
#                v7 zstd (the default: compressed while streaming on a core nothing else wants,
#                and at the end what that did not cover), and v7 zstd --compress-at-end (the
#                baseline for that: everything compressed at the end)
#   paced        splice, zstd and zstd --compress-at-end again with producers paced to PACE
#                bytes/s per CPU (VT_INGEST_PACE, default 200M), so that the host has idle
#                cores while the pages stream in: what compressing while streaming buys there
# Every path has the same producers: `splice-copy -p`, one per CPU, reading a file (page cache
# warm) of the fixture's pages K times and writing one 4 KiB page per write(). For the collector
# they start once the fake agent has answered START. Figures:
#   stream   producers started to producers done (the bytes are in the FIFOs or further)
#   finish   SIGINT to exit: drain, STOP/STATS/BYE, writing guest-NAME.dat from the spool
#   e2e      stream + finish: FIFO -> finished trace.dat, without the start-up handshake
#   wall     the collector's whole life, start-up included
# Page cache warm for the producers' sources; fsync only where said. Between rows the written
# files are flushed and dropped from the page cache (dd oflag=nocache conv=fdatasync count=0:
# posix_fadvise DONTNEED on the whole file), and the filesystem is synced before each row, so
# that no row's writeback lands in the next. The rows are interleaved over the repeats, in an
# order rotated every repeat; each figure is the median of REPEATS runs with (min-max) beside it.
# Usage: tests/bench/bench-ingest.sh [-q] [K (default 20000: 560 MiB)] [REPEATS (default 3)]
#   -q: K=5000, REPEATS=1 (about 10 s)
# Env: VT_BUILDDIR (default build-bench, else build), TMPDIR, VT_INGEST_PACE (bytes/s per CPU
# for the paced rows, K and M suffixes; 0 leaves them out).
echo "bench-ingest: collector FIFO -> trace.dat throughput against cat and splice of the same bytes"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
QUICK=
[ "${1:-}" = -q ] && { QUICK=1; shift; }
K=${1:-20000}
REPEATS=${2:-3}
[ -n "$QUICK" ] && { K=${1:-5000}; REPEATS=${2:-1}; }
PACE_ARG=${VT_INGEST_PACE:-200M}
case $PACE_ARG in
*K) PACE_ARG=$((${PACE_ARG%K} << 10)) ;;
*M) PACE_ARG=$((${PACE_ARG%M} << 20)) ;;
esac
PACE=	# producers' rate in the row being run; empty: as fast as they go
B=${VT_BUILDDIR:-$REPO/build-bench}
[ -x "$B/host-collector/virtio-trace-collect" ] || B=$REPO/build
COLLECT=$B/host-collector/virtio-trace-collect
FAKE=$B/tests/tools/vt-fake-agent
SPLICE=$B/tests/bench/splice-copy
FIX=$REPO/tests/data/cap-guest
for x in "$COLLECT" "$FAKE" "$SPLICE"; do
	[ -x "$x" ] || { echo "bench-ingest: $x is not built"; exit 1; }
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/vt-bench-ingest.XXXXXX") || exit 1
PIDS=""
cleanup() {
	for p in $PIDS; do kill -TERM "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

NCPU=$(cat "$FIX/nr_cpus")
TOTAL=0
for ((c = 0; c < NCPU; c++)); do
	# The same number of bytes per CPU as the fake agent sends: its fixture pages K times.
	for ((i = 0; i < 64; i++)); do cat "$FIX/cpu$c.raw"; done >"$WORK/blk$c"
	: >"$WORK/src$c"
	for ((i = 0; i < K / 64; i++)); do cat "$WORK/blk$c"; done >>"$WORK/src$c"
	for ((i = 0; i < K % 64; i++)); do cat "$FIX/cpu$c.raw"; done >>"$WORK/src$c"
	TOTAL=$((TOTAL + $(stat -c %s "$WORK/src$c")))
	cat "$WORK/src$c" >/dev/null
done

now() { echo "$EPOCHREALTIME"; }
# settle DIR: write back and drop from the page cache every file under DIR; then sync the
# filesystem, so that the next row starts with nothing of ours (or anyone's) dirty.
settle() {
	find "$1" -type f -print0 2>/dev/null |
		xargs -0 -r -I{} dd of={} oflag=nocache conv=notrunc,fdatasync count=0 status=none
	sync -f "$WORK"
}
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; }
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
spread() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { printf "%s-%s", v[1], v[NR] }'; }

# baseline cat|splice: seconds to move every CPU's bytes producer -> FIFO -> file
baseline() {
	local how=$1 c t0 t1 pids=""
	rm -rf "$WORK/b" && mkdir "$WORK/b"
	for ((c = 0; c < NCPU; c++)); do mkfifo "$WORK/b/f$c"; done
	t0=$(now)
	for ((c = 0; c < NCPU; c++)); do
		case $how in
		cat) cat "$WORK/b/f$c" >"$WORK/b/o$c" & ;;
		splice) "$SPLICE" "$WORK/b/f$c" "$WORK/b/o$c" & ;;
		splice-fsync) "$SPLICE" -s "$WORK/b/f$c" "$WORK/b/o$c" & ;;
		esac
		pids="$pids $!"
		"$SPLICE" -p "$WORK/src$c" "$WORK/b/f$c" ${PACE:+$PACE once} &
		pids="$pids $!"
	done
	wait $pids
	t1=$(now)
	local got=0
	for ((c = 0; c < NCPU; c++)); do got=$((got + $(stat -c %s "$WORK/b/o$c"))); done
	[ "$got" = "$TOTAL" ] || { echo "bench-ingest: $how moved $got bytes, want $TOTAL" >&2; return 1; }
	settle "$WORK/b"
	rm -rf "$WORK/b"
	sub "$t1" "$t0"
}

# collect ARGS...: one collector run; prints
# "stream finish wall cpu hwm_kib size". The fake agent speaks the protocol and writes no pages
# (--external-pages): once it has answered START, the same producers as the baselines'
# (`splice-copy -p`, one per CPU) write the same bytes into its data FIFOs.
collect() {
	local d=$WORK/c t0 t1 t2 t3 cpid fpid n c pids=""
	rm -rf "$d" && mkdir -p "$d/p"
	: >"$d/fake.log"
	"$FAKE" --name b --fifo "$d/p" --fixture "$FIX" --repeat "$K" --external-pages 2>"$d/fake.log" &
	fpid=$!
	PIDS="$PIDS $fpid"
	for ((n = 0; n < 100; n++)); do
		grep -q 'ports ready' "$d/fake.log" && break
		sleep 0.05
	done
	t0=$(now)
	/usr/bin/time -f '%U %S %M' -o "$d/time" \
		"$COLLECT" record --chardev-dir "$d/p" --name b -o "$d/out" --sync none \
		--duration 600 -q "$@" >"$d/col.log" 2>&1 &
	cpid=$!
	PIDS="$PIDS $cpid"
	for ((n = 0; n < 20000; n++)); do
		grep -q 'START:' "$d/fake.log" && break
		kill -0 $cpid 2>/dev/null || break
		sleep 0.001
	done
	# SIGINT goes to the collector itself, not /usr/bin/time: found now, not in the timed part.
	local col
	col=$(pgrep -P $cpid)
	t1=$(now)
	for ((c = 0; c < NCPU; c++)); do
		"$SPLICE" -p "$WORK/src$c" "$d/p/trace-path-cpu$c.out" ${PACE:+$PACE once} &
		pids="$pids $!"
	done
	wait $pids
	t2=$(now)
	kill -INT "$col" 2>/dev/null
	wait $cpid
	local rc=$?
	t3=$(now)
	wait $fpid 2>/dev/null
	[ $rc = 0 ] || { echo "bench-ingest: collector exited $rc" >&2; tail "$d/col.log" >&2; return 1; }
	local size pages
	size=$(stat -c %s "$d/out/guest-b.dat" 2>/dev/null || echo 0)
	pages=$(sed -n 's/.*"pages": \([0-9]*\).*/\1/p' "$d/out/manifest.json" | awk '{ s += $1 } END { print s + 0 }')
	[ "$((pages * 4096))" = "$TOTAL" ] || { echo "bench-ingest: the manifest counts $pages pages, want $((TOTAL / 4096))" >&2; return 1; }
	read -r u s m <"$d/time"
	echo "$(sub "$t2" "$t1") $(sub "$t3" "$t2") $(sub "$t3" "$t0") $(sub "$(sub "$u" 0)" "-$s") $m $size"
	settle "$d"
	rm -rf "$d"
}

declare -A T
ROWS=(cat splice splice-fsync raw fsync zstd zend)
[ "$PACE_ARG" != 0 ] && ROWS+=(p-splice p-zstd p-zend)
sync -f "$WORK"
for ((r = 0; r < REPEATS; r++)); do
	for ((i = 0; i < ${#ROWS[@]}; i++)); do
		v=${ROWS[$(((i + r) % ${#ROWS[@]}))]}
		PACE=
		case $v in p-*) PACE=$PACE_ARG ;; esac
		case $v in
		cat|splice|splice-fsync|p-splice)
			x=$(baseline "${v#p-}") || exit 1
			T[$v]+=" $x"
			continue ;;
		esac
		case $v in
		raw) x=$(collect --no-compress) ;;
		fsync) x=$(collect --no-compress --fsync) ;;
		zstd|p-zstd) x=$(collect) ;;
		zend|p-zend) x=$(collect --compress-at-end) ;;
		esac
		[ -n "$x" ] || exit 1
		read -r st fi wa cpu hwm size <<<"$x"
		T[$v.stream]+=" $st"
		T[$v.finish]+=" $fi"
		T[$v.e2e]+=" $(sub "$st" "-$fi")"
		T[$v.wall]+=" $wa"
		T[$v.cpu]+=" $cpu"
		T[$v.hwm]+=" $hwm"
		T[$v.size]=$size
	done
done

gbs() { awk -v b="$TOTAL" -v t="$1" 'BEGIN { printf "%.3f", b / t / 1e9 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", b / a }'; }
CAT=$(median <<<"${T[cat]}")
SPL=$(median <<<"${T[splice]}")
SPF=$(median <<<"${T[splice-fsync]}")
echo
echo "=== ingest: $NCPU CPUs, $((TOTAL >> 20)) MiB through FIFOs (K=$K), median (min-max) of $REPEATS interleaved runs, written files dropped between rows ==="
printf '%-44s %9s %15s %8s %10s %14s\n' "path" seconds "(min-max)" "GB/s" "x splice" "x splice+fsync"
# row NAME "TIMES...": median, spread, and the median's throughput and ratios.
row() {
	local m
	m=$(median <<<"$2")
	printf '%-44s %9s %15s %8s %10s %14s\n' "$1" "$m" "($(spread <<<"$2"))" "$(gbs "$m")" "$(ratio "$m" "$SPL")" "$(ratio "$m" "$SPF")"
}
row "cat FIFO > file" "${T[cat]}"
row "splice FIFO -> file" "${T[splice]}"
row "splice FIFO -> file, then fsync" "${T[splice-fsync]}"
for v in raw fsync zstd zend; do
	case $v in
	raw) name="v7 uncompressed" ;;
	fsync) name="v7 uncompressed, --fsync" ;;
	zstd) name="v7 zstd (default)" ;;
	zend) name="v7 zstd, --compress-at-end" ;;
	esac
	for ph in stream e2e; do
		row "collect $name, $ph" "${T[$v.$ph]}"
	done
done
echo
printf '%-8s %-20s %-20s %-20s %-20s %-20s %9s\n' collector "stream s" "finish s" "wall s" "CPU s (u+s)" "max RSS KiB" "file MiB"
ms() { printf '%s (%s)' "$(median <<<"$1")" "$(spread <<<"$1")"; }
for v in raw fsync zstd zend; do
	printf '%-8s %-20s %-20s %-20s %-20s %-20s %9s\n' "$v" "$(ms "${T[$v.stream]}")" \
		"$(ms "${T[$v.finish]}")" "$(ms "${T[$v.wall]}")" "$(ms "${T[$v.cpu]}")" \
		"$(ms "${T[$v.hwm]}")" "$(( ${T[$v.size]} >> 20 ))"
done
E2E=$(median <<<"${T[raw.e2e]}")
STR=$(median <<<"${T[raw.stream]}")
echo "  stream: producers started to done; finish: SIGINT to exit (drain, STOP, trace.dat);"
echo "  e2e = stream + finish; wall adds the start-up handshake and the 1 ms poll for START."
echo "  Like cat and splice, the collector leaves its files to the kernel's writeback unless given"
echo "  --fsync: compare that row with 'splice, then fsync'. Uncompressed, on a"
echo "  filesystem that can collapse/insert ranges (ext4, xfs), the file is the spool's data file,"
echo "  its pages written once; elsewhere (tmpfs: TMPDIR=/dev/shm) they are copied at the end."
FSY=$(median <<<"${T[fsync.e2e]}")
ZE=$(median <<<"${T[zstd.e2e]}")
echo "  target: collector e2e with the default output (zstd) >= 0.8x splice: $(awk -v a="$ZE" -v b="$SPL" 'BEGIN { print (b / a >= 0.8 ? "met" : "NOT met") }') ($(ratio "$ZE" "$SPL"))"
echo "  target: collector e2e (uncompressed) >= 0.9x splice: $(awk -v a="$E2E" -v b="$SPL" 'BEGIN { print (b / a >= 0.9 ? "met" : "NOT met") }') ($(ratio "$E2E" "$SPL")); streaming phase alone $(ratio "$STR" "$SPL"); with --fsync $(ratio "$FSY" "$SPF") of splice+fsync"
ZN=$(median <<<"${T[zend.e2e]}")
echo "  compressing while streaming: zstd e2e $(ratio "$ZE" "$ZN") of --compress-at-end's (finish $(median <<<"${T[zstd.finish]}") s against $(median <<<"${T[zend.finish]}") s)"
if [ "$PACE_ARG" != 0 ]; then
	PSP=$(median <<<"${T[p-splice]}")
	echo
	echo "=== paced: producers at $((PACE_ARG >> 20)) MiB/s per CPU (idle cores while streaming), median (min-max) of $REPEATS ==="
	printf '%-44s %9s %15s %10s %20s\n' "path" "e2e s" "(min-max)" "x splice" "finish s"
	printf '%-44s %9s %15s %10s %20s\n' "splice FIFO -> file, paced" "$PSP" "($(spread <<<"${T[p-splice]}"))" "1.00x" "-"
	for v in p-zstd p-zend; do
		case $v in
		p-zstd) name="collect v7 zstd (default), paced" ;;
		p-zend) name="collect v7 zstd, --compress-at-end, paced" ;;
		esac
		m=$(median <<<"${T[$v.e2e]}")
		printf '%-44s %9s %15s %10s %20s\n' "$name" "$m" "($(spread <<<"${T[$v.e2e]}"))" "$(ratio "$m" "$PSP")" "$(ms "${T[$v.finish]}")"
	done
	PZ=$(median <<<"${T[p-zstd.e2e]}")
	echo "  target: e2e with the default output (zstd) >= 0.8x splice, the host having idle cores: $(awk -v a="$PZ" -v b="$PSP" 'BEGIN { print (b / a >= 0.8 ? "met" : "NOT met") }') ($(ratio "$PZ" "$PSP"))"
fi
