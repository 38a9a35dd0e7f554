#!/bin/sh
# Proves: no file the collector makes in its output directory goes through a
# symbolic link planted there. A link as .spool, bad-pages, manifest.json.tmp
# or guest-NAME.dat.tmp is refused with a message naming it, and what it points
# to is untouched; `recover` refuses a .spool link (deleting nothing behind it),
# reads no spool file through a link, and leaves what it did not make.
echo "collect: links planted in the output directory are refused, never followed"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools

p=$WORK/ports
mkdir -p "$p" "$WORK/victim"
echo "keep me" >"$WORK/victim/file"
sum() { (cd "$WORK/victim" && find . -type f | sort | xargs -r md5sum) | md5sum; }

# 1. record into a directory whose .spool is a link: refused, nothing made there.
out=$WORK/o1
mkdir "$out"
ln -s "$WORK/victim" "$out/.spool"
before=$(sum)
fake vl1 --fifo "$p" --fixture "$DATA/cap-guest" --repeat 1 --retime
collect r1 --chardev-dir "$p" --name vl1 -o "$out" --duration 1
fake_end $FAKE_PID
[ $RC = 1 ] || { show "$WORK/r1.log"; fail "record with a .spool link exited $RC, want 1"; }
grep -q '\.spool is a symbolic link' "$WORK/r1.log" || { show "$WORK/r1.log"; fail "no message names the .spool link"; }
[ "$(sum)" = "$before" ] && [ "$(ls -A "$WORK/victim")" = file ] || fail "the .spool link's target changed"
[ -e "$out/manifest.json" ] && fail "a manifest was written next to a .spool link"

# 2. recover through a .spool link to something that looks like a spool: refused, nothing deleted.
out=$WORK/o2
mkdir -p "$out" "$WORK/victim/guest-v"
echo "file_version=7" >"$WORK/victim/options"
echo "name=v" >"$WORK/victim/guest-v/state"
echo "x" >"$WORK/victim/guest-v/data"
ln -s "$WORK/victim" "$out/.spool"
before=$(sum)
timeout -s KILL 60 "$COLLECT" recover "$out" >"$WORK/rc2.log" 2>&1
rc=$?
[ $rc = 1 ] || { show "$WORK/rc2.log"; fail "recover with a .spool link exited $rc, want 1"; }
grep -q '\.spool is a symbolic link' "$WORK/rc2.log" || { show "$WORK/rc2.log"; fail "recover: no message names the .spool link"; }
[ "$(sum)" = "$before" ] || fail "recover deleted or changed files behind the .spool link"
rm -rf "$WORK/victim/guest-v" "$WORK/victim/options"

