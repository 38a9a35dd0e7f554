#!/bin/bash
# vt-suite: e2e
# test-daemon-migrate.sh: a guest migrated live between two daemons, each following its own QEMU
# (issue 40). The frame of test-migrate.sh (migrate-lib.sh: two TCG QEMUs on this machine, the
# destination with -incoming unix:WORK/mig.sock), but no `record` of the test's own: two
# `virtio-trace-collect daemon --libvirt no --mode stream` with separate --state-dir, the source's
# following the source QEMU, the destination's the destination QEMU (--domains, by -name: on one
# machine each daemon sees both QEMUs in /proc, so they are named apart, vtmig-src-PID and
# vtmig-dst-PID, where setup's -name e2e would name both alike; on two hosts each sees only its
# own). The destination's daemon runs before its
# QEMU starts. While vt-e2e-guest writes VT_MIGRATE_MARKERS (8000) numbered markers per vCPU at
# VT_MIGRATE_RATE (800) per second (10 s, longer than the migration), QMP `migrate` moves the guest.
# Proves:
#  - the destination's daemon finds the -incoming QEMU by itself (it still listens on its
#    -incoming socket: the kernel's /proc/net/unix and its fds) and starts its child as
#    `record --chardev-dir PORTS --name NAME --incoming --qemu-pid QEMU --qmp SOCK` (the child's
#    /proc/PID/cmdline), one child only;
#  - the source's daemon takes its child's end at the switchover as "migrated out": status
#    "migrated-out" with no child, no "restarting", exactly one child started in its log (after
#    5 s more), the segment's manifest says direction "out", and `snapshot NAME` to it fails
#    saying the guest migrated out;
#  - `snapshot NAME` to the destination's daemon: the sealed recording's manifest says the
#    session was taken over (direction "in", a resume mark on both CPUs), and it holds the markers
#    written after the switchover: per vCPU a run that starts after 0 (the source had those) and
#    ends at N-1, in order, none duplicated, none missing within it, none on another CPU, and
#    its first is the one after the last in the source's segment (which starts at 0);
#  - the destination's next child, a plain record of the QEMU the guest came into (its
#    query-migrate says "completed" for that migration), records on: a second child attached and
#    settled (4 s), none restarted (it once took the guest for one that had left, and ended);
#  - `join SEGMENT SNAPSHOT` (doc/virtio-trace-collect-daemon.1, Live migration): refused (exit 1,
#    nothing written) with the two swapped ("no guest that migrated out") and without --dst-name,
#    naming the destination's guest; with --dst-name exit 0, and `trace-cmd report` of the joined
#    file lists every marker 0..N-1 of both vCPUs once, in order, on its vCPU (those from before
#    the switchover and after), nothing overrun, its events = the manifest's = the guest's
#    read_events; the manifest (virtio-trace-collect-join(1)): the source's guest name and file,
#    one host, the blackout from the source's STOP (its migrated_out_at_ns) to the destination's
#    RESUME (its resumed_at_ns) with QEMU's downtime, per CPU a resume mark, the source's stream
#    bytes and pages, the destination's first byte at its mark's place, the duplicates dropped
#    the difference, no byte lost; join's line gives CPU 0's pages of each side;
#  - both daemons exit 0 on SIGTERM.
# Env: VT_BUILDDIR, VT_STATIC_AGENT, VT_KEEP=1, VT_MIGRATE_MARKERS, VT_MIGRATE_RATE.
# Exit: 0 pass, 1 fail, 77 skip.
echo "test-daemon-migrate: a guest migrated between two daemons: the destination's attaches it with record --incoming by itself, its snapshot holds the markers after the switchover once each and in order, the source's says migrated-out, join of the two holds every marker once"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
. "$HERE/daemon-e2e-lib.sh"
. "$HERE/migrate-lib.sh"
VT_LOG_PREFIX=test-daemon-migrate
ME=test-daemon-migrate
N=${VT_MIGRATE_MARKERS:-8000}
RATE=${VT_MIGRATE_RATE:-800}
NAME_SRC=vtmig-src-$$ NAME_DST=vtmig-dst-$$
# The agent serves one session after another (the destination's daemon starts a new child after
# the snapshot).
MIG_APPEND="vt.agent_keep=1"

mig_begin
ST_SRC=$WORK/state-src ST_DST=$WORK/state-dst
# After setup's `-name e2e`: the last -name is QEMU's (and list's).
SRC_ARGS+=(-name "$NAME_SRC") DST_ARGS+=(-name "$NAME_DST")

