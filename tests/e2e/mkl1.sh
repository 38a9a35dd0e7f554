#!/bin/bash
# mkl1.sh: build the L1 image, a guest in which KVM is real (see vt_l1_run in lib.sh).
#
# The outer machine's QEMU runs L1 under TCG with -cpu max, which emulates AMD SVM with nested
# paging: L1 loads kvm_amd and runs an L2 guest with -accel kvm. This image is mkguest.sh's
# (same Debian kernel, busybox /init) with an overlay holding
#   /usr/bin/virtio-trace-collect   the build's collector (agent-lib.sh's vt_collect_build
#                                   names it: COLLECT, or VT_COLLECT), /sbin/trace-agent (static)
#   /usr/bin/qemu-system-x86_64, /usr/bin/trace-cmd, /usr/bin/strace, /usr/bin/perf (the
#                                   linux-perf binary, when installed), and every shared library
#                                   ldd lists for them and the collector (+ ld.so.cache)
#   /usr/share/qemu/                bios-256k.bin (from /usr/share/seabios), linuxboot_dma.bin,
#                                   kvmvapic.bin, pvh.bin (PVH -kernel boots), linuxboot.bin
#   /usr/lib/x86_64-linux-gnu/traceevent/plugins/   trace-cmd's event plugins
#   /l2/vmlinux, /l2/initramfs.cpio the L2 guest: the e2e collector image (vt_collect_image:
#                                   trace-agent daemon, vt-e2e-guest on port vt-test), with
#                                   the msr and pvpanic_mmio modules besides the usual ones
#   /etc/vt/l1-run, /etc/vt/l1-lib.sh   tests/e2e/l1/: what L1 runs, the scenarios' helpers
# and the modules 9p/9pnet_virtio (the shares) and kvm loaded at boot (so that /init's vt.keep
# can keep kvm events enabled), kvm_amd and virtio_blk in the image (l1-run loads kvm_amd), and
# vhost_vsock (with vsock: an L2 with a vhost-vsock-pci device, tests/bench/bench-peer.sh --kvm).
# Cached by content as mkguest.sh caches: the same inputs give the same initramfs file.
#
# Usage: tests/e2e/mkl1.sh [--out DIR] [--cache DIR] [--force] [-q]
#   --out DIR     image dir (default: CACHE/image-l1, or image-l1@TAG with VT_KERNEL_DEB)
#   --cache DIR   mkguest.sh's cache (default: $VT_CACHE or <repo>/.cache/guest)
# Env: VT_BUILDDIR, VT_STATIC_AGENT, VT_COLLECT, VT_KERNEL_DEB as for the other e2e tests.
# Prints the image dir on stdout. Exit: 0 ok, 1 failure, 77 cannot be built here (the reason
# on stdout as "SKIP: ...").
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
ME=mkl1

CACHE=${VT_CACHE:-$VT_REPO/.cache/guest}
OUT=
FORCE=()
QUIET=0
while [ $# -gt 0 ]; do
    case "$1" in
    --out) OUT=$2; shift 2 ;;
    --cache) CACHE=$2; shift 2 ;;
    --force) FORCE=(--force); shift ;;
    -q|--quiet) QUIET=1; shift ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "$ME: unknown option '$1' (see --help)" >&2; exit 1 ;;
    esac
done
say() { [ "$QUIET" = 1 ] || echo "$ME: $*" >&2; }

for t in qemu-system-x86_64 trace-cmd ldd ldconfig busybox cpio depmod; do
    command -v "$t" >/dev/null || { echo "SKIP: $t not found"; exit 77; }
done
FW_BIOS=
for f in /usr/share/qemu/bios-256k.bin /usr/share/seabios/bios-256k.bin; do
    [ -f "$f" ] && { FW_BIOS=$f; break; }
done
[ -n "$FW_BIOS" ] || { echo "SKIP: no bios-256k.bin (apt-get install seabios)"; exit 77; }

