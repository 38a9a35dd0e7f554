#!/bin/sh
# Proves: `virtio-trace-collect report --perf-kvm DIR` writes, for each guest,
# DIR/NAME.kallsyms and DIR/NAME.modules as perf kvm --guestkallsyms and
# --guestmodules read them (tools/perf/util/symbol.c: kallsyms__parse and
# modules__parse, re-enacted here in awk): the kallsyms are the guest's own,
# line for line, less the one line perf would refuse (a name of 256 bytes or
# more fails its whole parse; perf opens the files only for guest samples, so
# its own run below proves less); the modules are those of the [module] text
# symbols (not ftrace's trampolines or BPF programs), in address order, each
# at the page of its lowest text symbol and as long as the pages up to its
# highest one plus one, cut at the next module; from zstd v7, plain v7 and
# v6 files alike; 0600, never written through a symbolic link; a guest file
# without kallsyms is an error that names it. With perf installed, perf kvm
# reads both files without complaint.
echo "collect: report --perf-kvm writes each guest's kallsyms and modules as perf kvm reads them"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools

fix=$WORK/fix
cp -r "$DATA/cap-guest" "$fix"
long=$(printf 'x%.0s' $(seq 1 300))
{
	printf 'ffffffff81000000 T _text\n'
	printf 'ffffffff81000000 T startup_64\n'
	printf 'ffffffff81001000 t do_one_initcall\n'
	printf 'ffffffff81002000 t %s\n' "$long"
	printf 'ffffffff82000000 D jiffies\n'
	printf 'ffffffffc0200000 t ftrace_trampoline\t[__builtin__ftrace]\n'
	printf 'ffffffffc0340000 t e1000_probe\t[e1000]\n'
	printf 'ffffffffc0340500 t e1000_remove\t[e1000]\n'
	printf 'ffffffffc0348010 T e1000_exit\t[e1000]\n'
	printf 'ffffffffc0390000 d e1000_driver\t[e1000]\n'
	printf 'ffffffffc0360120 t virtnet_probe\t[virtio_net]\n'
	printf 'ffffffffc0361234 t virtnet_remove\t[virtio_net]\n'
	printf 'ffffffffc0370000 t bpf_prog_6deef7357e7b4530_sd_fw_egress\t[bpf]\n'
} >"$fix/kallsyms"
grep -v "$long" "$fix/kallsyms" >"$WORK/want.kallsyms"
# NAME SIZE ADDRESS as perf takes them (modules__parse).
printf 'e1000 40960 ffffffffc0340000\nvirtio_net 12288 ffffffffc0360000\n' >"$WORK/want.modules"

# three guests: the default zstd v7, v7 uncompressed, v6 (one recording each)
n=0
for v in "" "--no-compress" "--file-version 6"; do
	n=$((n + 1))
	mkdir -p "$WORK/p$n"
	fake "g$n" --fifo "$WORK/p$n" --fixture "$fix" --retime
	pid=$FAKE_PID
	# shellcheck disable=SC2086
	collect "rec$n" --chardev-dir "$WORK/p$n" --name "g$n" -o "$WORK/out$n" --duration 1 --quiet $v
	fake_end $pid
	[ $RC = 0 ] || { show "$WORK/rec$n.log"; fail "record $v exited $RC"; }
done

# perf_kallsyms FILE: "ADDR TYPE NAME" per symbol as kallsyms__parse takes it; fails as it does
perf_kallsyms() {
	awk '{ line = $0
		if (!match(line, /^[0-9a-fA-F]+/)) { addr = ""; len = 0 } else { addr = substr(line, 1, RLENGTH); len = RLENGTH }
		len++
		if (len + 2 >= length(line)) next
		type = substr(line, len + 1, 1); name = substr(line, len + 3)
		if (length(name) >= 256) { print "FAIL: name too long"; exit 1 }
		print addr, type, name }' "$1"
}
# perf_modules FILE: "NAME SIZE ADDR" per module as modules__parse takes it
perf_modules() {
	awk '{ line = $0; x = 0
		for (i = length(line); i > 0; i--) if (substr(line, i, 1) == "x") { x = i; break }
		if (!x) next
		match(substr(line, x + 1), /^[0-9a-fA-F]*/); start = substr(line, x + 1, RLENGTH)
		sp = index(line, " "); if (!sp) next
		name = substr(line, 1, sp - 1); rest = substr(line, sp + 1)
		if (!match(rest, /^[0-9]+[ \t]/)) next
		print name, substr(rest, 1, RLENGTH - 1), tolower(start) }' "$1"
}

