#!/bin/bash
# vt-suite: e2e
# test-collect-metaphases.sh: the metadata in three fetches, with a real agent in a TCG guest.
# The setup asks for the bundle without kallsyms (META_REQ flag NO_KALLSYMS: what the data
# ports need, fast), the whole bundle follows once the guest records, and again after the stop.
# One agent (vt.agent_keep=1) serves two recordings:
#   quick  the COMMAND ends at once (`true`), so the stop comes while the whole bundle is on its
#          way: the stop must wait for it (`-v` says "the stop waits for the metadata on its
#          way"), and no chunk may be taken for "metadata nobody asked for" (before the wait,
#          every chunk after the STOP was a protocol error, and 64 of them dropped the guest);
#   flood  N markers per CPU, the usual exact counts.
# Checks, per recording: exit 0, no problems in the manifest, three META_REQ answered (and
# the manifest's metadata.fetches 3, its guest_cpu_ms from the agent over 1 ms), and the
# guest file carries the guest's kallsyms (`trace-cmd dump --kallsyms`, more than 10,000 lines).
# The setup's META_REQ and its answer time are printed for the record (not judged).
# Env: VT_BUILDDIR, VT_STATIC_AGENT, VT_E2E_MARKERS (default 500), VT_KEEP=1.
# Exit: 0 pass, 1 fail, 77 skip.
echo "test-collect-metaphases: setup metadata without kallsyms, the whole bundle while recording, a stop that comes while it is on its way: complete files, no protocol errors"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
. "$HERE/scenario-lib.sh"
VT_LOG_PREFIX=test-collect-metaphases
ME=test-collect-metaphases
N=${VT_E2E_MARKERS:-500}

scn_begin
scn_ports pipe
VT_APPEND="vt.agent_keep=1"
scn_boot

# one NAME SCRIPT: record with -v, then the checks every recording shares.
one() {
    local name=$1 script=$2 n ks
    OUT=$WORK/out-$name
    scn_record --verbose --chardev-dir "$PORTS" --name e2e -e sched:sched_switch -- "$script"
    cp "$WORK/record.log" "$WORK/record-$name.log"
    grep -E 'answered in|stop waits|recording$' "$WORK/record.log" | sed "s/^/    $name | /"
    [ $CRC = 0 ] || { sed 's/^/    | /' "$WORK/record.log"; bad "$name: record exited $CRC, want 0"; }
    n=$(grep -c 'guest e2e: META_REQ answered in' "$WORK/record.log")
    [ "$n" = 3 ] || bad "$name: $n META_REQ answered, want 3 (setup, while recording, after the stop)"
    grep -q 'nobody asked for\|protocol error' "$WORK/record.log" && bad "$name: protocol errors in the log"
    [ "$(scn_m '.guests[0].problems')" = "" ] || bad "$name: problems: $(scn_m '.guests[0].problems')"
    # What the bundles cost, as the manifest says (the agent's CPU is its own word, nonzero
    # with kallsyms read: tens of ms of a TCG guest's CPU).
    echo "$ME: $name: metadata $(scn_m '.guests[0].metadata | "\(.bytes) bytes in \(.fetches) fetches, \(.fetch_ms) ms; the agent'"'"'s CPU \(.guest_cpu_ms) ms; first page after \(.first_page_ms) ms"')"
    [ "$(scn_m '.guests[0].metadata.fetches')" = 3 ] ||
        bad "$name: manifest metadata.fetches $(scn_m '.guests[0].metadata.fetches'), want 3"
    [ "$(scn_m '.guests[0].metadata.bytes')" = "$(scn_m '.guests[0].budget.metadata_bytes')" ] ||
        bad "$name: manifest metadata.bytes is not budget.metadata_bytes"
    [ "$(scn_m '.guests[0].metadata.guest_cpu_ms > 1')" = true ] ||
        bad "$name: manifest metadata.guest_cpu_ms $(scn_m '.guests[0].metadata.guest_cpu_ms'): the agent's kallsyms read cost more than 1 ms"
    ks=$(trace-cmd dump --kallsyms "$OUT/guest-e2e.dat" 2>/dev/null | grep -c ' [tT] ')
    echo "$ME: $name: guest-e2e.dat carries $ks kallsyms text symbols"
    [ "$ks" -gt 10000 ] || bad "$name: guest-e2e.dat carries $ks kallsyms text symbols, want the guest's (> 10000)"
}

scn_script "$WORK/quick" "!true"
one quick "$WORK/quick"
grep -q 'guest e2e: the stop waits for the metadata on its way' "$WORK/record-quick.log" ||
    bad "quick: the stop did not wait for the whole bundle on its way (the COMMAND ended before it came)"

scn_script "$WORK/flood" "flood vt-meta $N 0 64" "!sleep 0.3"
one flood "$WORK/flood"
scn_counts e2e "0 1"
for cpu in 0 1; do
    got=$(grep -cE "\[00$cpu\] .* vt-meta cpu$cpu [0-9]+ " "$WORK/guest.txt")
    echo "$ME: flood cpu$cpu: $got markers"
    [ "$got" = "$N" ] || bad "flood cpu$cpu: $got markers, want $N"
done
SCN_AGENT_END=SIGTERM scn_end
scn_result
