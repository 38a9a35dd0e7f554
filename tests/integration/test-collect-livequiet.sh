#!/bin/sh
# Proves (issue 41): record --live with host sched events does not feed on itself. Each line the
# view prints wakes the terminal, and both the collector and the terminal then switch and wake:
# host sched_switch/sched_wakeup events the view printed, which made more lines (54,610 host
# events against 7,925 guest events in 6 s, before). The view runs on a pseudo-terminal
# (script(1) holds its master) with a fake guest and --host-events sched_switch,sched_wakeup:
#   - it says once which processes it leaves out: this collector and the holder of the
#     terminal's master (script), by pid;
#   - not one host line of the view is run by them, switches to them or wakes them (before: most);
#   - the view's host lines plus what it says it left out are exactly host.dat's host events
#     (trace-cmd report), and what it left out is exactly host.dat's events of those processes:
#     nothing else is missing, nothing is left out twice;
#   - the collector's own markers (ftrace:print) are still shown.
echo "collect: record --live leaves out the host events of the collector and of its terminal, and nothing else"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools
need_host_tracefs sched:sched_switch
command -v script >/dev/null || { echo "SKIP: script(1) is not installed (bsdutils)"; exit 77; }

p=$WORK/ports out=$WORK/out
mkdir -p "$p"
fake vmq --fifo "$p" --fixture "$DATA/cap-guest" --repeat 4 --retime --tsc-offset 5000000000
pid=$FAKE_PID
cat >"$WORK/run" <<EOF
#!/bin/sh
exec "$COLLECT" record --chardev-dir "$p" --name vmq -o "$out" -d 4 --live=300 \
	--host-events sched:sched_switch,sched:sched_wakeup --sync offset --tsc-offset 5000000000 \
	2>"$WORK/rec.log"
EOF
chmod +x "$WORK/run"
# The collector's threads, noted every 50 ms while it runs (its pid from its "left out" line).
(
	until grep -q 'are left out' "$WORK/rec.log" 2>/dev/null; do sleep 0.05; done
	cp_=$(sed -n 's/.*shows the view (pid \([0-9]*\) .*/\1/p' "$WORK/rec.log")
	while [ -d "/proc/$cp_/task" ]; do
		ls "/proc/$cp_/task" 2>/dev/null
		sleep 0.05
	done | sort -u >"$WORK/threads"
) &
track $!
# script gives the view a terminal: it holds the master, the collector's stdout is the slave.
timeout 120 script -qec "$WORK/run" "$WORK/typescript" >/dev/null 2>&1 </dev/null
RC=$?
for _i in 1 2 3 4 5 6 7 8 9 10; do [ -s "$WORK/threads" ] && break; sleep 0.2; done
fake_end $pid
tr -d '\r' <"$WORK/typescript" | grep -a -v '^Script ' >"$WORK/live.txt"
[ $RC = 0 ] || { show "$WORK/rec.log"; fail "script or the collector exited $RC, want 0"; }

said=$(grep -c 'live view: host events of this collector and of the terminal' "$WORK/rec.log")
[ "$said" = 1 ] || { show "$WORK/rec.log"; fail "the view said $said times what it leaves out, want once"; }
pids=$(sed -n 's/.*live view: host events of this collector and of the terminal that shows the view (\(.*\)) are left out.*/\1/p' \
	"$WORK/rec.log" | grep -o 'pid [0-9]*' | cut -d' ' -f2 | tr '\n' ' ')
echo "left out: $(grep -o '(pid .*) are' "$WORK/rec.log" | head -1)"
set -- $pids
[ $# -ge 2 ] || fail "the view names $# processes to leave out ('$pids'), want the collector and script"
grep -q "pid [0-9]* (script)" "$WORK/rec.log" || fail "the terminal's holder (script) is not among them"
# Their tasks: the processes, and every thread of the collector seen while it ran.
regex=$(printf '%s\n' "$@" | cat - "$WORK/threads" 2>/dev/null | sort -u | paste -sd'|')
echo "the collector's threads seen: $(wc -l <"$WORK/threads" 2>/dev/null)"

report "$WORK/host.txt" -i "$out/host.dat"
grep -v -e 'cpus=[0-9]*$' -e '^$' -e 'EVENTS DROPPED' "$WORK/host.txt" >"$WORK/host.ev"
grep -a '^ *host.dat: ' "$WORK/live.txt" | grep -v 'EVENTS DROPPED' >"$WORK/view.ev"
# ours LINEFILE: lines run by, switching to or waking one of those tasks (our markers aside)
ours() {
	grep -a -E -e "-($regex) +\[" -e "next_pid=($regex) " -e " pid=($regex) " -e "==> [^ ]*:($regex) " \
		-e "comm=[^ ]* pid=($regex) " "$1" | grep -v -e ' print: ' -e ': tracing_mark_write: '
}
nf=$(wc -l <"$WORK/host.ev") nv=$(wc -l <"$WORK/view.ev")
of=$(ours "$WORK/host.ev" | wc -l) ov=$(ours "$WORK/view.ev" | wc -l)
left=$(sed -n 's/.*live view: \([0-9]*\) host events of this collector and its terminal left out.*/\1/p' "$WORK/rec.log")
echo "host.dat: $nf host events, $of of them the collector's or the terminal's ($((of * 100 / (nf ? nf : 1)))%)"
echo "view: $nv host lines, $ov of them the collector's or the terminal's; ${left:-no} events said left out"
[ "$nf" -ge 100 ] || fail "only $nf host events: the test tests little"
[ "$of" -gt 0 ] || fail "host.dat holds no event of the collector or its terminal: nothing to leave out"
[ $((ov * 100)) -lt $((nv * 5)) ] || { ours "$WORK/view.ev" | head -5; fail "$ov of the view's $nv host lines are the collector's or its terminal's (5% at most)"; }
[ "$ov" = 0 ] || { ours "$WORK/view.ev" | head -5; fail "$ov of the view's host lines are the collector's or its terminal's, want 0"; }
if grep -q 'events not shown' "$WORK/rec.log"; then
	echo "(the view did not show everything: $(grep 'events not shown' "$WORK/rec.log")): counts not compared"
else
	[ "$((nv + ${left:-0}))" = "$nf" ] || fail "the view showed $nv and left out ${left:-0}, host.dat has $nf"
	[ "${left:-0}" -ge "$of" ] || fail "the view left out ${left:-0}, host.dat has $of of those processes' events"
fi
grep -q '^ *host.dat: .*virtio-trace: ' "$WORK/view.ev" || fail "the collector's markers are not shown"
echo PASS
