#!/bin/bash
# The README's demo: on a fresh Debian 12 machine as root, install what is needed, build
# virtio-trace (build/, as scripts/test.sh does) and the static guest agent, build the test guest
# image, boot a 2-vCPU guest under QEMU/TCG (q35 with an Intel vIOMMU; the virtio-serial
# controller that carries the trace goes through it; an e1000 whose driver is loaded only once
# mmiotrace runs), record the guest's mmiotrace entries and iommu/sched events and QEMU's
# sched events on the host through the transport for a few seconds into demo-out/, print the first lines of
# the merged timeline, a summary, and the report's IOMMU and mmiotrace analyses; it writes
# demo-out/mmiotrace.log and demo-out/timeline.html, and checks demo-out/manifest.json and
# `report --json` against doc/manifest.schema.json and doc/report.schema.json (python3-jsonschema),
# and the recording as one Perfetto trace (`report --perfetto`; decoded with protoc when Perfetto's
# schema is at hand).
# Safe to run twice; ends every process it started.
# With --kvm the same guest runs under real KVM: QEMU/TCG here boots an L1 guest with nested SVM
# (tests/e2e/mkl1.sh), which loads kvm_amd and runs the guest with -accel kvm; the recording is
# made in L1 with `record --qemu-pid --kvm-exits` (L1's kvm_exit/kvm_entry are the host events),
# brought back, and shown the same way, plus `report --exits`: VM exits per reason with their
# handling time, and the io and MMIO exits by guest function (the e1000 driver's). Timing in a
# guest nested under TCG is not real timing: the counts and functions are what to look at.
#
#   scripts/demo.sh [--no-deps] [--seconds N] [--out DIR] [--kvm]
#     --no-deps    do not run scripts/install-deps.sh
#     --seconds N  how long to record (default 4)
#     --out DIR    output directory (default <repo>/demo-out)
#     --kvm        the guest under real KVM, nested in a TCG guest (about 2 minutes more)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
deps=1 secs=4 out=$root/demo-out kvm=0
while [ $# -gt 0 ]; do
	case $1 in
	--no-deps) deps=0 ;;
	--seconds) secs=${2:?--seconds needs a value}; shift ;;
	--out) out=${2:?--out needs a value}; shift ;;
	--kvm) kvm=1 ;;
	-h|--help) sed -n '2,23p' "$0"; exit 0 ;;
	*) echo "demo.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
case $secs in ''|*[!0-9]*|0) echo "demo.sh: --seconds wants a positive integer" >&2; exit 2 ;; esac
[ "$(id -u)" = 0 ] || { echo "demo.sh: run me as root (QEMU ports, tracefs, apt)" >&2; exit 1; }

T0=$(date +%s.%N)
step() { printf '\n== %s (%.0f s)\n' "$*" "$(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')"; }
die() { echo "demo.sh: $*" >&2; exit 1; }

if [ "$deps" = 1 ]; then
	step "installing dependencies"
	scripts/install-deps.sh || die "install-deps.sh failed"
fi

step "building virtio-trace in build/"
if [ ! -x configure ] || [ configure.ac -nt configure ]; then
	autoreconf -fi >/tmp/vt-demo-autoreconf.log 2>&1 || { cat /tmp/vt-demo-autoreconf.log; die "autoreconf failed"; }
fi
mkdir -p build
if [ ! -f build/Makefile ]; then
	(cd build && ../configure -q) || die "configure failed (see build/config.log)"
fi
make -C build -s -j"$(nproc)" >build/demo-build.out 2>&1 || { tail -30 build/demo-build.out; die "build failed"; }

# The guest harness: lib.sh boots QEMU (bounded by a timeout), agent-lib.sh builds the static agent
# (build-static/) and an image with it.
. tests/e2e/lib.sh
. tests/e2e/agent-lib.sh
VT_LOG_PREFIX=demo
VT_BUILDDIR=$root/build
step "building the static trace-agent"
vt_agent_build >&2 || die "cannot build the static agent"
COLLECT=$root/build/host-collector/virtio-trace-collect

