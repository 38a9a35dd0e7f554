#!/bin/sh
# Proves: a guest whose QEMU ends ends its recording at once, with every byte its ports held,
# also over FIFO ports, which never report the end (the collector holds both ends open). A fake
# agent run as a root-owned qemu-system-x86_64 (so that --qemu-pid takes it for a QEMU) on a FIFO
# pair SIGKILLs itself 2 s after START (--crash-after), as a QEMU that crashes or powers off
# after a guest panic. `record -d 60` ends within 10 s (it used to record on for the whole 60 s,
# then wait --stop-timeout for a STOP nobody read), exit 3, the log and the manifest say why,
# and the manifest's cpu0 bytes and pages are exactly what the fake had sent; trace-cmd reads
# the file. A QEMU that does not end (a second run, -d 2) ends as before, exit 0.
echo "collect: a guest whose QEMU ends (FIFO ports) ends its recording at once, nothing lost"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools

mkdir -p "$WORK/bin" "$WORK/p"
cp "$FAKE" "$WORK/bin/qemu-system-x86_64"
chmod 0755 "$WORK/bin" "$WORK/bin/qemu-system-x86_64"
fake_as "$WORK/bin/qemu-system-x86_64" qf --fifo "$WORK/p" --fixture "$DATA/cap-guest" --repeat 0 \
	--rate 200K --retime --crash-after 2
QF=$FAKE_PID
t0=$(date +%s)
collect qf --chardev-dir "$WORK/p" --name qf --qemu-pid $QF -o "$WORK/out" -d 60
t=$(($(date +%s) - t0))
echo "record ended after $t s, exit $RC"
show "$WORK/qf.log"
[ $RC = 3 ] || fail "record exited $RC, want 3 (the guest's recording was cut short)"
[ $t -le 10 ] || fail "record ran $t s after its QEMU's end 2 s in, want at most 10"
grep -q "guest qf: its QEMU (pid $QF) ended: reading what its ports still hold" "$WORK/qf.log" ||
	fail "the log does not say the QEMU ended"
grep -q "error: guest qf: its QEMU (pid $QF) ended: its recording ends with what its ports held" "$WORK/qf.log" ||
	fail "the log does not end the guest for its QEMU's end"
case $(guest_json "$WORK/out" qf .problems) in
"its QEMU (pid $QF) ended: its recording ends with what its ports held"*) ;;
*) fail "manifest problems: $(guest_json "$WORK/out" qf .problems)" ;;
esac
sent=$(sed -n 's/.*crashing now (--crash-after): cpu0 sent \([0-9]*\) pages, \([0-9]*\) bytes.*/\1 \2/p' "$WORK/qf.fake")
[ -n "$sent" ] || { show "$WORK/qf.fake"; fail "the fake agent did not crash"; }
got="$(guest_json "$WORK/out" qf '.cpus[] | select(.cpu == 0) | .pages') $(guest_json "$WORK/out" qf '.cpus[] | select(.cpu == 0) | .bytes')"
[ "$got" = "$sent" ] || fail "cpu0: the manifest has pages and bytes $got, the agent sent $sent"
report "$WORK/qf.txt" -i "$WORK/out/guest-qf.dat"
[ "$(all_events "$WORK/qf.txt")" -gt 0 ] || fail "trace-cmd reports no events"
wait $QF 2>/dev/null

# A QEMU that stays: the watch changes nothing.
mkdir -p "$WORK/p2"
fake_as "$WORK/bin/qemu-system-x86_64" qs --fifo "$WORK/p2" --fixture "$DATA/cap-guest" --repeat 2 --retime
QS=$FAKE_PID
collect qs --chardev-dir "$WORK/p2" --name qs --qemu-pid $QS -o "$WORK/out2" -d 2
fake_end $QS
[ $RC = 0 ] || { show "$WORK/qs.log"; fail "a QEMU that stays: record exited $RC, want 0"; }
check_exact "$WORK/out2" qs "$DATA/cap-guest" 2
! grep -q "ended" "$WORK/qs.log" || { show "$WORK/qs.log"; fail "a QEMU that stays was said to end"; }
echo "PASS"
