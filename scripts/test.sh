#!/bin/bash
# Run every test suite: unit and integration (make check), the same again
# under ASan+UBSan, the fuzz smoke runs, the end-to-end guests (on Debian 12's
# kernel, then a 6.12 pass on Debian 13's, fetched privately), real KVM one
# level down (the e2e-kvm pass, about 8 minutes), and the kernel patches (both
# test kernels built by kernel-patches/build.sh, 1500 CPU seconds
# the first time and cached by content, then their guests). The kernels' build
# and Debian 13's kernel download start at the beginning, in the background at
# the lowest priority (the build under SCHED_IDLE), and are waited for where they are needed.
# Prints one line per test and ends with "N passed, N failed[, N skipped]".
# Exits non-zero when anything failed. Safe to run twice.
#
#   scripts/test.sh [--no-deps] [--quick] [--no-kernel] [--no-packages] [--packages-only]
#                   [--kvm | --kvm-pass | --kvm-only | --no-kvm]
#     --no-deps    do not run scripts/install-deps.sh
#     --quick      skip the sanitizer build, fuzz smoke, e2e, e2e-kvm, package and kernel suites
#     --no-kernel  skip the kernel-patches suite (kernel-patches/test.sh runs it alone)
#     --no-packages    skip the Debian package suite
#     --packages-only  build (make) and run only the Debian package suite
#     --kvm-pass   run the e2e-kvm pass (about 12 minutes); off by default for now: in the
#                  fresh-clone run of 2026-12-02 the L1 kernel panicked ("corrupted stack end
#                  detected inside scheduler", in its KVM vCPU thread) in 3 of 9 tests, which
#                  no run had shown before (tests/e2e/l1/README.md)
#     --kvm        the e2e-kvm pass and the KVM smoke test of the comparison with trace-cmd's
#                  vsock agent (bench-peer.sh --kvm --quick, about 4 minutes)
#     --kvm-only   build (make) and run only the e2e-kvm pass, with that smoke test
#     --no-kvm     leave the e2e-kvm pass out (one SKIP; the default)
# VT_KEEP=1 keeps each e2e test's work dir (the recording under out/) and prints "kept DIR".
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

deps=1 quick=0 kernel=1 packages=1 only_packages=0 only_kvm=0 kvm=0 kvm_bench=0
for a in "$@"; do
	case $a in
	--no-deps) deps=0 ;;
	--quick) quick=1 ;;
	--no-kernel) kernel=0 ;;
	--no-packages) packages=0 ;;
	--packages-only) only_packages=1 ;;
	--kvm-only) only_kvm=1 kvm_bench=1 ;;
	--kvm) kvm=1 kvm_bench=1 ;;
	--kvm-pass) kvm=1 ;;
	--no-kvm) kvm=0 ;;
	-h|--help) sed -n '2,/^set -u$/p' "$0" | sed '$d'; exit 0 ;;
	*) echo "test.sh: unknown option $a" >&2; exit 2 ;;
	esac
done

