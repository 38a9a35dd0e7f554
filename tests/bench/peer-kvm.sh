#!/bin/bash
# peer-kvm.sh: bench-peer.sh --kvm. Our transport against trace-cmd's agent on its home ground:
# a KVM guest, trace-cmd over vsock with the time sync it negotiates under KVM, side by side in
# the same guest boot.
#
# This machine has no usable KVM; an L1 guest under TCG has (tests/e2e/l1/README.md): L1 loads
# kvm_amd and vhost_vsock and runs the L2 guest under KVM with a vhost-vsock-pci device and our
# ports. L2 holds trace-agent, Debian's trace-cmd (its binary and libraries, libgcc_s too: its
# time-sync thread needs it) and vt-e2e-guest; tests/bench/peer-guest.sh (vt.peer_vsock=1) starts
# `trace-cmd agent`, `trace-cmd agent -p 824 --notimeout` and trace-agent as daemons. Inside L1,
# tests/bench/peer-kvm-l1.sh runs the sessions (modes tc-vsock, tc-vsock-nt, ours, ours-kc, null;
# loads flat out and paced; see there) and puts each session's files on the 9p share; this side
# reads them as they come with tests/bench/peer-kvm-eval.py (trace-cmd report and dump as the
# readers), answers the ceiling search's verdicts, and prints the table: every figure a ratio
# against trace-cmd from the same boot, median (min-max) over the runs.
#
# Usage: tests/bench/bench-peer.sh --kvm [--quick] [REPEATS (default 3)]
#   --quick  one run per mode (tc-vsock, tc-vsock-nt, ours, ours-kc), short loads, no ceiling
#            search: a smoke test, the last of scripts/test.sh's e2e-kvm pass (a stalled L2,
#            tests/README.md "Known", holds a session for PEER_BOUND). Exit 0 when ours and ours-kc delivered and
#            verified, tc-vsock-nt delivered, and tc-vsock delivered or failed with trace-cmd's
#            own error (a result, printed); 77 with SKIP when L1 has no KVM; 1 otherwise.
# The raw port ceiling (issue 42): the modes raw-w4k, raw-w64k, raw-splice and raw-vmsplice move
# VT_PEER_N KiB (rounded up to MiB; or VT_PEER_RAW_MIB MiB) through each data port with no ftrace
# and no recorder (vt-e2e-guest `portw` in L2: write() of 4 KiB or 64 KiB, or splice() from a
# 1 MiB pipe as trace-agent does; dd reading the port's FIFO in L1), flat only; a table of their
# MB/s and L2 VM exits per MB follows, with ours' flat-out MB/s as a fraction of each and the
# writers' own rate (mode null) beside it. raw-w64k-busy, raw-splice-busy (any raw mode with
# -busy) add a busy loop per vCPU beside its writer: the ports' ceiling in a guest whose CPUs are
# as busy as ours' flood keeps them:
#     VT_PEER_MODES="ours ours-kc null raw-w4k raw-w64k raw-splice raw-vmsplice" \
#         VT_PEER_CEILING=0 VT_PEER_RAW_MIB=32 tests/bench/bench-peer.sh --kvm 3
# Env: VT_BUILDDIR, VT_STATIC_AGENT, VT_L1_* (lib.sh), VT_PEER_MODES (default "tc-vsock
# tc-vsock-nt ours ours-kc null"; the raw-* modes on demand), VT_PEER_N (flat-out markers per vCPU, default 20000; quick
# 4000), VT_PEER_SECS (paced seconds, default 4; quick 2), VT_PEER_CLK (clock rounds before and
# after the load, default 5; quick 3), VT_PEER_CEILING=0 (no ceiling search),
# VT_PEER_CEIL_MODES (default "tc-vsock-nt ours"), VT_PEER_CEIL_REPEATS (searches per mode, the
# modes interleaved, default 3: the ceiling's spread), VT_PEER_HOSTEV (host events of both tools,
# default sched:sched_process_fork,sched:sched_process_exit), VT_KEEP=1 (keep the work dir and
# every session's files).
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/../e2e/lib.sh"
. "$HERE/../e2e/agent-lib.sh"
ME=bench-peer
VT_LOG_PREFIX=$ME
QUICK=0
while [ $# -gt 0 ]; do
	case $1 in
	--kvm) shift ;;
	--quick) QUICK=1; shift ;;
	*) break ;;
	esac
