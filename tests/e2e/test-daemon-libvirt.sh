#!/bin/bash
# vt-suite: e2e
# test-daemon-libvirt.sh: the always-on daemon (issue 40) with a real libvirtd and a TCG domain.
# libvirt as test-libvirt-guest.sh has it (libvirt-lib.sh: our own libvirtd and virtlogd unless
# one runs); a 2-vCPU domain booting the collector e2e image with vt.agent_keep=1 (its agent
# serves one child after another), its channels added by `setup --domain --apply`. Then:
#   - `daemon --domains DOM` starts first (state directory in the work dir); `virsh start` DOM:
#     `daemon --status` says attached within 5 s of virsh returning (the figure printed);
#   - markers written at known times (A at -6 s, B at -3 s, C during --after) are all in
#     `snapshot DOM --before 30 --after 2`, N per CPU each, exactly; the client returns within
#     2 s of the --after time (printed, with the daemon's own figures; below); `trace-cmd
#     report -i host.dat -i guest-DOM.dat` merges host sched_switch and the guest markers with
#     no timestamp going backwards;
#   - the daemon is killed with SIGKILL: its child (by pid) ends within 15 s and leaves no host
#     tracefs instance; the daemon restarted: the sealed snapshot reads the same (trace-cmd),
#     the guest attached again with a new child, whose snapshot (--after 1, within 2 s of it
#     too) holds exactly N new markers D per CPU and none of A, B, C;
#   - stream mode with a budget (a new state directory): the guest floods (256-byte markers flat
#     out); `du` of the state directory, polled every 0.5 s for 30 s, is never above
#     total-budget (40 MiB, over a segment's 16). Not checked: a total-budget below two segments
#     (the current one and previous/), which the daemon enforces every 5 s and at each new child,
#     after the fact, while a stopping child briefly holds its spool and its .dat files both;
#   - `virsh destroy`: the guest is not attached within 5 s, its child (by pid) ends and the
#     guest leaves the status within 15 s (the stream child writes its segment's files first);
#   - SIGTERM: the daemon exits 0.
# The snapshot's time past --after is its held child's stop, broken down with debug timestamps
# (doc/benchmarks.md, "Snapshot latency"): the daemon's SIGINT (it used to wait for its loop's
# next 0.2 s turn: 0.001-0.023 s here only because --after 1 and 2 are whole turns; now the loop
# wakes for it), STOP and the rings' drain (9-47 ms), the final clock-sync burst (at least 16
# probes per vCPU, one vCPU after the other: 38-161 ms), the final metadata bundle (its kallsyms
# only if changed) and BYE (18-51 ms); the host's metadata again (56-183 ms, now read beside the
# guest's stop) and its instance's removal (46-54 ms, now beside the files); writing
# guest-DOM.dat and host.dat (86-132 ms on a quiet machine, 227-247 ms beside two busy loops:
# mostly compressing both kallsyms), the daemon's seal (4-16 ms). Figures with --after 2 and 1:
# quiet machine (load ~1), before 0.37/0.40, 0.46/0.29, 0.38/0.44 s, after 0.27/0.29,
# 0.28/0.25 s; beside two nice-19 busy loops, before 1.87/1.41, 0.73/0.54, 0.48/0.41 s, after
# 0.32/0.34, 0.90/0.55, 0.63/0.44 s; while other helpers built and ran a guest (load 3-4),
# after 0.66/1.22, 0.45/0.39 s. The 1.3-2.3 s measured here before (1.40, 2.07, 2.14 s with --after 2;
# 1.31, 1.56, 1.80 s with --after 1) came at a load not recorded. The test holds both to issue
# 40's 2 s; what is left to cut is the files (kallsyms compressed again for each snapshot) and the
# burst's round trips through the TCG guest.
# Env: VT_BUILDDIR (default <repo>/build), VT_E2E_MARKERS (default 300), VT_KEEP=1 keeps the
# work dir. Exit: 0 pass, 1 fail, 77 skip.
echo "test-daemon-libvirt: the daemon follows a real libvirt TCG domain: attached within 5 s, a snapshot of the window within 2 s of its end (exact markers, merged in order), SIGKILL and restart lose nothing, destroyed is detached, the disk budget holds under a flood"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
. "$HERE/libvirt-lib.sh"
. "$HERE/daemon-e2e-lib.sh"
VT_LOG_PREFIX=test-daemon-libvirt
ME=test-daemon-libvirt
N=${VT_E2E_MARKERS:-300}
DOM=vt-e2e-daemon
DESC="virtio-trace e2e test domain (tests/e2e/test-daemon-libvirt.sh)"

de_begin
de_domain destroy

# --- attach: the daemon first, then the domain ---
de_daemon_start
for ((i = 0; i < 50; i++)); do
    [ -S "$STATE/control.sock" ] && "$COLLECT" daemon --status --state-dir "$STATE" >/dev/null 2>&1 && break
    sleep 0.1
done
de_status >"$WORK/status0.txt" || bad "daemon --status before the start: exit $?"
st=$(de_state)
[ "$st" != attached ] || bad "the guest is attached before its domain runs (state $st)"
de_start_domain
[ "$T_ATTACH" != never ] && awk -v t="$T_ATTACH" 'BEGIN { exit !(t <= 5) }' ||
    bad "attached $T_ATTACH s after virsh start returned, want within 5 s"
de_boot
de_settled || bad "the guest's child did not settle: $(tail -n 3 "$WORK/status.log")"

# --- a snapshot of the window ---
de_markers vt-a
sleep 3
de_markers vt-b
sleep 1
de_snapshot 30 2 first vt-c
snap1=$SNAP
[ -n "$snap1" ] || { de_end; exit 1; }
awk -v t="$T_LATE" 'BEGIN { exit !(t <= 2) }' || bad "the snapshot came $T_LATE s after its --after time, want within 2 s (issue 40)"
de_check_snap "$snap1" "vt-a vt-b vt-c" "" 1
lines1=$(wc -l <"$WORK/report-first.txt")

