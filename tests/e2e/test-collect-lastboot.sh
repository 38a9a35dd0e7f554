#!/bin/bash
# vt-suite: e2e-6.12
# test-collect-lastboot.sh: the crashed guest's last trace. A 2-vCPU 6.12 guest (VT_KERNEL_DEB,
# default debian:trixie) boots with a persistent boot-mapped instance, as `setup --last-boot 4M`
# prints it: reserve_mem=4M:4096:vtlast trace_instance=vtlast^traceoff@vtlast (sched_switch is
# enabled in it once the guest is up).
# and QEMU without -no-reboot. Boot 1: `record --last-boot vtlast` finds nothing yet and the agent
# arms the instance (tracing_on=1), vt-e2e-guest writes N markers per CPU into it, a `sleep 0.2`
# runs on CPU 0, then the guest crashes from CPU 1 (sysrq c); the kernel
# panics and QEMU warm-resets the machine. Boot 2: the agent starts again and `record --last-boot
# vtlast` writes guest-e2e.lastboot.dat before the usual recording. Checks: record exits 0;
# trace-cmd report of lastboot.dat holds CPU 0's N markers of boot 1, in order, and the kernel's
# last events after them (the sleep's sched_switch); CPU 1's N markers likewise, unless the kernel
# said at boot that it discarded that CPU's buffer (Debian's 6.12.117 does so for the CPU that
# panicked: "Ring buffer boot meta [1] buffer invalid commit"), which the test reports; the file
# carries the LAST_BOOT_INFO note; boot 2's own guest-e2e.dat holds none of boot 1's markers.
# Env: VT_BUILDDIR, VT_STATIC_AGENT, VT_KERNEL_DEB, VT_KEEP=1. Exit: 0 pass, 1 fail, 77 skip.
echo "test-collect-lastboot: a 6.12 guest's boot-mapped trace survives its crash and QEMU's warm reset; record --last-boot writes it to guest-NAME.lastboot.dat"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
. "$HERE/scenario-lib.sh"
VT_LOG_PREFIX=test-collect-lastboot
ME=test-collect-lastboot
N=${VT_E2E_MARKERS:-200}
export VT_KERNEL_DEB=${VT_KERNEL_DEB:-debian:trixie}

scn_begin
scn_ports pipe
VT_NO_REBOOT=0
# The kernel arguments as `setup --last-boot` prints them. Without events at boot: under TCG,
# sched_switch enabled by trace_instance= during boot was seen to hit an int3 Oops (jump-label
# patching while the CPUs come up); it is enabled once the guest is up instead.
args=$("$COLLECT" setup --last-boot 4M --last-boot-events sched:sched_switch)
[ "$args" = "reserve_mem=4M:4096:vtlast trace_instance=vtlast^traceoff@vtlast,sched:sched_switch" ] ||
    bad "setup --last-boot --last-boot-events printed '$args'"
VT_APPEND=$("$COLLECT" setup --last-boot 4M) || { echo "$ME: FAIL: setup --last-boot exited $?"; exit 1; }
VT_LOG_IGNORE='Kernel panic - not syncing: sysrq triggered crash'
# One TCG thread: enabling events patches kernel text (jump labels), and with multi-threaded TCG
# a vCPU was seen taking the half-patched int3 in __schedule (Oops, an unexpected third boot)
# on a loaded host.
VT_TCG_SINGLE=1
scn_boot
I=/sys/kernel/tracing/instances/vtlast
vt_test_say "$PORTS" "sh test -r $I/last_boot_info" 20
[ "$ANSWER" = "ok rc=0" ] || { echo "$ME: SKIP: the guest kernel made no boot-mapped instance (Linux >= 6.12 needed)"; exit 77; }

# Boot 1: record --last-boot finds nothing yet and arms the instance (tracing_on=1: ^traceoff
# kept it off); then markers into it, then the crash.
OUT=$WORK/out1
scn_script "$WORK/work1" "!sleep 0.3"
scn_record --chardev-dir "$PORTS" --name e2e --last-boot vtlast -e sched:sched_switch -- "$WORK/work1"
[ $CRC = 0 ] || { sed 's/^/    | /' "$WORK/record.log"; bad "boot 1: record exited $CRC, want 0"; }
grep -q "no last boot's trace: instance vtlast holds nothing from the last boot" "$WORK/record.log" ||
    { sed 's/^/    | /' "$WORK/record.log"; bad "boot 1: record did not say there was nothing yet"; }
[ ! -e "$OUT/guest-e2e.lastboot.dat" ] || bad "boot 1: a lastboot.dat from nothing"
vt_test_say "$PORTS" "sh test \$(cat $I/tracing_on) = 1" 20 && [ "$ANSWER" = "ok rc=0" ] || bad "boot 1: the agent did not arm vtlast"
vt_test_say "$PORTS" "sh echo 1 >$I/events/sched/sched_switch/enable" 20 && [ "$ANSWER" = "ok rc=0" ] ||
    bad "boot 1: cannot enable sched_switch in vtlast: $ANSWER"
OUT=$WORK/out
vt_test_say "$PORTS" "flood vt-last $N 0 64 vtlast" 60 || bad "no answer to the flood"
echo "$ME: boot 1: $ANSWER"
vt_test_say "$PORTS" "sh taskset 1 sleep 0.2; taskset 2 sh -c 'echo c >/proc/sysrq-trigger'" 2
vt_wait_console 'sysrq triggered crash' 30 || bad "the guest did not crash"
echo "$ME: boot 1 crashed: $(tr -d '\r' <"$RUN/console.log" | grep -a -m1 'Kernel panic')"

