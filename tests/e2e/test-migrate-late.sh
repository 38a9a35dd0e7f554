#!/bin/bash
# vt-suite: e2e
# test-migrate-late.sh: the destination's collector starts late. As test-migrate.sh
# (migrate-lib.sh: two QEMU processes, TCG thread=single), but `record --incoming` on the
# destination starts VT_MIGRATE_LATE (8) seconds after the migration completed, while the guest
# still writes markers: VT_MIGRATE_MARKERS (80000) per vCPU at VT_MIGRATE_RATE (5000) per
# second (16 s: the flood must outlast the switchover, which took 10 s under load, and it starts 2 s
# before the migration), no other guest event, and 64 KiB ring buffers (--buffer-size 64), so that while
# nobody reads the destination's ports (a 64 KiB FIFO, the virtqueue, the agent's 1 MiB pipe,
# the ring buffer) the ring buffer overruns. Checks: both records exit 0, `join` exits 0; per
# CPU the joined file holds each marker at most once and in order; what is missing is exactly
# what the guest's ring buffer counted as overrun (its final stats: overrun + commit overrun +
# dropped), and each gap is where trace-cmd shows "CPU:K [N EVENTS DROPPED]", the N adding up
# to it (the buffer may overrun more than once); the joined file's events = the guest's
# read_events; join lost no byte and the resume marks placed both streams; the blackout is
# recorded.
# Env: VT_BUILDDIR, VT_STATIC_AGENT, VT_KEEP=1, VT_MIGRATE_MARKERS, VT_MIGRATE_RATE,
# VT_MIGRATE_LATE. Exit: 0 pass, 1 fail, 77 skip.
echo "test-migrate-late: the destination's collector starts late: what the ring buffer held is delivered, what it could not hold is counted exactly"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
. "$HERE/migrate-lib.sh"
VT_LOG_PREFIX=test-migrate-late
ME=test-migrate-late
N=${VT_MIGRATE_MARKERS:-80000}
RATE=${VT_MIGRATE_RATE:-5000}
LATE=${VT_MIGRATE_LATE:-8}

mig_begin
mig_boot_src
REC=(--verbose --buffer-size 64 --host-events sched:sched_switch --sync-interval 0.5 --stop-timeout 30)
mig_record src --chardev-dir "$SRC/ports" --name e2e --qmp "$SRC/ports/qmp.sock" -o "$SRC/out" "${REC[@]}"
vt_test_say "$SRC/ports" "waiton 60" 70 || bad "the source's agent did not start recording"
echo "$ME: the source records ($ANSWER)"
sleep 1.5
mig_boot_dst
mig_flood "$N" "$RATE"
sleep 2
mig_migrate
mig_wait completed 90 || bad "the migration did not complete"
mig_yield_src
sleep "$LATE"
echo "$ME: the destination's collector starts $LATE s after the switchover"
mig_record dst --chardev-dir "$DST/ports" --name e2e --incoming --qmp "$DST/ports/qmp.sock" -o "$DST/out" "${REC[@]}"
mig_flood_answer 180
mig_wait_record src 60
[ "${REC_RC_src:-1}" = 0 ] || { sed 's/^/    src| /' "$WORK/record-src.log"; bad "record on the source exited ${REC_RC_src:-?}, want 0"; }
mig_wait_log dst 'recording again, on this host' 120 || bad "the destination did not take the session over in 120 s"
sleep 1
mig_stop_record dst
[ "${REC_RC_dst:-1}" = 0 ] || { sed 's/^/    dst| /' "$WORK/record-dst.log"; bad "record on the destination exited ${REC_RC_dst:-?}, want 0"; }
grep -E 'resume mark|took its' "$WORK/record-dst.log" | sed "s/^/$ME: dst: /"

vt_test_say "$DST/ports" quit 30 || bad "vt-e2e-guest did not answer quit on the destination"
VT_QEMU_PID=$DST_QEMU VT_TIMEOUT_PID=$DST_TPID VT_RUNDIR=$DST
vt_agent_wait_off 60 || fail=1
mig_qmp src "cmd('quit')" >/dev/null 2>&1
mig_console

