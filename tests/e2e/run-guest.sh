#!/bin/bash
# run-guest.sh: boot the virtio-trace test guest under QEMU/TCG, wait for it, check its console.
#
# Usage: tests/e2e/run-guest.sh [options] [-- extra QEMU arguments]
#   --image DIR        image dir from mkguest.sh (default: <cache>/image)
#   --dir DIR          run dir: console.log, qemu.cmd, qemu.pid, qmp.sock, ports/ (default: a new /tmp dir)
#   --smp N            vCPUs (default 2); also the number of trace-path-cpuN ports
#   --nports N         number of trace-path-cpuN ports instead (30 ports per virtio-serial controller)
#   --mem MB           memory (default 512)
#   --timeout S        hard limit for QEMU (default 120); exit 124 when reached
#   --single-thread    -accel tcg,thread=single (steadier guest TSC)
#   --iommu            -machine q35 -device intel-iommu,intremap=off, guest intel_iommu=on
#   --iommu-platform   the virtio-serial controller goes through the vIOMMU
#   --chardev pipe|socket   port backends: FIFOs ports/NAME.{in,out} or ports/NAME.sock (default pipe)
#   --no-ports         no virtio-serial controller
#   --bzimage          boot the compressed bzImage instead of the PVH vmlinux
#   --run PATH         guest runs PATH (a file in the initramfs)           [vt.run=PATH]
#   --script FILE      guest runs host FILE with sh (passed by fw_cfg)     [vt.script=fw_cfg]
#   --cmd STRING       guest runs sh -c STRING (no '"')                    ["vt.cmd=STRING"]
#   --append STRING    extra kernel command line
#   -q                 quieter
# Without --run/--script/--cmd the guest runs /etc/vt/run from the image, if any.
# Exit: 0 the guest ran its command with rc 0 and the console is clean; 124 timeout; 1 otherwise.
# The QEMU pid is in DIR/qemu.pid while it runs; everything started here is ended here.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
VT_LOG_PREFIX=run-guest

VT_QEMU_EXTRA=()
VT_RUNDIR=
QUIET=0
while [ $# -gt 0 ]; do
    case "$1" in
    --image) VT_IMAGE=$2; shift 2 ;;
    --dir) VT_RUNDIR=$2; shift 2 ;;
    --smp) VT_SMP=$2; shift 2 ;;
    --nports) VT_NPORTS=$2; shift 2 ;;
    --mem) VT_MEM=$2; shift 2 ;;
    --timeout) VT_TIMEOUT=$2; shift 2 ;;
    --single-thread) VT_TCG_SINGLE=1; shift ;;
    --iommu) VT_IOMMU=1; shift ;;
    --iommu-platform) VT_IOMMU_PLATFORM=1; shift ;;
    --chardev) VT_CHARDEV=$2; shift 2 ;;
    --no-ports) VT_PORTS=0; shift ;;
    --bzimage) VT_KERNEL=bzImage; shift ;;
    --run) VT_GUEST_RUN=$2; shift 2 ;;
    --script) VT_GUEST_SCRIPT=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift 2 ;;
    --cmd) VT_GUEST_CMD=$2; shift 2 ;;
    --append) VT_APPEND=$2; shift 2 ;;
    -q) QUIET=1; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    --) shift; VT_QEMU_EXTRA=("$@"); break ;;
    *) echo "run-guest: unknown option '$1' (see --help)" >&2; exit 1 ;;
    esac
done
case "${VT_CHARDEV:-pipe}" in pipe|socket) ;; *) echo "run-guest: --chardev pipe|socket" >&2; exit 1 ;; esac
[ -n "$VT_RUNDIR" ] || VT_RUNDIR=$(mktemp -d /tmp/vt-guest.XXXXXX)

trap 'vt_guest_stop' EXIT
trap 'vt_log "interrupted"; vt_guest_stop; exit 130' INT TERM HUP

vt_guest_start || exit 1
[ "$QUIET" = 1 ] || vt_log "qemu: $(cat "$VT_RUNDIR/qemu.cmd")"
ready=-
if vt_wait_console 'VT-INIT: ready' "${VT_TIMEOUT:-120}"; then
    ready=$(vt_secs "$VT_START_TIME" "$(vt_now)")
fi
vt_guest_wait
rc=$VT_QEMU_RC
total=$(vt_secs "$VT_START_TIME" "$VT_END_TIME")
VT_QEMU_PID=
read -r gready gdone < <(vt_boot_times)
[ "$QUIET" = 1 ] || vt_log "init ready after ${ready} s (guest uptime ${gready} s), QEMU ended after $total s (guest uptime at done ${gdone} s)"
if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    vt_log "TIMEOUT: QEMU killed after ${VT_TIMEOUT:-120} s"
    tr -d '\r' <"$VT_RUNDIR/console.log" | tail -n 40 | sed 's/^/  /' >&2
    exit 124
fi
if [ "$rc" != 0 ]; then
    vt_log "QEMU exited with status $rc:"
    sed 's/^/  /' "$VT_RUNDIR/qemu.stderr" >&2
    vt_check_console
    exit 1
fi
vt_check_console || exit 1
[ "$QUIET" = 1 ] || vt_log "ok (console: $VT_RUNDIR/console.log)"
exit 0
