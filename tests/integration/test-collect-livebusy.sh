#!/bin/sh
# Proves (issue 42): on a busy machine (two busy loops, one per core of the suite's machine)
# record --live shows the guest's first line within 0.6 s of "recording", and does not wait for
# the host's kallsyms (all of /proc/kallsyms, about 5 MB, which libtraceevent read in seconds at
# the view's nice level there); the lines are still trace-cmd report's of the files, the host's
# markers resolved through kallsyms included (their ip prints as a function name).
# A fake guest (fixture pages, --sync offset); the host's events are the collector's markers.
# Every line of the collector's stdout and stderr is stamped with the time it came out
# (CLOCK_MONOTONIC, by a perl reader that runs the collector as its child).
echo "collect: record --live shows the guest's first line within 0.6 s of 'recording' on a busy machine, the host's kallsyms read meanwhile"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools
need_host_tracefs ftrace:print
command -v perl >/dev/null || { echo "SKIP: no perl"; exit 77; }
LIMIT_S=0.6
# The sanitizer build runs two to three times slower: the bound is the plain build's (0.24-0.35 s
# measured there); under ASan it is doubled (0.63 s seen in a fresh-clone run).
if ldd "$COLLECT" 2>/dev/null | grep -q libasan; then
	LIMIT_S=1.2