RUN=$root/.cache/demo-run
WORK=$RUN/work
rm -rf "$RUN"
mkdir -p "$WORK"
REC_PID=
cleanup() {
	[ -n "$REC_PID" ] && kill -TERM "$REC_PID" 2>/dev/null && wait "$REC_PID" 2>/dev/null
	vt_guest_stop 2>/dev/null
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# --kvm: the guest (the e2e image, tests/e2e/agent-lib.sh: trace-agent and vt-e2e-guest) runs
# as L2 under KVM inside L1 (tests/e2e/l1/scenario-guest.sh through vt_l1_guest_run): q35 with
# intel-iommu first, setup's controller behind it, an e1000; record's COMMAND has the guest do
# the same work as the TCG demo's, for SECS seconds of ticks.
run_kvm() {
	local t=/sys/kernel/tracing rc
	step "building the nested-KVM host (tests/e2e/mkl1.sh: L1 with kvm_amd, QEMU, the collector, the guest)"
	vt_l1_image >"$RUN/l1-image.out" 2>&1; rc=$?
	[ $rc = 77 ] && die "no nested KVM here: $(sed -n 's/^SKIP: //p' "$RUN/l1-image.out")"
	[ $rc = 0 ] || { tail -20 "$RUN/l1-image.out"; die "cannot build the L1 image"; }
	vt_l1_qemu
	echo "L1's QEMU: $VT_L1_QEMU_SAYS"
	step "L1 (TCG, nested SVM) runs the guest under KVM: 2 vCPUs, q35 + intel-iommu, virtio-serial behind the vIOMMU, an e1000; $secs s of recording"
	VT_L1_WORK=("sh echo 'demo: the e1000 leaves and comes back' >$t/trace_marker; echo 1 >/sys/bus/pci/devices/0000:00:05.0/remove; sleep 0.1; echo 1 >/sys/bus/pci/rescan; echo 'demo: loading e1000' >$t/trace_marker; modprobe e1000 && ip link set eth0 up; i=0; end=\$((\$(cut -d. -f1 /proc/uptime) + $secs)); while [ \$(cut -d. -f1 /proc/uptime) -lt \$end ]; do i=\$((i + 1)); echo \"demo: tick \$i\" >$t/trace_marker; ls /proc >/dev/null; sleep 0.05; done")
	VT_L1_ENV="SCN_NAME=demo
REC_ARGS=\"--tracer mmiotrace -e iommu -e sched --host-events sched:sched_switch,sched:sched_wakeup --kvm-exits\"
L2_MACHINE=q35
L2_QEMU_FIRST=\"-device intel-iommu,intremap=off\"
L2_SERIAL_OPTS=,iommu_platform=on,disable-legacy=on
L2_APPEND=\"intel_iommu=on mmiotrace.trace_pc=1\"
L2_KEEP=sched,irq,timer,iommu
L2_QEMU_EXTRA=\"-device e1000,addr=0x5,romfile=\""
	mkdir -p "$RUN/kvm"
	VT_RUNDIR=$RUN/l1 VT_LOG_PREFIX=demo
	vt_l1_guest_run "$RUN/kvm" >"$RUN/l1.log" 2>&1; rc=$?
	tr -d '\r' <"$RUN/l1/console.log" | grep -aE '^(VT-L1|L1):' | grep -v 'VT-L1: beat' | sed 's/^/  /'
	[ $rc = 77 ] && die "no nested KVM here: $VT_L1_REASON"
	[ $rc = 0 ] || { cat "$RUN/l1.log"; die "the run in L1: $VT_L1_RESULT: $VT_L1_REASON"; }
	echo "L1 ran for $VT_L1_SECS s; its console in $RUN/l1/console.log, the guest's in $RUN/kvm/l2-demo-console.log"
	rrc=$(cat "$RUN/kvm/record.rc")
	[ -s "$RUN/kvm/record.log" ] && sed 's/^/record: /' "$RUN/kvm/record.log"
	rm -rf "$out"
	mv "$RUN/kvm/rec" "$out" || die "record exited $rrc and wrote nothing"
	[ -s "$out/manifest.json" ] || die "record exited $rrc and wrote no manifest"
	trace-cmd report -i "$out/host.dat" -i "$out/guest-demo.dat" >"$out/report.txt" 2>"$RUN/report.err" ||
		{ cat "$RUN/report.err"; die "trace-cmd report failed"; }
}

# The TCG demo's guest: the agent as a daemon that leaves after the collector's BYE. Once the collector
# has switched the tracer to mmiotrace (it takes CPU 1 offline until the stop) and started
# tracing, the workload
# removes and rescans the e1000 (iommu group events), loads its driver and brings the link up
# (mmiotrace of the probe, iommu map/unmap of its rings), then ticks with markers and process
# churn until the agent leaves; /init then powers off.
cat >"$WORK/demo-run" <<'SH'
#!/bin/sh
trace-agent --quiet --once &
agent=$!
(
	t=/sys/kernel/tracing
	until [ "$(cat $t/current_tracer)" = mmiotrace ] && [ "$(cat $t/tracing_on)" = 1 ]; do
		usleep 20000
	done
	echo "demo: the e1000 leaves and comes back" >$t/trace_marker
	echo 1 >/sys/bus/pci/devices/0000:00:05.0/remove
	usleep 100000
	echo 1 >/sys/bus/pci/rescan
	echo "demo: loading e1000" >$t/trace_marker
	modprobe e1000 && ip link set eth0 up
	i=0
	while :; do
		i=$((i + 1))
		echo "demo: tick $i" >$t/trace_marker 2>/dev/null
		ls /proc >/dev/null
		usleep 20000
	done
) &
work=$!
wait "$agent"
rc=$?
kill "$work"
echo "DEMO: trace-agent exited $rc"
exit $rc
SH

run_tcg() {
	step "building the guest image (tests/e2e/mkguest.sh)"
	vt_agent_image "$WORK" "$WORK/demo-run" demo >&2 || die "cannot build the guest image"

	step "booting the guest: 2 vCPUs, q35 + intel-iommu, virtio-serial behind the vIOMMU, an e1000"
	PORTS=$RUN/ports
	"$COLLECT" setup --vcpus 2 --dir "$PORTS" --name demo --create --accel tcg >"$RUN/ports.args" || die "setup failed"
	# The trace transport's own DMA goes through the vIOMMU: iommu_platform on the controller.
	sed -i 's/^\(-device virtio-serial-pci,.*\)$/\1,iommu_platform=on,disable-legacy=on/' "$RUN/ports.args"
	eval "PORT_ARGS=($(cat "$RUN/ports.args"))"
	VT_RUNDIR=$RUN VT_SMP=2 VT_IOMMU=1 VT_PORTS=0 VT_GUEST_RUN=/etc/vt/agent-run
	VT_APPEND="vt.ports=3 mmiotrace.trace_pc=1" VT_TIMEOUT=120 VT_QEMU_EXTRA=("${PORT_ARGS[@]}" -device e1000,addr=0x5)
	vt_guest_start || die "QEMU did not start"
	vt_wait_console 'VT-INIT: run ' 60 || { tail -20 "$RUN/console.log"; die "the guest did not boot"; }
	echo "guest booted; QEMU arguments in $RUN/qemu.cmd, console in $RUN/console.log"

	step "recording for $secs s into $out"
	rm -rf "$out"
	"$COLLECT" record --chardev-dir "$PORTS" --name demo --qemu-pid "$VT_QEMU_PID" --qmp "$PORTS/qmp.sock" \
		--tracer mmiotrace -e iommu -e sched --host-events sched:sched_switch,sched:sched_wakeup \
		--host-pid "$VT_QEMU_PID" \
		--duration "$secs" -o "$out" --quiet >"$RUN/record.log" 2>&1 &
	REC_PID=$!
	wait "$REC_PID"
	rrc=$?
	REC_PID=
	[ -s "$RUN/record.log" ] && sed 's/^/record: /' "$RUN/record.log"
	[ -s "$out/manifest.json" ] || die "record exited $rrc and wrote no manifest"
	trace-cmd report -i "$out/host.dat" -i "$out/guest-demo.dat" >"$out/report.txt" 2>"$RUN/report.err" ||
		{ cat "$RUN/report.err"; die "trace-cmd report failed"; }
	vt_agent_wait_off 30 >/dev/null 2>&1 || vt_guest_stop
}

if [ "$kvm" = 1 ]; then
	run_kvm
else
	run_tcg
fi

# What trace-cmd prints of the pages is the guest's own text (markers, task names in events):
# on this terminal its control characters are shown as '?' (doc/boundary.md).
safe() {
	LC_ALL=C sed -e 's/\xc2[\x80-\x9f]/?/g' | LC_ALL=C tr '\000-\010\013-\037\177' '?'
}

# The host starts recording before the guest: begin a few lines before the guest's first event.
first=$(grep -n -m1 '^ *guest-demo\.dat: .*\[[0-9]*\]' "$out/report.txt" | cut -d: -f1)
from=$(( ${first:-1} > 10 ? ${first:-1} - 10 : 1 ))
step "the merged timeline: 30 lines of $out/report.txt from line $from (the guest's first event at ${first:-?})"
tail -n +"$from" "$out/report.txt" | head -n 30 | safe

step "summary"
jq -r '
	def sum(f): [f] | add // 0;
	"record exit status: '"$rrc"' (0 clean, 3 see problems)",
	"host:  \(sum(.host.cpus[]?.events)) events on \(.host.cpus | length? // 0) CPUs",
	(.guests[] |
	 "guest \(.name): \(sum(.cpus[].events)) events on \(.cpus | length) vCPUs (" +
	   ([.cpus[] | "cpu\(.cpu) \(.events)"] | join(", ")) + ")",
	 "  lost events: \(.lost_events.in_pages) in pages, \(.lost_events.overrun) overrun",
	 "  clock sync: \(.sync.method), bound \(.sync.bound_ns) ns (\(.sync.why))",
	 (if (.problems // "") != "" then "  problems: \(.problems)" else empty end))
' "$out/manifest.json" | safe
echo "guest events by system:"
grep -E '^ *guest-demo\.dat:' "$out/report.txt" | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^[a-z_]+:$/ && $(i-1) ~ /^[0-9.]+:$/) { print $i; break } }' |
	sort | uniq -c | sort -rn | head -n 12 | sed 's/^/  /' | safe
echo "guest mmiotrace and iommu entries:"
for e in mmiotrace_map mmiotrace_rw map unmap add_device_to_group remove_device_from_group attach_device_to_domain; do
	printf '  %-26s %s\n' "$e" "$(grep -cE "^ *guest-demo\.dat: .* $e: " "$out/report.txt")"
done
grep -m1 -E 'guest-demo\.dat: .* mmiotrace_map: ' "$out/report.txt" | sed 's/^ */  first map: /' | safe
exits=()
[ "$kvm" = 1 ] && exits=(--exits)
step "analyses: virtio-trace-collect report --iommu --mmiotrace-log --html --perfetto${exits:+ --exits}"
"$COLLECT" report --guest demo --iommu --mmiotrace-log "$out/mmiotrace.log" --html "$out/timeline.html" \
	--perfetto "$out/trace.perfetto" "${exits[@]}" "$out" >"$out/analyses.txt" 2>"$RUN/analyses.err"
rc=$?
# 5: an analysis found none of its events (the message says which): shown, not fatal.
[ $rc = 0 ] || [ $rc = 5 ] || { cat "$RUN/analyses.err"; die "report failed"; }
[ $rc = 0 ] || safe <"$RUN/analyses.err"
sed -n '/^  IOMMU:/,/^  mmiotrace:/p' "$out/analyses.txt" | sed '$d' | safe
sed -n '/^  mmiotrace:/,/^  problems:/p' "$out/analyses.txt" | sed '$d' | head -n 24 | safe
if [ "$kvm" = 1 ]; then
	# The VM exits: the table of all guests, and the io and MMIO (npf) exits by guest function.
	sed -n '/^VM exits/,/^  guest demo:$/p' "$out/analyses.txt" | sed '$d' | safe
	awk '/exits per guest function/ { on = 1; print; next }
	     on && /^    [a-z_A-Z0-9]+: / { show = ($1 == "io:" || $1 == "npf:" || $1 == "IO_INSTRUCTION:" || $1 == "EPT_MISCONFIG:") }
	     on && /^  [^ ]/ { on = 0 }
	     on && show' "$out/analyses.txt" | safe
	echo "  (timing in a guest nested under TCG is TCG's, not a real machine's: look at the counts and functions)"
fi
echo "  (all of it in $out/analyses.txt; the classic mmiotrace log: $out/mmiotrace.log," \
     "$(grep -c '^[RW] ' "$out/mmiotrace.log") R/W lines)"
echo "timeline: $out/timeline.html (open it in a browser: host CPUs and guest vCPUs, zoom with the wheel, drag to pan)"
echo "Perfetto: $out/trace.perfetto ($(stat -c %s "$out/trace.perfetto") bytes; open it in Perfetto's UI: the host and the guest as two machines on one timeline)"
# Perfetto's own schema, where it is at hand (the project's tests have it beside the clone):
# the file decodes as a perfetto.protos.Trace, and says how many events each machine has.
pf_schema=${VT_PERFETTO_SCHEMA:-$root/../shared/oracles/perfetto}
if command -v protoc >/dev/null && [ -f "$pf_schema/perfetto_trace.proto" ]; then
	protoc --decode=perfetto.protos.Trace -I "$pf_schema" "$pf_schema/perfetto_trace.proto" \
		<"$out/trace.perfetto" >"$RUN/perfetto.txt" 2>"$RUN/perfetto.err" ||
		{ head -5 "$RUN/perfetto.err"; die "$out/trace.perfetto does not decode as Perfetto's Trace"; }
	echo "  protoc decodes it: $(grep -c '^  ftrace_events {' "$RUN/perfetto.txt") event bundles," \
		"$(grep -c '^      timestamp:' "$RUN/perfetto.txt") events; the host, and the guest" \
		"$(sed -n 's/.*machine_name: "\([^"]*\)".*/\1/p' "$RUN/perfetto.txt" | sort -u | paste -sd' ')"
fi
echo "files: $(cd "$out" && ls | tr '\n' ' ')"
# The recording's JSON as its schemas say (scripts/validate-json.py: 77 without python3-jsonschema).
step "schemas: $out/manifest.json and report --json against doc/manifest.schema.json, doc/report.schema.json"
"$COLLECT" report --json "$out" >"$RUN/report.json" 2>"$RUN/report-json.err" ||
	{ cat "$RUN/report-json.err"; die "report --json $out failed"; }
schema_check() { # SCHEMA FILE
	python3 scripts/validate-json.py "$1" "$2"
	case $? in
	0) ;;
	77) die "python3's jsonschema is missing (apt-get install python3-jsonschema, or scripts/install-deps.sh)" ;;
	*) die "$2 does not match $1 (the violations above): a writer and its schema disagree" ;;
	esac
}
schema_check doc/manifest.schema.json "$out/manifest.json"
schema_check doc/report.schema.json "$RUN/report.json"
printf 'demo.sh: done in %.0f s\n' "$(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')"