passed=0 failed=0 skipped=0
timed=()	# "SECONDS NAME" of each test that says its time ("N s"), for the slowest ten
phases=()	# "SECONDS PHASE" of each part of the run
run_t0=$(date +%s)
result() {	# result PASS|FAIL|SKIP name [why]
	case $1 in
	PASS) passed=$((passed + 1)) ;;
	FAIL) failed=$((failed + 1)) ;;
	SKIP) skipped=$((skipped + 1)) ;;
	esac
	[[ ${3:-} =~ ^([0-9]+)\ s$ ]] && timed+=("${BASH_REMATCH[1]} $2")
	printf '%s: %s%s\n' "$1" "$2" "${3:+ ($3)}"
}
# phase NAME T0: the part of the run that began at T0 (date +%s) is over.
phase() {
	phases+=("$(( $(date +%s) - $2 )) $1")
}
summary() {
	local s="$passed passed, $failed failed" l
	if [ ${#phases[@]} -gt 0 ] || [ ${#timed[@]} -gt 0 ]; then
		echo "where the time went ($(( $(date +%s) - run_t0 )) s in all):"
		for l in "${phases[@]}"; do printf '  %6s s  %s\n' "${l%% *}" "${l#* }"; done
		echo "the slowest ten tests:"
		printf '%s\n' "${timed[@]}" | sort -rn | head -10 | while read -r t n; do
			[ -n "$t" ] && printf '  %6s s  %s\n' "$t" "$n"
		done
	fi
	[ "$skipped" -gt 0 ] && s="$s, $skipped skipped"
	echo "$s"
	[ "$failed" -eq 0 ]
}

if [ "$deps" = 1 ]; then
	scripts/install-deps.sh || { result FAIL install-deps; summary; exit 1; }
fi

# Tests use the real tracefs; mount it where the tools expect it, and put it
# back as it was when we are done.
mounted_tracefs=0
if ! mountpoint -q /sys/kernel/tracing 2>/dev/null; then
	mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null && mounted_tracefs=1
fi
cleanup() {
	declare -F bg_stop >/dev/null && bg_stop
	[ "$mounted_tracefs" = 1 ] && umount /sys/kernel/tracing 2>/dev/null
}
trap cleanup EXIT

conf=()
[ "${CI:-}" = true ] && conf+=(--enable-werror)

# run_scripts SUITE: every tests/e2e/test-*.sh marked "# vt-suite: SUITE", one result each.
run_scripts() {
	local t out rc name t0
	for t in tests/e2e/test-*.sh; do
		[ -e "$t" ] || continue
		grep -q "^# vt-suite: $1\$" "$t" || continue
		out=$(mktemp)
		t0=$(date +%s)
		bash "$t" >"$out" 2>&1
		rc=$?
		name=$1/$(basename "$t" .sh)
		grep -a ': kept /' "$out"
		case $rc in
		0) result PASS "$name" "$(( $(date +%s) - t0 )) s" ;;
		77) result SKIP "$name" "$(grep -m1 'SKIP' "$out" | sed 's/.*SKIP: *//' | cut -c1-120)" ;;
		*)
			# Its failed checks first: the last 40 lines may start after them.
			grep -a 'FAIL: ' "$out" | head -10 | sed 's/^/    ! /'
			sed 's/^/    | /' "$out" | tail -40
			result FAIL "$name"
			;;
		esac
		rm -f "$out"
	done
}

# bench_smoke NAME ARGS...: tests/bench/bench-peer.sh ARGS as one result NAME (its 'whole run'
# figure when it prints one; its SKIP reason; its last 40 lines when it fails).
bench_smoke() {
	local name=$1 out
	shift
	out=$(mktemp)
	VT_BUILDDIR=$root/build tests/bench/bench-peer.sh "$@" >"$out" 2>&1
	case $? in
	0) result PASS "$name" "$(grep -m1 'whole run' "$out" | sed 's/.*whole run //')" ;;
	77) result SKIP "$name" "$(grep -m1 'SKIP' "$out" | sed 's/.*SKIP: *//' | cut -c1-120)" ;;
	*) sed 's/^/    | /' "$out" | tail -40; result FAIL "$name" ;;
	esac
	rm -f "$out"
}

# ---- The e2e-kvm pass: real KVM one level down (tests/e2e/l1/README.md) ------------------
# Every test marked "# vt-suite: e2e-kvm" runs its scenario inside an L1 guest that QEMU runs
# under TCG with nested SVM, where the guest under test runs under KVM; each SKIPs with the
# reason where this QEMU or kernel cannot (about 8 minutes on 2 cores); with --kvm or --kvm-only
# then bench-peer.sh --kvm --quick.
run_kvm() {
	local t0 out
	t0=$(date +%s)
	run_scripts e2e-kvm
	# The smoke test of the comparison with trace-cmd's vsock agent under KVM (about 4 minutes):
	# every mode delivered, ours verified with trace-cmd report; no figures judged.
	[ "$kvm_bench" = 0 ] || bench_smoke e2e-kvm/bench-peer-kvm-quick --kvm --quick
	echo "e2e-kvm: $(( $(date +%s) - t0 )) s"
}

