#!/bin/bash
# vt-suite: e2e
# test-collect-vcpus-tcg.sh: `report --vcpus` on a real TCG guest, from the host's sched events of
# its vCPU threads alone (no kvm events under TCG): running, halted (asleep) and preempted add up
# to each vCPU's wall time exactly, an idle vCPU is mostly halted, and a host busy loop that shares
# a busy vCPU's CPU is charged for exactly the time it took. A 2-vCPU guest under multi-threaded
# TCG (one host thread per vCPU; -name ...,debug-threads=on names them "CPU n/TCG", as record
# --qemu-pid looks for them) is recorded with
#     record --qemu-pid QEMU --host-events sched:sched_switch,sched:sched_wakeup
#            --host-pid QEMU --host-pid HOG -e sched -- LOAD
# LOAD busy-loops the guest's vCPU 1 (vt-e2e-guest load burn) for LOAD_MS while vCPU 0 idles;
# meanwhile vCPU 1's host thread and a busy loop named vt-hog are pinned with taskset to one host
# CPU (every other thread of QEMU to the other CPU). vt-hog exists before the recording, blocked
# on a FIFO, so that --host-pid records all its switches, not only those with QEMU's threads.
# Checks, against `trace-cmd report -N -t` of host.dat where a count is needed:
#   the GUEST option maps each vCPU to the thread QMP's query-cpus-fast names;
#   conservation: for every vCPU the states' leaves sum to wall_ns exactly, and running + halted +
#       preempted + unknown are the only states (no kvm events: no "guest" or exits);
#   idle: vCPU 0 is halted at least 65% of its wall time less its preempted time (the guest's
#       agent runs there; the host's preemptions depend on the machine's load), and the
#       guest's idle task (pid 0) is halted at least 90% of its halted + running time there;
#   hog: at least 70% of vCPU 1's preempted time is vt-hog's (the machine's other work shares
#       that CPU: 4-21% in the runs), and it equals vt-hog's time on vCPU 1's CPU while vCPU 1 was runnable,
#       recounted from vt-hog's own switches and the vCPU's switches and wakeups, within 2%;
#   the text report says which states need `record --kvm-exits`; vCPU 1's affinity is restored.
# Env: as test-collect-guest.sh (VT_KEEP=1 keeps the work dir and prints `kept DIR`), LOAD_MS
# (3000). Exit: 0 pass, 1 fail, 77 skip.
echo "test-collect-vcpus-tcg: report --vcpus on a TCG guest from host sched events: states sum to wall time, idle vCPU halted, a pinned host hog charged exactly for its time"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
. "$HERE/scenario-lib.sh"
VT_LOG_PREFIX=test-collect-vcpus-tcg
ME=test-collect-vcpus-tcg
MS=${LOAD_MS:-3000}
command -v taskset >/dev/null || { echo "$ME: SKIP: taskset not found"; exit 77; }
command -v python3 >/dev/null || { echo "$ME: SKIP: python3 not found"; exit 77; }

HOG_PID='' VCPU1='' AFF1=''
tcg_cleanup() {
    [ -z "$HOG_PID" ] || { kill "$HOG_PID" 2>/dev/null; wait "$HOG_PID" 2>/dev/null; }
    [ -z "$VCPU1" ] || [ -z "$AFF1" ] || taskset -p "$AFF1" "$VCPU1" >/dev/null 2>&1
    scn_cleanup
}

scn_begin
trap tcg_cleanup EXIT
scn_ports pipe
# Multi-threaded TCG: one host thread per vCPU (thread=single runs them all in one thread).
VT_TCG_SINGLE=0 VT_DEBUG_THREADS=1
scn_boot

# vCPU threads: their names, and QMP's word (asked before the collector takes the socket).
vt_qmp_cpus "$RUN/qmp.sock" >"$WORK/qmp-map.txt" 2>"$WORK/qmp.err" ||
    bad "query-cpus-fast over $RUN/qmp.sock failed: $(head -3 "$WORK/qmp.err")"
