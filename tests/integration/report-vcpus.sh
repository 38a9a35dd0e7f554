#!/bin/sh
# Proves: `report --vcpus` splits each vCPU's wall time into states that add up to it exactly
# (in the guest, exits handled by the kernel and exits to QEMU per reason with VMX and SVM names
# from the event's own print format, halted, preempted per named host task or other VM's vCPU,
# unknown before a thread's first event and after lost events), and the same per guest task
# (the guest's sched_switch, moved onto host time by its TIME_SHIFT), to the nanosecond, as a
# fixture was built; the text output exactly, the JSON leaves summing to wall_ns for every vCPU
# and task, and the JSON against doc/report.schema.json. `report --latency[=THRESHOLD]`: each
# guest wakeup (sched_waking to the switch that runs the task) split by what its vCPU did
# meanwhile, to the nanosecond, totals per cause, the longest first, the threshold applied. FIXTURE: no hardware KVM guest runs
# here, so host.dat is packed (tests/tools/vt-mkkvm) with the event formats a real host kernel
# publishes (tests/data/kvm-exits, tests/data/cap-host).
echo "report --vcpus: every vCPU nanosecond in exactly one state, on a KVM fixture"
. "$VT_SRCDIR/tests/integration/td-lib.sh"
COLLECT=$VT_BUILDDIR/host-collector/virtio-trace-collect
command -v jq >/dev/null 2>&1 || { echo "SKIP: jq is not installed"; exit 77; }

h=$WORK/host-fixture g=$WORK/guest-fixture run=$WORK/run
mkdir -p "$h/formats/sched" "$g" "$run"
cp -r "$DATA/kvm-exits/formats/kvm" "$h/formats/"
cp "$DATA/cap-host/formats/sched/sched_switch" "$DATA/cap-host/formats/sched/sched_wakeup" "$h/formats/sched/"
for f in header_page header_event uname; do cp "$DATA/cap-host/$f" "$h/"; done
echo '[local] global' >"$h/trace_clock"
echo 2 >"$h/nr_cpus"
id() { sed -n 's/^ID: //p' "$1"; }
ids="--exit-id $(id "$h/formats/kvm/kvm_exit") --entry-id $(id "$h/formats/kvm/kvm_entry")
	--uexit-id $(id "$h/formats/kvm/kvm_userspace_exit") --vwake-id $(id "$h/formats/kvm/kvm_vcpu_wakeup")
	--switch-id $(id "$h/formats/sched/sched_switch") --wakeup-id $(id "$h/formats/sched/sched_wakeup")"

# The construction (host ns). Guest fx: vCPU 0 = thread 5001 (host CPU 0, VMX reasons),
# vCPU 1 = 5002 (CPU 1, SVM reasons); guest other: vCPU 0 = 7001; stress-ng is pid 900.
# Lines: CPU TS PID what... (tests/tools/vt-mkkvm.c). The recording spans 1000000..1100000.
cat >"$WORK/events" <<'EOF'
0 1000000 5001 entry 0 1000
0 1010000 5001 exit 0 48 1000
0 1011000 5001 entry 0 1000
0 1020000 5001 exit 0 30 1000
0 1020500 5001 uexit 2 0
0 1023500 5001 entry 0 1000
0 1030000 5001 exit 0 12 1000
0 1030300 5001 sw 1 0 swapper/0
0 1040400 0 sw 0 5001 CPU0/KVM
0 1040500 5001 vwake 1
0 1041000 5001 entry 0 1000
0 1050000 5001 exit 0 1 1000
0 1050100 5001 sw 0 900 stress-ng
0 1060000 900 wakeup 5002 1
0 1060100 900 sw 0 7001 CPU0/KVM
0 1065100 7001 sw 0 5001 CPU0/KVM
0 1066000 5001 entry 0 1000
0 1070000 5001 exit 0 48 1000
0 0 0 newpage
0 1080000 5001 entry 0 1000
0 1090000 5001 exit 0 12 1000
1 1000500 5002 svmexit 1 1024 1000
1 1002500 5002 entry 1 1000
1 1040000 5002 wakeup 5001 0
1 1050000 5002 svmexit 1 120 1000
1 1050300 5002 sw 1 0 swapper/1
1 1061000 0 sw 0 5002 CPU1/KVM
1 1062000 5002 entry 1 1000
1 1070000 5002 svmexit 1 123 1000
1 1070100 5002 uexit 2 0
1 1075100 5002 entry 1 1000
1 1080000 5002 svmexit 1 124 1000
1 1080200 5002 uexit 4 -4
1 1080300 5002 entry 1 1000
1 1100000 5002 svmexit 1 1024 1000
EOF
# shellcheck disable=SC2086
"$TOOLS/vt-mkkvm" -o "$h" $ids --cpus 2 <"$WORK/events" || fail "vt-mkkvm (host)"
# CPU 0's second page (index 1) starts after lost events.
mkdat "$run/host.dat" -i "$h" --trace-id 0x42 --guest fx:0x1234:5001,5002 --guest other:0x5678:7001 \
	--missed 0:1:?