# dm_daemon SIDE STATE NAME: a daemon following NAME only; DAEMON_SIDE is its pid.
dm_daemon() {
    local i
    "$COLLECT" daemon --state-dir "$2" --libvirt no --domains "$3" --mode stream --window 600 \
        >>"$WORK/daemon-$1.log" 2>&1 &
    eval "DAEMON_$1=$!"
    MIG_REC_PIDS+=("$!")
    for ((i = 0; i < 100; i++)); do
        [ -S "$2/control.sock" ] && "$COLLECT" daemon --status --state-dir "$2" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    bad "the $1 daemon does not answer --status 10 s after its start"
}
# dm_end SIDE: SIGTERM, exit 0 wanted.
dm_end() {
    local pid rc
    eval "pid=\$DAEMON_$1"
    kill -TERM "$pid"
    wait "$pid"
    rc=$?
    [ $rc = 0 ] || bad "the $1 daemon exited $rc on SIGTERM, want 0"
}
# dm_range FILE CPU: the first and last index of the markers "mig cpuCPU I" in FILE (-1 -1: none)
dm_range() {
    awk -v cpu="$2" '{ for (i = 1; i < NF - 1; i++) if ($i == "mig" && $(i + 1) == ("cpu" cpu)) {
        k = $(i + 2) + 0; if (!n++) f = k; l = k } } END { print (n ? f : -1), (n ? l : -1) }' "$1"
}
dm_log() { sed "s/^/    $1| /" "$WORK/daemon-$1.log" | tail -n "${2:-30}"; }
# dm_join SEG SNAP: `join` the source's segment and the destination's snapshot (see the top).
dm_join() {
    local S=$1 D=$2 J=$WORK/joined F=guest-$NAME_SRC.dat out rc cpu want got
    out=$("$COLLECT" join "$D" "$S" --dst-name "$NAME_SRC" -o "$J" 2>&1)
    rc=$?
    echo "$ME: join SNAPSHOT SEGMENT (swapped): exit $rc: $out"
    [ $rc = 1 ] && [[ $out == *"$D: no guest that migrated out"* ]] && [ ! -e "$J" ] ||
        bad "join with the destination's snapshot given as the source did not refuse it"
    out=$("$COLLECT" join "$S" "$D" -o "$J" 2>&1)
    rc=$?
    echo "$ME: join SEGMENT SNAPSHOT (no --dst-name): exit $rc: $out"
    [ $rc = 1 ] && [ ! -e "$J" ] && [[ $out == *"$D: no guest named $NAME_SRC that migrated in, but $NAME_DST did: give --dst-name $NAME_DST if it is the same guest"* ]] ||
        bad "join of two names without --dst-name did not refuse, naming the destination's guest"
    "$COLLECT" join "$S" "$D" --dst-name "$NAME_DST" -o "$J" >"$WORK/join.log" 2>&1
    rc=$?
    sed 's/^/    join| /' "$WORK/join.log"
    [ $rc = 0 ] || bad "join --dst-name exited $rc, want 0"
    [ -s "$J/$F" ] || { bad "join wrote no $F"; return; }
    mig_check_join "$J"
    mig_check_markers "$J" "$N" "$F"
    # What virtio-trace-collect-join(1) says of the manifest and its own line.
    want="$NAME_SRC $F one 0 0 $S $D"
    got=$(mig_jq "$J" '"\(.guests[0].name) \(.guests[0].file) \(.join.hosts) \(.join.host_sync_bound_ns) \(.join.host_delta_ticks) \(.join.source) \(.join.destination)\(.guests[0].problems)"')
    [ "$got" = "$want" ] || bad "joined manifest: '$got', want '$want'"
    # The blackout: from the source's STOP to the destination's RESUME, and QEMU's downtime.
    want="$(mig_jq "$S" '.guests[0].migration | "\(.migrated_out_at_ns) \(.qemu_downtime_ms)"') $(mig_jq "$D" '.guests[0].migration.resumed_at_ns')"
    got=$(mig_jq "$J" '.join.blackout | "\(.from_ns) \(.qemu_downtime_ms) \(.to_ns) \(.ms)"')
    echo "$ME: join: blackout from_ns, qemu_downtime_ms, to_ns, ms: $got (the recordings: $want)"
    [ "${got% *}" = "$want" ] && awk -v g="$got" 'BEGIN { split(g, a, " ")
        d = (a[3] - a[1]) / 1e6 - a[4]; exit !(d > -0.001 && d < 0.001) }' ||
        bad "the joined blackout is '$got', the recordings say '$want' (from, downtime, to)"
    for cpu in 0 1; do
        # Each byte once: the source's bytes, then the destination's from its mark's place.
        want="true $(mig_jq "$S" ".guests[0].migration.cpus[$cpu] | \"\(.stream_bytes) \(.pages)\"") $(mig_jq "$D" ".guests[0].migration.cpus[$cpu] | \"\(.mark_position - .bytes_before_mark)\"") 0 $(mig_jq "$J" ".guests[0].cpus[$cpu].events")"
        got=$(mig_jq "$J" ".join.cpus[$cpu] | \"\(.resume_mark) \(.source_stream_bytes) \(.source_pages) \(.destination_from_byte) \(.lost_bytes) \(.source_events + .destination_events)\"")
        echo "$ME: join: cpu$cpu: mark, source bytes and pages, destination from byte, lost, events: $got (want $want)"
        [ "$got" = "$want" ] || bad "cpu$cpu: the joined manifest says '$got', want '$want'"
        [ "$(mig_jq "$J" ".join.cpus[$cpu] | .source_stream_bytes - .destination_from_byte - .duplicate_bytes_dropped")" = 0 ] ||
            bad "cpu$cpu: the source's bytes are not the destination's start plus the duplicates dropped"
    done
    want=$(mig_jq "$J" '"wrote '"$J/$F"': \(.join.cpus[0].source_pages) source pages and \(.join.cpus[0].destination_pages) destination pages per CPU 0; blackout "')
    grep -qF "$want" "$WORK/join.log" || bad "join's line is not '$want...'"
}

