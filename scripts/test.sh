#!/bin/bash
# Run every test suite: unit and integration (make check), the same again
# under ASan+UBSan, the fuzz smoke runs, the end-to-end guests, and the
# kernel patches (both test kernels built by kernel-patches/build.sh, about
# 10 minutes the first time and cached by content, then their guests).
# Prints one line per test and ends with "N passed, N failed[, N skipped]".
# Exits non-zero when anything failed. Safe to run twice.
#
#   scripts/test.sh [--no-deps] [--quick] [--no-kernel]
#     --no-deps    do not run scripts/install-deps.sh
#     --quick      skip the sanitizer build, fuzz smoke, e2e and kernel suites
#     --no-kernel  skip the kernel-patches suite (kernel-patches/test.sh runs it alone)
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

deps=1 quick=0 kernel=1
for a in "$@"; do
	case $a in
	--no-deps) deps=0 ;;
	--quick) quick=1 ;;
	--no-kernel) kernel=0 ;;
	-h|--help) sed -n '2,12p' "$0"; exit 0 ;;
	*) echo "test.sh: unknown option $a" >&2; exit 2 ;;
	esac
done

passed=0 failed=0 skipped=0
result() {	# result PASS|FAIL|SKIP name [why]
	case $1 in
	PASS) passed=$((passed + 1)) ;;
	FAIL) failed=$((failed + 1)) ;;
	SKIP) skipped=$((skipped + 1)) ;;
	esac
	printf '%s: %s%s\n' "$1" "$2" "${3:+ ($3)}"
}
summary() {
	local s="$passed passed, $failed failed"
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
	[ "$mounted_tracefs" = 1 ] && umount /sys/kernel/tracing 2>/dev/null
}
trap cleanup EXIT

conf=()
[ "${CI:-}" = true ] && conf+=(--enable-werror)

# run_scripts SUITE: every tests/e2e/test-*.sh marked "# vt-suite: SUITE", one result each.
run_scripts() {
	local t out rc name
	for t in tests/e2e/test-*.sh; do
		[ -e "$t" ] || continue
		grep -q "^# vt-suite: $1\$" "$t" || continue
		out=$(mktemp)
		bash "$t" >"$out" 2>&1
		rc=$?
		name=$1/$(basename "$t" .sh)
		case $rc in
		0) result PASS "$name" ;;
		77) result SKIP "$name" "$(grep -m1 'SKIP' "$out" | sed 's/.*SKIP: *//' | cut -c1-120)" ;;
		*) sed 's/^/    | /' "$out" | tail -40; result FAIL "$name" ;;
		esac
		rm -f "$out"
	done
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
	make -C "$dir" -s -j"$(nproc)" -k check >"$dir/check.out" 2>&1 || make_ok=0
	for trs in $(find "$dir/tests" -name '*.trs' | sort); do
		name=${trs#"$dir/tests/"}
		name=${name%.trs}
		res=$(sed -n 's/^:test-result: //p' "$trs" | head -1)
		log=${trs%.trs}.log
		case $res in
		PASS) result PASS "$label: $name" ;;
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

run_suite build check "${conf[@]}"
if [ "$quick" = 0 ]; then
	run_suite build-asan asan --enable-sanitizers "${conf[@]}"
	# Fuzz smoke: each harness for a bounded run.
	while read -r line; do
		case $line in
		PASS:*|FAIL:*|SKIP:*) r=${line%%:*}; rest=${line#*: }; result "$r" "$rest" ;;
		*) echo "$line" ;;
		esac
	done < <(scripts/fuzz.sh --smoke 2>&1)
	# End-to-end: real guests under QEMU.
	run_scripts e2e
	# Smoke test of the side-by-side benchmark against trace-cmd's agent (about 1-2 minutes):
	# every transport delivered and its output verified with trace-cmd report; no figures judged.
	out=$(mktemp)
	VT_BUILDDIR=$root/build tests/bench/bench-peer.sh --quick >"$out" 2>&1
	case $? in
	0) result PASS bench/bench-peer-quick ;;
	77) result SKIP bench/bench-peer-quick "$(grep -m1 'SKIP' "$out" | sed 's/.*SKIP: *//' | cut -c1-120)" ;;
	*) sed 's/^/    | /' "$out" | tail -40; result FAIL bench/bench-peer-quick ;;
	esac
	rm -f "$out"
	# The kernel patches: their kernels first (a failed build fails the suite once, clearly).
	if [ "$kernel" = 1 ]; then
		out=$(mktemp)
		t0=$(date +%s)
		kernel-patches/build.sh -q >"$out" 2>&1
		rc=$?
		case $rc in
		0) result PASS kernel/build "$(( $(date +%s) - t0 )) s" ;;
		2) result SKIP kernel/build "$(tail -n1 "$out" | cut -c1-120)" ;;
		*) sed 's/^/    | /' "$out" | tail -40; result FAIL kernel/build ;;
		esac
		rm -f "$out"
		[ $rc = 1 ] || run_scripts kernel
	fi
fi

summary