if [ ! -x configure ] || [ configure.ac -nt configure ]; then
	autoreconf -fi >/tmp/vt-autoreconf.log 2>&1 || { cat /tmp/vt-autoreconf.log; result FAIL autoreconf; summary; exit 1; }
fi

# run_suite DIR LABEL CONFIGURE-ARGS...: build in DIR, run make check, one line per test.
run_suite() {
	local dir=$1 label=$2 trs name res why log
	shift 2
	mkdir -p "$dir"
	if ! (cd "$dir" && "$root/configure" -q "$@" >configure.out 2>&1); then
		cat "$dir/configure.out" "$dir/config.log" 2>/dev/null | tail -30
		result FAIL "$label: configure"
		return
	fi
	if ! make -C "$dir" -s -j"$(nproc)" all >"$dir/build.out" 2>&1; then
		tail -40 "$dir/build.out"
		result FAIL "$label: build"
		return
	fi
	find "$dir/tests" -name '*.trs' -delete 2>/dev/null
	local make_ok=1 failed_before=$failed
	# One test per CPU. Two per CPU took the plain pass from 459 s to 325 s on a quiet machine,
	# but not beside the background kernel build (656 s, then 668 s: the build's CPU is the
	# bound), and there it missed timing bounds: four of the ASan pass's (list 3.8 s, withhold
	# 9.3 s, livebusy 3.1 s, live) and test-collect-livebusy's in the plain pass (1.17 s).
	make -C "$dir" -s -j"$(nproc)" -k check >"$dir/check.out" 2>&1 || make_ok=0
	for trs in $(find "$dir/tests" -name '*.trs' | sort); do
		name=${trs#"$dir/tests/"}
		name=${name%.trs}
		res=$(sed -n 's/^:test-result: //p' "$trs" | head -1)
		log=${trs%.trs}.log
		# Its time: the log is made when the test starts, the .trs when it ends.
		why=$(( $(stat -c %Y "$trs") - $(stat -c %W "$log" 2>/dev/null || echo 0) ))
		[ "$why" -ge 0 ] && [ "$why" -lt 100000 ] && why="$why s" || why=
		case $res in
		PASS) result PASS "$label: $name" "$why" ;;
		# XFAIL_TESTS: known failures waiting for their fix (an XPASS fails below).
		XFAIL) result PASS "$label: $name" "expected failure, in XFAIL_TESTS" ;;
		SKIP) why=$(grep -m1 -i '^skip' "$log" | cut -c1-120)
		      result SKIP "$label: $name" "${why:-no reason printed}" ;;
		*) sed 's/^/    | /' "$log" | tail -25
		   result FAIL "$label: $name" ;;
		esac
	done
	# make failing with no failed test means a test program did not build.
	if [ "$make_ok" = 0 ] && [ "$failed" = "$failed_before" ]; then
		grep -E 'error|Error' "$dir/check.out" | head -20
		result FAIL "$label: make check (a test did not build)"
	fi
}

