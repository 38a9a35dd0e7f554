#!/bin/bash
# bench-mmap.sh: reading the guest's ring buffer through mmap (trace_pipe_raw mmap and
# TRACE_MMAP_IOCTL_GET_READER, Linux 6.10+) against splice, in a 2-vCPU TCG guest on Debian 13's
# 6.12 kernel. Not a test: it prints a table. tests/bench/ring-read runs in the guest: per CPU a
# pinned writer of SIZE-byte trace_marker entries and a pinned reader moving the pages to that
# CPU's virtio-serial port (the host drains the ports); the reader thread's own CPU time per MiB
# of events handed out, and the ring buffer's overrun (loss), for each mode, sub-buffer size and
# rate.
# Usage: tests/bench/bench-mmap.sh [SECONDS per run, default 4]
# Env: VT_BUILDDIR (default <repo>/build), VT_KERNEL_DEB (default debian:trixie),
#      BENCH_RATES (markers per second per CPU, 0 = flat out; default "2000 0"),
#      BENCH_SUBBUFS (KiB, default "4 16"), BENCH_SIZE (bytes per marker, default 1000),
#      BENCH_REPEAT (runs of each splice/mmap pair, interleaved; default 3: the table gives
#      medians, and min-max, because a TCG guest on a shared machine is noisy).
echo "bench-mmap: guest CPU per MiB and loss, splice vs mmap+write, on a 6.12 guest"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/../e2e/lib.sh"
VT_LOG_PREFIX=bench-mmap
SECS=${1:-4}
RATES=${BENCH_RATES:-2000 0}
SUBBUFS=${BENCH_SUBBUFS:-4 16}
SIZE=${BENCH_SIZE:-1000}
REPEAT=${BENCH_REPEAT:-3}
export VT_KERNEL_DEB=${VT_KERNEL_DEB:-debian:trixie}
B=${VT_BUILDDIR:-$VT_REPO/build}

WORK=$(mktemp -d /tmp/vt-bench-mmap.XXXXXX)
DRAIN=()
cleanup() {
    vt_guest_stop 2>/dev/null
    for p in "${DRAIN[@]+"${DRAIN[@]}"}"; do kill "$p" 2>/dev/null; done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

make -C "$B" -s tests/bench/ring-read || { echo "bench-mmap: cannot build ring-read in $B"; exit 1; }
vt_kernel_select >"$WORK/kernel.msg"; rc=$?
[ $rc = 0 ] || { cat "$WORK/kernel.msg"; exit $rc; }
mkdir -p "$WORK/overlay/bin"
cp "$B/tests/bench/ring-read" "$WORK/overlay/bin/ring-read" && strip "$WORK/overlay/bin/ring-read"
VT_IMAGE=${VT_CACHE:-$VT_REPO/.cache/guest}/image-bench-mmap$VT_KERNEL_TAG
"$VT_E2E_DIR/mkguest.sh" -q --overlay "$WORK/overlay" --out "$VT_IMAGE" >/dev/null 2>"$WORK/mkguest.log" ||
    { cat "$WORK/mkguest.log"; echo "bench-mmap: mkguest.sh failed"; exit 1; }

{
    echo 'uname -r'
    for ((rep = 0; rep < REPEAT; rep++)); do
        for sb in $SUBBUFS; do
            for rate in $RATES; do
                for mode in splice mmap; do
                    echo "ring-read -m $mode -s $sb -b 4096 -r $rate -z $SIZE -t $SECS"
                done
            done
        done
    done
} >"$WORK/guest.sh"

VT_RUNDIR=$WORK/run VT_SMP=2 VT_GUEST_SCRIPT=$WORK/guest.sh
VT_TIMEOUT=$((60 + REPEAT * $(wc -w <<<"$SUBBUFS") * $(wc -w <<<"$RATES") * 2 * (SECS + 3)))
mkdir -p "$VT_RUNDIR"
vt_make_ports || exit 1
for i in 0 1; do
    exec {fd}<>"$VT_RUNDIR/ports/trace-path-cpu$i.out"
    cat <&$fd >/dev/null &
    DRAIN+=($!)
done
vt_guest_start || exit 1
vt_guest_wait
vt_check_console >/dev/null || { tr -d '\r' <"$VT_RUNDIR/console.log" | tail -30; echo "bench-mmap: the guest run failed"; exit 1; }
K=$(tr -d '\r' <"$VT_RUNDIR/console.log" | grep -m1 -E '^[0-9]+\.[0-9]+\.[0-9]+')
echo "bench-mmap: kernel $K, $SECS s per run, $SIZE-byte markers, 4 MiB buffer per CPU, $REPEAT runs each;"
echo "  reader CPU (both vCPUs) per MiB of events handed out, median (min-max); events and overrun: medians"
printf '%-7s %7s %9s %12s %24s %12s\n' mode subbuf rate/cpu events_MiB us_per_MiB overrun
tr -d '\r' <"$VT_RUNDIR/console.log" | grep '^RING .* cpu=all ' >"$WORK/rows"
sed 's/[a-z_]*=//g' "$WORK/rows" | awk '
    # RING mode cpu subbuf bytes pieces reader_cpu_us us_per_mb events_mb written overrun seconds rate size
    function median(s,   a, n, i, j, t) {
        n = split(s, a, " ")
        for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
        lo = a[1]; hi = a[n]
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    { k = $2 " " $4 " " $13; if (!(k in cpu)) order[++nk] = k
      cpu[k] = cpu[k] " " $8; mb[k] = mb[k] " " $9; ov[k] = ov[k] " " $11 }
    END { for (i = 1; i <= nk; i++) { k = order[i]; split(k, f, " ")
        m = median(cpu[k]); l = lo; h = hi
        printf "%-7s %7s %9s %12.1f %24s %12d\n", f[1], f[2], (f[3] == 0 ? "flat-out" : f[3]), median(mb[k]),
            sprintf("%.0f (%.0f-%.0f)", m, l, h), median(ov[k]) } }'
sed "s/^/  /" "$WORK/rows"
grep -q . "$WORK/rows" || { tr -d '\r' <"$VT_RUNDIR/console.log" | tail -30; exit 1; }
tr -d '\r' <"$VT_RUNDIR/console.log" | grep -E '^RING .*error=' && exit 1
exit 0