# The guest: its clock is 500000 ns behind the host's (TIME_SHIFT). On vCPU 0 early runs from
# 999000 (before the host's first record: its time starts at 1000000), fio from 1005000 to 1025000
# and from 1045000 on (woken at 1040000), the idle task between; on vCPU 1 sshd runs from 1001000,
# kworker (woken at 1049000) from 1063000 to 1064000, and late from 1100500, after the host's last
# record (the span's end): late has no time, sshd keeps its own. fio's first switch names it sh
# (its parent's comm, before its exec): a task is named by its last comm, so it is fio throughout.
cp -r "$DATA/cap-guest/." "$g/"
rm -f "$g"/cpu*.raw "$g"/cpu*.stats
cp "$DATA/cap-host/formats/sched/sched_waking" "$g/formats/sched/"	# the same kernel's
printf '%s\n' '0 499000 1 switch 299 early' '0 505000 299 switch 300 sh' '0 525000 300 switch 0 swapper/0' \
	'0 540000 0 wakeup 300 0 fio' '0 545000 0 switch 300 fio' '1 501000 1 switch 400 sshd' \
	'1 549000 400 wakeup 402 1 kworker' '1 563000 400 switch 402 kworker' '1 564000 402 switch 400 sshd' \
	'1 600500 400 switch 401 late' |
	"$TOOLS/vt-mkkvm" -o "$g" --exit-id 1 --entry-id 2 --switch-id "$(id "$g/formats/sched/sched_switch")" \
		--wakeup-id "$(id "$g/formats/sched/sched_waking")" --cpus 2 || fail "vt-mkkvm (guest)"
mkdat "$run/guest-fx.dat" -i "$g" --trace-id 0x1234 --ts-peer 0x42 --ts-sample 0:500000
printf '{"tool":"fixture","version":"0","host":{"file":"host.dat"},"guests":[%s,%s]}\n' \
	'{"name":"fx","file":"guest-fx.dat","trace_id":"0x0000000000001234"}' \
	'{"name":"other","file":null,"trace_id":"0x0000000000005678"}' >"$run/manifest.json"

