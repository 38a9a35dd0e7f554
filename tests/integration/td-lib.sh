# Shared by the trace.dat integration tests (sourced, not run).
# Exit codes: 0 pass, 1 fail, 77 skip.

: "${VT_SRCDIR:?run through make check}" "${VT_BUILDDIR:?run through make check}"
TOOLS=$VT_BUILDDIR/tests/tools
DATA=$VT_SRCDIR/tests/data
WORK=$(mktemp -d "${TMPDIR:-/tmp}/vt-td.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT

fail() {
	echo "FAIL: $*"
	exit 1
}

need_trace_cmd() {
	command -v trace-cmd >/dev/null 2>&1 || { echo "SKIP: trace-cmd is not installed"; exit 77; }
}

# mkdat OUT ARGS...: build a file; the writer's counters go to OUT.stats
mkdat() {
	out=$1
	shift
	"$TOOLS/vt-mkdat" -o "$out" --validate --stats "$@" >"$out.stats" ||
		fail "vt-mkdat $* -o $out"
}

# stat_of FILE KEY: a counter vt-mkdat printed
stat_of() {
	awk -v k="$2" '$1 == k { print $2 }' "$1.stats"
}

# report OUT ARGS...: trace-cmd report into OUT; any warning fails the test
report() {
	out=$1
	shift
	trace-cmd report "$@" >"$out" 2>"$out.err" || fail "trace-cmd report $* exited $?"
	if [ -s "$out.err" ]; then
		cat "$out.err"
		fail "trace-cmd report $* printed warnings"
	fi
}

# count_events REPORT: lines that are events ("comm-pid [cpu] ts: name:")
count_events() {
	grep -cE '^([^ ]+: +)?.*-[0-9]+ +\[[0-9]{3}\] *[0-9]+(\.[0-9]+)?: ' "$1"
}

# timestamps REPORT: the timestamp of every event line, in order
timestamps() {
	sed -nE 's/^([^ ]+: +)?.*-[0-9]+ +\[[0-9]{3}\] *([0-9]+(\.[0-9]+)?): .*/\2/p' "$1"
}
