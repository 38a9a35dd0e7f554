#!/bin/bash
# vt-suite: e2e
# test-fault-garbage.sh: two guests, one sending garbage as fast as it can. The garbage guest
# is a vt-fake-agent on the host (a real agent sends only what its kernel wrote): it speaks
# the protocol correctly but its data ports carry random bytes, 64 random "pages" per CPU
# sent REPS times over, unpaced (80 MiB in all). Next to it a real 2-vCPU TCG guest writes N
# markers per CPU.
#   - record exits 3; the garbage guest's problems name its malformed pages, its bad_pages per
#     CPU = the pages it sent, no page of it is in a trace; `virtio-trace-collect report`
#     prints its problems;
#   - the good guest is exact and untouched: per CPU, trace-cmd report = manifest events =
#     the guest's read_events, nothing lost, markers exactly 0..N-1 on their own CPU, no
#     problems; its agent ends after BYE, clean console.
# Env: VT_BUILDDIR, VT_STATIC_AGENT, VT_KEEP=1. Exit: 0 pass, 1 fail, 77 skip.
echo "test-fault-garbage: a guest flooding garbage pages next to a real guest: the real guest's counts are exact, the garbage is counted, named and kept out of the traces"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
. "$HERE/scenario-lib.sh"
. "$HERE/fault-lib.sh"
VT_LOG_PREFIX=test-fault-garbage
ME=test-fault-garbage
N=20000 REPS=160

fl_begin
scn_ports pipe
scn_boot
# The garbage fixture: cap-guest's metadata, random pages.
cp -a "$FIXTURE" "$WORK/garbage-fixture"
for cpu in 0 1; do head -c $((64 * 4096)) /dev/urandom >"$WORK/garbage-fixture/cpu$cpu.raw"; done
FIXTURE=$WORK/garbage-fixture fl_bystander junk $REPS 0 || scn_result

scn_script "$WORK/cmd" "flood vt-good $N 0 64" "!sleep 1"
scn_record --chardev-dir "$PORTS" --name e2e "${BYS_ARGS[@]}" --max-size 256M -- "$WORK/cmd"
sed 's/^/    | /' "$WORK/cmd.answers"
echo "$ME: record log:"; head -20 "$WORK/record.log" | sed 's/^/    | /'
[ $CRC = 3 ] || bad "record exited $CRC, want 3"
scn_end

fl_counts e2e "0 1" vt-good
for cpu in 0 1; do
    eval "seen=\$SEEN_cpu$cpu"
    [ "$seen" = $N ] || bad "cpu$cpu: $seen markers, want $N"
    other=$(grep -E "vt-good cpu$cpu " "$WORK/e2e.txt" | grep -cvE "\[00$cpu\] ")
    [ "$other" = 0 ] || bad "cpu$cpu: $other markers on another CPU"
done
fl_stats e2e "0 1"
[ -z "$(fl_g e2e '.problems // empty')" ] || bad "the good guest has problems: $(fl_g e2e .problems)"

kill -TERM $FL_PID_junk 2>/dev/null; wait $FL_PID_junk 2>/dev/null
for cpu in 0 1; do
    sent=$(awk -v c="cpu$cpu" '$2 == "total" && $3 == c { print $5 }' "$WORK/junk.fake")
    badp=$(fl_g junk ".cpus[] | select(.cpu == $cpu) | .bad_pages")
    good=$(fl_g junk ".cpus[] | select(.cpu == $cpu) | .pages")
    echo "$ME: junk cpu$cpu: sent $sent pages, manifest bad_pages $badp, pages $good"
    [ "$sent" = $((64 * REPS)) ] || bad "junk cpu$cpu sent $sent pages, want $((64 * REPS))"
    [ "$badp" = "$sent" ] && [ "$good" = 0 ] || bad "junk cpu$cpu: $badp bad and $good good pages of $sent sent"
done
prob=$(fl_g junk .problems)
echo "$ME: junk problems: $prob"
[[ $prob == *malformed* ]] || bad "the garbage guest's problems do not name its malformed pages"
fl_report
grep -F -q "problems: $prob" "$WORK/report.txt" || bad "report does not print the garbage guest's problems"
echo "$ME: output directory: $(du -sm "$OUT" | cut -f1) MiB"
scn_result