done
REPEATS=${1:-3}
echo "bench-peer --kvm: trace-cmd's agent over vsock with its KVM time sync against virtio-trace, in one KVM guest boot (nested: L2 under KVM in a TCG L1)"

skip() { echo "SKIP: $*"; exit 77; }
for t in trace-cmd python3 qemu-system-x86_64 busybox cpio ldd strip; do
	command -v "$t" >/dev/null || skip "$t is not installed"
done

WORK=$(mktemp -d /tmp/vt-bench-peer-kvm.XXXXXX)
WATCH=
cleanup() {
	[ -z "$WATCH" ] || kill "$WATCH" 2>/dev/null
	vt_guest_stop 2>/dev/null
	if [ "${VT_KEEP:-0}" = 1 ]; then echo "$ME: kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
T0=$(vt_now)

vt_collect_build >"$WORK/build.log" 2>&1 || { rc=$?; cat "$WORK/build.log"; exit $rc; }

# L2's image: trace-cmd and its libraries beside our agent and the vsock transport's modules.
O=$WORK/overlay
mkdir -p "$O/usr/bin" "$O/lib64" "$O/lib/x86_64-linux-gnu"
cp /usr/bin/trace-cmd "$O/usr/bin/"
ldd /usr/bin/trace-cmd | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' |
while read -r lib; do
	case $lib in
	*/ld-linux*) cp -L "$lib" "$O/lib64/" ;;
	*) cp -L "$lib" "$O/lib/x86_64-linux-gnu/" ;;
	esac
