#!/bin/sh
# Proves: an uncompressed guest file (--no-compress v7, --file-version 6) is
# made in place out of the spool's data file when the filesystem can move
# extents (ext4, xfs): the finished guest-NAME.dat is the very inode the
# pages were spooled into, the collector says so, and trace-cmd report reads
# exactly the fixture's events per CPU, with the manifest's bytes, pages and
# events equal to what the agent sent. On tmpfs (/dev/shm), which cannot
# collapse or insert ranges, the same runs take the copy path automatically,
# say why, and give the same exact counts. host.dat is made in place too. Also: with an unequal amount per
# vCPU (a few pages on one, more on the other) the layout still holds. And a
# kill in the middle of moving extents loses no page: recover finds them all.
echo "collect: uncompressed files made in place (ext4/xfs), copied on tmpfs, exact counts"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools

# can_move DIR: fallocate(1) collapse and insert range work in DIR
can_move() {
	_cm=$1/vt-probe.$$
	head -c 16384 /dev/zero >"$_cm" 2>/dev/null &&
		fallocate --collapse-range -o 0 -l 4096 "$_cm" 2>/dev/null &&
		fallocate --insert-range -o 0 -l 4096 "$_cm" 2>/dev/null
	_cr=$?
	rm -f "$_cm"
	return $_cr
}

# run_one WHERE TAG ARGS...: record a fixture guest into WHERE/out-TAG with ARGS;
# sets INODE (of the spool's data file while recording) and OUT
run_one() {
	_w=$1 _t=$2
	shift 2
	p=$_w/ports-$_t OUT=$_w/out-$_t name=vm-$_t
	mkdir -p "$p"
	fake $name --fifo "$p" --fixture "$DATA/cap-guest" --repeat $K --retime
	pid=$FAKE_PID
	"$COLLECT" record --chardev-dir "$p" --name $name -o "$OUT" --duration 3 "$@" \
		>"$WORK/$_t.log" 2>&1 &
	COLLECT_PID=$!
	track $COLLECT_PID
	T_COLLECTORS="$T_COLLECTORS $COLLECT_PID"
	_cl=$WORK/$_t.log
	INODE=
	_i=0
	while [ -z "$INODE" ] && [ $_i -lt 100 ] && kill -0 $COLLECT_PID 2>/dev/null; do
		INODE=$(stat -c %i "$OUT/.spool/guest-$name/data" 2>/dev/null)
		[ -n "$INODE" ] || sleep 0.05
		_i=$((_i + 1))
	done
	collect_wait 60
	fake_end $pid
	[ $RC = 0 ] || { show "$_cl" "$WORK/$name.fake"; fail "$_t: collector exited $RC, want 0"; }
	[ -n "$INODE" ] || { show "$_cl"; fail "$_t: no spool data file seen while recording"; }
	check_exact "$OUT" $name "$DATA/cap-guest" $K
	[ -z "$(guest_json "$OUT" $name '.problems // empty')" ] ||
		fail "$_t: manifest reports problems: $(guest_json "$OUT" $name .problems)"
	[ ! -e "$OUT/.spool" ] || fail "$_t: the spool was left behind"
	[ ! -e "$OUT/guest-$name.dat.tmp" ] || fail "$_t: a .tmp file was left behind"
}

