#!/bin/bash
# vt-suite: e2e-kvm
# test-kvm-iommu.sh: test-collect-iommu.sh with the guest under real KVM. L1 (TCG, -cpu EPYC:
# nested SVM) runs the e2e guest as L2 with -accel kvm -cpu host,-xsave -smp 2 on q35 with
# -device intel-iommu,intremap=off first and intel_iommu=on, the ports `setup` prints on a
# virtio-serial controller behind the vIOMMU (iommu_platform=on,disable-legacy=on: the
# transport's own DMA feeds iommu map/unmap events back into the trace) and an e1000 at
# 00:05.0; `record --qemu-pid L2PID -e iommu` runs in L1 while the guest removes and rescans
# the e1000, loads its driver and brings the link up (tests/e2e/l1/scenario-guest.sh through
# vt_l1_guest_run). The recording and L2's console come back over 9p and get
# test-collect-iommu's checks here: the group, attach, map and unmap events decoded by
# trace-cmd and in order, report --iommu's topology against the guest's sysfs, report --json's
# DMA figures against trace-cmd's, per-CPU counts exact, the recording ends, clean consoles.
# Env: VT_BUILDDIR, VT_STATIC_AGENT, VT_KEEP=1, VT_L1_* (lib.sh). Exit: 0 pass, 1 fail, 77 skip
# (no SVM in this QEMU, kvm_amd does not load, no /dev/kvm in L1, no kernel to be had).
echo "test-kvm-iommu: guest iommu events through a vIOMMU-translated transport, the guest under real KVM (nested in a TCG L1), decoded and counted exactly"
VT_E2E_KVM=1 exec bash "$(dirname "${BASH_SOURCE[0]}")/test-collect-iommu.sh" "$@"
