#!/bin/bash
# bench-tcg-patch.sh: how often a TCG guest hangs when trace events are enabled and disabled
# again and again (kernel text patched through int3), without and with what every e2e guest has
# (VT_TCG_KEEP in tests/e2e/lib.sh: the two idle instances that /init makes with one CPU online,
# maxcpus=1, before it brings the second vCPU up). Not a test: it prints
# a table, so that the keeping instance can be checked again on another QEMU.
# Each run boots the e2e image (2 vCPUs, multi-threaded TCG); a shell writes markers flat out on
# both CPUs while a loop makes an instance, enables sched, irq and timer in it, waits 0.1 s,
# disables them and removes it, CYCLES times. A run whose count stops moving for 20 s, or whose
# guest died (an oops), hung; its vCPUs' RIPs and the bytes there are printed (vt_guest_where),
# then QEMU is stopped.
# Modes: without (nothing kept); one (both CPUs up at boot, the script first enables the systems
# in one idle instance: each cycle then takes a tracepoint's static call from 1 probe to 2 and
# back, which patches it; the e2e guests' scheme before 2026-11-26's last night); keep (what
# every e2e guest has now: 2 probes to 3 and back, nothing patched).
# Runs alternate over the modes: without, one, keep, without, ...
# Usage: tests/bench/bench-tcg-patch.sh [RUNS per mode, default 3] [CYCLES, default 150]
# Env: VT_BUILDDIR, VT_IMAGE (default: the collector e2e image, built if missing),
# VT_TCG_MODES (default "without one keep"), VT_TCG_SLEEP (the wait per cycle, default 0.1).
# Measured here (QEMU 7.2, Debian 12's 6.1, 2026-11-26): without, 6 of 6 runs hung (after 70,
# 20, 110 cycles by hand, then 73, 14 and 118 in this script); with one keeping instance, 0 of 6.
# Later (3 runs, 300 cycles, VT_TCG_SLEEP=0.02): one and keep, 0 of 3 each on 6.1; on the
# kernel-patch kernel (tinyconfig: no jump labels, so static calls are all it patches), one
# oopsed ("int3: 0000") in 3 of 3 runs (after 79, 8 and 1 cycles), keep 0 of 3.
echo "bench-tcg-patch: TCG guest hangs while events are enabled and disabled, without and with a keeping instance"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/../e2e/lib.sh"
. "$HERE/../e2e/agent-lib.sh"
VT_LOG_PREFIX=bench-tcg-patch
RUNS=${1:-3}
CYCLES=${2:-150}
WORK=$(mktemp -d /tmp/vt-bench-tcg-patch.XXXXXX)
trap 'vt_guest_stop; rm -rf "$WORK"' EXIT
trap 'exit 1' INT TERM HUP

if [ -z "${VT_IMAGE:-}" ]; then
    vt_collect_build || exit 1
    vt_collect_image "$WORK" collect-guest || exit 1
fi
MODES=${VT_TCG_MODES:-without one keep}
# stress.sh, and hold.sh: the same after the systems are enabled in one idle instance.
cat >"$WORK/hold.sh" <<EOF
T=/sys/kernel/tracing
mkdir \$T/instances/h && echo 0 > \$T/instances/h/tracing_on && echo 4 > \$T/instances/h/buffer_size_kb
for e in sched irq timer; do echo 1 > \$T/instances/h/events/\$e/enable; done
echo "STRESS: holding"
EOF
cat >"$WORK/stress.sh" <<EOF
T=/sys/kernel/tracing
for c in 0 1; do ( while :; do echo "marker load" > \$T/trace_marker; done ) & done
i=0
while [ \$i -lt $CYCLES ]; do
    mkdir \$T/instances/s\$i || break
    for e in sched irq timer; do echo 1 > \$T/instances/s\$i/events/\$e/enable; done
    sleep ${VT_TCG_SLEEP:-0.1}
    for e in sched irq timer; do echo 0 > \$T/instances/s\$i/events/\$e/enable; done
    rmdir \$T/instances/s\$i
    i=\$((i + 1))
    echo "STRESS: \$i"
done
kill %1 %2
EOF
cat "$WORK/stress.sh" >>"$WORK/hold.sh"

# run MODE N: one guest; prints "MODE N CYCLES_DONE HUNG(0/1) SECONDS".
run() {
    local mode=$1 n=$2 last=0 same=0 fin=0 t0 cur oops
    VT_RUNDIR=$WORK/run-$mode-$n
    mkdir -p "$VT_RUNDIR"
    VT_GUEST_SCRIPT=$WORK/stress.sh VT_TIMEOUT=$((CYCLES * 3 + 60))
    [ "$mode" = one ] && VT_GUEST_SCRIPT=$WORK/hold.sh
    if [ "$mode" = keep ]; then VT_TCG_KEEP=sched,irq,timer; else VT_TCG_KEEP=; fi
    t0=$(vt_now)
    vt_guest_start || { vt_log "$mode run $n: QEMU did not start"; echo "$mode $n 0 1 0"; return; }
    while kill -0 "$VT_TIMEOUT_PID" 2>/dev/null; do
        sleep 1
        cur=$(tr -d '\r' <"$VT_RUNDIR/console.log" | grep -a -c '^STRESS: [0-9]')
        [ "$cur" -ge "$CYCLES" ] && { fin=1; break; }
        if [ "$cur" = "$last" ]; then same=$((same + 1)); else same=0 last=$cur; fi
        [ "$same" -ge 20 ] && break
    done
    cur=$(tr -d '\r' <"$VT_RUNDIR/console.log" | grep -a -c '^STRESS: [0-9]')
    if [ "$fin" = 0 ] && kill -0 "$VT_TIMEOUT_PID" 2>/dev/null; then
        VT_LOG_PREFIX="bench-tcg-patch: $mode run $n" vt_guest_where
    fi
    vt_guest_stop
    [ "$mode" != keep ] || vt_log "$mode run $n: $(tr -d '\r' <"$VT_RUNDIR/console.log" | grep -a -m1 '^VT-INIT: keep')"
    oops=$(tr -d '\r' <"$VT_RUNDIR/console.log" | grep -a -m1 -E 'int3: |Oops|Kernel panic|rcu_sched self-detected|RCU stall')
    [ -z "$oops" ] || vt_log "$mode run $n: the guest said: $oops"
    echo "$mode $n $cur $((1 - fin)) $(vt_secs "$t0" "$(vt_now)")"
}

: >"$WORK/rows"
for ((n = 1; n <= RUNS; n++)); do
    for mode in $MODES; do
        row=$(run "$mode" "$n")
        echo "$row" | awk -v c="$CYCLES" '{ printf "bench-tcg-patch: %s run %s: %s of %d cycles, %s, %s s\n",
                                             $1, $2, $3, c, ($4 ? "HUNG or DIED" : "done"), $5 }'
        echo "$row" >>"$WORK/rows"
    done
done
echo
printf '%-8s %5s %5s  %s\n' mode runs hung "cycles done per run (hung: or died)"
for mode in $MODES; do
    awk -v m=$mode '$1 == m { n++; h += $4; c = c " " $3 } END { printf "%-8s %5d %5d %s\n", m, n, h, c }' "$WORK/rows"
done