# recover_mid_move: a collector killed while spooling, its data file then left
# as a kill during the in-place finish leaves it (marker written; A: one hole
# collapsed; B: all collapsed, cut, room inserted at the front, half a header
# written): recover finds every spooled page in both. C: with a page malformed
# inside, recover copies instead and sets the page aside
recover_mid_move() {
	p=$WORK/ports-kill out=$WORK/out-kill
	mkdir -p "$p"
	fake vmk --fifo "$p" --fixture "$DATA/cap-guest" --repeat 0 --rate 400K --retime
	kpid=$FAKE_PID
	"$COLLECT" record --chardev-dir "$p" --name vmk -o "$out" --duration 60 --no-compress \
		--quiet >"$WORK/kill.log" 2>&1 &
	cpid=$!
	track $cpid
	T_COLLECTORS="$T_COLLECTORS $cpid"
	sp=$out/.spool/guest-vmk
	i=0
	while [ $i -lt 150 ]; do
		s=$(spool_pages "$sp" 1 | wc -c)
		[ "$s" -ge 65536 ] && break
		sleep 0.1
		i=$((i + 1))
	done
	[ "$s" -ge 65536 ] || { show "$WORK/kill.log"; fail "kill: no pages spooled in 15 s"; }
	kill -KILL $cpid
	wait $cpid 2>/dev/null
	kill -TERM $kpid
	wait $kpid 2>/dev/null
	mkdir "$WORK/sp"
	cp -r "$DATA/cap-guest/." "$WORK/sp/"
	for c in 0 1; do
		sz=$(spool_pages "$sp" $c | wc -c)
		spool_pages "$sp" $c | head -c $((sz / 4096 * 4096)) >"$WORK/sp/cpu$c.raw"
		eval "len$c=$((sz / 4096 * 4096))"
	done
	"$TOOLS/vt-mkdat" -i "$WORK/sp" -o "$WORK/sp.dat" >/dev/null || fail "vt-mkdat on the spool's pages"
	report "$WORK/sp.txt" -i "$WORK/sp.dat"
	R=$(sed -n 's/^region=//p' "$sp/layout")
	# C: a page whose header passes and whose events do not chain up (the first
	# event claims 65535 bytes): recover's walk finds it, so it copies instead,
	# and the page goes to bad-pages/.
	o=$WORK/out-killC
	cp -a --sparse=always "$out" "$o"
	printf '\000\000\000\000\377\377\000\000' |
		dd of="$o/.spool/guest-vmk/data" bs=1 seek=$((R + 4096 + 16)) conv=notrunc 2>/dev/null
	timeout -s KILL 60 "$COLLECT" recover "$o" >"$WORK/recoverC.log" 2>&1
	rc=$?
	[ $rc = 3 ] || { show "$WORK/recoverC.log"; fail "recover C exited $rc, want 3"; }
	grep -q "guest-vmk.dat: cpu1 has a malformed page: copying" "$WORK/recoverC.log" ||
		{ show "$WORK/recoverC.log"; fail "recover C: no message that the walk found the page"; }
	grep -q "moved in place" "$WORK/recoverC.log" && fail "recover C: in place despite a bad page"
	report "$WORK/recC.txt" -i "$o/guest-vmk.dat"
	[ "$(guest_json "$o" vmk '.cpus[] | select(.cpu == 1) | .bad_pages')" = 1 ] ||
		fail "recover C: cpu1 bad_pages is not 1"
	[ "$(guest_json "$o" vmk '.cpus[] | select(.cpu == 1) | .pages')" = $((len1 / 4096 - 1)) ] ||
		fail "recover C: cpu1 pages is not $((len1 / 4096 - 1))"
	[ "$(wc -c <"$o/bad-pages/vmk-cpu1.bad")" = 4096 ] || fail "recover C: bad-pages/vmk-cpu1.bad is not one page"
	[ "$(cpu_events "$WORK/recC.txt" 0)" = "$(cpu_events "$WORK/sp.txt" 0)" ] ||
		fail "recover C: cpu0 events differ from the spool's"
	[ "$(cpu_events "$WORK/recC.txt" 1)" = "$(guest_json "$o" vmk '.cpus[] | select(.cpu == 1) | .events')" ] ||
		fail "recover C: cpu1 events in the report differ from the manifest"
	echo "ok: a page malformed inside is found by the walk and set aside: copied (C)"
	size0=$(stat -c %s "$sp/data")
	head=8192
	printf 'region=%s\nhead=%s\nsize0=%s\nnr_cpus=2\nlen0=%s\nlen1=%s\n' \
		"$R" $head "$size0" "$len0" "$len1" >"$sp/inplace"
	for st in A B; do
		o=$WORK/out-kill$st
		cp -a --sparse=always "$out" "$o"
		d=$o/.spool/guest-vmk/data
		fallocate --collapse-range -o "$len0" -l $((R - len0)) "$d" || fail "fallocate collapse"
		if [ $st = B ]; then
			truncate -s $((len0 + len1)) "$d"
			fallocate --insert-range -o 0 -l $head "$d" || fail "fallocate insert"
			head -c 5000 /dev/urandom | dd of="$d" conv=notrunc 2>/dev/null
		fi
		timeout -s KILL 60 "$COLLECT" recover "$o" >"$WORK/recover$st.log" 2>&1
		rc=$?
		case $rc in
		0 | 3) ;;
		*) show "$WORK/recover$st.log"; fail "recover $st exited $rc" ;;
		esac
		report "$WORK/rec$st.txt" -i "$o/guest-vmk.dat"
		for c in 0 1; do
			eval "want=\$((len$c / 4096))"
			got=$(guest_json "$o" vmk ".cpus[] | select(.cpu == $c) | .pages")
			[ "$got" = "$want" ] || fail "recover $st cpu$c: $got pages, the spool had $want"
			got=$(cpu_events "$WORK/rec$st.txt" $c)
			want=$(cpu_events "$WORK/sp.txt" $c)
			[ "$got" = "$want" ] || fail "recover $st cpu$c: $got events, the spool's pages hold $want"
			[ "$got" -gt 0 ] || fail "recover $st cpu$c: no events"
		done
		echo "ok: recover after a kill mid-move ($st): $((len0 / 4096)) + $((len1 / 4096)) pages"
	done
}

