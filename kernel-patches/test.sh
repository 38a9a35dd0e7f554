#!/bin/bash
# kernel-patches/test.sh: the one command for the kernel patches: build (or take from the cache)
# both kernels with build.sh, then run the "# vt-suite: kernel" tests (tests/e2e/test-kpatch-*.sh),
# and with --bench tests/bench/bench-kpatch.sh. Prints one line per test and a summary like
# scripts/test.sh, which also runs this suite after its e2e tests (unless --no-kernel). A cold
# kernel build takes about 10 minutes on two cores (README, build.sh), then it is cached.
#   kernel-patches/test.sh [--bench]
# Exit: 0 all passed (skips allowed), 1 something failed.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
bench=0
[ "${1:-}" = --bench ] && bench=1

passed=0 failed=0 skipped=0
t0=$(date +%s)
kernel-patches/build.sh || { echo "FAIL: kernel-patches/build.sh"; exit 1; }
for t in tests/e2e/test-kpatch-*.sh; do
	grep -q '^# vt-suite: kernel' "$t" || continue
	s=$(date +%s)
	out=$("$t" 2>&1)
	rc=$?
	case $rc in
	0) r=PASS; passed=$((passed + 1)) ;;
	77) r=SKIP; skipped=$((skipped + 1)) ;;
	*) r=FAIL; failed=$((failed + 1)); echo "$out" ;;
	esac
	echo "$r: $t ($(( $(date +%s) - s )) s)"
done
[ $bench = 0 ] || tests/bench/bench-kpatch.sh || failed=$((failed + 1))
echo "$passed passed, $failed failed$([ $skipped -gt 0 ] && echo ", $skipped skipped") in $(( $(date +%s) - t0 )) s"
[ $failed = 0 ]
