#!/bin/bash
# vt-suite: e2e
# test-fault-diskfull.sh: the output filesystem fills up mid-recording. The output directory
# is on a 12 MiB tmpfs the test mounts (and unmounts at the end). A 2-vCPU TCG guest writes
# 24000 1 KiB markers per CPU (about 50 MiB of pages), far more than fits; a bystander guest
# (vt-fake-agent, see fault-lib.sh) sends a few hundred KiB alongside.
#   - record ends by itself (bounded) with exit status 1 (nothing could be written) or 3; it
#     names the guest that hit the full disk ("No space left on device"), and so does the
#     manifest when one could be written;
#   - every trace file in the directory is valid (trace-cmd report reads it);
#   - whatever could not be written stays in the spool and `recover`, run on a copy of the
#     directory on a filesystem with room, writes it: the guest's file holds every page that
#     reached the spool (per CPU trace-cmd report = manifest events, markers in order, any
#     missing ones counted as lost in the pages), its problems say the run was cut short; the
#     bystander is exact, or, when the full disk stopped it too, named and valid;
#   - the guest kernel stays healthy; the agent (vt.agent_keep=1) ends on SIGTERM.
# Needs root (mount). Env: VT_BUILDDIR, VT_STATIC_AGENT, VT_KEEP=1. Exit: 0 pass, 1 fail, 77 skip.
echo "test-fault-diskfull: the output filesystem fills up: every file left is valid, the rest is recoverable, the failure is named, a second guest is exact"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
. "$HERE/scenario-lib.sh"
. "$HERE/fault-lib.sh"
VT_LOG_PREFIX=test-fault-diskfull
ME=test-fault-diskfull
N=24000

[ "$(id -u)" = 0 ] || { echo "$ME: SKIP: needs root to mount a tmpfs"; exit 77; }
fl_begin
SMALL=$WORK/small
mkdir -p "$SMALL"
mount -t tmpfs -o size=12m,mode=0755 vt-fault-diskfull "$SMALL" || { echo "$ME: SKIP: cannot mount a tmpfs"; exit 77; }
FL_UMOUNT=$SMALL
OUT=$SMALL/out
scn_ports pipe
VT_APPEND="vt.agent_keep=1"
scn_boot
fl_bystander bys 8 48K || scn_result

scn_script "$WORK/cmd" "flood vt-full $N 0 1024" "!sleep 1"
scn_record --chardev-dir "$PORTS" --name e2e "${BYS_ARGS[@]}" --stop-timeout 10 -- "$WORK/cmd"
sed 's/^/    | /' "$WORK/cmd.answers"
echo "$ME: record log:"; sed 's/^/    | /' "$WORK/record.log"
df -k "$SMALL" | sed 's/^/    /'
[ $CRC = 1 ] || [ $CRC = 3 ] || bad "record exited $CRC, want 1 or 3"
grep -q 'guest e2e: .*No space left on device' "$WORK/record.log" || bad "record does not say that e2e hit a full disk"
fl_end 'E2E: vt-e2e-guest rc=0, trace-agent exit status 0 after SIGTERM'

# Every trace file left in the directory is valid.
for f in "$OUT"/*.dat; do
    [ -e "$f" ] || continue
    trace-cmd report -i "$f" >/dev/null 2>"$WORK/check.err" || bad "$f is not readable: $(head -2 "$WORK/check.err")"
    echo "$ME: on the full disk: $(basename "$f") is valid"
done
if [ -s "$OUT/manifest.json" ] && jq -e . "$OUT/manifest.json" >/dev/null 2>&1; then
    prob=$(fl_g e2e .problems)
    echo "$ME: manifest on the full disk: e2e problems: $prob"
    [[ $prob == *"No space left on device"* ]] || bad "the manifest does not say e2e hit a full disk: '$prob'"
fi

# Recover what the full disk holds, on a copy with room.
cp -a --sparse=always "$OUT" "$WORK/copy" || bad "cannot copy the output directory"
umount "$SMALL" && FL_UMOUNT=
OUT=$WORK/copy
if [ -d "$OUT/.spool" ]; then
    "$COLLECT" recover "$OUT" >"$WORK/recover.log" 2>&1
    rrc=$?
    echo "$ME: recover exited $rrc:"; sed 's/^/    | /' "$WORK/recover.log"
    [ $rrc = 0 ] || [ $rrc = 3 ] || bad "recover exited $rrc"
else
    echo "$ME: no spool left: record wrote everything"
fi
jq -e . "$OUT/manifest.json" >/dev/null 2>&1 || bad "no valid manifest.json after recover"
fl_counts e2e "0 1" vt-full
for cpu in 0 1; do
    eval "seen=\$SEEN_cpu$cpu"
    [ "$seen" -ge 1 ] || bad "cpu$cpu: no marker reached the file"
done
# The full disk took the state file's update too: the recovered manifest can only say that
# the run was cut short (record's own messages named the full disk, checked above).
prob=$(fl_g e2e .problems)
echo "$ME: e2e problems after recover: $prob"
[[ $prob == *"No space left on device"* || $prob == *"cut short"* ]] ||
    bad "the recovered manifest does not say e2e's run was cut short: '$prob'"
fl_report
grep -F -q "problems: $prob" "$WORK/report.txt" || bad "report does not print e2e's problems"
if grep -q 'guest bys: .*No space left on device' "$WORK/record.log"; then
    echo "$ME: the full disk stopped the bystander too"
    [ -n "$(fl_g bys '.problems // empty')" ] || bad "the bystander stopped but has no problems"
    trace-cmd report -i "$OUT/guest-bys.dat" >"$WORK/bys.txt" 2>/dev/null || bad "guest-bys.dat is not valid"
    for cpu in 0 1; do
        got=$(fl_cpu_events "$WORK/bys.txt" $cpu)
        eval "want=\$((ORACLE_CPU$cpu * 8))"
        echo "$ME: bystander cpu$cpu: $got of $want events"
        [ "$got" -le "$want" ] || bad "bystander cpu$cpu: $got events, more than the $want sent"
    done
else
    fl_bystander_check bys 8
fi
scn_result