WORK=$(mktemp -d /tmp/vt-mkl1.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

t0=$(vt_now)
vt_collect_build >"$WORK/build.out"; rc=$?
[ $rc = 0 ] || { cat "$WORK/build.out"; exit $rc; }
mkdir -p "$WORK/l2"
# L2 can write its own TSC (test-kvm-offset-change): the msr module besides mkguest.sh's default;
# and drive an ISA pvpanic device (test-kvm-daemon-panic loads pvpanic_mmio).
VT_GUEST_EXTRA_MODULES="e1000 virtio_blk virtio_net qemu_fw_cfg msr pvpanic_mmio" \
    vt_collect_image "$WORK/l2" collect-l2 >"$WORK/l2.out"; rc=$?
[ $rc = 0 ] || { cat "$WORK/l2.out"; exit $rc; }
L2_IMAGE=$VT_IMAGE
say "L2 image $L2_IMAGE, collector $COLLECT, agent $VT_STATIC_AGENT"

R=$WORK/overlay
mkdir -p "$R/usr/bin" "$R/sbin" "$R/usr/share/qemu" "$R/l2" "$R/etc/vt" "$R/lib64"

# add_bin FILE DEST: FILE at DEST in the image, and each library ldd lists for it at the path
# ldd found it (the loader too).
add_bin() {
    local lib
    cp -L "$1" "$R$2" || return 1
    while read -r lib; do
        [ -e "$R$lib" ] && continue
        mkdir -p "$R$(dirname "$lib")"
        cp -L "$lib" "$R$lib" || return 1
    done < <(ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }')
}
add_bin "$COLLECT" /usr/bin/virtio-trace-collect || { echo "FAIL: cannot copy $COLLECT"; exit 1; }
add_bin "$(command -v qemu-system-x86_64)" /usr/bin/qemu-system-x86_64 || { echo "FAIL: cannot copy QEMU"; exit 1; }
add_bin "$(command -v trace-cmd)" /usr/bin/trace-cmd || { echo "FAIL: cannot copy trace-cmd"; exit 1; }
# glibc loads libgcc_s.so.1 at run time, which ldd does not list: pthread_exit() and
# pthread_cancel() unwind through it, and abort without it ("libgcc_s.so.1 must be installed for
# pthread_exit to work": trace-cmd's time-sync thread, at the end of every `record -A`).
gcc_s=$(ldconfig -p | awk '$1 == "libgcc_s.so.1" && /x86-64/ { print $NF; exit }')
[ -z "$gcc_s" ] || { mkdir -p "$R$(dirname "$gcc_s")" && cp -L "$gcc_s" "$R$gcc_s"; } || exit 1
if command -v strace >/dev/null; then add_bin "$(command -v strace)" /usr/bin/strace || exit 1; fi
# perf (linux-perf), for test-kvm-perfkvm's `perf kvm --guest`, when this machine has it. Debian's
# /usr/bin/perf was a wrapper script that runs /usr/bin/perf_X.Y for the running kernel's X.Y
# (it is the binary itself since 6.1.x's packages): the binary goes in as /usr/bin/perf.
perf_bin=
for f in /usr/bin/perf $(ls /usr/bin/perf_[0-9]* 2>/dev/null | sort -rV); do
    [ -x "$f" ] && [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] && { perf_bin=$f; break; }
done
if [ -n "$perf_bin" ]; then
    add_bin "$perf_bin" /usr/bin/perf || { echo "FAIL: cannot copy $perf_bin"; exit 1; }
fi
cp "$VT_STATIC_AGENT" "$R/sbin/trace-agent" && strip "$R/sbin/trace-agent" 2>/dev/null
for d in /usr/lib/x86_64-linux-gnu/traceevent/plugins /usr/lib/x86_64-linux-gnu/trace-cmd/plugins; do
    [ -d "$d" ] || continue
    mkdir -p "$R$d"
    cp -L "$d"/*.so "$R$d/" 2>/dev/null
done
# What QEMU loads for a -kernel boot of a PVH vmlinux or a bzImage on -machine pc.
cp -L "$FW_BIOS" "$R/usr/share/qemu/bios-256k.bin"
for f in linuxboot_dma.bin linuxboot.bin kvmvapic.bin pvh.bin multiboot_dma.bin; do
    for d in /usr/share/qemu /usr/share/seabios; do
        [ -f "$d/$f" ] && { cp -L "$d/$f" "$R/usr/share/qemu/$f"; break; }
    done
    [ -f "$R/usr/share/qemu/$f" ] || say "warning: no $f for QEMU"
done
ldconfig -r "$R" 2>/dev/null || say "warning: ldconfig -r failed (the loader's default paths remain)"

cp "$L2_IMAGE/vmlinux" "$R/l2/vmlinux"
cp "$(ls "$L2_IMAGE"/initramfs.cpio* | head -n1)" "$R/l2/initramfs.cpio"
cp "$HERE/l1/run" "$R/etc/vt/l1-run"
cp "$HERE/l1/l1-lib.sh" "$R/etc/vt/l1-lib.sh"
chmod 755 "$R/etc/vt/l1-run"
# Fixed times, so that tar in mkguest.sh hashes only content.
find "$R" -exec touch -h -d @0 {} +

vt_kernel_select >"$WORK/kernel.out"; rc=$?
[ $rc = 0 ] || { cat "$WORK/kernel.out"; exit $rc; }
OUT=${OUT:-$CACHE/image-l1$VT_KERNEL_TAG}
"$VT_E2E_DIR/mkguest.sh" -q --cache "$CACHE" "${FORCE[@]}" --overlay "$R" --out "$OUT" \
    --modules "virtio_pci virtio_console 9pnet_virtio 9p kvm" \
    --extra-modules "kvm_amd virtio_blk qemu_fw_cfg vhost_vsock" >/dev/null 2>"$WORK/mkguest.log"
rc=$?
[ $rc = 2 ] && { echo "SKIP: no guest kernel available: $(tail -n1 "$WORK/mkguest.log")"; exit 77; }
[ $rc = 0 ] || { cat "$WORK/mkguest.log"; echo "FAIL: mkguest.sh exited $rc"; exit 1; }
say "L1 image $OUT ($(du -sh "$(ls "$OUT"/initramfs.cpio* | head -n1)" | cut -f1) initramfs) in $(vt_secs "$t0" "$(vt_now)") s"
echo "$OUT"
