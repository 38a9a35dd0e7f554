#!/bin/sh
# Proves: the real trace-agent and the real virtio-trace-collect, on this host's
# real tracefs through stand-in ports (QEMU's pipe-chardev FIFO pairs, which
# the agent opens from the guest's side): a recording of sched_switch in an instance of the test's, written
# to a file trace-cmd reads; the agent's warning goes to the host (NOTICE):
# the instance was made beforehand at 8 KiB per CPU, which the kernel will not
# expand, so the agent raises it for the recording and says so. The collector
# prints the warning with the guest's name and quotes it in the manifest, and
# the instance is put back to its size afterwards.
echo "collect: the real agent's warning reaches the host and the manifest; the recording reads"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools
need_agent

inst=vt-agentwarn-$$ p=$WORK/ports out=$WORK/out
mkdir -p "$p"
ncpu=$(ls -d $T/per_cpu/cpu* | wc -l)
i=0
for n in agent-ctl-path $(while [ $i -lt "$ncpu" ]; do echo trace-path-cpu$i; i=$((i + 1)); done); do
	mkfifo "$p/$n.in" "$p/$n.out" || fail "mkfifo $p/$n"
done
mkdir $T/instances/$inst || fail "cannot make the instance $inst"
cleanup_inst() {
	rmdir $T/instances/$inst 2>/dev/null
	t_cleanup
}
trap cleanup_inst EXIT
echo 8 >$T/instances/$inst/buffer_size_kb
read -r before <$T/instances/$inst/buffer_size_kb

# The agent serves one session, and leaves after the collector's bye.
"$AGENT" --port-dir "$p" --instance $inst --once --wait 20 --no-kallsyms 2>"$WORK/agent.log" &
apid=$!
track $apid
collect rec --chardev-dir "$p" --name hostvm -e sched:sched_switch -o "$out" --duration 2 -q
wait $apid
arc=$?
[ $RC = 0 ] || { show "$WORK/rec.log" "$WORK/agent.log"; fail "collector exited $RC, want 0"; }
[ $arc = 0 ] || { show "$WORK/agent.log"; fail "the agent exited $arc, want 0"; }

want="$inst: the buffer is"
grep -q "trace-agent: .*$want" "$WORK/agent.log" || { show "$WORK/agent.log"; fail "the agent did not warn"; }
grep -q "guest hostvm: agent: .*$want" "$WORK/rec.log" ||
	{ show "$WORK/rec.log"; fail "the collector did not print the agent's warning"; }
first=$(guest_json "$out" hostvm .agent_first_warning)
case $first in
*"$want"*) ;;
*) fail "manifest agent_first_warning is '$first'" ;;
esac
n=$(guest_json "$out" hostvm .agent_warnings)
[ "$n" -ge 1 ] 2>/dev/null || fail "manifest agent_warnings is '$n'"
[ -z "$(guest_json "$out" hostvm '.problems // empty')" ] ||
	fail "manifest reports problems: $(guest_json "$out" hostvm .problems)"
read -r after <$T/instances/$inst/buffer_size_kb
[ "$after" = "$before" ] || fail "the instance's buffer_size_kb is '$after' after, '$before' before"

# The recording itself: trace-cmd reads the file, and it holds sched_switch events.
f=$out/$(guest_json "$out" hostvm .file)
trace-cmd report -i "$f" >"$WORK/report.txt" 2>"$WORK/report.err" ||
	{ show "$WORK/report.err"; fail "trace-cmd report cannot read $f"; }
sw=$(grep -c " sched_switch: " "$WORK/report.txt")
[ "$sw" -gt 0 ] || { head -20 "$WORK/report.txt"; fail "no sched_switch event in $f"; }
echo "warning: $first"
echo "$sw sched_switch events; the instance is back at $after KiB"
echo "PASS"
