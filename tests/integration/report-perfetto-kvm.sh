#!/bin/sh
# Proves: report --perfetto on a KVM host file (synthetic kvm_exit/kvm_entry
# with the kernel's x86 formats, packed by tests/tools/vt-mkkvm, as
# report-exits.sh builds it) writes them as GenericFtraceEvent with every
# field of the format, each value equal to `trace-cmd report -R`'s, on the
# host CPU and at the time trace-cmd shows; and the vCPU tracks come from the
# host file's GUEST option (the manifest here has no vcpu_threads): "fx vCPU 0
# (host thread 5001)" and "fx vCPU 1 (host thread 5002)", and no track for
# thread 6000, which runs no vCPU of the guest.
echo "report --perfetto: kvm_exit and kvm_entry as generic events equal to trace-cmd -R's; vCPU tracks from the GUEST option"
. "$VT_SRCDIR/tests/integration/td-lib.sh"
need_trace_cmd
COLLECT=$VT_BUILDDIR/host-collector/virtio-trace-collect
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is not installed"; exit 77; }
command -v protoc >/dev/null 2>&1 || { echo "SKIP: protoc is not installed (Debian's protobuf-compiler)"; exit 77; }
SCHEMA=${VT_PERFETTO_SCHEMA:-$VT_SRCDIR/../shared/oracles/perfetto}
[ -f "$SCHEMA/perfetto_trace.proto" ] ||
	{ echo "SKIP: no Perfetto schema at $SCHEMA/perfetto_trace.proto (../shared beside the clone)"; exit 77; }

h=$WORK/host-fixture g=$WORK/guest-fixture run=$WORK/run
mkdir -p "$h/formats" "$g" "$run"
cp -r "$DATA/kvm-exits/formats/kvm" "$h/formats/"
for f in header_page header_event uname; do cp "$DATA/cap-host/$f" "$h/"; done
echo '[local] global' >"$h/trace_clock"
echo 2 >"$h/nr_cpus"
exit_id=$(sed -n 's/^ID: //p' "$h/formats/kvm/kvm_exit")
entry_id=$(sed -n 's/^ID: //p' "$h/formats/kvm/kvm_entry")
# CPU TS PID exit VCPU REASON RIP / CPU TS PID entry VCPU RIP (vt-mkkvm's input)
awk 'BEGIN {
	for (i = 0; i < 50; i++) {
		printf "0 %d 5001 exit 0 30 ffffffff81100010\n0 %d 5001 entry 0 ffffffff81100010\n", 1000000 + i * 20000, 1001000 + i * 20000
		printf "1 %d 5002 exit 1 49 ffffffffc0000020\n1 %d 5002 entry 1 ffffffffc0000020\n", 1005000 + i * 20000, 1006500 + i * 20000
	}
	printf "1 3000000 6000 exit 0 10 ffffffff81100000\n1 3000100 6000 entry 0 ffffffff81100000\n" }' >"$WORK/events"
"$VT_BUILDDIR/tests/tools/vt-mkkvm" -o "$h" --exit-id "$exit_id" --entry-id "$entry_id" --cpus 2 <"$WORK/events" ||
	fail "vt-mkkvm"
mkdat "$run/host.dat" -i "$h" --trace-id 0x42 --guest fx:0x1234:5001,5002
cp -r "$DATA/cap-guest/." "$g/"
mkdat "$run/guest-fx.dat" -i "$g" --trace-id 0x1234
printf '{"tool":"fixture","version":"0","host":{"file":"host.dat","cpus":[{},{}]},"guests":[{"name":"fx","file":"guest-fx.dat","trace_id":"0x0000000000001234"}]}\n' \
	>"$run/manifest.json"

"$COLLECT" report --perfetto "$WORK/k.pftrace" "$run" >/dev/null 2>"$WORK/k.err"
rc=$?
[ $rc = 0 ] || { cat "$WORK/k.err"; fail "report --perfetto exited $rc"; }
protoc --decode=perfetto.protos.Trace -I "$SCHEMA" perfetto_trace.proto <"$WORK/k.pftrace" >"$WORK/k.txt" 2>"$WORK/protoc.err" ||
	{ cat "$WORK/protoc.err"; fail "protoc cannot decode it"; }
report "$WORK/kR.txt" -R -t -i "$run/host.dat" -i "$run/guest-fx.dat"
python3 "$VT_SRCDIR/tests/integration/perfetto-fields.py" "$WORK/k.txt" "$WORK/kR.txt" host.dat=0 guest-fx.dat=1 ||
	fail "the events or their field values differ from trace-cmd report -R's"
n=$(grep -c '^        event_name: "kvm_exit"$' "$WORK/k.txt")
[ "$n" = 101 ] || fail "$n kvm_exit events, want 101"
n=$(grep -c '^        event_name: "kvm_entry"$' "$WORK/k.txt")
[ "$n" = 101 ] || fail "$n kvm_entry events, want 101"
fields=$(awk '/event_name: "kvm_exit"/ { on = 1; next } on && /^          name: / { print $2 } on && /^      }/ { exit }' "$WORK/k.txt" | tr -d '"' | tr '\n' ' ')
want=$(sed -n 's/^\tfield:[^;]* \([a-z_0-9]*\);.*/\1/p' "$h/formats/kvm/kvm_exit" | grep -v '^common_' | tr '\n' ' ')
[ "$fields" = "$want" ] || fail "kvm_exit's fields '$fields', the format's '$want'"
echo "ok: 101 kvm_exit and 101 kvm_entry, every field of the format, values equal to trace-cmd -R's"
grep -c '^    name: "fx vCPU [01] (host thread 500[12])"$' "$WORK/k.txt" | grep -qx 2 ||
	fail "the vCPU tracks do not name threads 5001 and 5002"
grep -q 'host thread 6000' "$WORK/k.txt" && fail "thread 6000 has a vCPU track"
echo "ok: vCPU tracks from the GUEST option"
exit 0
