#!/bin/bash
# bench-vcpus.sh: `virtio-trace-collect report --vcpus --latency` against `trace-cmd report` on the
# same files, in the same run (issue 39's speed target: at most 0.5x trace-cmd's time).
# The recording is synthetic, packed as report-vcpus.sh's fixture is (tests/tools/vt-mkkvm with
# the kernel's own kvm and sched formats, tests/data/kvm-exits and cap-host): a base block of
# ITER iterations per vCPU thread on two host CPUs (each 10 us: exits by EPT_VIOLATION and
# IO_INSTRUCTION with an exit to QEMU, every 10th a HLT with the thread asleep until woken, every
# 7th a preemption by a host task), and the guest's task switches and wakeups on both vCPUs
# every 25 us; the raw pages are then repeated REPEAT times, each copy moved on by the block's
# span (page timestamps shifted), so the files grow without a text step per event. Then ROUNDS
# times each, alternating:
#   trace-cmd   trace-cmd report -i host.dat -i guest-fx.dat > /dev/null (the merged timeline)
#   vcpus       virtio-trace-collect report --vcpus --latency DIR > /dev/null
# Per row: the best and median wall time and the ratio to trace-cmd's median (target <= 0.5).
# Usage: tests/bench/bench-vcpus.sh [ITER (30000)] [REPEAT (60)] [ROUNDS (3)]
# (the defaults make about 1 GiB of files, uncompressed; the work directory is removed at the end).
# Env: VT_BUILDDIR (default build-bench, else build), TMPDIR.
echo "bench-vcpus: report --vcpus --latency against trace-cmd report on the same files"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
ITER=${1:-30000}
REPEAT=${2:-60}
ROUNDS=${3:-3}
B=${VT_BUILDDIR:-$REPO/build-bench}
[ -x "$B/host-collector/virtio-trace-collect" ] || B=$REPO/build
COLLECT=$B/host-collector/virtio-trace-collect
MKKVM=$B/tests/tools/vt-mkkvm MKDAT=$B/tests/tools/vt-mkdat
DATA=$REPO/tests/data
for x in "$COLLECT" "$MKKVM" "$MKDAT"; do
	[ -x "$x" ] || { echo "bench-vcpus: $x is not built"; exit 1; }
