#!/bin/bash
# vt-suite: e2e-kvm
# test-kvm-check.sh: `virtio-trace-collect check` on a host with real KVM says "exact clock: yes".
# Inside L1 (nested SVM under TCG, see test-kvm-collect.sh) L2 runs under KVM with 2 vCPUs and an
# agent that serves one session after another; tests/e2e/l1/scenario-kvm-check.sh runs
#     virtio-trace-collect check --chardev-dir PORTS --qemu-pid L2PID --duration 2
# and the same with --json. Checks:
#   1. check exits 0 and its last line is "exact clock: yes, because ..."; --json too
#      (exact_clock true), and it matches doc/check.schema.json;
#   2. the lines: tracefs, kvm device (kvm_amd), kvm debugfs (naming /sys/kernel/debug/kvm/PID-FD
#      and L2's vCPUs) and kvm events are yes; vcpu threads lists L2's "CPU n/KVM" threads with
#      the tids L1's /proc gives; agent answers; recording yes with probe replies on 2 vCPUs, none
#      outside; host tsc is yes or warn (L1 keeps time with another clocksource than tsc);
#   3. --json's vCPU offsets are those of KVM's debugfs read in the same L2 boot, or later ones
#      (KVM, which distrusts L1's TSC, moves them at every vCPU load): both vCPUs listed;
#   4. no tracefs instance left in L1; L2's console is clean and its agent ends after SIGTERM.
# Env: as test-kvm-collect.sh (VT_KEEP=1 keeps the work dir). Exit: 0 pass, 1 fail, 77 skip.
echo "test-kvm-check: check under real KVM (nested SVM in a TCG L1) says exact clock: yes, each line as it should"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
ME=test-kvm-check
VT_LOG_PREFIX=$ME

vt_kvm_begin
bad() { echo "$ME: FAIL: $*"; fail=1; }
VT_L1_ENV="CHECK_SECS=2
${VT_L1_ENV:-}"
vt_kvm_scenario "$HERE/l1/scenario-kvm-check.sh"; rc=$?
[ $rc = 0 ] || { bad "the run in L1: $VT_L1_RESULT: $VT_L1_REASON"; KEEP=1; echo "$ME: FAIL"; exit 1; }

# 1. exit status and the verdict, text and JSON (without the lines l1_bounded adds: "L1: ...").
for f in check.txt check.json; do
    grep -av '^L1: ' "$OUT/$f" >"$WORK/$f" 2>/dev/null
    cp "$WORK/$f" "$OUT/$f"
done
crc=$(cat "$OUT/check.rc" 2>/dev/null || echo none)
jrc=$(cat "$OUT/check-json.rc" 2>/dev/null || echo none)
echo "$ME: check exited $crc, check --json $jrc"
sed "s/^/$ME:   | /" "$OUT/check.txt"
[ "$crc" = 0 ] || { sed 's/^/    | /' "$OUT/check.err"; bad "check exited $crc, want 0"; }
[ "$jrc" = 0 ] || { sed 's/^/    | /' "$OUT/check-json.err"; bad "check --json exited $jrc, want 0"; }
l() { sed -n "s/^$1: //p" "$OUT/check.txt"; }
l "exact clock" | grep -q '^yes, because KVM gives each vCPU' || bad "the last line is not 'exact clock: yes': $(tail -n1 "$OUT/check.txt")"
[ "$(jq -r .exact_clock "$OUT/check.json")" = true ] || bad "--json: exact_clock is $(jq -r .exact_clock "$OUT/check.json")"
if python3 -c 'import jsonschema' 2>/dev/null; then
    python3 "$VT_REPO/scripts/validate-json.py" "$VT_REPO/doc/check.schema.json" "$OUT/check.json" >"$WORK/v.txt" 2>&1 ||
        { sed 's/^/    /' "$WORK/v.txt"; bad "--json does not match doc/check.schema.json"; }
fi

# 2. each line.
pid=$(cat "$OUT/l2pid")
l tracefs | grep -q '^yes: ' || bad "tracefs: $(l tracefs)"
l "kvm device" | grep -q '^yes: /dev/kvm is kvm_amd' || bad "kvm device: $(l 'kvm device')"
l "kvm debugfs" | grep -Eq "^(yes|warn): /sys/kernel/debug/kvm/$pid-[0-9]+: vcpu0\.\.vcpu1 \(2\) tsc-offset readable" ||
    bad "kvm debugfs: $(l 'kvm debugfs')"
[ "$(l 'kvm events')" = "yes: kvm:kvm_exit, kvm:kvm_entry, kvm:kvm_write_tsc_offset in /sys/kernel/tracing/events" ] ||
    bad "kvm events: $(l 'kvm events')"
want_threads=$(awk '$2 == "CPU" && $3 ~ /^[0-9]+\/KVM$/ { split($3, a, "/"); print a[1], $1 }' "$OUT/l2-threads" | sort -n |
    awk '{ printf "%sCPU %s/KVM tid %s", (NR > 1 ? ", " : ""), $1, $2 }')
[ "$(l 'vcpu threads')" = "yes: 2 vCPU threads: $want_threads" ] || bad "vcpu threads: '$(l 'vcpu threads')', want the 2 of L1's /proc: $want_threads"
l agent | grep -q '^yes: trace-agent .* answers on .*agent-ctl-path (2 CPUs)$' || bad "agent: $(l agent)"
l recording | grep -Eq '^yes: 2 s recorded, sync kvm \(changes from kvm:kvm_write_tsc_offset\): [1-9][0-9]* probe replies on 2 vCPUs, each within' ||
    bad "recording: $(l recording)"
l "host tsc" | grep -Eq '^(yes|warn): ' || bad "host tsc: $(l 'host tsc')"
[ "$(jq -r '"\(.recording.replies_outside) \(.recording.vcpus_checked) \(.recording.sync_method) \(.recording.clock)"' "$OUT/check.json")" = "0 2 kvm x86-tsc" ] ||
    bad "--json recording: $(jq -c .recording "$OUT/check.json")"

# 3. the vCPUs --json read, against L1's debugfs listing of the same boot.
echo "$ME: check 3: KVM debugfs before: $(tr '\n' ' ' <"$OUT/kvm-offsets"); --json: $(jq -c '[.kvm.vcpus[] | [.vcpu, .tsc_offset]]' "$OUT/check.json")"
[ "$(jq -r '[.kvm.vcpus[].vcpu] | join(" ")' "$OUT/check.json")" = "0 1" ] || bad "--json lists vCPUs $(jq -c '[.kvm.vcpus[].vcpu]' "$OUT/check.json"), want 0 1"

# 4. what was left, and L2's end.
left=$(grep -c -e '^virtio-trace-collect' -e '^vt-check' "$OUT/tracefs-instances.after" 2>/dev/null)
[ "${left:-1}" = 0 ] || bad "tracefs instances left in L1: $(tr '\n' ' ' <"$OUT/tracefs-instances.after")"
if [ -f "$OUT/l2-l2-console.log" ]; then
    VT_LOG_IGNORE=$VT_L1_LOG_IGNORE vt_check_console "$OUT/l2-l2-console.log" 2>"$WORK/l2-check.txt" ||
        bad "L2's console: $(head -n 5 "$WORK/l2-check.txt" | tr '\n' ' ')"
    grep -aq 'E2E: vt-e2e-guest rc=0, trace-agent exit status 0 after SIGTERM' "$OUT/l2-l2-console.log" ||
        bad "L2's agent did not end cleanly after SIGTERM"
else
    bad "no L2 console came out"
fi

vt_kvm_end