# Boot 2, after QEMU's warm reset.
if ! vt_test_say "$PORTS" hello 90; then
    tr -d '\r' <"$RUN/console.log" | tail -20
    echo "$ME: FAIL: vt-e2e-guest did not answer after the reset"; exit 1
fi
boots=$(tr -d '\r' <"$RUN/console.log" | grep -ac '^VT-INIT: start')
echo "$ME: boot 2 says: $ANSWER ($boots boots on the console)"
[ "$boots" = 2 ] || bad "$boots boots on the console, want 2 (an unexpected crash?)"
vt_test_say "$PORTS" "sh dmesg | grep -i 'ring buffer boot meta\|mapped boot instance' | sed 's/^/E2E-DMESG /'" 20
scn_script "$WORK/work" "flood vt-now 10 0 64" "!sleep 0.5"
scn_record --chardev-dir "$PORTS" --name e2e --last-boot vtlast -e sched:sched_switch -- "$WORK/work"
[ $CRC = 0 ] || { sed 's/^/    | /' "$WORK/record.log"; bad "record exited $CRC, want 0"; }
scn_end

LB=$OUT/guest-e2e.lastboot.dat
[ -s "$LB" ] || { sed 's/^/    | /' "$WORK/record.log"; bad "no $LB"; scn_result; }
trace-cmd report -i "$LB" >"$WORK/lastboot.txt" 2>"$WORK/lastboot.err" ||
    bad "trace-cmd report of the lastboot file failed: $(head -3 "$WORK/lastboot.err")"
echo "$ME: lastboot.dat: $(grep -c . "$WORK/lastboot.txt") lines, $(grep -c 'sched_switch:' "$WORK/lastboot.txt") sched_switch, $(grep -c 'vt-last cpu' "$WORK/lastboot.txt") markers"
tr -d '\r' <"$RUN/console.log" | grep -a '^E2E-DMESG' | sed "s/^E2E-DMESG/$ME: boot 2 kernel:/"
# Boot 1 enabled sched_switch, boot 2 did not: the file must still describe it.
[ "$(grep -c 'UNKNOWN EVENT' "$WORK/lastboot.txt")" = 0 ] || bad "lastboot.dat has events of unknown format"
for cpu in 0 1; do
    got=$(grep -E "\[00$cpu\] .* vt-last cpu$cpu [0-9]+ " "$WORK/lastboot.txt" | sed -n "s/.* vt-last cpu$cpu \([0-9]*\) .*/\1/p" |
          awk '{ if ($1 != n) bad++; n++ } END { printf "%d %d", n, bad }')
    read -r cnt disorder <<<"$got"
    echo "$ME: cpu$cpu: $cnt markers of boot 1, $disorder out of order"
    if [ "$cpu" = 1 ] && [ "$cnt" = 0 ] &&
       tr -d '\r' <"$RUN/console.log" | grep -aq 'E2E-DMESG.*boot meta \[1\] buffer invalid'; then
        echo "$ME: cpu1: the kernel discarded the panicking CPU's buffer at boot (see above): nothing to ship"
        continue
    fi
    [ "$cnt" = "$N" ] && [ "$disorder" = 0 ] || bad "cpu$cpu: $cnt markers ($disorder out of order), want $N in order"
done
# The kernel's last events on CPU 0: the sleep before the crash, after the last marker.
last_mk=$(grep -n '\[000\] .* vt-last cpu' "$WORK/lastboot.txt" | tail -n1 | cut -d: -f1)
after=$(tail -n +"${last_mk:-1}" "$WORK/lastboot.txt" | grep -c '\[000\] .*sched_switch:')
echo "$ME: cpu0: $after sched_switch events after the last marker; the last: $(grep '\[000\] .*sched_switch:' "$WORK/lastboot.txt" | tail -n1 | sed 's/  */ /g' | cut -c1-160)"
[ "$after" -gt 0 ] || bad "no sched_switch after the last marker"
tail -n +"${last_mk:-1}" "$WORK/lastboot.txt" | grep -qE '\[000\] .*sched_switch: .*sleep:[0-9]+' ||
    bad "the sleep before the crash is not among CPU 0's last events"
strings "$LB" | grep -q 'the previous boot.s trace of instance vtlast' || bad "no LAST_BOOT_INFO note in the file"
[ "$(scn_m '.guests[0].last_boot_file')" = guest-e2e.lastboot.dat ] &&
    scn_m '.guests[0].last_boot_note' | grep -q 'not synchronised' ||
    bad "the manifest does not name the lastboot file: $(scn_m '.guests[0] | {last_boot_file, last_boot_note}' | tr -d '\n')"
trace-cmd report -i "$OUT/guest-e2e.dat" >"$WORK/now.txt" 2>/dev/null || bad "trace-cmd report of guest-e2e.dat failed"
[ "$(grep -c 'vt-last cpu' "$WORK/now.txt")" = 0 ] || bad "boot 1's markers leaked into boot 2's trace"
[ "$(grep -c 'vt-now cpu' "$WORK/now.txt")" = 20 ] || bad "boot 2's trace has $(grep -c 'vt-now cpu' "$WORK/now.txt") of its 20 markers"
grep -i 'last boot' "$WORK/record.log" | sed "s/^/$ME: record: /"
scn_result
