#!/bin/sh
# Proves: with the default output (zstd), the collector compresses each CPU's
# pages on an idle core while they stream in (cpuN.zst, cpuN.zsum in the
# spool), and the finish copies those chunks instead of compressing again:
# - the events trace-cmd reports and the manifest's counts are exact;
# - the trace.dat is byte for byte the one `recover` writes from the same
#   spool without the chunks (cpuN.zsum removed: as a killed collector leaves
#   it), and the manifest's per-CPU figures are the same;
# - chunks that do not add up (a cpuN.zsum that lies about the file's size),
#   and a cpuN.zst that is a symbolic link, are refused: the pages are
#   compressed again, the file is the same, the link's target is untouched
#   (the link is left in place, as any file the collector did not make);
# - recover removes cpuN.zst and cpuN.zsum with the spool;
# - --no-compress and --compress-at-end leave no cpuN.zst.
echo "collect: zstd chunks compressed while streaming, the same trace.dat as compressing at the end"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools

K=100
p=$WORK/ports out=$WORK/out
mkdir -p "$p"
# 2 MiB/s per CPU: the collector has idle time to compress in.
fake vz --fifo "$p" --fixture "$DATA/cap-guest" --repeat $K --rate 2M --retime
pid=$FAKE_PID
collect rec --chardev-dir "$p" --name vz -o "$out" --duration 3 --keep-spool --verbose
fake_end $pid
[ $RC = 0 ] || { show "$WORK/rec.log"; fail "collector exited $RC, want 0"; }
check_exact "$out" vz "$DATA/cap-guest" $K
sp=$out/.spool/guest-vz
for c in 0 1; do
	line=$(grep "guest vz cpu$c: .* region bytes compressed while streaming" "$WORK/rec.log")
	[ -n "$line" ] || { show "$WORK/rec.log"; fail "cpu$c: no compression while streaming logged"; }
	done_b=$(echo "$line" | sed 's/.*cpu[0-9]*: \([0-9]*\) of \([0-9]*\) region.*/\1/')
	all_b=$(echo "$line" | sed 's/.*cpu[0-9]*: \([0-9]*\) of \([0-9]*\) region.*/\2/')
	[ "$done_b" -gt 0 ] || fail "cpu$c: nothing compressed while streaming ($line)"
	[ -f "$sp/cpu$c.zst" ] && [ -f "$sp/cpu$c.zsum" ] || fail "cpu$c: no cpu$c.zst/.zsum in the kept spool"
	raw=$(sed 's/^raw=\([0-9]*\) .*/\1/' "$sp/cpu$c.zsum")
	file=$(sed 's/.* file=\([0-9]*\) .*/\1/' "$sp/cpu$c.zsum")
	[ "$raw" = "$done_b" ] || fail "cpu$c: cpu$c.zsum says raw=$raw, the log $done_b"
	[ "$file" = "$(stat -c %s "$sp/cpu$c.zst")" ] || fail "cpu$c: cpu$c.zsum says file=$file, cpu$c.zst has $(stat -c %s "$sp/cpu$c.zst")"
	echo "cpu$c: $done_b of $all_b bytes compressed while streaming, into $file"
done

