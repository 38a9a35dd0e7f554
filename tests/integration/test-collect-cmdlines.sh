#!/bin/sh
# Proves: a guest's file names the tasks its kernel named at the start of the recording even
# when the kernel let the names go while it recorded. The kernel keeps saved_cmdlines_size task
# names (128 on 6.1) in a ring: a guest whose boot filled it loses, while recording, the names
# of tasks that ran early, and the final bundle lacks them (a 6.1 guest of the e2e suite holds
# 111 names from its boot when the recording starts). A fake
# agent serves the fixture cap-guest, whose bundle names pid 15 rcu_preempt (44 events) and
# pid 937 kworker/1:2 (2 events); its final bundle (--final-cmdlines, a fixture: no guest
# kernel here can be made to evict a given pid) lacks pid 15, names 937 vt-renamed and adds
# pid 99999 vt-new. Then `trace-cmd report` of the guest file, also without plugins (-N: names
# from the file alone), shows rcu_preempt-15 on all 44 lines (none "<...>-15"; the old code's
# file gave 44 "<...>-15" with -N), vt-renamed-937 on both of its lines (the final name wins), the
# saved command lines hold all three, and the collector says it kept 1 name.
echo "collect: the task names of the start's metadata the final one lacks are kept"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools

p=$WORK/ports out=$WORK/out
mkdir -p "$p"
final=$(grep -v -e '^15 ' -e '^937 ' "$DATA/cap-guest/saved_cmdlines"; printf '937 vt-renamed\n99999 vt-new')
fake cl --fifo "$p" --fixture "$DATA/cap-guest" --repeat 1 --final-cmdlines "$final"
collect rec --chardev-dir "$p" --name cl -o "$out" -d 1
fake_end $FAKE_PID
[ $RC = 0 ] || { show "$WORK/rec.log" "$WORK/cl.fake"; fail "record exited $RC, want 0"; }
grep -q "META with the --final-cmdlines task names" "$WORK/cl.fake" ||
	{ show "$WORK/cl.fake"; fail "the fake agent never sent the final names: the test tests nothing"; }
check_exact "$out" cl "$DATA/cap-guest" 1
r=$out/cl.txt
# Without plugins (-N) trace-cmd names tasks from the file's saved command lines alone: its
# sched_switch plugin would learn pid 15's name from the events (so plain `report` named it
# even when the file lacked it; an event before any sched event of a task would not be).
report "$WORK/noplug.txt" -N -i "$out/guest-cl.dat"
for f in "$r" "$WORK/noplug.txt"; do
	n15=$(grep -cE -- ' rcu_preempt-15 +\[' "$f")
	u15=$(grep -cE -- '<\.\.\.>-15 +\[' "$f")
	echo "pid 15 ($(basename "$f")): $n15 lines rcu_preempt, $u15 lines <...>"
	[ "$n15" = 44 ] && [ "$u15" = 0 ] || fail "pid 15 ($(basename "$f")): $n15 lines name rcu_preempt and $u15 '<...>', want 44 and 0"
done
n937=$(grep -cE -- ' vt-renamed-937 +\[' "$r")
o937=$(grep -cE -- 'kworker/1:2-937 +\[' "$r")
echo "pid 937: $n937 lines vt-renamed, $o937 lines kworker/1:2"
[ "$n937" = 2 ] && [ "$o937" = 0 ] || fail "pid 937: $n937 lines vt-renamed and $o937 kworker/1:2, want 2 and 0 (the final name wins)"
trace-cmd dump --cmd-lines "$out/guest-cl.dat" >"$WORK/cmdl" 2>/dev/null
for w in '15 rcu_preempt' '937 vt-renamed' '99999 vt-new'; do
	grep -q "^$w\$" "$WORK/cmdl" || { tail "$WORK/cmdl"; fail "the saved command lines lack '$w'"; }
done
grep -q '^937 kworker' "$WORK/cmdl" && fail "the saved command lines still name 937 kworker/1:2"
n=$(grep -c "guest cl: 1 task names its kernel no longer holds are kept from the earlier metadata" "$WORK/rec.log")
[ "$n" = 1 ] || { show "$WORK/rec.log"; fail "$n messages saying 1 name was kept, want 1"; }
echo "PASS"
