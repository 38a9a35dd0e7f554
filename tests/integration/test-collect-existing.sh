#!/bin/sh
# Proves: `record` refuses an output directory holding an earlier recording
# (exit 1, nothing changed) unless --force, which removes exactly that
# recording's files, so that a guest failing in the new run leaves no old
# trace behind next to the new manifest; a link in one of those places is
# refused even with --force; a run in which no guest could be set up leaves
# nothing (no spool, and no directory it made); `host` cannot name a guest.
echo "collect: an earlier recording is refused unless --force; a failed run leaves nothing; no guest named host"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools

p=$WORK/ports out=$WORK/out empty=$WORK/empty
mkdir -p "$p" "$empty"
md5() { md5sum "$@" | awk '{ print $1 }'; }

# 1. A first recording.
fake ve --fifo "$p" --fixture "$DATA/cap-guest" --repeat 1 --retime
collect r1 --chardev-dir "$p" --name ve -o "$out" --duration 1
fake_end $FAKE_PID
[ $RC = 0 ] || { show "$WORK/r1.log"; fail "first record exited $RC"; }
[ -f "$out/guest-ve.dat" ] || fail "no guest-ve.dat"
echo "mine" >"$out/notes.txt"
m1=$(md5 "$out/manifest.json" "$out/guest-ve.dat")

# 2. The same directory again: refused, nothing touched.
fake vf --fifo "$p" --fixture "$DATA/cap-guest" --repeat 1 --retime
collect r2 --chardev-dir "$p" --name vf -o "$out" --duration 1
fake_end $FAKE_PID
[ $RC = 1 ] || { show "$WORK/r2.log"; fail "record into a recording exited $RC, want 1"; }
grep -q 'previous recording.*--force' "$WORK/r2.log" || { show "$WORK/r2.log"; fail "the refusal does not say --force"; }
[ "$(md5 "$out/manifest.json" "$out/guest-ve.dat")" = "$m1" ] || fail "the refused run changed the recording"
[ -e "$out/.spool" ] && fail "the refused run left a spool"
[ -e "$out/guest-vf.dat" ] && fail "the refused run wrote guest-vf.dat"

# 3. --force: guest ve cannot be set up this time, vf records. No old
#    guest-ve.dat may stay next to the new manifest; other files stay.
fake vf --fifo "$p" --fixture "$DATA/cap-guest" --repeat 1 --retime
collect r3 --chardev-dir "$empty" --name ve --chardev-dir "$p" --name vf -o "$out" --duration 1 --force
fake_end $FAKE_PID
[ $RC = 3 ] || { show "$WORK/r3.log"; fail "record --force with one failed guest exited $RC, want 3"; }
[ -e "$out/guest-ve.dat" ] && fail "the old guest-ve.dat stayed next to a manifest in which ve failed"
[ -f "$out/guest-vf.dat" ] || { show "$WORK/r3.log"; fail "no guest-vf.dat"; }
[ "$(man "$out" '[.guests[].name] | sort | join(",")')" = "ve,vf" ] || fail "the manifest lists $(man "$out" '[.guests[].name] | join(",")')"
[ -n "$(guest_json "$out" ve '.problems // empty')" ] || fail "the manifest gives no problem for ve"
[ "$(cat "$out/notes.txt")" = mine ] || fail "--force removed a file the collector did not make"

# 4. A link where the recording's files go: refused even with --force.
out4=$WORK/out4
mkdir "$out4"
echo "victim" >"$WORK/victim"
ln -s "$WORK/victim" "$out4/manifest.json"
fake vg --fifo "$p" --fixture "$DATA/cap-guest" --repeat 1 --retime
collect r4 --chardev-dir "$p" --name vg -o "$out4" --duration 1 --force
fake_end $FAKE_PID
[ $RC = 1 ] || { show "$WORK/r4.log"; fail "record with a manifest.json link exited $RC, want 1"; }
grep -q "$out4/manifest.json is a symbolic link" "$WORK/r4.log" || { show "$WORK/r4.log"; fail "no message names the link"; }
[ "$(cat "$WORK/victim")" = victim ] && [ -L "$out4/manifest.json" ] || fail "the link or its target changed"
[ "$(ls -A "$out4")" = manifest.json ] || fail "the refused run left $(ls -A "$out4")"

# 5. No guest can be set up: nothing is left, not even the directory record made.
collect r5 --chardev-dir "$empty" --name vh -o "$WORK/new" --duration 1
[ $RC = 1 ] || { show "$WORK/r5.log"; fail "record without any guest exited $RC, want 1"; }
[ -e "$WORK/new" ] && fail "a run that set up no guest left $(find "$WORK/new")"
mkdir "$WORK/had"
collect r5b --chardev-dir "$empty" --name vh -o "$WORK/had" --duration 1
[ $RC = 1 ] || { show "$WORK/r5b.log"; fail "record without any guest exited $RC, want 1"; }
[ -d "$WORK/had" ] && [ -z "$(ls -A "$WORK/had")" ] || fail "a run that set up no guest left $(ls -A "$WORK/had") (or removed a directory it did not make)"

# 6. host is the host trace's name: refused however it comes.
mkdir -p "$WORK/host"
for args in "--chardev-dir $p --name host" "--chardev-dir $p --name HOST" "--chardev-dir $WORK/host"; do
	# shellcheck disable=SC2086
	"$COLLECT" record $args -o "$WORK/o6" --duration 1 >"$WORK/r6.log" 2>&1
	rc=$?
	[ $rc = 2 ] || { show "$WORK/r6.log"; fail "record $args exited $rc, want 2"; }
	grep -q "may not be named" "$WORK/r6.log" || { show "$WORK/r6.log"; fail "record $args: no message about the name"; }
	[ -e "$WORK/o6" ] && fail "record $args made its output directory"
done
echo "PASS"
