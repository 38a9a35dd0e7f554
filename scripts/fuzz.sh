#!/bin/bash
# Build and run the libFuzzer harnesses in tests/fuzz/.
#
#   scripts/fuzz.sh [--smoke | --long] [--time SEC] [--runs N] [--jobs N] [NAME...]
#     --smoke     each harness for 20 s or 1,000,000 runs, whichever comes
#                 first; prints PASS:/FAIL: lines (scripts/test.sh uses this)
#     --long      each harness for at least 10,000,000 runs, however long
#                 that takes (hours for the file-based ones: fuzz-spool,
#                 fuzz-recover); prints the runs and the time taken
#     --time SEC  run each harness for SEC seconds (default 600)
#     --runs N    stop each harness after N runs (with --long: instead of 10 M)
#     --jobs N    run N harnesses at a time (default: the number of CPUs)
#     NAME        harness names (fuzz-pages ...); default: all
#
# Seeds live in tests/fuzz/corpus/NAME/; the growing corpus and any crash
# files go to build-fuzz/NAME/ and never into the source tree.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

smoke=0 secs=600 runs= names=() jobs=$(nproc)
while [ $# -gt 0 ]; do
	case $1 in
	--smoke) smoke=1; secs=20 ;;
	--long) smoke=0; secs=0; runs=${runs:-10000000} ;;
	--time) secs=$2; shift ;;
	--runs) runs=$2; shift ;;
	--jobs) jobs=$2; shift ;;
	-h|--help) sed -n '2,16p' "$0"; exit 0 ;;
	-*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
	*) names+=("$1") ;;
	esac
	shift
done
if [ ${#names[@]} -eq 0 ]; then
	for f in tests/fuzz/fuzz-*.c; do names+=("$(basename "$f" .c)"); done
fi

CLANG=$(command -v clang || command -v clang-14 || true)
out=build-fuzz
mkdir -p "$out"
# The sources include config.h through the build; give the harnesses their own.
printf '#define PACKAGE_VERSION "fuzz"\n#define _GNU_SOURCE 1\n' >"$out/config.h"
# fuzz_one NAME: build and run one harness; prints its PASS:/FAIL: line (and a failure's
# excerpt); returns non-zero on failure.
fuzz_one() {
	local name=$1 src libs ldlibs extra bin corpus seeds args log t0 done_runs
	src=tests/fuzz/$name.c
	if [ -z "$CLANG" ]; then
		echo "FAIL: fuzz/$name (clang not installed: run scripts/install-deps.sh)"
		return 1
	fi
	# Each harness names the library sources it needs in a comment line.
	libs=$(sed -n 's/.*vt-fuzz-sources: //p' "$src")
	ldlibs=$(sed -n 's/.*vt-fuzz-libs: //p' "$src")
	extra=$(sed -n 's/.*vt-fuzz-args: //p' "$src")
	mkdir -p "$out/bin"
	bin=$out/bin/$name
	# shellcheck disable=SC2086
	if ! "$CLANG" -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-I lib -include config.h -I "$out" -o "$bin" "$src" $libs $ldlibs 2>"$out/$name.build.log"; then
		cat "$out/$name.build.log"
		echo "FAIL: fuzz/$name (build)"
		return 1
	fi
	corpus=$out/$name/corpus
	mkdir -p "$corpus" "$out/$name/crashes"
	seeds=tests/fuzz/corpus/${name#fuzz-}
	args=(-max_total_time="$secs" -print_final_stats=1 -artifact_prefix="$out/$name/crashes/")
	[ "$smoke" = 1 ] && args+=(-runs=1000000)
	[ -n "$runs" ] && args+=(-runs="$runs")
	# shellcheck disable=SC2206
	args+=($extra)
	log=$out/$name.log
	t0=$(date +%s)
	if "$bin" "${args[@]}" "$corpus" $( [ -d "$seeds" ] && echo "$seeds" ) >"$log" 2>&1; then
		done_runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
		echo "PASS: fuzz/$name ($done_runs runs in $(($(date +%s) - t0)) s)"
	else
		grep -E 'ERROR|SUMMARY|==[0-9]+==' "$log" | head -20
		echo "FAIL: fuzz/$name (crash inputs in $out/$name/crashes/)"
		return 1
	fi
}

# JOBS harnesses at a time (each is one process); their lines come out in the harnesses' order.
rc=0 running=0
for name in "${names[@]}"; do
	if [ "$running" -ge "$jobs" ]; then
		wait -n
		running=$((running - 1))
	fi
	fuzz_one "$name" >"$out/$name.result" 2>&1 &
	running=$((running + 1))
done
wait
for name in "${names[@]}"; do
	cat "$out/$name.result"
	grep -q '^PASS: ' "$out/$name.result" || rc=1
	rm -f "$out/$name.result"
done
exit $rc
