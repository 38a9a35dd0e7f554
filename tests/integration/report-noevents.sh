#!/bin/sh
# Proves: `report --exits`, `--iommu` and `--mmiotrace-log` on a recording without those events
# print the report, then say which events are missing and the record option that adds them
# (--kvm-exits, -e iommu, --tracer mmiotrace), and exit 5; the plain report exits 0. Fixture:
# tests/data/cap-host (sched and irq events, none of those) as a one-guest run directory.
echo "report --exits/--iommu/--mmiotrace-log: a recording without their events says so, names the record option, exits 5"
. "$VT_SRCDIR/tests/integration/td-lib.sh"
COLLECT=$VT_BUILDDIR/host-collector/virtio-trace-collect

run=$WORK/run
mkdir -p "$run"
mkdat "$run/guest-fx.dat" -i "$DATA/cap-host"
printf '{"tool":"fixture","version":"0","guests":[{"name":"fx","file":"guest-fx.dat"}]}\n' \
	>"$run/manifest.json"
P="virtio-trace-collect report: error:"
# noev WANT-RC WANT-LINES ARGS...: report ARGS exits WANT-RC, its stderr is exactly WANT-LINES.
noev() {
	want_rc=$1 want=$2
	shift 2
	"$COLLECT" report "$@" "$run" >"$WORK/out" 2>"$WORK/err"
	rc=$?
	[ $rc = "$want_rc" ] && [ "$(cat "$WORK/err")" = "$want" ] && [ -s "$WORK/out" ] ||
		fail "report $*: exit $rc, said '$(head -c 400 "$WORK/err" | tr '\n' '|')', want $want_rc and '$want'"
}
EX="$P --exits: the host trace has no kvm:kvm_exit events (record them with \`record --kvm-exits\`)"
IO="$P --iommu: no guest recorded iommu events (record them with \`record -e iommu\`)"
MM="$P --mmiotrace-log: no guest recorded mmiotrace entries (record them with \`record --tracer mmiotrace\`); $WORK/mmio.log holds the header only"
noev 0 ""
noev 5 "$EX" --exits
noev 5 "$IO" --iommu
noev 5 "$MM" --mmiotrace-log "$WORK/mmio.log"
noev 5 "$EX
$IO" --exits --iommu
noev 5 "$IO" --iommu --json
echo "PASS"