# VT_VCPUS_FIXTURE=DIR: only build the recording into DIR (report-html-vcpus.sh draws it).
[ -n "$VT_VCPUS_FIXTURE" ] && { cp -r "$run/." "$VT_VCPUS_FIXTURE/" && exit 0; fail "cp $VT_VCPUS_FIXTURE"; }
[ -n "$VT_KEEP" ] && { trap - EXIT; echo "kept $WORK"; }
"$COLLECT" report --vcpus "$run" >"$WORK/out.txt" || fail "report --vcpus exited $?"
sed -n '/^vCPU time/,$p' "$WORK/out.txt" >"$WORK/vcpus.txt"
cat "$WORK/vcpus.txt"
cat >"$WORK/want.txt" <<'EOF'
vCPU time (host nanoseconds, 0.001000 to 0.001100: 100000 ns; every vCPU's states add up to it)
  guest fx vCPU 0 (host thread 5001): 100000 ns
    in the guest                                  48500   48.50%
    in exits handled by the kernel                13400   13.40%
      HLT                                         10900   10.90%
      EPT_VIOLATION                                1000    1.00%
      EXTERNAL_INTERRUPT                           1000    1.00%
      IO_INSTRUCTION                                500    0.50%
    in exits to QEMU                               3000    3.00%
      KVM_EXIT_IO                                  3000    3.00%
    halted                                         9700    9.70%
    preempted                                     15400   15.40%
      stress-ng[900]                              10000   10.00%
      guest other vCPU 0                           5000    5.00%
      swapper/0[0]                                  400    0.40%
    unknown                                       10000   10.00%
    guest task early[299] on vCPU 0: 5000 ns
      in the guest                                 5000  100.00%
      in exits handled by the kernel                  0    0.00%
      in exits to QEMU                                0    0.00%
      halted                                          0    0.00%
      preempted                                       0    0.00%
      unknown                                         0    0.00%
    guest task fio[300] on vCPU 0: 75000 ns
      in the guest                                34500   46.00%
      in exits handled by the kernel              12500   16.67%
        HLT                                       10000   13.33%
        EPT_VIOLATION                              1000    1.33%
        EXTERNAL_INTERRUPT                         1000    1.33%
        IO_INSTRUCTION                              500    0.67%
      in exits to QEMU                             3000    4.00%
        KVM_EXIT_IO                                3000    4.00%
      halted                                          0    0.00%
      preempted                                   15000   20.00%
        stress-ng[900]                            10000   13.33%
        guest other vCPU 0                         5000    6.67%
      unknown                                     10000   13.33%
    guest task swapper/0[0] on vCPU 0: 20000 ns
      in the guest                                 9000   45.00%
      in exits handled by the kernel                900    4.50%
        HLT                                         900    4.50%
      in exits to QEMU                                0    0.00%
      halted                                       9700   48.50%
      preempted                                     400    2.00%
        swapper/0[0]                                400    2.00%
      unknown                                         0    0.00%
  guest fx vCPU 1 (host thread 5002): 100000 ns
    in the guest                                  80100   80.10%
    in exits handled by the kernel                 3600    3.60%
      npf                                          2000    2.00%
      hlt                                          1300    1.30%
      msr                                           200    0.20%
      io                                            100    0.10%
    in exits to QEMU                               5100    5.10%
      KVM_EXIT_IO                                  5000    5.00%
      restart                                       100    0.10%
    halted                                         9700    9.70%
    preempted                                      1000    1.00%
      swapper/1[0]                                 1000    1.00%
    unknown                                         500    0.50%
    guest task sshd[400] on vCPU 1: 98000 ns
      in the guest                                79100   80.71%
      in exits handled by the kernel               3100    3.16%
        npf                                        1500    1.53%
        hlt                                        1300    1.33%
        msr                                         200    0.20%
        io                                          100    0.10%
      in exits to QEMU                             5100    5.20%
        KVM_EXIT_IO                                5000    5.10%
        restart                                     100    0.10%
      halted                                       9700    9.90%
      preempted                                    1000    1.02%
        swapper/1[0]                               1000    1.02%
      unknown                                         0    0.00%
    guest task kworker[402] on vCPU 1: 1000 ns
      in the guest                                 1000  100.00%
      in exits handled by the kernel                  0    0.00%
      in exits to QEMU                                0    0.00%
      halted                                          0    0.00%
      preempted                                       0    0.00%
      unknown                                         0    0.00%
  guest other vCPU 0 (host thread 7001): 100000 ns
    in the guest                                      0    0.00%
    in exits handled by the kernel                    0    0.00%
    in exits to QEMU                                  0    0.00%
    halted                                            0    0.00%
    preempted                                      4900    4.90%
      guest fx vCPU 0                              4900    4.90%
    unknown                                       95100   95.10%
  note: 1 lost-event markers in the host file, 0 undecodable records, 0 past a bound
EOF
diff -u "$WORK/want.txt" "$WORK/vcpus.txt" || fail "the --vcpus text is not as built"

# JSON: the same numbers, and every vCPU's and task's leaves add up to its wall_ns.
"$COLLECT" report --vcpus --json "$run" >"$WORK/report.json" || fail "report --vcpus --json exited $?"
if python3 -c 'import jsonschema' 2>/dev/null; then
	python3 "$VT_SRCDIR/scripts/validate-json.py" "$VT_SRCDIR/doc/report.schema.json" "$WORK/report.json" ||
		fail "report --vcpus --json does not match doc/report.schema.json"
fi
leaves='[.states | .. | numbers] | add'
bad=$(jq -r ".vcpus.guests[].vcpus[] | (., .tasks[]) | select(($leaves) != .wall_ns) |
	\"\\(.tid // .comm): leaves \\($leaves) wall \\(.wall_ns)\"" "$WORK/report.json")
[ -z "$bad" ] || fail "states do not add up: $bad"
n=$(jq '[.vcpus.guests[].vcpus[] | (., .tasks[])] | length' "$WORK/report.json")
[ "$n" = 8 ] || fail "$n vCPUs and tasks in the JSON, want 8 (3 vCPUs, 5 tasks)"
q() { jq -c "$1" "$WORK/report.json"; }
v0=$(q '.vcpus.guests[0].vcpus[0] | [.tid, .wall_ns, .states]')
echo "vcpu0: $v0"
[ "$v0" = '[5001,100000,{"guest":48500,"exit_kernel":{"HLT":10900,"EPT_VIOLATION":1000,"EXTERNAL_INTERRUPT":1000,"IO_INSTRUCTION":500},"exit_userspace":{"KVM_EXIT_IO":3000},"halted":9700,"preempted":{"stress-ng[900]":10000,"guest other vCPU 0":5000,"swapper/0[0]":400},"unknown":10000}]' ] ||
	fail "vCPU 0 in the JSON: $v0"
fio=$(q '.vcpus.guests[0].vcpus[0].tasks[] | select(.comm == "fio") | [.pid, .wall_ns, .states.guest, .states.preempted]')
[ "$fio" = '[300,75000,34500,{"stress-ng[900]":10000,"guest other vCPU 0":5000}]' ] || fail "fio in the JSON: $fio"
w=$(q '[.vcpus.wall_ns, .vcpus.kvm_events, .vcpus.sched_events, .vcpus.lost_markers]')
[ "$w" = '[100000,true,true,1]' ] || fail "the vcpus object: $w"

# --latency: fio is woken at 1040000 onto vCPU 0 (halted then, the idle task current) and runs at
# 1045000; kworker is woken at 1049000 onto vCPU 1 (sshd in the guest until its hlt exit at
# 1050000) and runs at 1063000.
"$COLLECT" report --latency "$run" >"$WORK/lat.txt" || fail "report --latency exited $?"
sed -n '/^Guest wakeup latency/,$p' "$WORK/lat.txt" >"$WORK/lat-got.txt"
cat "$WORK/lat-got.txt"
cat >"$WORK/lat-want.txt" <<'EOF'
Guest wakeup latency (sched_waking to the sched_switch that runs the task, host nanoseconds; at least 0 ns), and what the vCPU did meanwhile
  guest fx: 2 wakeups, 2 of at least 0 ns: 19000 ns in all, per cause:
    halted                                         9700   51.05%
    guest task swapper/0[0]                        4000   21.05%
    guest task sshd[400]                           2000   10.53%
    exit hlt                                       1300    6.84%
    preempted by swapper/1[0]                      1000    5.26%
    exit HLT                                        600    3.16%
    preempted by swapper/0[0]                       400    2.11%
  guest fx: the 2 longest:
    kworker[402] on vCPU 1, woken at 0.001049: 14000 ns
      halted                                       9700   69.29%
      guest task sshd[400]                         2000   14.29%
      exit hlt                                     1300    9.29%
      preempted by swapper/1[0]                    1000    7.14%
    fio[300] on vCPU 0, woken at 0.001040: 5000 ns
      guest task swapper/0[0]                      4000   80.00%
      exit HLT                                      600   12.00%
      preempted by swapper/0[0]                     400    8.00%
  guest other: no wakeups timed
EOF
diff -u "$WORK/lat-want.txt" "$WORK/lat-got.txt" || fail "the --latency text is not as built"
grep -q '^vCPU time' "$WORK/lat.txt" && fail "--latency alone printed the --vcpus section"
"$COLLECT" report --latency=10us --vcpus --json "$run" >"$WORK/lat.json" || fail "report --latency=10us --json exited $?"
if python3 -c 'import jsonschema' 2>/dev/null; then
	python3 "$VT_SRCDIR/scripts/validate-json.py" "$VT_SRCDIR/doc/report.schema.json" "$WORK/lat.json" ||
		fail "report --latency --json does not match doc/report.schema.json"
fi
l=$(jq -c '.latency | [.threshold_ns, (.guests[] | select(.name == "fx") | [.wakeups, .over, .total_ns, .causes,
	(.worst | map([.comm, .pid, .vcpu, .woken_ns, .latency_ns, .causes]))])]' "$WORK/lat.json")