# --- SIGKILL, restart ---
de_status_pid
child=$PID
[ -n "$child" ] && [ "$child" != 0 ] || bad "no child pid in the status after the snapshot"
kill -KILL "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null
DAEMON_PID=
t=$(vt_now)
for ((i = 0; i < 150; i++)); do kill -0 "$child" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$child" 2>/dev/null; then
    bad "the killed daemon's child $child still runs 15 s later"
else
    echo "$ME: the killed daemon's child $child ended $(vt_secs "$t" "$(vt_now)") s after the SIGKILL"
fi
[ ! -e "/sys/kernel/tracing/instances/virtio-trace-collect-$child" ] ||
    bad "the killed child's host instance virtio-trace-collect-$child is left"
de_daemon_start
de_wait_state attached 30 || bad "not attached again after the restart: $(tail -n 3 "$WORK/status.log")"
de_status_pid
[ "$PID" != "$child" ] || bad "the restarted daemon reports the old child $child"
trace-cmd report -i "$snap1/host.dat" -i "$snap1/guest-$DOM.dat" >"$WORK/report-first-again.txt" 2>&1 ||
    bad "the sealed snapshot no longer reads after the restart"
lines2=$(wc -l <"$WORK/report-first-again.txt")
[ "$lines1" = "$lines2" ] || bad "the sealed snapshot's merged report has $lines2 lines after the restart, $lines1 before"
[ -s "$snap1/snapshot.json" ] || bad "the sealed snapshot lost its snapshot.json"
de_settled || bad "the restarted daemon's child did not settle"
de_markers vt-d
sleep 1
de_snapshot 30 1 after-kill
snap2=$SNAP
awk -v t="$T_LATE" 'BEGIN { exit !(t <= 2) }' || bad "the snapshot after the restart came $T_LATE s after its --after time, want within 2 s (issue 40)"
[ -n "$snap2" ] && de_check_snap "$snap2" "vt-d" "vt-a vt-b vt-c" 0
[ "$snap2" != "$snap1" ] || bad "the second snapshot is the first one's directory"

# --- stream mode: the disk budget under a flood ---
kill -TERM "$DAEMON_PID"
wait "$DAEMON_PID"
rc=$?
DAEMON_PID=
[ $rc = 0 ] || bad "the hold-mode daemon exited $rc on SIGTERM, want 0"
STATE=$WORK/state-stream
TOTAL=40
de_daemon_start --mode stream --window 10 --budget 16 --total-budget $TOTAL --min-free 0
de_wait_state attached 30 || bad "no stream-mode child attached"
sleep 5
exec 7<>"$WORK/ports/vt-test.in" 8<>"$WORK/ports/vt-test.out"
echo "flood vt-f 100000 0 256" >&7
max=0 polls=0 over=0 answer= got=
t=$(vt_now)
for ((i = 0; i < 60; i++)); do
    kb=$(du -sk "$STATE" | awk '{ print $1 }')
    polls=$((polls + 1))
    [ "$kb" -gt "$max" ] && max=$kb
    [ "$kb" -gt $((TOTAL * 1024)) ] && over=$((over + 1))
    if [ -z "$got" ] && read -r -t 0.5 answer <&8; then
        got=$(vt_secs "$t" "$(vt_now)")
    else
        sleep 0.5
    fi
done
[ -n "$got" ] || read -r -t 60 answer <&8
exec 7>&- 8<&-
echo "$ME: flood: '$answer' after ${got:-more than 40} s; du of the state directory: at most $max KiB in $polls polls over $(vt_secs "$t" "$(vt_now)") s, $over above total-budget $TOTAL MiB"
# The flood ends with "ok", or with "err written=N ... Bad file descriptor" once a segment
# reached --budget: the child stopped and the agent removed the instance it wrote into.
[[ $answer == ok* || $answer == "err written="[1-9]* ]] || bad "the flood wrote nothing: '$answer'"
[ "$over" = 0 ] || bad "the state directory was above its total-budget ($TOTAL MiB) in $over of $polls polls (at most $max KiB)"
# Half a segment's budget at least, or the flood did not reach the disk: the peak was 24.6 MB in
# the branch's runs and 12.0 MB in the fresh-clone run of 2026-12-02 (which failed a 12 MiB bound).
[ "$max" -gt $((8 * 1024)) ] || bad "the flood filled only $max KiB: the budget was not put to the test"
grep -E 'dropp|over total' "$WORK/daemon.log" | tail -n 3 | sed "s/^/$ME: daemon: /"

# --- destroyed: detached ---
de_status_pid
child=$PID
t=$(vt_now)
V destroy "$DOM" >/dev/null || bad "virsh destroy failed"
td=never tg=never
for ((i = 0; i < 150; i++)); do
    st=$(de_state)
    [ "$td" = never ] && [ "$st" != attached ] && [ "$st" != sealing ] && td=$(vt_secs "$t" "$(vt_now)")
    [ "$td" != never ] && ! kill -0 "$child" 2>/dev/null && [ -z "$st" ] && { tg=$(vt_secs "$t" "$(vt_now)"); break; }
    sleep 0.1
done
echo "$ME: destroyed: not attached after $td s, its child $child ended and the guest left the status after $tg s"
[ "$td" != never ] && awk -v t="$td" 'BEGIN { exit !(t <= 5) }' || bad "still attached $td s after virsh destroy, want at most 5 s"
[ "$tg" != never ] || bad "the destroyed guest's child $child or its status line is still there 15 s later (state ${st:-none})"

de_end
