#!/bin/bash
# vt-suite: e2e-kvm
# test-kvm-mmiotrace.sh: test-collect-mmiotrace.sh with the guest under real KVM, mmiotrace in a
# KVM guest (the seed's own setting). L1 (TCG, -cpu EPYC: nested SVM) runs the e2e guest as L2
# with -accel kvm -cpu host,-xsave -smp 2, the ports `setup` prints and an e1000 at 00:05.0;
# `record --qemu-pid L2PID --tracer mmiotrace` runs in L1 while the guest loads e1000 and
# brings its link up (tests/e2e/l1/scenario-guest.sh through vt_l1_guest_run). The recording
# and L2's console come back over 9p and get test-collect-mmiotrace's checks here: e1000's BAR
# 0 map and its reads and writes decoded by trace-cmd, CPU 1 offline during the recording and
# back after it, the plugin's lines, report --mmiotrace-log against trace-cmd report -R, every
# access resolved to e1000's functions, per-CPU counts exact, clean consoles; and none of KVM's
# offset writes (one at every vCPU load in L1) lost by the collector's kvm_write_tsc_offset watch.
# Env: VT_BUILDDIR, VT_STATIC_AGENT, VT_KEEP=1, VT_L1_* (lib.sh). Exit: 0 pass, 1 fail, 77 skip
# (no SVM in this QEMU, kvm_amd does not load, no /dev/kvm in L1, no kernel to be had).
echo "test-kvm-mmiotrace: mmiotrace of the e1000 driver's probe in a guest under real KVM (nested in a TCG L1): entries decoded, CPUs offline and back, no page lost, no offset write lost"
VT_E2E_KVM=1 exec bash "$(dirname "${BASH_SOURCE[0]}")/test-collect-mmiotrace.sh" "$@"