done
command -v trace-cmd >/dev/null || { echo "bench-vcpus: needs trace-cmd"; exit 1; }
command -v python3 >/dev/null || { echo "bench-vcpus: needs python3"; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/vt-bench-vcpus.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
trap 'exit 1' INT TERM

h=$WORK/host-fixture g=$WORK/guest-fixture run=$WORK/run
mkdir -p "$h/formats/sched" "$g" "$run"
cp -r "$DATA/kvm-exits/formats/kvm" "$h/formats/"
cp "$DATA/cap-host/formats/sched/sched_switch" "$DATA/cap-host/formats/sched/sched_wakeup" "$h/formats/sched/"
for f in header_page header_event uname; do cp "$DATA/cap-host/$f" "$h/"; done
echo '[local] global' >"$h/trace_clock"
echo 2 >"$h/nr_cpus"
id() { sed -n 's/^ID: //p' "$1"; }

# The base block (host ns from 1000000): thread 5001 on CPU 0, 5002 on CPU 1, hog 900.
SPAN=$((ITER * 10000 + 20000))
awk -v n="$ITER" 'BEGIN {
	for (c = 0; c < 2; c++) {
		tid = 5001 + c; t0 = 1000000 + c * 3000
		printf "%d %d %d entry %d 1000\n", c, t0, tid, c
		for (i = 0; i < n; i++) {
			t = t0 + 1000 + i * 10000
			if (i % 10 == 9) {
				printf "%d %d %d exit %d 12 1000\n", c, t, tid, c
				printf "%d %d %d sw 1 0 swapper/%d\n", c, t + 300, tid, c
				printf "%d %d 0 sw 0 %d CPU%d/KVM\n", c, t + 5000, tid, c
				printf "%d %d %d vwake 1\n", c, t + 5100, tid
				printf "%d %d %d entry %d 1000\n", c, t + 5500, tid, c
			} else if (i % 7 == 3) {
				printf "%d %d %d exit %d 1 1000\n", c, t, tid, c
				printf "%d %d %d sw 0 900 stress-ng\n", c, t + 100, tid
				printf "%d %d 900 sw 0 %d CPU%d/KVM\n", c, t + 3000, tid, c
				printf "%d %d %d entry %d 1000\n", c, t + 3200, tid, c
			} else {
				printf "%d %d %d exit %d 48 1000\n", c, t, tid, c
				printf "%d %d %d entry %d 1000\n", c, t + 500, tid, c
				printf "%d %d %d exit %d 30 1000\n", c, t + 4000, tid, c
				printf "%d %d %d uexit 2 0\n", c, t + 4200, tid
				printf "%d %d %d entry %d 1000\n", c, t + 4800, tid, c
			}
		}
	}
}' | sort -s -k1,1n >"$WORK/host.events"
# shellcheck disable=SC2046
"$MKKVM" -o "$h" --exit-id $(id "$h/formats/kvm/kvm_exit") --entry-id $(id "$h/formats/kvm/kvm_entry") \
	--uexit-id $(id "$h/formats/kvm/kvm_userspace_exit") --vwake-id $(id "$h/formats/kvm/kvm_vcpu_wakeup") \
	--switch-id $(id "$h/formats/sched/sched_switch") --wakeup-id $(id "$h/formats/sched/sched_wakeup") \
	--cpus 2 <"$WORK/host.events" || { echo "bench-vcpus: vt-mkkvm (host) failed"; exit 1; }
# The guest (its clock 500000 ns behind the host's): tasks 300 and 301 take turns on each vCPU.
cp -r "$DATA/cap-guest/." "$g/"
rm -f "$g"/cpu*.raw "$g"/cpu*.stats
cp "$DATA/cap-host/formats/sched/sched_waking" "$g/formats/sched/"
awk -v span="$SPAN" 'BEGIN {
	for (c = 0; c < 2; c++)
		for (t = 502000 + c * 7000; t + 30000 < 500000 + span; t += 50000) {
			a = 300 + 2 * c; b = a + 1
			printf "%d %d %d wakeup %d %d t%d\n", c, t, a, b, c, b
			printf "%d %d %d switch %d t%d\n", c, t + 2000, a, b, b
			printf "%d %d %d wakeup %d %d t%d\n", c, t + 25000, b, a, c, a
			printf "%d %d %d switch %d t%d\n", c, t + 27000, b, a, a
		}
}' | sort -s -k1,1n | "$MKKVM" -o "$g" --exit-id 1 --entry-id 2 --switch-id "$(id "$g/formats/sched/sched_switch")" \
	--wakeup-id "$(id "$g/formats/sched/sched_waking")" --cpus 2 || { echo "bench-vcpus: vt-mkkvm (guest) failed"; exit 1; }
rm -f "$WORK/host.events"

# Repeat the pages, each copy SPAN later (a page's first 8 bytes are its timestamp).
python3 - "$REPEAT" "$SPAN" "$h"/cpu0.raw "$h"/cpu1.raw "$g"/cpu0.raw "$g"/cpu1.raw <<'PY' ||
import struct, sys
n, span = int(sys.argv[1]), int(sys.argv[2])
for path in sys.argv[3:]:
    src = open(path, "rb").read()
    pages = [bytearray(src[i:i + 4096]) for i in range(0, len(src), 4096)]
    ts = [struct.unpack_from("<Q", p)[0] for p in pages]
    with open(path + ".big", "wb") as out:
        for k in range(n):
            for p, t in zip(pages, ts):
                struct.pack_into("<Q", p, 0, t + k * span)
                out.write(p)