###############################################################################
# Debian packages: the packages a user installs, built, checked, installed and used.
#   package/build    `dpkg-buildpackage -us -uc -b` in a clean tree: the `make dist` tarball
#                    unpacked in a scratch dir (so the tarball must carry debian/ and all)
#   package/lintian  0 errors (warnings and infos are printed)
#   package/install  both packages into a scratch root with dpkg --root (never this machine),
#                    every file in place (the README and the example domain XML in
#                    /usr/share/doc/virtio-trace-collect too), then purged again
#   package/autopkgtest  debian/tests/record-fake-guest with the installed collector (a fake
#                    guest built from this tree records exactly; see debian/tests/control)
#   package/e2e      tests/e2e/test-collect-guest.sh with the installed collector and a guest
#                    image made from the trace-agent package's files (dpkg-deb -x into the image)
# A step that cannot run says why (SKIP); the .debs stay in build/packages/.
###############################################################################
run_packages() {
	local pk=$root/build/packages scratch rc out tb deb v proot aroot n why ltmp
	for t in dpkg-buildpackage dh; do
		if ! command -v $t >/dev/null; then
			result SKIP package/build "$t not found (apt-get install dpkg-dev debhelper)"
			return
		fi
	done
	rm -rf "$pk" && mkdir -p "$pk" || { result FAIL package/build "cannot make $pk"; return; }
	scratch=$(mktemp -d /tmp/vt-packages.XXXXXX)
	out=$pk/build.log
	if ! make -C "$root/build" -s dist >"$out" 2>&1; then
		tail -20 "$out"; result FAIL package/build "make dist failed"; rm -rf "$scratch"; return
	fi
	tb=$(ls "$root"/build/virtio-trace-*.tar.gz | head -n1)
	tar -C "$scratch" -xzf "$tb" && mv "$tb" "$pk/"
	v=$(basename "$tb" .tar.gz)
	if (cd "$scratch/$v" && DEB_BUILD_OPTIONS="parallel=$(nproc)" dpkg-buildpackage -us -uc -b) >>"$out" 2>&1; then
		mv "$scratch"/*.deb "$scratch"/*.changes "$scratch"/*.buildinfo "$pk/"
		result PASS package/build "$(cd "$pk" && for deb in trace-agent_*.deb virtio-trace-collect_*.deb; do
			printf '%s %s bytes, %s entries; ' "$deb" "$(stat -c %s "$deb")" "$(dpkg-deb -c "$deb" | wc -l)"; done)"
	else
		tail -30 "$out"; result FAIL package/build; rm -rf "$scratch"; return
	fi
	rm -rf "$scratch"

	# lintian leaves its mldbm-elf-* files in TMPDIR: a directory of the run's own takes them.
	ltmp=$pk/lintian-tmp
	mkdir -p "$ltmp"
	if ! command -v lintian >/dev/null; then
		result SKIP package/lintian "lintian not found (apt-get install lintian)"
	elif ! TMPDIR=$ltmp lintian --info "$pk"/*.changes >"$pk/lintian.txt" 2>&1 &&
		! grep -q '^[EW]: ' "$pk/lintian.txt"; then
		tail -5 "$pk/lintian.txt"; result FAIL package/lintian "lintian did not run"
	else
		grep -E '^[EWIPX]: ' "$pk/lintian.txt" | sort -u | sed 's/^/    lintian: /'
		n=$(grep -c '^E: ' "$pk/lintian.txt")
		if [ "$n" = 0 ]; then
			result PASS package/lintian "0 errors, $(grep -c '^W: ' "$pk/lintian.txt") warnings"
		else
			result FAIL package/lintian "$n errors"
		fi
	fi
	rm -rf "$ltmp"

	# A scratch root with an empty dpkg database; maintainer scripts run outside it
	# (DPKG_ROOT set: they leave this machine alone), dependencies are this machine's.
	proot=$(mktemp -d /tmp/vt-pkgroot.XXXXXX)
	mkdir -p "$proot/var/lib/dpkg/info" "$proot/var/lib/dpkg/updates" &&
		: >"$proot/var/lib/dpkg/status" && : >"$proot/var/lib/dpkg/available"
	why=
	if ! dpkg --root="$proot" --force-depends --force-script-chrootless --log=/dev/null \
		-i "$pk"/trace-agent_*.deb "$pk"/virtio-trace-collect_*.deb >"$pk/install.log" 2>&1; then
		why="dpkg -i failed: $(tail -n1 "$pk/install.log")"
	fi
	for f in usr/bin/virtio-trace-collect usr/sbin/trace-agent lib/systemd/system/trace-agent.service \
		lib/udev/rules.d/90-trace-agent.rules usr/share/bash-completion/completions/virtio-trace-collect \
		usr/share/man/man1/virtio-trace-collect.1.gz usr/share/man/man1/virtio-trace-collect-record.1.gz \
		usr/share/man/man1/virtio-trace-collect-recover.1.gz usr/share/man/man1/virtio-trace-collect-report.1.gz \
		usr/share/man/man1/virtio-trace-collect-setup.1.gz usr/share/man/man1/virtio-trace-collect-list.1.gz \
		usr/share/man/man1/virtio-trace-collect-join.1.gz usr/share/man/man1/virtio-trace-collect-check.1.gz \
		usr/share/man/man8/trace-agent.8.gz \
		usr/share/man/man5/virtio-trace-collect-files.5.gz usr/share/man/man5/virtio-trace-protocol.5.gz; do
		[ -e "$proot/$f" ] || why="${why:+$why; }no /$f"
	done
	ls "$proot"/usr/lib/*/virtio-trace/virtio-trace-collect-libvirt.so >/dev/null 2>&1 || why="${why:+$why; }no libvirt module"
	for f in usr/share/doc/virtio-trace-collect/README.md usr/share/doc/virtio-trace-collect/examples/example-2vcpu.xml \
		usr/share/doc/virtio-trace-collect/examples/example-2vcpu.args; do
		[ -e "$proot/$f" ] || [ -e "$proot/$f.gz" ] || why="${why:+$why; }no /$f"
	done
	dpkg-deb -f "$pk"/virtio-trace-collect_*.deb Homepage | grep -q '^https://' ||
		why="${why:+$why; }no Homepage field"
	ls "$proot"/usr/lib/*/traceevent/plugins/plugin_mmiotrace.so >/dev/null 2>&1 || why="${why:+$why; }no plugin_mmiotrace.so"
	grep -qa '/ld-linux' "$proot/usr/sbin/trace-agent" && why="${why:+$why; }trace-agent is not static"
	grep -q "^ExecStart=/usr/sbin/trace-agent " "$proot/lib/systemd/system/trace-agent.service" ||
		why="${why:+$why; }the unit does not start /usr/sbin/trace-agent"
	"$proot/usr/bin/virtio-trace-collect" --version | grep -qx "virtio-trace-collect ${v#virtio-trace-}" ||
		why="${why:+$why; }the installed collector does not run"
	if [ -z "$why" ]; then
		result PASS package/install "dpkg --root $(dpkg --root="$proot" -l | grep -c '^ii') packages, files in place"
	else
		result FAIL package/install "$why"
	fi

	# The autopkgtest, with the collector from the scratch root.
	out=$(mktemp)
	VT_COLLECT=$proot/usr/bin/virtio-trace-collect sh debian/tests/record-fake-guest >"$out" 2>&1
	rc=$?
	if [ $rc = 0 ] && grep -q '^PASS' "$out"; then
		result PASS package/autopkgtest "record-fake-guest: $(grep -c '^cpu[0-9]*: ' "$out") CPUs exact"
	else
		sed 's/^/    | /' "$out" | tail -20; result FAIL package/autopkgtest "record-fake-guest exited $rc"
	fi
	rm -f "$out"

	# The e2e scenario with what the packages installed: the collector from the scratch root,
	# the guest image from trace-agent's files.
	aroot=$(mktemp -d /tmp/vt-agentroot.XXXXXX)
	dpkg-deb -x "$pk"/trace-agent_*.deb "$aroot"
	out=$(mktemp)
	VT_COLLECT=$proot/usr/bin/virtio-trace-collect VT_AGENT_ROOT=$aroot VT_E2E_MARKERS=500 \
		bash tests/e2e/test-collect-guest.sh >"$out" 2>&1
	rc=$?
	case $rc in
	0) result PASS package/e2e "$(grep -m1 'collector ' "$out" | sed 's/^[^:]*: //')" ;;
	77) result SKIP package/e2e "$(grep -m1 'SKIP' "$out" | sed 's/.*SKIP: *//' | cut -c1-120)" ;;
	*) sed 's/^/    | /' "$out" | tail -40; result FAIL package/e2e ;;
	esac
	rm -f "$out"
	rm -rf "$aroot"

	dpkg --root="$proot" --force-script-chrootless --log=/dev/null -P trace-agent virtio-trace-collect \
		>>"$pk/install.log" 2>&1 || echo "    dpkg --root -P failed (see $pk/install.log)"
	n=$(find "$proot" -type f ! -path "$proot/var/lib/dpkg/*" | wc -l)
	[ "$n" = 0 ] || echo "    note: $n files left in $proot after purge"
	rm -rf "$proot"
}