echo "--latency=10us: $l"
[ "$l" = '[10000,[2,1,14000,{"halted":9700,"guest task sshd[400]":2000,"exit hlt":1300,"preempted by swapper/1[0]":1000},[["kworker",402,1,1049000,14000,{"halted":9700,"guest task sshd[400]":2000,"exit hlt":1300,"preempted by swapper/1[0]":1000}]]]]' ] ||
	fail "--latency=10us in the JSON: $l"
jq -e '.vcpus.wall_ns == 100000' "$WORK/lat.json" >/dev/null || fail "--vcpus beside --latency is missing"
"$COLLECT" report --latency=1x "$run" >/dev/null 2>&1
[ $? = 2 ] || fail "--latency=1x is not a usage error"
# --interval: the guest's sched_waking to its sched_switch of the same task (common_pid): the
# idle task (pid 0) from 1040000 to 1045000 on vCPU 0, sshd (400) from 1049000 to 1063000 on vCPU 1,
# the same stretches as the wakeups above.
"$COLLECT" report --interval sched:sched_waking,sched:sched_switch --json "$run" >"$WORK/iv.json" ||
	fail "report --interval --json exited $?"
if python3 -c 'import jsonschema' 2>/dev/null; then
	python3 "$VT_SRCDIR/scripts/validate-json.py" "$VT_SRCDIR/doc/report.schema.json" "$WORK/iv.json" ||
		fail "report --interval --json does not match doc/report.schema.json"
fi
iv=$(jq -c '.intervals | [.start, .end, .field, (.guests[] | select(.name == "fx") | [.wakeups, .total_ns,
	(.worst | map([.key, .vcpu, .start_ns, .duration_ns, ([.causes[]] | add)]))])]' "$WORK/iv.json")
echo "--interval: $iv"
[ "$iv" = '["sched:sched_waking","sched:sched_switch",null,[2,19000,[[400,1,1049000,14000,14000],[0,0,1040000,5000,5000]]]]' ] ||
	fail "--interval in the JSON: $iv"
"$COLLECT" report --interval sched:sched_waking,sched:sched_switch "$run" | grep -q '^Guest intervals (sched:sched_waking to sched:sched_switch of the same task, ' ||
	fail "the --interval text has no heading"
for bad in a,b sched:x sched:x,sched:x 'sched:x,sched:y,' sched:x,sched:y,f,g; do
	"$COLLECT" report --interval "$bad" "$run" >/dev/null 2>&1
	[ $? = 2 ] || fail "--interval $bad is not a usage error"
done
echo "PASS"