# 3. links planted while recording, where the finish writes: bad-pages (a
#    directory link), then manifest.json.tmp and guest-NAME.dat.tmp (file links).
echo "manifest victim" >"$WORK/victim/manifest"
echo "trace victim" >"$WORK/victim/trace"
before=$(sum)
# record_planting NAME OUT LINK TARGET...: record the fake guest NAME into OUT;
# once its spool exists, plant each LINK (a name in OUT) to its TARGET
record_planting() {
	_n=$1 _o=$2
	shift 2
	fake "$_n" --fifo "$p" --fixture "$DATA/cap-guest" --repeat 3 --retime --bad-page 1
	_fp=$FAKE_PID
	_cl=$WORK/$_n.log
	"$COLLECT" record --chardev-dir "$p" --name "$_n" -o "$_o" --duration 3 >"$_cl" 2>&1 &
	COLLECT_PID=$!
	track $COLLECT_PID
	T_COLLECTORS="$T_COLLECTORS $COLLECT_PID"
	_i=0
	while [ ! -d "$_o/.spool/guest-$_n" ] && [ $_i -lt 100 ]; do
		sleep 0.05
		_i=$((_i + 1))
	done
	[ -d "$_o/.spool/guest-$_n" ] || { show "$_cl"; fail "$_n: no spool after 5 s"; }
	while [ $# -ge 2 ]; do
		ln -s "$2" "$_o/$1"
		shift 2
	done
	collect_wait 60
	fake_end $_fp
}
out=$WORK/o3
record_planting vl3 "$out" bad-pages "$WORK/victim"
[ "$(sum)" = "$before" ] || { ls -la "$WORK/victim"; fail "the bad-pages link was followed"; }
[ $RC = 3 ] || { show "$WORK/vl3.log"; fail "record with a bad-pages link exited $RC, want 3"; }
grep -q "$out/bad-pages: a symbolic link" "$WORK/vl3.log" || { show "$WORK/vl3.log"; fail "no message names the bad-pages link"; }
[ "$(guest_json "$out" vl3 '.cpus[] | select(.cpu == 0) | .bad_pages')" = 1 ] || fail "the bad page is not counted"
guest_json "$out" vl3 .problems | grep -q 'not kept' || fail "the manifest does not say the bad page was not kept"
[ -L "$out/bad-pages" ] || fail "the bad-pages link was removed"

out=$WORK/o3b
record_planting vl3b "$out" manifest.json.tmp "$WORK/victim/manifest" guest-vl3b.dat.tmp "$WORK/victim/trace"
[ "$(sum)" = "$before" ] || { ls -la "$WORK/victim"; fail "a temporary file's link was followed: its target changed"; }
[ $RC = 1 ] || { show "$WORK/vl3b.log"; fail "record exited $RC with its file names taken by links, want 1"; }
for n in manifest.json.tmp guest-vl3b.dat.tmp; do
	grep -q "$out/$n" "$WORK/vl3b.log" || { show "$WORK/vl3b.log"; fail "no message names $n"; }
	[ -L "$out/$n" ] || fail "the link $n was removed"
done
[ -d "$out/.spool/guest-vl3b" ] || fail "the spool is gone although nothing was written"
# Without the links, recover writes everything from the spool.
rm "$out/manifest.json.tmp" "$out/guest-vl3b.dat.tmp"
timeout -s KILL 60 "$COLLECT" recover "$out" >"$WORK/rc3.log" 2>&1
rc=$?
[ $rc = 3 ] || { show "$WORK/rc3.log"; fail "recover exited $rc, want 3 (a bad page)"; }
[ "$(guest_json "$out" vl3b '.cpus[] | select(.cpu == 0) | .bad_pages')" = 1 ] || fail "recover: bad page not counted"
[ -s "$out/bad-pages/vl3b-cpu0.bad" ] || fail "recover: the bad page is not in bad-pages/"
[ -e "$out/.spool" ] && fail "recover left the spool"

# 4. recover reads no spool file through a link and removes only what the spool makes.
out=$WORK/o4
fake vl4 --fifo "$p" --fixture "$DATA/cap-guest" --repeat 2 --retime
collect r4 --chardev-dir "$p" --name vl4 -o "$out" --duration 1 --keep-spool
fake_end $FAKE_PID
[ $RC = 0 ] || { show "$WORK/r4.log"; fail "record exited $RC"; }
pages1=$(guest_json "$out" vl4 '.cpus[] | select(.cpu == 1) | .pages')
rm -f "$out/manifest.json" "$out/guest-vl4.dat"
head -c 8192 /dev/zero | tr '\0' '\377' >"$WORK/victim/pages"
before=$(sum)
ln -s "$WORK/victim/pages" "$out/.spool/guest-vl4/cpu1.pages"
ln -s "$WORK/victim" "$out/.spool/guest-vl4/cpu0.bad"
echo "notes" >"$out/.spool/guest-vl4/notes.txt"
# cpuN names are the collector's only as it writes them: no leading zero.
echo "stats" >"$out/.spool/guest-vl4/cpu01.stats"
timeout -s KILL 60 "$COLLECT" recover "$out" >"$WORK/rc4.log" 2>&1
rc=$?
[ $rc = 3 ] || { show "$WORK/rc4.log"; fail "recover with links in the spool exited $rc, want 3"; }
[ "$(sum)" = "$before" ] || fail "recover changed files behind links in the spool"
got=$(guest_json "$out" vl4 '.cpus[] | select(.cpu == 1) | .pages')
bad=$(guest_json "$out" vl4 '[.cpus[].bad_pages] | add')
[ "$got" = "$pages1" ] && [ "$bad" = 0 ] || fail "recover read through a link: cpu1 pages $got (want $pages1), bad pages $bad (want 0)"
guest_json "$out" vl4 .problems | grep -q 'cpu1.pages is a symbolic link' || fail "the manifest does not name the cpu1.pages link"
for f in cpu1.pages cpu0.bad notes.txt cpu01.stats; do
	[ -e "$out/.spool/guest-vl4/$f" ] || [ -L "$out/.spool/guest-vl4/$f" ] || fail "recover removed $f, which it did not make"
	grep -q "guest-vl4/$f was not made by the collector" "$WORK/rc4.log" || { show "$WORK/rc4.log"; fail "recover does not report $f left in place"; }
done
[ -e "$out/.spool/guest-vl4/state" ] && fail "recover left its own spool files"
echo "PASS"