mig_boot_src
dm_daemon src "$ST_SRC" "$NAME_SRC"
dm_daemon dst "$ST_DST" "$NAME_DST"
STATE=$ST_SRC DOM=$NAME_SRC de_wait_state attached 30 || { dm_log src; bad "the source's daemon did not attach $NAME_SRC in 30 s"; }
vt_test_say "$SRC/ports" "waiton 60" 70 || bad "the source's agent did not start recording"
STATE=$ST_SRC DOM=$NAME_SRC de_status_pid
SRC_CHILD=$PID
echo "$ME: the source's daemon records $NAME_SRC (child $SRC_CHILD: $(tr '\0' ' ' </proc/"$SRC_CHILD"/cmdline 2>/dev/null | cut -c1-160))"

T_DST=$(vt_now)
mig_boot_dst
STATE=$ST_DST DOM=$NAME_DST de_wait_state attached 20 || { dm_log dst; bad "the destination's daemon did not attach $NAME_DST in 20 s"; }
STATE=$ST_DST DOM=$NAME_DST de_status_pid
DST_CHILD=$PID
DST_CMD=$(tr '\0' ' ' </proc/"$DST_CHILD"/cmdline 2>/dev/null)
echo "$ME: the destination's daemon attached $NAME_DST $(vt_secs "$T_DST" "$(vt_now)") s after its QEMU started: child $DST_CHILD: $DST_CMD"
WANT="record --chardev-dir $DST/ports --name $NAME_DST --incoming --qemu-pid $DST_QEMU --qmp $DST/ports/qmp.sock "
[[ $DST_CMD == *"$WANT"* ]] || bad "the destination's child is not '$WANT...': $DST_CMD"

# The flood: asked on the source's port, answered on the destination's.
mig_flood "$N" "$RATE"
sleep 2
mig_migrate
mig_wait completed 90 || bad "the migration did not complete"
for p in $(pgrep -P "$DAEMON_src" 2>/dev/null); do renice -n 19 -p "$p" >/dev/null 2>&1; done
echo "$ME: migration took $(vt_secs "$MIG_T1" "$MIG_T2") s (asked to seen completed)"
mig_flood_answer

# The source's side: migrated out, and it stays so.
T_OUT=$(vt_now)
STATE=$ST_SRC DOM=$NAME_SRC de_wait_state migrated-out 60 || { dm_log src; bad "the source's daemon does not say $NAME_SRC migrated-out 60 s after the migration"; }
echo "$ME: the source's daemon says migrated-out $(vt_secs "$T_OUT" "$(vt_now)") s after the flood answered"
sleep 5
LINE=$(STATE=$ST_SRC de_status | awk -v n="$NAME_SRC" '$1 == n')
echo "$ME: source status 5 s later: $LINE"
read -r _ ST PID _ <<<"$LINE"
[ "$ST" = migrated-out ] && [ "$PID" = 0 ] || bad "the source's status is '$LINE', want migrated-out and no child"
n=$(grep -c "$NAME_SRC: recording (pid" "$WORK/daemon-src.log")
[ "$n" = 1 ] || bad "the source's daemon started $n children, want 1"
! grep -qE "$NAME_SRC: (record exited .*restarting|record ended .* times)" "$WORK/daemon-src.log" ||
    bad "the source's daemon took the migration for a failure: $(grep -E 'restarting|times in a row' "$WORK/daemon-src.log" | head -1)"
grep -q "$NAME_SRC: migrated out" "$WORK/daemon-src.log" || bad "the source's daemon did not log the migration"
out=$("$COLLECT" snapshot "$NAME_SRC" --state-dir "$ST_SRC" 2>&1)
rc=$?
echo "$ME: snapshot $NAME_SRC on the source: exit $rc: $out"
[ $rc != 0 ] && [[ $out == *"$NAME_SRC: migrated out: its recording ended at the switchover"* ]] ||
    bad "a snapshot of the source's guest does not say it migrated out"
