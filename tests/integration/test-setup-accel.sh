#!/bin/sh
# Proves: `setup` prints the accelerator first: -accel kvm only where /dev/kvm can run a stock
# guest, else -accel tcg with the reason and the TCG recipe on standard error.
#   - this host, as it is: the test looks at /dev/kvm and /sys/module itself. On the project's
#     machines /dev/kvm is kvm_pvm's (paravirtual KVM, no vmx/svm): -accel tcg, and the reason
#     names kvm_pvm; with kvm_intel or kvm_amd and a /dev/kvm this user opens: -accel kvm and
#     nothing on standard error; no /dev/kvm: -accel tcg, "there is no /dev/kvm";
#   - --kvm-device: a missing path, a regular file, /dev/null (answers no KVM ioctl): -accel tcg,
#     each with its reason; the QEMU format's TCG recipe (trace_clock=x86-tsc, the probes' bound),
#     the libvirt format's (<domain type='qemu'>, no -accel line in XML);
#   - --accel kvm, tcg: printed unchecked, nothing on standard error; none: no -accel line, the
#     ports exactly as with an accelerator; bad values and --accel with --domain, --qmp or
#     --last-boot: usage errors (2), nothing on stdout.
# The usable case runs for real in L1 under nested KVM (tests/e2e/test-kvm-exits.sh checks that
# setup there prints -accel kvm and no reason).
echo "setup --accel: -accel kvm only where /dev/kvm runs a stock guest (kvm_pvm: tcg and why), forced and none"
: "${VT_SRCDIR:?run through make check}" "${VT_BUILDDIR:?run through make check}"
COLLECT=$VT_BUILDDIR/host-collector/virtio-trace-collect
WORK=$(mktemp -d "${TMPDIR:-/tmp}/vt-setupk.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
trap 'exit 1' INT TERM
fail() { echo "FAIL: $*"; exit 1; }

# run NAME ARGS...: setup -n 1 --dir WORK/NAME ARGS; stdout in WORK/NAME.out, stderr in .err.
run() {
	n=$1
	shift
	"$COLLECT" setup -n 1 --dir "$WORK/$n" "$@" >"$WORK/$n.out" 2>"$WORK/$n.err"
	rc=$?
	[ $rc = 0 ] || { cat "$WORK/$n.err"; fail "setup $* exited $rc"; }
	first=$(head -n1 "$WORK/$n.out")
	echo "setup $*: '$first'; $(wc -l <"$WORK/$n.err") lines on stderr: $(head -n1 "$WORK/$n.err" | cut -c1-200)"
}
tcg_recipe() {
	grep -q "^virtio-trace-collect setup: no KVM for the guest: $2" "$WORK/$1.err" ||
		fail "$1: the reason is not '$2': $(head -n1 "$WORK/$1.err")"
	grep -q "^virtio-trace-collect setup: so the arguments say -accel tcg .*trace_clock=x86-tsc.*probes', with an error bound" \
		"$WORK/$1.err" || fail "$1: no TCG recipe on stderr"
	[ "$(head -n1 "$WORK/$1.out")" = "-accel tcg" ] || fail "$1: the first line is not -accel tcg"
}

# This host, as it is.
run host
if [ ! -e /dev/kvm ]; then
	want="there is no /dev/kvm"
	tcg_recipe host "$want"
elif [ -d /sys/module/kvm_pvm ] && [ ! -d /sys/module/kvm_intel ] && [ ! -d /sys/module/kvm_amd ]; then
	echo "this host: /dev/kvm with kvm_pvm and neither kvm_intel nor kvm_amd"
	tcg_recipe host "/dev/kvm is kvm_pvm's (paravirtual KVM, /sys/module/kvm_pvm; no kvm_intel or kvm_amd"
	grep -q "runs only guest kernels built for PVM" "$WORK/host.err" || fail "host: the reason does not say what PVM runs"
elif { [ -d /sys/module/kvm_intel ] || [ -d /sys/module/kvm_amd ]; } && [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
	echo "this host: hardware KVM ($(ls -d /sys/module/kvm_intel /sys/module/kvm_amd 2>/dev/null | tr '\n' ' '))"
	[ "$first" = "-accel kvm" ] && [ ! -s "$WORK/host.err" ] ||
		fail "hardware KVM here, but setup printed '$first' and: $(cat "$WORK/host.err")"
else
	echo "this host: /dev/kvm of no known kind; setup says '$first': $(head -n1 "$WORK/host.err")"
	case $first in -accel\ kvm|-accel\ tcg) ;; *) fail "the first line is '$first'" ;; esac
fi

# Injected devices.
run missing --kvm-device "$WORK/no-such-kvm"
tcg_recipe missing "there is no $WORK/no-such-kvm (No such file or directory)"
: >"$WORK/plain"
run plain --kvm-device "$WORK/plain"
tcg_recipe plain "$WORK/plain is not a character device"
run null --kvm-device /dev/null
tcg_recipe null "/dev/null is not KVM: KVM_GET_API_VERSION gave -1, Inappropriate ioctl for device"
"$COLLECT" setup -n 1 --dir "$WORK/lv" --format libvirt --kvm-device /dev/null >"$WORK/lv.out" 2>"$WORK/lv.err" ||
	fail "setup --format libvirt exited $?"
grep -q "so the domain must be <domain type='qemu'> (QEMU's emulator, TCG)" "$WORK/lv.err" ||
	fail "libvirt: no <domain type='qemu'> recipe: $(cat "$WORK/lv.err")"
grep -q -- '-accel' "$WORK/lv.out" && fail "libvirt XML with an -accel line"
head -n1 "$WORK/lv.out" | grep -q '^<!-- virtio-trace ports' || fail "libvirt XML does not start as before"

# Forced, and none.
for a in kvm tcg; do
	run "f$a" --accel $a
	[ "$first" = "-accel $a" ] && [ ! -s "$WORK/f$a.err" ] || fail "--accel $a: '$first', stderr: $(cat "$WORK/f$a.err")"
done
run none --accel none --name x
run some --accel kvm --name x
grep -q -- '-accel' "$WORK/none.out" && fail "--accel none printed an -accel line"
sed "s|$WORK/some|$WORK/none|g" "$WORK/some.out" | tail -n +2 | cmp -s - "$WORK/none.out" ||
	fail "--accel none: the ports differ from those after -accel kvm"
[ "$(head -n1 "$WORK/none.out")" = "-name x,debug-threads=on" ] || fail "--accel none: the first line is $(head -n1 "$WORK/none.out")"

# Usage errors: exit 2, nothing on stdout.
for args in "-n 1 --accel hvf" "-n 1 --accel" "-n 1 --kvm-device ''" "--domain d --apply --accel kvm" \
	"--qmp /nonexistent --hotplug --accel tcg" "--last-boot 4M --accel kvm" "--domain d --apply --kvm-device /dev/kvm"; do
	eval "set -- $args"
	"$COLLECT" setup "$@" >"$WORK/u.out" 2>"$WORK/u.err"
	rc=$?
	[ $rc = 2 ] || fail "setup $args exited $rc, want 2"
	[ ! -s "$WORK/u.out" ] || fail "setup $args printed to stdout"
done
echo "PASS"
