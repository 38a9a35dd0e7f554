#!/bin/bash
# Build and run the benchmarks; print their tables. Benchmarks print figures and compare against
# a baseline measured in the same run; they never fail on a figure (a target line says "NOT met").
# Exits non-zero only when a benchmark could not run. About 8 minutes (--quick: 40 s).
#
#   scripts/bench.sh [--quick] [--agent] [--build DIR]
#     --quick      smaller inputs and fewer repetitions
#     --agent      also tests/bench/bench-agent.sh (boots a TCG guest: a minute or more) and
#                  tests/bench/bench-peer.sh (against trace-cmd's agent: ~2 min quick, ~20 min full)
#                  tests/bench/bench-mmap.sh (splice vs mmap in a 6.12 guest: about 3 minutes)
#                  tests/bench/bench-tcg-patch.sh (TCG guests hanging on patched kernel text,
#                  without and with a keeping instance: 2-6 minutes)
#     --build DIR  build directory (default build-bench; configured there if it is not)
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

quick=0 agent=0 build=$root/build-bench
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1 ;;
	--agent) agent=1 ;;
	--build) build=$2; shift ;;
	-h|--help) sed -n '2,11p' "$0"; exit 0 ;;
	*) echo "bench.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done

mkdir -p "$build" || exit 1
if [ ! -f "$build/Makefile" ]; then
	(cd "$build" && "$root/configure" -q) || { echo "bench.sh: configure failed" >&2; exit 1; }
fi
make -C "$build" -j"$(nproc)" >"$build/bench-build.log" 2>&1 ||
	{ tail -20 "$build/bench-build.log"; echo "bench.sh: build failed" >&2; exit 1; }
export VT_BUILDDIR=$build

failed=0
run() {	# run NAME COMMAND...: bounded to 5 minutes
	echo
	echo "##### $1"
	shift
	timeout -k 10 300 "$@" || { echo "bench.sh: $1 exited $?"; failed=$((failed + 1)); }
}

if [ $quick = 1 ]; then
	run bench-pages "$build/tests/bench/bench-pages" -r 3 -m 32 tests/data/cap-*/cpu*.raw
	run bench-tracedat "$build/tests/bench/bench-tracedat" -r 3 -m 64 tests/data/cap-host
	run bench-ingest tests/bench/bench-ingest.sh -q
	run bench-streams tests/bench/bench-streams.sh -q
	run bench-dense tests/bench/bench-dense.sh -q
	run bench-perfetto tests/bench/bench-perfetto.sh 2 40 3
	run bench-vcpus tests/bench/bench-vcpus.sh 30000 4 1
else
	run bench-pages "$build/tests/bench/bench-pages" tests/data/cap-*/cpu*.raw
	run bench-tracedat "$build/tests/bench/bench-tracedat" tests/data/cap-host
	run bench-ingest tests/bench/bench-ingest.sh
	run bench-streams tests/bench/bench-streams.sh
	run bench-dense tests/bench/bench-dense.sh
	run bench-perfetto tests/bench/bench-perfetto.sh
	# 1 GiB of files and trace-cmd reading them three times: about 6 minutes, bounded at 20.
	echo
	echo "##### bench-vcpus"
	timeout -k 10 1200 tests/bench/bench-vcpus.sh || { echo "bench.sh: bench-vcpus exited $?"; failed=$((failed + 1)); }
fi
if [ $agent = 1 ]; then
	run bench-agent tests/bench/bench-agent.sh "$([ $quick = 1 ] && echo 2 || echo 4)"
	echo
	echo "##### bench-peer"
	VT_BUILDDIR=$build timeout -k 10 3600 tests/bench/bench-peer.sh $([ $quick = 1 ] && echo --quick) ||
		{ echo "bench.sh: bench-peer exited $?"; failed=$((failed + 1)); }
	BENCH_REPEAT=$([ $quick = 1 ] && echo 1 || echo 3) \
		run bench-mmap tests/bench/bench-mmap.sh "$([ $quick = 1 ] && echo 2 || echo 4)"
	echo
	echo "##### bench-tcg-patch"
	VT_BUILDDIR=$build timeout -k 10 900 tests/bench/bench-tcg-patch.sh "$([ $quick = 1 ] && echo 1 || echo 3)" ||
		{ echo "bench.sh: bench-tcg-patch exited $?"; failed=$((failed + 1)); }
else
	echo
	echo "##### bench-agent: skipped (--agent runs it; it boots a TCG guest)"
fi
[ $failed = 0 ]