for n in 1 2 3; do
	kd=$WORK/kvm$n
	mkdir -p "$kd"
	ln -s "$WORK/victim$n" "$kd/g$n.kallsyms"
	"$COLLECT" report --perf-kvm "$kd" "$WORK/out$n" >/dev/null 2>"$WORK/pk$n.err"
	rc=$?
	[ $rc = 0 ] || { show "$WORK/pk$n.err"; fail "report --perf-kvm exited $rc for recording $n"; }
	[ ! -e "$WORK/victim$n" ] || fail "report --perf-kvm wrote through a symbolic link"
	for f in kallsyms modules; do
		[ -f "$kd/g$n.$f" ] && [ ! -L "$kd/g$n.$f" ] || fail "no regular file $kd/g$n.$f"
		[ "$(stat -c %a "$kd/g$n.$f")" = 600 ] || fail "$kd/g$n.$f has mode $(stat -c %a "$kd/g$n.$f")"
	done
	# Both: perf kvm record writes the guest's maps from the files, a report of a perf.data
	# recorded without them never opens them (test-kvm-perfkvm).
	for c in record report; do
		grep -q "^  perf kvm --guest --guestkallsyms=$kd/g$n.kallsyms --guestmodules=$kd/g$n.modules $c" "$WORK/pk$n.err" ||
			{ show "$WORK/pk$n.err"; fail "report did not print the perf kvm $c command with the files"; }
	done
	cmp -s "$WORK/want.kallsyms" "$kd/g$n.kallsyms" || {
		diff "$WORK/want.kallsyms" "$kd/g$n.kallsyms" | head
		fail "recording $n: the kallsyms are not the guest's, less the line perf refuses"
	}
	perf_kallsyms "$kd/g$n.kallsyms" >"$WORK/ks$n" || fail "perf's kallsyms parse would fail on recording $n's"
	[ "$(wc -l <"$WORK/ks$n")" = "$(wc -l <"$WORK/want.kallsyms")" ] || fail "perf would skip kallsyms lines"
	perf_modules "$kd/g$n.modules" >"$WORK/mods$n"
	cmp -s "$WORK/want.modules" "$WORK/mods$n" || {
		diff "$WORK/want.modules" "$WORK/mods$n"
		fail "recording $n: the modules as perf reads them are not the expected ones (< want)"
	}
	[ "$(wc -l <"$kd/g$n.modules")" = 2 ] || fail "lines perf skips in the modules file"
done
echo "ok: kallsyms line for line, modules e1000 and virtio_net at their pages, from zstd v7, v7 and v6, 0600, no link followed"

# A guest file without kallsyms: an error naming the guest.
mkdir -p "$WORK/p4"
fake g4 --fifo "$WORK/p4" --fixture "$DATA/cap-guest" --retime
pid=$FAKE_PID
collect rec4 --chardev-dir "$WORK/p4" --name g4 -o "$WORK/out4" --duration 1 --quiet
fake_end $pid
"$COLLECT" report --perf-kvm "$WORK/kvm4" "$WORK/out4" >/dev/null 2>"$WORK/pk4.err" &&
	fail "report --perf-kvm succeeded on a guest file without kallsyms"
grep -q 'guest g4: its file holds no kallsyms' "$WORK/pk4.err" || { show "$WORK/pk4.err"; fail "the error does not name the guest"; }
echo "ok: a guest without kallsyms is an error that names it"

# perf itself, when installed: it reads both files for the guest machine.
if command -v perf >/dev/null 2>&1 && perf version >/dev/null 2>&1; then
	(cd "$WORK" && perf record -q -o "$WORK/perf.data" -e cpu-clock true) >/dev/null 2>&1
	if [ -s "$WORK/perf.data" ]; then
		perf kvm --guest --guestkallsyms="$WORK/kvm1/g1.kallsyms" --guestmodules="$WORK/kvm1/g1.modules" \
			report -i "$WORK/perf.data" --stdio >"$WORK/perf.out" 2>"$WORK/perf.err"
		rc=$?
		[ $rc = 0 ] || { show "$WORK/perf.err"; fail "perf kvm report exited $rc with our files"; }
		grep -qi 'error\|invalid\|cannot' "$WORK/perf.err" && { show "$WORK/perf.err"; fail "perf kvm complained"; }
		# perf opens the guest files only for guest samples, which a host without a KVM
		# guest cannot make: this proves the options and files are taken, not the symbols.
		echo "ok: perf kvm --guestkallsyms --guestmodules report runs with them (no guest samples here to resolve)"
	else
		echo "note: perf record cannot sample here; perf kvm not run"
	fi
else
	echo "note: perf is not installed; its parse is re-enacted above"
fi
exit 0