for t in /proc/"$VT_QEMU_PID"/task/*; do echo "${t##*/} $(cat "$t/comm" 2>/dev/null)"; done >"$WORK/threads.txt"
VCPU0=$(awk '$2 == "CPU" && $3 == "0/TCG" { print $1 }' "$WORK/threads.txt")
VCPU1=$(awk '$2 == "CPU" && $3 == "1/TCG" { print $1 }' "$WORK/threads.txt")
echo "$ME: QEMU $VT_QEMU_PID, vCPU threads $VCPU0 $VCPU1 (QMP: $(tr '\n' ',' <"$WORK/qmp-map.txt"))"
[ -n "$VCPU0" ] && [ -n "$VCPU1" ] || { bad "no threads named CPU 0/TCG and CPU 1/TCG: $(tr '\n' ',' <"$WORK/threads.txt")"; scn_result; }

# The CPU vCPU 1 and vt-hog share, and the other one for the rest of QEMU.
AFF1=$(taskset -p "$VCPU1" | sed 's/.*: *//')
read -r -a cpus < <(taskset -cp "$VCPU1" | sed 's/.*: *//' | awk -F, '{ for (i = 1; i <= NF; i++) { n = split($i, r, "-"); if (n == 2) for (c = r[1]; c <= r[2]; c++) printf "%d ", c; else printf "%d ", r[1] } }')
[ "${#cpus[@]}" -ge 2 ] || { echo "$ME: SKIP: vCPU 1's thread may run on ${#cpus[@]} CPU(s) (${cpus[*]:-}), this needs 2"; exit 77; }
HCPU=${cpus[$((${#cpus[@]} - 1))]} OCPU=${cpus[0]}

# vt-hog: blocked on a FIFO until LOAD starts it, so that --host-pid follows it from the start.
mkfifo "$WORK/hog.go"
taskset -c "$HCPU" sh -c 'printf vt-hog >/proc/self/comm; read -r _ <"$1"; while :; do :; done' sh "$WORK/hog.go" &
HOG_PID=$!
if ! out=$(taskset -pc "$HCPU" "$VCPU1" 2>&1); then
    echo "$ME: SKIP: taskset refused to pin vCPU 1's thread: $out"; exit 77
fi
for t in /proc/"$VT_QEMU_PID"/task/*; do
    [ "${t##*/}" = "$VCPU1" ] || taskset -pc "$OCPU" "${t##*/}" >/dev/null 2>&1
done
echo "$ME: vCPU 1's thread $VCPU1 (affinity was $AFF1) and vt-hog ($HOG_PID) on host CPU $HCPU, QEMU's other threads on CPU $OCPU"

# LOAD: vt-hog runs as long as the guest busy-loops vCPU 1 (vCPU 0 stays idle), then stops.
cat >"$WORK/load" <<EOF
#!/bin/bash
exec 7<>'$PORTS/vt-test.in' 8<>'$PORTS/vt-test.out'
echo go >'$WORK/hog.go'
echo 'sh vt-e2e-guest load burn 1 $MS vt-burn' >&7
read -r -t 120 answer <&8 || answer="no answer"
kill $HOG_PID
echo "\$answer" >'$WORK/load.answer'
sleep 0.3
[[ \$answer == ok* ]]
EOF
chmod +x "$WORK/load"
# The collector and LOAD (this shell's children) on the other CPU too: what else preempts vCPU 1
# is the machine's other work, which no taskset here moves.
SHELL_AFF=$(taskset -p $$ | sed 's/.*: *//')
taskset -pc "$OCPU" $$ >/dev/null
scn_record --chardev-dir "$PORTS" --name e2e --qemu-pid "$VT_QEMU_PID" -e sched \
    --host-events sched:sched_switch,sched:sched_wakeup --host-pid "$VT_QEMU_PID" --host-pid "$HOG_PID" -- "$WORK/load"
wait "$HOG_PID" 2>/dev/null
HOG_PID=
taskset -p "$SHELL_AFF" $$ >/dev/null
taskset -p "$AFF1" "$VCPU1" >/dev/null || bad "could not restore vCPU 1's affinity $AFF1"
for t in /proc/"$VT_QEMU_PID"/task/*; do taskset -p "$AFF1" "${t##*/}" >/dev/null 2>&1; done
aff=$(taskset -p "$VCPU1" | sed 's/.*: *//')
echo "$ME: guest load: $(cat "$WORK/load.answer" 2>/dev/null); vCPU 1's affinity after: $aff"
[ "$aff" = "$AFF1" ] || bad "vCPU 1's affinity is $aff after the test, was $AFF1"
[ $CRC = 0 ] || { sed 's/^/    | /' "$WORK/record.log"; bad "record exited $CRC, want 0"; }
scn_end
[ -s "$OUT/host.dat" ] || { bad "record wrote no host.dat"; scn_result; }

# The GUEST option of host.dat: vCPU -> host thread exactly as QMP says.
trace-cmd dump --options "$OUT/host.dat" >"$WORK/options.txt" 2>&1 || bad "trace-cmd dump --options host.dat failed"
sed -n '/Option GUEST/,/Option [A-Z]/p' "$WORK/options.txt" |
    sed -n 's/^[[:space:]]*\([0-9]\+\)[[:space:]]\+\([0-9]\+\)[[:space:]]*\[guest cpu, host pid\].*/\1 \2/p' |
    sort -n >"$WORK/dat-map.txt"
cmp -s "$WORK/dat-map.txt" "$WORK/qmp-map.txt" ||
    bad "the GUEST option's vCPU map ($(tr '\n' ',' <"$WORK/dat-map.txt")) differs from QMP's ($(tr '\n' ',' <"$WORK/qmp-map.txt"))"

"$COLLECT" report --vcpus "$OUT" >"$WORK/vcpus.txt" 2>"$WORK/vcpus.err" || bad "report --vcpus exited $?: $(head -3 "$WORK/vcpus.err")"
sed -n '/^vCPU time/,$p' "$WORK/vcpus.txt" | grep -v '^      .*\[[0-9]*\] *[0-9]* *0\.0[0-9]%$' | sed "s/^/$ME:   | /"
grep -q 'need `record --kvm-exits`' "$WORK/vcpus.txt" || bad "the report does not say which states need record --kvm-exits"
"$COLLECT" report --vcpus --json "$OUT" >"$WORK/vcpus.json" 2>>"$WORK/vcpus.err" || bad "report --vcpus --json exited $?"
if python3 -c 'import jsonschema' 2>/dev/null; then
    python3 "$VT_REPO/scripts/validate-json.py" "$VT_REPO/doc/report.schema.json" "$WORK/vcpus.json" >"$WORK/v.txt" 2>&1 ||
        { sed 's/^/    /' "$WORK/v.txt"; bad "vcpus.json does not match doc/report.schema.json"; }
fi
trace-cmd report -N -t -i "$OUT/host.dat" >"$WORK/host.txt" 2>"$WORK/host.err" ||
    bad "trace-cmd report -i host.dat failed: $(head -3 "$WORK/host.err")"
python3 - "$WORK/vcpus.json" "$WORK/host.txt" "$VCPU0" "$VCPU1" >"$WORK/oracle" 2>&1 <<'PY'
import json, re, sys
rep, host = sys.argv[1:3]
tid0, tid1 = int(sys.argv[3]), int(sys.argv[4])
R = json.load(open(rep))["vcpus"]
out = []
def fail(m): out.append("FAIL " + m)
def say(m): out.append("INFO " + m)
def leaves(x):
    return sum(leaves(v) for v in x.values()) if isinstance(x, dict) else x
vcpus = {v["tid"]: v for g in R["guests"] for v in g["vcpus"]}
if sorted(vcpus) != sorted([tid0, tid1]):
    fail("the report's vCPU threads %s, want %d and %d" % (sorted(vcpus), tid0, tid1))
    print("\n".join(out)); sys.exit(0)

# Conservation, exactly: under TCG only running, halted, preempted and unknown.
for tid, v in sorted(vcpus.items()):
    st, w = v["states"], v["wall_ns"]
    tot = leaves(st)
    extra = sorted(k for k, n in st.items() if k not in ("running", "halted", "preempted", "unknown") and leaves(n))
    say("vCPU %d (thread %d): wall %d ns, states sum %d: running %.2f%%, halted %.2f%%, preempted %.2f%%, unknown %.2f%%" %
        (v["vcpu"], tid, w, tot, *(100.0 * leaves(st.get(k, 0)) / w for k in ("running", "halted", "preempted", "unknown"))))
    if tot != w:
        fail("vCPU %d: the states add up to %d, wall %d" % (v["vcpu"], tot, w))
    if extra:
        fail("vCPU %d: states %s without kvm events" % (v["vcpu"], extra))
    if w < 2 * 10**9:
        fail("vCPU %d: wall time %d ns, shorter than the load" % (v["vcpu"], w))

# Idle: vCPU 0 halted. Under MTTCG an idle vCPU's thread sleeps in QEMU (HLT: qemu_wait_io_event)
# between the guest's interrupts (its tick, the agent and vt-e2e-guest on vCPU 0); each wakeup runs
# the thread for TCG's time, and the trace-agent splices pages there (200-280 ms of 3.6 s). Counted
# against the time the host did not preempt it (the machine's other work: 1.4-9.4% of the wall in
# the runs): halted 83.8-91.6% of that in 12 runs (76.4-90.2% of the wall) on the 2-core machine
# shared with other builds; 74.1% once beside an ASan make check (2026-12-03). 65% leaves room for
# a busier machine; halted time not attributed (the bug this guards against) reads near 0%.
v0 = vcpus[tid0]
h0, p0 = v0["states"]["halted"], leaves(v0["states"]["preempted"])
up0 = v0["wall_ns"] - p0
say("idle: vCPU 0 halted %.2f%% of its wall time, %.2f%% of the %d ns the host did not preempt it (want >= 65%%)" %
    (100.0 * h0 / v0["wall_ns"], 100.0 * h0 / up0 if up0 else 0, up0))
if not up0 or h0 < 0.65 * up0:
    fail("idle: vCPU 0 halted %d of the %d ns it was not preempted" % (h0, up0))
# The guest's idle task on vCPU 0 (idle=halt: it halts in HLT) is halted nearly all its time there
# but for the host's preemptions (the machine's load, 1-4% of the wall): of its halted + running
# time, what runs is the interrupts' handling under TCG (97% halted in a run where it was 93.7%
# of its wall, preemptions included).
# By pid 0, not comm: every guest idle task has pid 0, and the report names the pair by the comm
# last seen for that pid, "swapper/1 on vCPU 0" in 2 of 3 runs.
sw = [t for t in v0["tasks"] if t["pid"] == 0]
if not sw:
    fail("idle: no guest idle task (pid 0) on vCPU 0")
else:
    st = sw[0]["states"]
    hs, up = st["halted"], st["halted"] + st["running"]
    say("idle: the guest's idle task on vCPU 0 halted %.2f%% of the %d ns it was not preempted by the host (want >= 90%%)" % (100.0 * hs / up if up else 0, up))
    if not up or hs < 0.90 * up:
        fail("idle: the idle task halted %d of its %d ns on vCPU 0 (halted + running)" % (hs, up))

# trace-cmd report -N -t: "COMM-TID [CPU] SECS.NANOS: EVENT: FIELDS" (COMM may hold spaces).
line_re = re.compile(r'^\s*(.*)-(\d+)\s+\[(\d+)\]\s+(?:\S+\s+)?(\d+)\.(\d{9}):\s+(\w+):\s+(.*)$')
sw_re = re.compile(r'prev_comm=(.*) prev_pid=(\d+) prev_prio=\d+ prev_state=(\S+) ==> next_comm=(.*) next_pid=(\d+) next_prio=\d+')
wk_re = re.compile(r'comm=(.*) pid=(\d+) prio=\d+ (?:success=\d+ )?target_cpu=(\d+)')
ev = []
for ln in open(host, errors="replace"):
    m = line_re.match(ln)
    if m:
        ev.append((int(m.group(4)) * 10**9 + int(m.group(5)), int(m.group(2)), int(m.group(3)), m.group(6), m.group(7)))

# Hog: vt-hog's share of vCPU 1's preempted time, and vt-hog's own run time on vCPU 1's CPU while
# vCPU 1 was runnable, from vt-hog's switches (all recorded: --host-pid) and vCPU 1's.
v1 = vcpus[tid1]
pre = v1["states"]["preempted"]
ptot = leaves(pre)
hog = sum(n for k, n in pre.items() if k.startswith("vt-hog["))
top = sorted(pre.items(), key=lambda kv: -leaves(kv[1]))[:5]
say("hog: vCPU 1 preempted %d ns, by vt-hog %d (%.2f%%); top: %s" %
    (ptot, hog, 100.0 * hog / ptot if ptot else 0, ", ".join("%s %d" % (k, leaves(n)) for k, n in top)))
# Not 95% as under KVM in L1, where every other task was moved off the CPU: this machine's other
# work (builds: cc1, ld, make), the idle task while the woken vCPU waits to be switched in, and
# the host's per-CPU threads took 4-21% in 12 runs (vt-hog 79.3-96.2%).
if not ptot or hog < 0.70 * ptot:
    fail("hog: vt-hog has %d of vCPU 1's %d preempted ns" % (hog, ptot))
# Between two events both are constant: add each stretch where vt-hog runs on the CPU where vCPU 1
# waits runnable (switched out in state R, or woken, until switched in).
hog_cpu, vcpu_cpu, runnable, last, rc = set(), None, False, None, 0
for ts, t, cpu, name, f in ev:
    if name not in ("sched_switch", "sched_wakeup"):
        continue
    if runnable and vcpu_cpu in hog_cpu and last is not None:
        rc += ts - last
    last = ts
    if name == "sched_switch":
        m = sw_re.match(f)
        if not m:
            continue
        if m.group(1) == "vt-hog":
            hog_cpu.discard(cpu)
        if m.group(4) == "vt-hog":
            hog_cpu.add(cpu)
        if int(m.group(2)) == tid1:
            vcpu_cpu, runnable = cpu, m.group(3).startswith("R")
        if int(m.group(5)) == tid1:
            vcpu_cpu, runnable = cpu, False
    else:
        m = wk_re.match(f)
        if m and int(m.group(2)) == tid1:
            vcpu_cpu, runnable = int(m.group(3)), True
say("hog: vt-hog on vCPU 1's CPU while vCPU 1 was runnable, recounted from trace-cmd report: %d ns (ours %d, %+.3f%%)" %
    (rc, hog, 100.0 * (hog - rc) / rc if rc else 0))
if rc < 5 * 10**8:
    fail("hog: vt-hog took only %d ns of vCPU 1's CPU while it was runnable: no contention" % rc)
if not rc or abs(hog - rc) > 0.02 * rc:
    fail("hog: preempted by vt-hog %d ns, recounted %d" % (hog, rc))
print("\n".join(out))
PY
sed "s/^INFO /$ME: /; s/^FAIL /$ME: FAIL: /" "$WORK/oracle"
grep -q '^FAIL \|Traceback' "$WORK/oracle" && { fail=1; grep -A5 Traceback "$WORK/oracle"; }
scn_result