PY
	{ echo "bench-vcpus: repeating the pages failed"; exit 1; }
for f in "$h"/cpu0.raw "$h"/cpu1.raw "$g"/cpu0.raw "$g"/cpu1.raw; do mv "$f.big" "$f"; done
"$MKDAT" -o "$run/host.dat" -z none -i "$h" --trace-id 0x42 --guest fx:0x1234:5001,5002 >/dev/null ||
	{ echo "bench-vcpus: vt-mkdat (host) failed"; exit 1; }
"$MKDAT" -o "$run/guest-fx.dat" -z none -i "$g" --trace-id 0x1234 --ts-peer 0x42 --ts-sample 0:500000 >/dev/null ||
	{ echo "bench-vcpus: vt-mkdat (guest) failed"; exit 1; }
rm -rf "$h" "$g"
printf '{"tool":"fixture","version":"0","host":{"file":"host.dat"},"guests":[%s]}\n' \
	'{"name":"fx","file":"guest-fx.dat","trace_id":"0x0000000000001234"}' >"$run/manifest.json"
hb=$(stat -c %s "$run/host.dat") gb=$(stat -c %s "$run/guest-fx.dat")
echo "files: host.dat $((hb / 1048576)) MiB, guest-fx.dat $((gb / 1048576)) MiB ($(((hb + gb) / 1048576)) MiB)," \
	"$(awk -v s="$SPAN" -v r="$REPEAT" 'BEGIN { printf "%.1f", s * r / 1e9 }') s of host time"

now_ns() { date +%s%N; }
declare -a T_TC T_VC
for ((r = 0; r < ROUNDS; r++)); do
	t0=$(now_ns)
	trace-cmd report -i "$run/host.dat" -i "$run/guest-fx.dat" >/dev/null 2>&1
	t1=$(now_ns)
	"$COLLECT" report --vcpus --latency "$run" >"$WORK/vcpus.txt" 2>&1 || { tail "$WORK/vcpus.txt"; echo "bench-vcpus: report failed"; exit 1; }
	t2=$(now_ns)
	T_TC+=($((t1 - t0)))
	T_VC+=($((t2 - t1)))
	echo "round $((r + 1)): trace-cmd $(awk -v n=$((t1 - t0)) 'BEGIN { printf "%.2f", n / 1e9 }') s," \
		"report --vcpus --latency $(awk -v n=$((t2 - t1)) 'BEGIN { printf "%.2f", n / 1e9 }') s"
done
sed -n '/^vCPU time/,/^    unknown/p' "$WORK/vcpus.txt" | head -20
grep -A2 '^  guest fx: [0-9]* wakeups' "$WORK/vcpus.txt"
med() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
best() { printf '%s\n' "$@" | sort -n | head -1; }
mt=$(med "${T_TC[@]}") mv=$(med "${T_VC[@]}")
printf '%-28s %9s %9s %7s\n' "" "best s" "median s" "ratio"
printf '%-28s %9.2f %9.2f %7s\n' "trace-cmd report" "$(awk -v n="$(best "${T_TC[@]}")" 'BEGIN { print n / 1e9 }')" \
	"$(awk -v n="$mt" 'BEGIN { print n / 1e9 }')" "1.00"
printf '%-28s %9.2f %9.2f %7.2f\n' "report --vcpus --latency" "$(awk -v n="$(best "${T_VC[@]}")" 'BEGIN { print n / 1e9 }')" \
	"$(awk -v n="$mv" 'BEGIN { print n / 1e9 }')" "$(awk -v a="$mv" -v b="$mt" 'BEGIN { print a / b }')"
awk -v a="$mv" -v b="$mt" 'BEGIN { r = a / b; printf "target (issue 39): at most 0.5x trace-cmd'"'"'s time: %s (%.2fx)\n", r <= 0.5 ? "met" : "NOT met", r }'