done
# glibc loads libgcc_s at run time (ldd does not list it): trace-cmd's time-sync thread ends in
# pthread_exit(), which aborts without it ("libgcc_s.so.1 must be installed").
gcc_s=$(ldconfig -p | awk '$1 == "libgcc_s.so.1" && /x86-64/ { print $NF; exit }')
[ -n "$gcc_s" ] && cp -L "$gcc_s" "$O/lib/x86_64-linux-gnu/" || skip "no libgcc_s.so.1 for trace-cmd's time-sync thread"
strip "$O/usr/bin/trace-cmd" "$O"/lib/x86_64-linux-gnu/* 2>/dev/null
VT_GUEST_EXTRA_MODULES="qemu_fw_cfg vmw_vsock_virtio_transport" \
	vt_agent_image "$WORK" "$HERE/peer-guest.sh" bench-peer-kvm >"$WORK/image.log" 2>&1
rc=$?
[ $rc = 77 ] && { cat "$WORK/image.log"; exit 77; }
[ $rc = 0 ] || { cat "$WORK/image.log"; echo "FAIL: no L2 image"; exit 1; }
L2_IMAGE=$VT_IMAGE
vt_l1_image >"$WORK/l1image.log" 2>&1
rc=$?
[ $rc = 0 ] || { sed "s/^/$ME: /" "$WORK/l1image.log"; exit $rc; }
echo "$ME: L1 image $VT_L1_IMAGE, L2 image $L2_IMAGE ($(vt_secs "$T0" "$(vt_now)") s)"

# The same calibration as L1's (peer-kvm-l1.sh), on this machine.
calib() {
	local a b i
	a=$(vt_now); busybox sh -c 'i=0; while [ $i -lt 20000 ]; do i=$((i + 1)); done'; b=$(vt_now)
	echo "calib_loop: $(vt_secs "$a" "$b")"
	a=$(vt_now); for ((i = 0; i < 10; i++)); do "$COLLECT" --version >/dev/null; done; b=$(vt_now)
	echo "calib_start: $(vt_secs "$a" "$b")"
}

VT_RUNDIR=$WORK/l1run
OUT=$WORK/out
mkdir -p "$VT_RUNDIR/l1/l2" "$OUT"
cp "$L2_IMAGE/vmlinux" "$VT_RUNDIR/l1/l2/vmlinux" &&
	cp "$(ls "$L2_IMAGE"/initramfs.cpio* | head -n1)" "$VT_RUNDIR/l1/l2/initramfs.cpio" || exit 1

MODES=${VT_PEER_MODES:-tc-vsock tc-vsock-nt ours ours-kc null}
CEIL=${VT_PEER_CEIL_MODES:-tc-vsock-nt ours}
[ "${VT_PEER_CEILING:-1}" = 1 ] || CEIL=
if [ $QUICK = 1 ]; then
	MODES=${VT_PEER_MODES:-tc-vsock tc-vsock-nt ours ours-kc}
	REPEATS=1 CEIL=
	N=${VT_PEER_N:-4000} SECS=${VT_PEER_SECS:-2} CLK=${VT_PEER_CLK:-3}
	VT_L1_TIMEOUT=${VT_L1_TIMEOUT:-2400}
else
	N=${VT_PEER_N:-20000} SECS=${VT_PEER_SECS:-4} CLK=${VT_PEER_CLK:-5}
	VT_L1_TIMEOUT=${VT_L1_TIMEOUT:-$((2400 * REPEATS + 3600))}
fi
VT_L1_ENV="L1_SCENARIO_TIMEOUT=$((VT_L1_TIMEOUT - 120))
PEER_MODES=\"$MODES\"
PEER_REPEATS=$REPEATS
PEER_N=$N
PEER_SECS=$SECS
PEER_CLK=$CLK
PEER_CEIL_MODES=\"$CEIL\"
PEER_CEIL_REPEATS=\"${VT_PEER_CEIL_REPEATS:-3}\"
PEER_HOSTEV=${VT_PEER_HOSTEV:-sched:sched_process_fork,sched:sched_process_exit}
${VT_PEER_RAW_MIB:+PEER_RAW_MIB=$VT_PEER_RAW_MIB}
${VT_L1_ENV:-}"
echo "$ME: modes $MODES; $REPEATS repeat(s); flat out $N markers per vCPU, paced 2 MiB/s per vCPU for $SECS s; $CLK clock rounds before and after; ceiling search: ${CEIL:-none}"

# Each session, as L1 finishes it: the row (and a ceiling step's verdict, which L1 waits for).
EVAL=$HERE/peer-kvm-eval.py
eval_pass() {
	local f d
	for f in "$OUT"/s/*/done; do
		[ -e "$f" ] || continue
		d=${f%/done}
		[ -e "$d/row" ] && continue
		if python3 "$EVAL" session "$d" "$OUT/info" >"$d/row.tmp" 2>"$d/eval.err"; then
			mv "$d/row.tmp" "$d/row"
		else
			echo "load=? mode=? id=${d##*/} verified=0 why=eval_failed:$(head -c 200 "$d/eval.err" | tr ' \n' '__')" >"$d/row"
		fi
		cat "$d/row" >>"$OUT/rows"
		python3 "$EVAL" line "$d/row" | sed "s/^/$ME: /"
		[ "${VT_KEEP:-0}" = 1 ] || find "$d" -name '*.dat' -delete
	done
}
( while :; do eval_pass; sleep 2; done ) &
WATCH=$!

vt_l1_run "$HERE/peer-kvm-l1.sh" "$OUT"
rc=$?
kill "$WATCH" 2>/dev/null
wait "$WATCH" 2>/dev/null
WATCH=
eval_pass
echo "$ME: L1 run: $VT_L1_RESULT in $VT_L1_SECS s${VT_L1_REASON:+ ($VT_L1_REASON)}"
if [ $rc = 77 ]; then
	echo "SKIP: $VT_L1_REASON"
	exit 77
fi
# What L1 said: its setup, each session's end, L2's boots, the ceiling steps.
grep -aE '^L1: (session|ceiling|l2-|trace-cmd:|collector:|tsc_khz|l1|L2 peer|.*(exited|still running|SIGKILL|gone|did not))' \
	"$VT_RUNDIR/l1/scenario.log" 2>/dev/null | sed "s/^/$ME: /" | head -300
touch "$OUT/rows" "$OUT/ceilings"
calib | sed 's/^/outer_/' >>"$OUT/info"
python3 "$EVAL" table "$OUT/rows" "$OUT/info" "$OUT/ceilings" $([ $QUICK = 1 ] && echo --quick)
trc=$?
echo "$ME: machine: $(nproc) CPUs, load average at the end: $(cut -d' ' -f1-3 /proc/loadavg); whole run $(vt_secs "$T0" "$(vt_now)") s"
[ $rc = 0 ] || { echo "$ME: FAIL: the run in L1: $VT_L1_RESULT: $VT_L1_REASON"; exit 1; }
exit $trc