fi
W_MS=300
# The stamping reader: runs ARGS, writes each stdout line to OUT and each stderr line to ERR,
# each as "SECONDS LINE" (CLOCK_MONOTONIC); the child's pid goes to PIDFILE; exits as it did.
cat >"$WORK/stamp.pl" <<'EOF'
use strict;
use IO::Select;
use POSIX ();
use Time::HiRes qw(clock_gettime CLOCK_MONOTONIC);
my ($out, $err, $pidfile, @cmd) = @ARGV;
pipe(my $ro, my $wo) or die; pipe(my $re, my $we) or die;
my $pid = fork() // die;
if (!$pid) {
	close $ro; close $re;
	open(STDOUT, '>&', $wo) or die; open(STDERR, '>&', $we) or die;
	exec(@cmd) or POSIX::_exit(127);
}
close $wo; close $we;
open(my $pf, '>', $pidfile) or die; print $pf "$pid\n"; close $pf;
open(my $fo, '>', $out) or die; open(my $fe, '>', $err) or die;
$fo->autoflush(1); $fe->autoflush(1);
my %to = (fileno($ro) => $fo, fileno($re) => $fe);
my %buf;
my $sel = IO::Select->new($ro, $re);
while ($sel->count) {
	for my $fh ($sel->can_read) {
		my $n = sysread($fh, my $chunk, 65536);
		if (!$n) { $sel->remove($fh); next; }
		my $t = clock_gettime(CLOCK_MONOTONIC);
		$buf{fileno($fh)} .= $chunk;
		while ($buf{fileno($fh)} =~ s/^([^\n]*\n)//) {
			printf { $to{fileno($fh)} } "%.6f %s", $t, $1;
		}
	}
}
waitpid($pid, 0);
exit($? >> 8);
EOF
# Two busy loops, the machine's two cores taken (killed by pid at the end, or by the cleanup).
yes >/dev/null &
b1=$!
track $b1
yes >/dev/null &
b2=$!
track $b2
sleep 0.5
# one_try N: one recording (ports and output dirs suffixed N); fails the test on anything wrong
# but the first line's delay, and returns 1 if that is over the bound.
one_try() {
	p=$WORK/ports$1 out=$WORK/out$1
	mkdir -p "$p"
	rm -f "$WORK/live.txt" "$WORK/rec.log" "$WORK/collect.pid"
	fake vmx --fifo "$p" --fixture "$DATA/cap-guest" --repeat 6 --retime --tsc-offset 5000000000
	pid=$FAKE_PID
	# The host: the collector's markers only (ftrace:print, whose ip needs the host's kallsyms);
	# --host-pid of a process that makes no event.
	sleep 60 &
	idle=$!
	track $idle
	perl "$WORK/stamp.pl" "$WORK/live.txt" "$WORK/rec.log" "$WORK/collect.pid" \
		"$COLLECT" record --chardev-dir "$p" --name vmx -o "$out" -d 4 --live=$W_MS \
		--host-events sched:sched_process_exec --host-pid $idle --sync offset --tsc-offset 5000000000 &
	stamper=$!
	track $stamper
	_i=0
	until [ -s "$WORK/collect.pid" ]; do
		[ $_i -lt 100 ] || fail "the collector did not start"
		sleep 0.1
		_i=$((_i + 1))
	done
	COLLECT_PID=$(cat "$WORK/collect.pid")
	track $COLLECT_PID
	T_COLLECTORS="$T_COLLECTORS $COLLECT_PID"
	# The collector is the stamper's child: its exit status is the stamper's.
	_i=0
	while kill -0 $stamper 2>/dev/null && [ $_i -lt 600 ]; do
		sleep 0.1
		_i=$((_i + 1))
	done
	kill -0 $stamper 2>/dev/null && kill -TERM $COLLECT_PID
	wait $stamper
	RC=$?
	kill $idle 2>/dev/null
	fake_end $pid
	[ $RC = 0 ] || { show "$WORK/rec.log"; fail "collector exited $RC, want 0"; }
	t_rec=$(awk '/guest vmx: recording/ { print $1; exit }' "$WORK/rec.log")
	t_first=$(awk '/^[0-9.]+ +guest-vmx\.dat: / { print $1; exit }' "$WORK/live.txt")
	t_host=$(awk '/^[0-9.]+ +host\.dat: / { print $1; exit }' "$WORK/live.txt")
	[ -n "$t_rec" ] || { show "$WORK/rec.log"; fail "the collector never said 'recording'"; }
	[ -n "$t_first" ] || fail "no guest line was shown"
	delay=$(awk -v a="$t_rec" -v b="$t_first" 'BEGIN { printf "%.3f", b - a }')
	hdelay=$(awk -v a="$t_rec" -v b="${t_host:-$t_rec}" 'BEGIN { printf "%.3f", b - a }')
	echo "busy machine: the first guest line $delay s after 'recording' (the first host line $hdelay s), want <= $LIMIT_S s"
	# The lines: trace-cmd report's, as a set (the window's edges may differ in order).
	strip() {
		sed -E 's/^[0-9.]+ //' "$1" | grep -v -e 'cpus=[0-9]*$' -e '^$'
	}
	report "$WORK/report.txt" -i "$out/host.dat" -i "$out/guest-vmx.dat"
	grep -v -e 'cpus=[0-9]*$' -e '^$' "$WORK/report.txt" | sort >"$WORK/want.sorted"
	strip "$WORK/live.txt" | sort >"$WORK/got.sorted"
	nw=$(wc -l <"$WORK/want.sorted")
	nm=$(grep -c '^ *host\.dat: .* print: *[a-z_]*: virtio-trace: ' "$WORK/want.sorted")
	echo "trace-cmd report: $nw lines ($nm host markers); live: $(wc -l <"$WORK/got.sorted") lines"
	[ "$nm" -gt 0 ] || { head -5 "$WORK/want.sorted"; fail "no host marker resolved to a function in the report"; }
	cmp -s "$WORK/want.sorted" "$WORK/got.sorted" || {
		diff "$WORK/want.sorted" "$WORK/got.sorted" | head -10
		fail "the live lines are not the report's lines"
	}
	awk -v d="$delay" -v m="$LIMIT_S" 'BEGIN { exit !(d <= m) }'
}
# The bound is a latency on a loaded machine, and the suite's other tests load it further (a
# fresh-clone run saw 1.17 s once, 0.24-0.35 s alone): a try over it is tried again, up to
# three in all. The regression it guards against (the view waiting for kallsyms, 1.3-1.6 s
# on the busy machine alone) is over it every time.
n=1
until one_try $n; do
	[ $n -lt 3 ] || { show "$WORK/rec.log"; fail "the first guest line came $delay s after 'recording' in each of 3 tries, want <= $LIMIT_S s"; }
	echo "try $n: over the bound; trying again"
	n=$((n + 1))
done
kill $b1 $b2 2>/dev/null
echo "PASS"