K=40
ran=0
if can_move "$WORK"; then
	for v in v7 v6; do
		case $v in
		v7) set -- --no-compress ;;
		v6) set -- --file-version 6 ;;
		esac
		run_one "$WORK" inplace-$v "$@"
		grep -q "guest-vm-inplace-$v.dat: [0-9]* bytes of pages moved in place, not copied" "$_cl" ||
			{ show "$_cl"; fail "inplace-$v: the collector did not say the pages were moved in place"; }
		got=$(stat -c %i "$OUT/guest-vm-inplace-$v.dat")
		[ "$got" = "$INODE" ] ||
			fail "inplace-$v: guest file is inode $got, the spool's data file was $INODE: copied"
		echo "ok: in place, $v (inode $got)"
		ran=$((ran + 1))
	done
	# host.dat goes the same way (its pages are spooled alike).
	tracefs=/sys/kernel/tracing
	if [ -w $tracefs/instances ] && [ -r $tracefs/events/sched/sched_switch/format ]; then
		(while :; do sleep 0.01; done) &
		busy=$!
		track $busy
		run_one "$WORK" host --no-compress --host-events sched:sched_switch
		kill $busy
		grep -q "host.dat: [0-9]* bytes of pages moved in place, not copied" "$_cl" ||
			{ show "$_cl"; fail "host: host.dat was not made in place"; }
		report "$WORK/host.txt" -i "$OUT/host.dat"
		got=$(all_events "$WORK/host.txt")
		want=$(man "$OUT" '[.host.cpus[].events] | add')
		[ "$got" = "$want" ] && [ "$got" -gt 0 ] ||
			fail "host: trace-cmd report shows $got events in host.dat, the manifest $want"
		echo "ok: host.dat in place ($got events)"
	else
		echo "note: no writable tracefs instances: host.dat not checked"
	fi
	# zstd (the default) is always written through the writer.
	run_one "$WORK" zstd
	grep -q "moved in place" "$_cl" && fail "zstd: in place claimed for a compressed file"
	echo "ok: zstd copied"
	recover_mid_move
	ran=$((ran + 1))
else
	echo "note: $WORK cannot collapse/insert ranges: in-place half not run"
fi

SHM=/dev/shm
if [ -d "$SHM" ] && [ -w "$SHM" ] && [ "$(stat -f -c %T "$SHM")" = tmpfs ]; then
	SW=$(mktemp -d "$SHM/vt-inplace.XXXXXX") || fail "mktemp in $SHM"
	trap 'rm -rf "$SW"; t_cleanup' EXIT
	for v in v7 v6; do
		case $v in
		v7) set -- --no-compress ;;
		v6) set -- --file-version 6 ;;
		esac
		run_one "$SW" shm-$v "$@"
		grep -q "guest-vm-shm-$v.dat: this filesystem cannot move extents" "$_cl" ||
			{ show "$_cl"; fail "shm-$v: no message that the copy path was taken"; }
		grep -q "moved in place" "$_cl" && fail "shm-$v: in place claimed on tmpfs"
		echo "ok: copied on tmpfs, $v"
		ran=$((ran + 1))
	done
else
	echo "note: no writable tmpfs at $SHM: fallback half not run"
fi
[ $ran -gt 0 ] || { echo "SKIP: neither half could run here"; exit 77; }
echo "PASS"
