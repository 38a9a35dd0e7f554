#!/bin/bash
# lastboot-probe.sh: an experiment, not a test. Does a TCG guest keep a persistent, boot-mapped
# ftrace buffer across a crash and QEMU's warm reset, and does the kernel find it again?
# Boots a 2-vCPU guest (VT_KERNEL_DEB, default debian:trixie: 6.12) with
#   reserve_mem=SIZE:4096:vtlast trace_instance=vtlast^traceoff@vtlast,sched:sched_switch panic=1
# and WITHOUT -no-reboot. Boot 1: turns the instance on, writes N markers "vt-lastboot I" into it,
# prints its stats and the reserved range, then crashes with sysrq c. The kernel panics and reboots
# (panic=1): QEMU resets the machine and reloads the same kernel and initramfs. Boot 2: prints
# what the instance holds (markers, sched_switch events, last_boot_info when the kernel has it)
# and powers off. Everything is on the console, which this script summarises.
# Usage: tests/e2e/lastboot-probe.sh [N markers, default 50]   Env: VT_KERNEL_DEB, VT_RESERVE
# (default 4M), VT_KEEP=1 keeps the run dir. Exit 0 when boot 2 found all N markers, in order.
echo "lastboot-probe: does a boot-mapped ftrace buffer survive a guest crash and QEMU's warm reset?"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
VT_LOG_PREFIX=lastboot-probe
N=${1:-50}
export VT_KERNEL_DEB=${VT_KERNEL_DEB:-debian:trixie}
WORK=$(mktemp -d /tmp/vt-lastboot.XXXXXX)
cleanup() { vt_guest_stop 2>/dev/null; [ "${VT_KEEP:-0}" = 1 ] && echo "kept $WORK" || rm -rf "$WORK"; }
trap cleanup EXIT

vt_kernel_select >"$WORK/kernel.msg"; rc=$?
[ $rc = 0 ] || { cat "$WORK/kernel.msg"; exit $rc; }
"$VT_E2E_DIR/mkguest.sh" -q >/dev/null 2>"$WORK/mkguest.log" || { cat "$WORK/mkguest.log"; exit 1; }

cat >"$WORK/guest.sh" <<EOF
T=/sys/kernel/tracing
I=\$T/instances/vtlast
echo "LB: cmdline \$(cat /proc/cmdline)"
dmesg | grep -i 'reserve_mem\|vtlast\|boot.*buffer\|persistent' | sed 's/^/LB: dmesg /'
[ -d \$I ] || { echo "LB: no instance vtlast"; exit 1; }
echo "LB: files \$(ls \$I | tr '\n' ' ')"
[ -r \$I/last_boot_info ] && sed 's/^/LB: last_boot_info /' \$I/last_boot_info
echo "LB: tracing_on \$(cat \$I/tracing_on) buffer_size_kb \$(cat \$I/buffer_size_kb)"
have=\$(grep -c 'vt-lastboot [0-9]' \$I/trace)
echo "LB: the instance holds \$have markers and \$(grep -c 'sched_switch:' \$I/trace) sched_switch events"
if [ "\$have" -gt 0 ]; then
    echo "LB: boot 2"
    grep -o 'vt-lastboot [0-9]*' \$I/trace | awk '{ if (\$2 != n) bad++; n++ } END { print "LB: markers in order: " (bad ? "no" : "yes") ", last " n - 1 }'
    grep 'vt-lastboot\|sched_switch' \$I/trace | tail -n 3 | sed 's/^/LB: last event /'
    exit 0
fi
echo "LB: boot 1"
echo 1 >\$I/tracing_on
i=0
while [ \$i -lt $N ]; do echo "vt-lastboot \$i" >\$I/trace_marker; i=\$((i + 1)); done
grep -H . \$I/per_cpu/cpu*/stats | grep -E 'entries|overrun' | sed 's/^/LB: /'
echo "LB: crashing"
echo c >/proc/sysrq-trigger
EOF

VT_RUNDIR=$WORK/run VT_PORTS=0 VT_SMP=2 VT_TIMEOUT=150 VT_GUEST_SCRIPT=$WORK/guest.sh
VT_APPEND="reserve_mem=${VT_RESERVE:-4M}:4096:vtlast trace_instance=vtlast^traceoff@vtlast,sched:sched_switch panic=1"
mkdir -p "$VT_RUNDIR"
# A warm reset: no -no-reboot, so the guest's reboot after the panic resets the machine.
VT_NO_REBOOT=0
vt_qemu_argv || exit 1
argv=("${VT_QEMU_ARGV[@]}")
vt_shell_quote "${argv[@]}" >"$VT_RUNDIR/qemu.cmd"
t0=$(vt_now)
timeout -k 5 "$VT_TIMEOUT" "${argv[@]}" </dev/null >"$VT_RUNDIR/qemu.stderr" 2>&1
rc=$?
echo "lastboot-probe: QEMU exited $rc after $(vt_secs "$t0" "$(vt_now)") s"
C=$VT_RUNDIR/console.log
tr -d '\r' <"$C" | grep -aE '^LB: |Kernel panic|Rebooting|reserve_mem|persistent|boot_mapped|Linux version|ring buffer|ring_buffer|vtlast' |
    grep -av 'LB: cmdline' | sed 's/^/  /'
boots=$(tr -d '\r' <"$C" | grep -ac '^VT-INIT: start')
echo "lastboot-probe: $boots boots on the console; $(tr -d '\r' <"$C" | grep -a 'VT-INIT: start' | tr '\n' ' ')"
tr -d '\r' <"$C" | grep -aq "LB: markers in order: yes, last $((N - 1))" && { echo "lastboot-probe: KEPT: boot 2 read all $N markers of boot 1"; exit 0; }
echo "lastboot-probe: NOT KEPT"
exit 1