# only PASS: configure (once) and make build/, then run just PASS (run_packages, run_kvm).
only() {
	mkdir -p build
	if [ ! -f build/Makefile ]; then
		(cd build && "$root/configure" -q "${conf[@]}") >/dev/null || { result FAIL configure; summary; exit 1; }
	fi
	make -C build -s -j"$(nproc)" >/dev/null 2>&1 || { result FAIL build; summary; exit 1; }
	"$1"
	summary
	exit
}
[ "$only_packages" = 1 ] && only run_packages
[ "$only_kvm" = 1 ] && only run_kvm

# The kernel patches' two kernels (1500 CPU seconds cold, kernel-patches/build.sh)
# and Debian 13's kernel package build and download from the start, in the background at the
# lowest priority: they take the CPU the suites leave idle (tests waiting on timers and guests)
# instead of a part of their own at the end. Each is waited for where it is needed; the
# suites' timing bounds are not loosened for them. The build runs under SCHED_IDLE (chrt
# --idle), which yields to every ordinary task: at nice 19 it still took enough from
# test-collect-livebusy's live view (itself at nice 10 beside two busy loops) for its first line
# to come 0.641 s after "recording" against the 0.6 s bound (the 2026-12-02 fresh-clone run, where
# the build ended 24 min in, inside the two make checks: 1121 s cold, 243 s patched).
bg_kernel= bg_kernel_out= bg_e612=
if [ "$quick" = 0 ]; then
	if [ "$kernel" = 1 ]; then
		bg_kernel_out=$(mktemp)
		# Its exit status goes to a file beside its output: bash forgets the status of a
		# background job whose pid a later child of this shell reuses, and pid_max is 32768
		# here; a CI run's wait said "pid 16968 is not a child of this shell" (status 127).
		setsid sh -c 'chrt --idle 0 nice -n 19 kernel-patches/build.sh -q; echo $? >"$1.rc"' \
			sh "$bg_kernel_out" >"$bg_kernel_out" 2>&1 &
		bg_kernel=$!
		bg_kernel_t0=$(date +%s)
	fi
	setsid nice -n 19 tests/e2e/kernel-deb.sh -q --suite trixie >/dev/null 2>&1 &
	bg_e612=$!