M=$ST_SRC/guests/$NAME_SRC/previous
[ "$(mig_jq "$M" '.guests[0].migration.direction')" = out ] ||
    bad "the source's segment does not say migrated out: $(mig_jq "$M" '.guests[0].migration' 2>&1 | head -3)"

# The destination's side: the same child took the session over; its snapshot.
STATE=$ST_DST DOM=$NAME_DST de_status_pid
[ "$PID" = "$DST_CHILD" ] || bad "the destination's child is $PID, was $DST_CHILD: the takeover's ended"
sleep 5
STATE=$ST_DST DOM=$NAME_DST DE_LOG=$WORK/daemon-dst.log de_snapshot 600 1 after-migration
# Its next child is plain, on the QEMU the guest came into (whose query-migrate says "completed"
# for that migration): it records on.
STATE=$ST_DST DOM=$NAME_DST T_BOOT0=$T_DST de_new_child "$DST_CHILD" "the snapshot"
n=$(grep -c "$NAME_DST: recording (pid" "$WORK/daemon-dst.log")
echo "$ME: the destination's daemon started $n children (a plain one after the snapshot)"
[ "$n" = 2 ] && ! grep -q "$NAME_DST: record exited" "$WORK/daemon-dst.log" ||
    bad "the destination's child after the snapshot did not stay: $(grep -m1 -A1 "$NAME_DST: record exited" "$WORK/daemon-dst.log")"
grep -q "$NAME_DST: recording (pid $DST_CHILD) .*record --incoming" "$WORK/daemon-dst.log" ||
    bad "the destination's daemon did not log its child $DST_CHILD as record --incoming"
if [ -n "$SNAP" ]; then
    G=$SNAP/guest-$NAME_DST.dat
    echo "$ME: snapshot: $(mig_jq "$SNAP" '.guests[0].migration | "direction \(.direction), \(.status), taken over at \(.taken_over_at_ns) ns"')"
    [ "$(mig_jq "$SNAP" '.guests[0].migration.direction')" = in ] || bad "the snapshot's recording was not taken over (direction in)"
    [ "$(mig_jq "$SNAP" '[.guests[0].migration.cpus[] | select(.resume_mark)] | length')" = 2 ] ||
        bad "the snapshot's recording has no resume mark on both CPUs"
    trace-cmd report -i "$G" >"$WORK/snap.txt" 2>"$WORK/snap.err" || bad "trace-cmd report of $G failed: $(head -3 "$WORK/snap.err")"
    trace-cmd report -i "$M/guest-$NAME_SRC.dat" >"$WORK/src.txt" 2>"$WORK/src.err" ||
        bad "trace-cmd report of the source's segment failed: $(head -3 "$WORK/src.err")"
    mig_markers "$WORK/snap.txt" mig "$N" "0 1"
    for cpu in 0 1; do
        read -r first last < <(dm_range "$WORK/snap.txt" "$cpu")
        read -r sfirst slast < <(dm_range "$WORK/src.txt" "$cpu")
        eval "f=\$MK_FOUND_$cpu d=\$MK_DUP_$cpu o=\$MK_ORDER_$cpu e=\$MK_ELSEWHERE_$cpu"
        echo "$ME: cpu$cpu: markers $first..$last in the snapshot, $sfirst..$slast in the source's segment"
        [ "$sfirst" = 0 ] && [ "$first" = $((slast + 1)) ] ||
            bad "cpu$cpu: the source's segment has $sfirst..$slast, the destination's snapshot $first..$last: not one after the other"
        [ "$f" -gt 0 ] || bad "cpu$cpu: no marker in the destination's snapshot"
        [ "$first" -gt 0 ] || bad "cpu$cpu: the snapshot starts at marker $first: the source wrote those before the switchover"
        [ "$last" = $((N - 1)) ] || bad "cpu$cpu: the snapshot's last marker is $last, want $((N - 1))"
        [ "$d" = 0 ] && [ "$o" = 0 ] && [ "$e" = 0 ] || bad "cpu$cpu: $d duplicates, $o steps out of order, $e on another CPU, want none"
        [ "$f" = $((last - first + 1)) ] || bad "cpu$cpu: $f markers for $first..$last"
    done
    dm_join "$M" "$SNAP"
fi

dm_end src
dm_end dst
mig_qmp src "cmd('quit')" >/dev/null 2>&1
mig_qmp dst "cmd('quit')" >/dev/null 2>&1
mig_console
if [ "$fail" != 0 ]; then dm_log src; dm_log dst; fi
mig_result
