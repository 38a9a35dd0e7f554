#!/bin/bash
# vt-suite: e2e-6.12
# test-collect-subbuf.sh: sub-buffers other than 4 KiB, on a Linux 6.12 guest (Debian 13's kernel,
# VT_KERNEL_DEB, default debian:trixie: see tests/e2e/kernel-deb.sh). The guest sets its top-level
# sub-buffers to 8 KiB (buffer_subbuf_size_kb) before the agent starts; one agent then serves
# three recordings (vt.agent_keep=1), each a flood of N markers per CPU:
#   instance  the agent's own instance (4 KiB sub-buffers, while the top level has 8 KiB):
#             the agent must announce and send the instance's size, not the top level's
#   top       --top-level: the 8 KiB top-level buffer itself
#   sub16     --subbuf-size 16 on the instance, with markers of 6000 bytes where the kernel takes
#             them (> 4 KiB); Debian's 6.12 cuts trace_marker writes at 4096 bytes whatever the
#             sub-buffer size, so there they are 4000 bytes (the test says so)
# Checks, per recording: exit 0; per CPU the report's events = the manifest's = the guest's own
# read_events, nothing lost; exactly N markers per CPU, each on its own CPU and whole (SIZE bytes);
# the trace file's page size (trace-cmd dump) and the manifest's bytes/pages are the buffer's
# sub-buffer size. The unchanged code loses half the markers in the "instance" case.
# Env: VT_BUILDDIR, VT_STATIC_AGENT, VT_KERNEL_DEB, VT_E2E_MARKERS (default 2000; the 6000-byte
# ones: VT_E2E_BIG_MARKERS, default 400),
# VT_SUBBUF_CASES (default "instance top sub16"), VT_KEEP=1. Exit: 0 pass, 1 fail, 77 skip.
echo "test-collect-subbuf: 8 KiB top-level sub-buffers, the agent's 4 KiB instance, --top-level, --subbuf-size 16 and 6000-byte markers on a 6.12 guest: exact counts against the guest's stats"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
. "$HERE/scenario-lib.sh"
VT_LOG_PREFIX=test-collect-subbuf
ME=test-collect-subbuf
N=${VT_E2E_MARKERS:-2000}
CASES=${VT_SUBBUF_CASES:-instance top sub16}
export VT_KERNEL_DEB=${VT_KERNEL_DEB:-debian:trixie}

# Before the agent: the top level gets 8 KiB sub-buffers (the knob exists since 6.8).
VT_AGENT_PRE='T=/sys/kernel/tracing
if [ -w $T/buffer_subbuf_size_kb ]; then
    echo 8 >$T/buffer_subbuf_size_kb
    echo "E2E: top-level buffer_subbuf_size_kb $(cat $T/buffer_subbuf_size_kb), header_page $(grep -o "char data;.*size:[0-9]*" $T/events/header_page | sed "s/.*size://")"
else
    echo "E2E: no buffer_subbuf_size_kb"
fi'
SCN_IMAGE=collect-subbuf
scn_begin
scn_ports pipe
VT_APPEND="vt.agent_keep=1"
scn_boot
tr -d '\r' <"$RUN/console.log" | grep -aq 'E2E: top-level buffer_subbuf_size_kb 8, header_page 8176' || {
    if tr -d '\r' <"$RUN/console.log" | grep -aq 'E2E: no buffer_subbuf_size_kb'; then
        echo "$ME: SKIP: the guest kernel has no buffer_subbuf_size_kb (Linux >= 6.8 needed)"; exit 77
    fi
    bad "the guest's top level did not get 8 KiB sub-buffers"
}

