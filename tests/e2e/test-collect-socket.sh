#!/bin/bash
# vt-suite: e2e
# test-collect-socket.sh: the unix-socket backend, both ways of connecting, and two recordings
# in one guest session. Two 2-vCPU TCG guests boot with the ports `virtio-trace-collect setup`
# prints:
#   1. --backend unix: QEMU listens, the collector connects. The agent stays up
#      (vt.agent_keep=1) and two `record` runs follow each other, each with its own markers:
#      each run's file has exactly N of its own markers per CPU and none of the other run's, and
#      report = manifest = the guest's stats. This is also stop/start twice in one agent's life.
#   2. --backend unix-connect: QEMU connects (reconnect=1), `record --listen` listens: exact
#      markers and counts again.
# Clean consoles; the agent leaves after SIGTERM (1) or after BYE (2).
# Env: VT_BUILDDIR, VT_STATIC_AGENT, VT_KEEP=1. Exit: 0 pass, 1 fail, 77 skip.
echo "test-collect-socket: unix sockets, QEMU listening (two recordings in one session) and QEMU connecting to record --listen: exact markers and counts"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
. "$HERE/scenario-lib.sh"
VT_LOG_PREFIX=test-collect-socket
ME=test-collect-socket
N=3000

# record_markers TAG [record options]: record a flood of N "TAG cpuK I" markers per CPU into
# $OUT and check it: exit 0, counts, exactly N own markers per CPU and none tagged otherwise.
record_markers() {
    local tag=$1 cpu own other
    shift
    scn_script "$WORK/flood-$tag" "flood $tag $N 0 64"
    scn_record --chardev-dir "$PORTS" --name e2e -e sched:sched_switch "$@" -- "$WORK/flood-$tag"
    [ $CRC = 0 ] || { sed 's/^/    | /' "$WORK/record.log"; bad "$tag: record exited $CRC, want 0"; }
    scn_counts e2e "0 1"
    for cpu in 0 1; do
        own=$(grep -cE "\[00$cpu\] .* $tag cpu$cpu [0-9]+" "$WORK/guest.txt")
        other=$(grep -E ' vt-(rec[0-9]|listen) cpu[0-9]+ [0-9]+' "$WORK/guest.txt" |
                grep -cvE "\[00$cpu\] .* $tag cpu$cpu [0-9]+|\[00$((1 - cpu))\] ")
        echo "$ME: $tag cpu$cpu: $own of its markers, $other others"
        [ "$own" = "$N" ] && [ "$other" = 0 ] ||
            bad "$tag cpu$cpu: $own markers (want $N), $other from elsewhere (want 0)"
    done
}

scn_begin

# 1. QEMU listens; two recordings against one agent.
scn_ports unix
grep -q 'server=on' "$PORTS.args" || bad "setup --backend unix printed no listening sockets"
VT_APPEND="vt.agent_keep=1"
scn_boot
OUT=$WORK/out1
record_markers vt-rec1
OUT=$WORK/out2
record_markers vt-rec2
SCN_AGENT_END=SIGTERM scn_end

# 2. QEMU connects to the collector's sockets.
RUN=$WORK/run2 PORTS=$WORK/run2/ports OUT=$WORK/out3
mkdir -p "$RUN"
scn_ports unix-connect
grep -q 'server=off,reconnect=1' "$PORTS.args" || bad "setup --backend unix-connect printed no client sockets"
VT_APPEND=
scn_boot
record_markers vt-listen --listen
scn_end
scn_result
