#!/bin/bash
# bench-kpatch.sh: guest CPU per GiB delivered through a virtio-serial port, the unpatched kernel
# against kernel-patches/0002 (ring-buffer pages stolen instead of copied), in the same harness and
# the same run: kernel-patches/build.sh's two kernels, the same initramfs, the same guest program
# (tests/kpatch/kpatch-guest.c stream, plain splice trace_pipe_raw -> pipe -> port, CPU 1).
# Each round fills the instance with markers first, then splices it out; only the splice phase is
# measured: the splicing task's user+sys time (getrusage) and the whole guest's busy time
# (/proc/stat), scaled to seconds per GiB. Runs the pair N times (alternating, to share the noise
# of other work on the machine) and prints every run and the medians.
# Usage: tests/bench/bench-kpatch.sh [-n RUNS] [--markers M] [--size B] [--rounds R]
# Defaults: 3 runs, 20000 markers of 1000 bytes, 4 rounds (~80 MiB per boot).
# Exit: 0, 1 failure, 77 no kernel/QEMU.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/../e2e/lib.sh"
. "$HERE/../kpatch/kpatch-lib.sh"
VT_LOG_PREFIX=bench-kpatch

RUNS=3 M=20000 B=1000 R=4
while [ $# -gt 0 ]; do
	case "$1" in
	-n) RUNS=$2; shift 2 ;;
	--markers) M=$2; shift 2 ;;
	--size) B=$2; shift 2 ;;
	--rounds) R=$2; shift 2 ;;
	-h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench-kpatch: unknown option '$1'" >&2; exit 1 ;;
	esac
done
for t in qemu-system-x86_64 busybox cpio timeout gcc; do
	command -v "$t" >/dev/null || { echo "bench-kpatch: SKIP: $t not found"; exit 77; }
done

WORK=$(mktemp -d /tmp/vt-bench-kpatch.XXXXXX)
cleanup() { vt_guest_stop 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

kp_setup "$WORK"; rc=$?
[ $rc = 0 ] || exit $rc
VT_MEM=1024

declare -A TASK BUSY ALLOC
for ((run = 1; run <= RUNS; run++)); do
	for k in unpatched patched; do
		VT_TIMEOUT=600
		d=$WORK/$k-$run
		kp_boot "$k" "$d" "kp.mode=bench kp.markers=$M kp.size=$B kp.rounds=$R" || exit 1
		con=$(tr -d '\r' <"$d/console.log")
		main=$(grep -a 'KP: stream cpu=1 ' <<<"$con" | head -n1)
		cost=$(grep -a 'KP: stream cost:' <<<"$con" | head -n1)
		if [ -z "$cost" ] || ! grep -aq 'VT-INIT: done rc=0' <<<"$con"; then
			echo "bench-kpatch: $k run $run failed:"; grep -a -E '^(KP|VT-INIT)' <<<"$con"; exit 1
		fi
		bytes=$(sed -n 's/.* bytes=\([0-9]*\).*/\1/p' <<<"$main")
		sent=$(sed -n 's/.* sent=\([0-9]*\).*/\1/p' <<<"$main")
		got=$(stat -c %s "$d/port1.bin")
		[ "$got" = "$sent" ] || { echo "bench-kpatch: $k run $run: host got $got of $sent bytes"; exit 1; }
		TASK[$k]+="$(sed -n 's/.*task cpu [0-9.]* s (\([0-9.]*\) s per GiB).*/\1/p' <<<"$cost") "
		BUSY[$k]+="$(sed -n 's/.*guest busy [0-9.]* s (\([0-9.]*\) s per GiB).*/\1/p' <<<"$cost") "
		ALLOC[$k]+="$(sed -n 's/.*pgalloc [0-9]* (\([0-9.]*\) per MiB).*/\1/p' <<<"$cost") "
		echo "bench-kpatch: run $run $k: $(sed 's/^KP: stream cost: //' <<<"$cost"), $((bytes / 1048576)) MiB, boot $KP_T_BOOT s"
		rm -f "$d"/port*.bin
	done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { if (NR) print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2); else print "-" }'; }
echo "bench-kpatch: medians of $RUNS runs, ${M} markers x ${B} bytes x ${R} rounds per boot:"
printf '  %-10s %22s %22s %18s\n' kernel "task CPU s/GiB" "guest busy s/GiB" "pgalloc/MiB"
for k in unpatched patched; do
	printf '  %-10s %22s %22s %18s\n' "$k" "$(median <<<"${TASK[$k]}")" "$(median <<<"${BUSY[$k]}")" "$(median <<<"${ALLOC[$k]}")"
done
u=$(median <<<"${TASK[unpatched]}"); p=$(median <<<"${TASK[patched]}")
awk -v u="$u" -v p="$p" 'BEGIN { if (u > 0) printf "bench-kpatch: patched/unpatched task CPU per GiB: %.2f\n", p / u }'