# recover DIR: a copy of the kept spool, changed by the caller, recovered into DIR
copy_spool() {
	rm -rf "$1"
	mkdir -p "$1"
	cp -a "$out/.spool" "$1/"
}
recover() {
	timeout -s KILL 60 "$COLLECT" recover "$1" >"$1.log" 2>&1
	_rc=$?
	[ $_rc = 0 ] || { show "$1.log"; fail "recover $1 exited $_rc"; }
	[ ! -e "$1/.spool" ] || { ls -la "$1/.spool"/*; fail "recover $1 left its spool"; }
}
same() {
	cmp -s "$out/guest-vz.dat" "$1/guest-vz.dat" || fail "$2: guest-vz.dat differs from the recorded one"
	jq -S '.guests[0].cpus' "$out/manifest.json" >"$WORK/m0.json"
	jq -S '.guests[0].cpus' "$1/manifest.json" >"$WORK/m1.json"
	cmp -s "$WORK/m0.json" "$WORK/m1.json" || { diff "$WORK/m0.json" "$WORK/m1.json"; fail "$2: per-CPU figures differ"; }
}

# Without the chunks' summaries (a killed collector): compressed at the end, the same bytes.
copy_spool "$WORK/plain"
rm "$WORK"/plain/.spool/guest-vz/cpu*.zsum
recover "$WORK/plain"
grep -q "compressed again" "$WORK/plain.log" && fail "plain: chunks used without their summary"
same "$WORK/plain" "without cpuN.zsum"
echo "ok: recorded file = recovered without the chunks ($(stat -c %s "$out/guest-vz.dat") bytes)"

# The recorded spool as it is: the chunks are used.
copy_spool "$WORK/with"
recover "$WORK/with"
same "$WORK/with" "with the chunks"

# A summary that lies about the file's size: refused, compressed again.
copy_spool "$WORK/lie"
z=$WORK/lie/.spool/guest-vz/cpu1.zsum
sed 's/ file=\([0-9]*\) / file=1\1 /' "$z" >"$z.new" && mv "$z.new" "$z"
recover "$WORK/lie"
grep -q "cpu1.zst: Bad message: compressed again" "$WORK/lie.log" ||
	{ show "$WORK/lie.log"; fail "lie: the bad chunks are not reported"; }
same "$WORK/lie" "a lying cpu1.zsum"
echo "ok: a lying cpu1.zsum: $(grep -o 'cpu1.zst: .*' "$WORK/lie.log")"

# cpu0.zst a symbolic link to a file with the right contents: never followed.
copy_spool "$WORK/link"
l=$WORK/link/.spool/guest-vz
mv "$l/cpu0.zst" "$WORK/target.zst"
ln -s "$WORK/target.zst" "$l/cpu0.zst"
sum0=$(md5sum <"$WORK/target.zst")
timeout -s KILL 60 "$COLLECT" recover "$WORK/link" >"$WORK/link.log" 2>&1
rc=$?
[ $rc = 0 ] || { show "$WORK/link.log"; fail "recover with a cpu0.zst link exited $rc"; }
grep -q "cpu0.zst is a symbolic link: compressed again" "$WORK/link.log" ||
	{ show "$WORK/link.log"; fail "link: no message names the cpu0.zst link"; }
same "$WORK/link" "cpu0.zst a link"
[ "$(md5sum <"$WORK/target.zst")" = "$sum0" ] || fail "link: the link's target changed"
# Like every file the collector did not make, the link is left in place, and said so.
[ -L "$l/cpu0.zst" ] || fail "link: the link was removed"
grep -q "cpu0.zst was not made by the collector: left in place" "$WORK/link.log" ||
	{ show "$WORK/link.log"; fail "link: not reported as left in place"; }
echo "ok: cpu0.zst a symbolic link: not followed, compressed again, left in place"

# --no-compress and --compress-at-end: nothing compressed ahead.
for opt in --no-compress --compress-at-end; do
	p2=$WORK/ports$opt out2=$WORK/out$opt
	mkdir -p "$p2"
	fake vn --fifo "$p2" --fixture "$DATA/cap-guest" --repeat 3 --retime
	pid=$FAKE_PID
	collect "n$opt" --chardev-dir "$p2" --name vn -o "$out2" --duration 1 --keep-spool $opt --verbose
	fake_end $pid
	[ $RC = 0 ] || { show "$WORK/n$opt.log"; fail "$opt: collector exited $RC"; }
	check_exact "$out2" vn "$DATA/cap-guest" 3
	ls "$out2"/.spool/guest-vn/cpu*.zst >/dev/null 2>&1 && fail "$opt: cpuN.zst made"
	grep -q "compressed while streaming" "$WORK/n$opt.log" && fail "$opt: compressed while streaming"
	echo "ok: $opt: nothing compressed ahead"
done
echo "PASS"