fi
# A run that ends early (a failed autoreconf, ^C) stops them: their process groups are theirs.
bg_stop() {
	local p
	for p in $bg_kernel $bg_e612; do
		kill -0 "$p" 2>/dev/null && kill -- "-$p" 2>/dev/null
	done
	[ -z "$bg_kernel_out" ] || rm -f "$bg_kernel_out" "$bg_kernel_out.rc"
}
# bg_wait PID RCFILE: the exit status the job left in RCFILE, once its process group is gone
# (1 if it left none); never bash's wait, which may have forgotten it (above).
bg_wait() {
	while kill -0 -- "-$1" 2>/dev/null; do sleep 1; done
	wait "$1" 2>/dev/null
	[ -s "$2" ] || return 1
	return "$(cat "$2")"
}

ph0=$(date +%s)
run_suite build check "${conf[@]}"
phase "build and make check" "$ph0"
if [ "$quick" = 0 ]; then
	ph0=$(date +%s)
	run_suite build-asan asan --enable-sanitizers "${conf[@]}"
	phase "the ASan+UBSan build and its make check" "$ph0"
	# Fuzz smoke: each harness for a bounded run.
	ph0=$(date +%s)
	while read -r line; do
		case $line in
		PASS:*|FAIL:*|SKIP:*) r=${line%%:*}; rest=${line#*: }; result "$r" "$rest" ;;
		*) echo "$line" ;;
		esac
	done < <(scripts/fuzz.sh --smoke 2>&1)
	phase "fuzz smoke" "$ph0"
	# End-to-end: real guests under QEMU.
	ph0=$(date +%s)
	run_scripts e2e
	phase "e2e (Debian 12's kernel)" "$ph0"
	# The Debian packages (the block above run_suite).
	ph0=$(date +%s)
	[ "$packages" = 1 ] && run_packages
	phase "packages" "$ph0"

	# ---- The e2e suite on Debian 13's kernel (6.12) -------------------------------------
	# The kernel comes from Debian's trixie archive through a private apt configuration
	# (tests/e2e/kernel-deb.sh: own sources.list, lists and cache under .cache/apt-trixie;
	# /etc/apt is never touched) and is cached by content.  These tests run again on it, in
	# their own image dirs (image-NAME@6.12...), then every test marked "# vt-suite: e2e-6.12".
	# No kernel to be had (archive unreachable, nothing cached): one SKIP with the reason.
	e612_out=$(mktemp)
	ph0=$(date +%s)
	[ -z "$bg_e612" ] || bg_wait "$bg_e612" /dev/null	# its fetch, started at the beginning (status unused)
	if e612_deb=$(tests/e2e/kernel-deb.sh -q --suite trixie 2>"$e612_out"); then
		for t in test-agent-guest test-collect-guest test-collect-mmiotrace test-collect-iommu \
			 $(grep -l '^# vt-suite: e2e-6.12$' tests/e2e/test-*.sh 2>/dev/null | xargs -rn1 basename | sed 's/\.sh$//'); do
			t0=$(date +%s)
			VT_KERNEL_DEB=$e612_deb bash "tests/e2e/$t.sh" >"$e612_out" 2>&1
			rc=$?
			case $rc in
			0) result PASS "e2e-6.12/$t" "$(( $(date +%s) - t0 )) s" ;;
			77) result SKIP "e2e-6.12/$t" "$(grep -m1 'SKIP' "$e612_out" | sed 's/.*SKIP: *//' | cut -c1-120)" ;;
			*) sed 's/^/    | /' "$e612_out" | tail -40; result FAIL "e2e-6.12/$t" ;;
			esac
		done
	else
		result SKIP e2e-6.12 "$(tail -n1 "$e612_out" | cut -c1-160)"
	fi
	rm -f "$e612_out"
	phase "e2e-6.12" "$ph0"
	# ---- end of the 6.12 pass -------------------------------------------------------------
	ph0=$(date +%s)
	if [ "$kvm" = 1 ]; then
		run_kvm
	else
		result SKIP e2e-kvm "off by default: L1 panicked in 3 of 9 tests of the 2026-12-02 fresh-clone run (tests/e2e/l1/README.md); --kvm-pass runs it"
	fi
	phase "e2e-kvm" "$ph0"
	# Smoke test of the side-by-side benchmark against trace-cmd's agent (about 1-2 minutes):
	# every transport delivered and its output verified with trace-cmd report; no figures judged.
	ph0=$(date +%s)
	bench_smoke bench/bench-peer-quick --quick
	phase "bench-peer --quick" "$ph0"
	# The kernel patches: their kernels first (a failed build fails the suite once, clearly).
	ph0=$(date +%s)
	if [ "$kernel" = 1 ]; then
		# The build started at the beginning (above): its result, when it ends.
		out=$bg_kernel_out
		bg_wait "$bg_kernel" "$bg_kernel_out.rc"
		rc=$?
		bg_kernel= bg_kernel_out=
		case $rc in
		0) result PASS kernel/build "$(( $(date +%s) - bg_kernel_t0 )) s in the background, $(( $(date +%s) - ph0 )) s waited for" ;;
		2) result SKIP kernel/build "$(tail -n1 "$out" | cut -c1-120)" ;;
		*) sed 's/^/    | /' "$out" | tail -40; result FAIL kernel/build ;;
		esac
		rm -f "$out" "$out.rc"
		[ $rc = 1 ] || run_scripts kernel
	fi
	phase "kernel patches" "$ph0"
fi

summary