S=$SRC/out D=$DST/out J=$WORK/join
MJ() { jq -r "$1" "$J/manifest.json"; }
"$COLLECT" join "$S" "$D" -o "$J" >"$WORK/join.log" 2>&1
JRC=$?
sed 's/^/    join| /' "$WORK/join.log"
[ $JRC = 0 ] || bad "join exited $JRC, want 0"
[ -s "$J/guest-e2e.dat" ] || { bad "join wrote no guest-e2e.dat"; mig_result; }
echo "$ME: join: blackout $(MJ '.join.blackout | "\(.ms) ms, QEMU downtime \(.qemu_downtime_ms) ms"')"
echo "$ME: join: $(MJ '[.join.cpus[] | "cpu\(.cpu): source \(.source_pages) pages, destination \(.destination_pages) from byte \(.destination_from_byte), \(.duplicate_bytes_dropped) duplicate, \(.lost_bytes) lost"] | join("; ")')"
echo "$ME: join: epochs: $(MJ '[.guests[0].sync.epochs[] | "cpu\(.cpu) offset \(.offset) from \(.host_tsc_from)"] | join("; ")')"
[ "$(MJ '[.join.cpus[] | select(.resume_mark)] | length')" = 2 ] || bad "a stream was not placed by its resume mark"
[ "$(MJ '[.join.cpus[].lost_bytes] | add')" = 0 ] || bad "join counts bytes lost at the switchover"
awk -v b="$(MJ '.join.blackout.ms')" 'BEGIN { exit !(b > 0) }' || bad "the joined manifest records no blackout"

trace-cmd report -i "$J/guest-e2e.dat" >"$WORK/guest.txt" 2>"$WORK/guest.err" ||
    bad "trace-cmd report of the joined file failed: $(head -3 "$WORK/guest.err")"
mig_markers "$WORK/guest.txt" mig "$N" "0 1"
total_ov=0
for cpu in 0 1; do
    eval "f=\$MK_FOUND_$cpu d=\$MK_DUP_$cpu o=\$MK_ORDER_$cpu m=\$MK_MISSING_$cpu e=\$MK_ELSEWHERE_$cpu b=\$MK_BACK_$cpu"
    ov=$(MJ ".guests[0].cpus[] | select(.cpu == $cpu) | .stats.overrun + .stats.commit_overrun + .stats.dropped_events")
    rd=$(MJ ".guests[0].cpus[] | select(.cpu == $cpu) | .stats.read_events")
    ev=$(MJ ".guests[0].cpus[] | select(.cpu == $cpu) | .events")
    lip=$(MJ ".guests[0].cpus[] | select(.cpu == $cpu) | .lost_events_in_pages")
    # Where trace-cmd shows the loss: "CPU:K [N EVENTS DROPPED]", once per overrun episode.
    read -r drops dsum < <(awk -v c="CPU:$cpu" '$1 == c && $2 ~ /^\[[0-9]+$/ && $3 == "EVENTS" {
            n++; s += substr($2, 2) } END { printf "%d %d\n", n, s }' "$WORK/guest.txt")
    echo "$ME: cpu$cpu: delivered $f of $N markers, missing $m in $o gaps; the ring buffer counted" \
         "$ov overrun; trace-cmd shows $drops losses of $dsum events; $ev events (read_events $rd, lost in pages $lip)"
    total_ov=$((total_ov + ov))
    [ "$d" = 0 ] && [ "$e" = 0 ] && [ "$b" = 0 ] || bad "cpu$cpu: $d duplicates, $e elsewhere, $b steps back"
    [ "$m" = "$ov" ] || bad "cpu$cpu: $m markers missing, but the ring buffer counted $ov overrun"
    [ "$dsum" = "$ov" ] && [ "$drops" = "$o" ] ||
        bad "cpu$cpu: trace-cmd shows $drops losses of $dsum events where $o gaps of $m markers are"
    [ "$rd" = "$ev" ] || bad "cpu$cpu: the guest handed out $rd events, the joined file has $ev"
done
[ "$total_ov" -gt 0 ] || echo "$ME: note: no overrun this time (the buffers held everything)"
mig_result
