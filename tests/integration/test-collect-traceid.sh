#!/bin/sh
# Proves (issue 29): host.dat carries a TRACEID option, and it is the id that
# pairs the files: the guest file's TIME_SHIFT names it as its peer, the
# manifest's host.trace_id is it, and the host file's GUEST option names the
# guest file's own TRACEID (which the manifest's guest entry gives too). All
# read with `trace-cmd dump --options`, for a v7 and a v6 recording.
echo "collect: host.dat's TRACEID equals the guest's TIME_SHIFT peer id and the manifest's host trace_id"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools
need_host_tracefs sched:sched_switch

# hexnorm: a hex id as trace-cmd or the manifest writes it -> lower case, no leading zeros
hexnorm() {
	printf '%s\n' "$1" | tr 'A-F' 'a-f' | sed -E 's/^0x0*/0x/; s/^0x$/0x0/'
}

# dump_opt FILE NAME: the first line after trace-cmd's "[Option NAME, ...]" header
dump_opt() {
	trace-cmd dump --options -i "$1" 2>/dev/null |
		awk -v n="$2" 'hit { sub(/^[ \t]+/, ""); print; exit } index($0, "[Option " n ",") { hit = 1 }'
}

for fv in 7 6; do
	p=$WORK/ports$fv out=$WORK/out$fv
	mkdir -p "$p"
	fake vm$fv --fifo "$p" --fixture "$DATA/cap-guest" --repeat 1 --retime
	pid=$FAKE_PID
	# A stand-in QEMU with one vCPU thread (as QEMU names them), for host.dat's GUEST option.
	# (Only a thread may rename itself.)
	perl -e 'open(my $f, ">", "/proc/self/comm") or die; print $f "CPU 0/KVM"; close($f); sleep 60' &
	vcpu=$!
	track $vcpu
	_i=0
	until [ "$(cat /proc/$vcpu/comm 2>/dev/null)" = "CPU 0/KVM" ]; do
		[ $_i -lt 50 ] || fail "cannot name the stand-in vCPU thread"
		sleep 0.1
		_i=$((_i + 1))
	done
	collect rec$fv --chardev-dir "$p" --name vm$fv --qemu-pid $vcpu --sync probe -o "$out" --duration 1 \
		--file-version $fv --host-events sched:sched_process_exec -q
	fake_end $pid
	[ $RC = 0 ] || { show "$WORK/rec$fv.log"; fail "v$fv: collector exited $RC, want 0"; }

	host_id=$(dump_opt "$out/host.dat" TRACEID)
	[ -n "$host_id" ] || { trace-cmd dump --options -i "$out/host.dat" | head -40; fail "v$fv: host.dat has no TRACEID option"; }
	host_id=$(hexnorm "$host_id")
	[ "$host_id" != 0x0 ] || fail "v$fv: host.dat's TRACEID is 0"
	peer=$(trace-cmd dump --options -i "$out/guest-vm$fv.dat" 2>/dev/null |
		awk '/\[peer.s trace id\]/ { print $1; exit }')
	[ -n "$peer" ] || fail "v$fv: guest-vm$fv.dat has no TIME_SHIFT peer id"
	peer=$(hexnorm "$peer")
	mhost=$(hexnorm "$(man "$out" .host.trace_id)")
	echo "v$fv: host.dat TRACEID $host_id, guest TIME_SHIFT peer $peer, manifest host.trace_id $mhost"
	[ "$peer" = "$host_id" ] || fail "v$fv: the guest's TIME_SHIFT names peer $peer, host.dat's TRACEID is $host_id"
	[ "$mhost" = "$host_id" ] || fail "v$fv: manifest host.trace_id is $mhost, host.dat's TRACEID is $host_id"

	# The other direction: host.dat's GUEST option names the guest file's TRACEID.
	gid=$(hexnorm "$(dump_opt "$out/guest-vm$fv.dat" TRACEID)")
	hg=$(trace-cmd dump --options -i "$out/host.dat" 2>/dev/null | awk '/\[trace id\]/ { print $1; exit }')
	hg=$(hexnorm "$hg")
	mg=$(hexnorm "$(guest_json "$out" vm$fv .trace_id)")
	echo "v$fv: guest TRACEID $gid, host.dat GUEST id $hg, manifest guest trace_id $mg"
	[ "$gid" != 0x0 ] && [ "$gid" = "$hg" ] && [ "$gid" = "$mg" ] ||
		fail "v$fv: guest ids differ: TRACEID $gid, host.dat GUEST $hg, manifest $mg"
	[ "$gid" != "$host_id" ] || fail "v$fv: the guest and the host have the same trace id"
done
echo "PASS"