# one_case NAME SUBBUF N RATE SIZE BUFFER [record options]: per CPU, N markers of SIZE bytes at
# RATE per second (0: flat out) into BUFFER (an instance or "top"), recorded with the options;
# the trace's pages must be SUBBUF bytes.
one_case() {
    local name=$1 subbuf=$2 n=$3 rate=$4 size=$5 buf=$6 cpu own other short ps bytes pages
    shift 6
    OUT=$WORK/out-$name
    echo "$ME: --- $name: record $*; $n markers of $size bytes per CPU into $buf, pages of $subbuf bytes"
    scn_script "$WORK/flood-$name" "flood vt-$name $n $rate $size $buf" "!sleep 0.5"
    scn_record --chardev-dir "$PORTS" --name e2e -e sched:sched_switch "$@" -- "$WORK/flood-$name"
    echo "$ME: $name: flood: $(cat "$WORK/flood-$name.answers" 2>/dev/null)"
    [ $CRC = 0 ] || { sed 's/^/    | /' "$WORK/record.log"; bad "$name: record exited $CRC, want 0"; }
    scn_counts e2e "0 1"
    cp "$WORK/guest.txt" "$WORK/guest-$name.txt" 2>/dev/null
    for cpu in 0 1; do
        own=$(grep -cE "\[00$cpu\] .* vt-$name cpu$cpu [0-9]+ " "$WORK/guest.txt")
        other=$(grep -E " vt-$name cpu[0-9]+ [0-9]+ " "$WORK/guest.txt" | grep -cvE "\[00$cpu\] .* vt-$name cpu$cpu |\[00$((1 - cpu))\] ")
        # A whole marker: its text, padded with x to SIZE bytes, is all in the report.
        short=$(grep -E "\[00$cpu\] .* vt-$name cpu$cpu [0-9]+ " "$WORK/guest.txt" |
                awk -v s="$size" -v m="vt-$name " '{ t = substr($0, index($0, m)); sub(/[[:space:]]+$/, "", t); if (length(t) < s) n++ } END { print n + 0 }')
        echo "$ME: $name cpu$cpu: $own markers on cpu$cpu, $other elsewhere, $short shorter than $size bytes"
        [ "$own" = "$n" ] && [ "$other" = 0 ] || bad "$name cpu$cpu: $own markers (want $n), $other elsewhere (want 0)"
        [ "$short" = 0 ] || bad "$name cpu$cpu: $short markers cut short"
        bytes=$(scn_m ".guests[0].cpus[] | select(.cpu == $cpu) | .bytes")
        pages=$(scn_m ".guests[0].cpus[] | select(.cpu == $cpu) | .pages")
        [ "${pages:-0}" -gt 0 ] && [ "$((bytes))" = "$((pages * subbuf))" ] ||
            bad "$name cpu$cpu: manifest $bytes bytes in $pages pages, want pages of $subbuf"
    done
    ps=$(trace-cmd dump --summary -i "$OUT/guest-e2e.dat" 2>&1 | sed -n 's/^[[:space:]]*\([0-9]*\)[[:space:]]*\[Page size, bytes\]/\1/p' | head -n1)
    echo "$ME: $name: trace-cmd dump: page size ${ps:-?}"
    [ "$ps" = "$subbuf" ] || bad "$name: guest-e2e.dat has page size ${ps:-?}, want $subbuf"
}

NB=${VT_E2E_BIG_MARKERS:-400}
for c in $CASES; do
    case $c in
    instance) one_case instance 4096 "$N" 0 64 virtio-trace ;;
    top) one_case top 8192 "$N" 0 64 top --top-level ;;
    sub16)
        # A marker larger than 4 KiB, when the kernel takes one: Debian's 6.12 cuts trace_marker
        # writes at 4096 bytes whatever the sub-buffer size (and refuses trace_marker_raw ones of
        # 4080 bytes or more), so there the markers are as large as it allows.
        big=6000
        vt_test_say "$PORTS" "flood vt-probe 1 0 $big top" 20
        if [ "${ANSWER%% *}" != ok ]; then
            echo "$ME: sub16: the kernel cut a $big-byte marker short ($ANSWER): markers of 4000 bytes"
            big=4000
        fi
        # NB per CPU at 200 per second (up to 1.2 MB/s) into a 4 MiB buffer.
        one_case sub16 16384 "$NB" 200 "$big" virtio-trace --subbuf-size 16 --buffer-size 4096 ;;
    *) bad "unknown case $c" ;;
    esac
done
SCN_AGENT_END=SIGTERM scn_end
scn_result
