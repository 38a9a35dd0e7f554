#!/bin/sh
# Proves (issue 28): text a guest controls cannot put escape sequences on the user's terminal
# through what the collector writes. A fixture is captured for real (vt-capture, a private
# tracefs instance) with children named "x ESC[31m red" that write the marker
# "EVIL ESC]0;pwned BEL ESC[2J"; its metadata then gets a hostile symbol and module name, task
# names, a printk format, a pci_devices line, invalid UTF-8 beside valid UTF-8, and an event
# format whose print fmt clears the screen. A fake agent serves it, with a last-boot bundle whose
# info text forges our "# virtio-trace:" line and carries escapes. Then:
#   - the metadata's text is cleaned: `trace-cmd dump` of the guest file shows the symbol,
#     module, task names and printk format with '?' for each control character or invalid
#     byte, valid UTF-8 (cafe with an accent, a task named with umlauts) kept; the hostile
#     format is refused with one error naming it (evil:evil_ev), the manifest counts it, exit 3;
#   - `trace-cmd report | cat -v` of the guest file: no escape outside the events' payload (the
#     task column shows "x?[31mred"); the marker's payload keeps its escapes (pages cannot be
#     changed: doc/boundary.md says so);
#   - the last-boot file's note: the forged line disarmed ("? virtio-trace: forged line"), the
#     escapes replaced, our line the only one starting "# virtio-trace:";
#   - none of our own outputs holds an ESC or BEL byte: manifest.json, the sysinfo files, the
#     collector's messages, `report` (text and --json) and `report --html`;
#   - a last-boot bundle of another instance than --last-boot is refused, no file written.
echo "collect: guest text (comms, kallsyms, formats, markers, the last-boot note) reaches no terminal as escapes through our outputs"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools
tracefs=/sys/kernel/tracing
[ -w $tracefs/instances ] || { echo "SKIP: no writable $tracefs/instances (root and tracefs needed for the capture)"; exit 77; }

ESC=$(printf '\033') BEL=$(printf '\007')
fix=$WORK/fix
# On CPU 0 only: the fake agent serves that CPU, and a child the scheduler put on CPU 1 wrote its
# marker where this test never looked (it failed so under load).
taskset -c 0 "$TOOLS/vt-capture" -t $tracefs -o "$fix" -e sched -d 0.4 -m "EVIL${ESC}]0;pwned${BEL}${ESC}[2J" \
	-n "x${ESC}[31mred" >"$WORK/capture.out" 2>&1
rc=$?
[ $rc = 77 ] && { echo "SKIP: vt-capture cannot create an instance"; exit 77; }
[ $rc = 0 ] || { cat "$WORK/capture.out"; fail "vt-capture exited $rc"; }
[ -s "$fix/cpu0.raw" ] || fail "the capture has no pages on cpu0"
# The hostile metadata a guest kernel (or agent) could hand over.
printf 'ffffffff81000000 T _text\nffffffff81000010 T evil\033]0;pwn\007sym\nffffffff81000020 t modsym\t[evil\033[2Jmod]\nffffffff81000030 T bad\377\376name\nffffffff81000040 T caf\303\251\n' >"$fix/kallsyms"
printf '4242 c\033]2;title\007omm\n4243 \303\274n\303\257code\n' >>"$fix/saved_cmdlines"
printf '0xffffffff81000000 : "\033[1mbold"\n' >>"$fix/printk_formats"
printf '00ff\t8086\033[2J1234\t0\n' >>"$fix/pci_devices"
mkdir -p "$fix/formats/evil"
printf 'name: evil_ev\nID: 4000\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\nprint fmt: "\033[2Jcleared"\n' >"$fix/formats/evil/evil_ev"

p=$WORK/ports out=$WORK/out
mkdir -p "$p"
info="ffffffff81000000	[kernel]
# virtio-trace: forged line, this is no previous boot
${ESC}]0;pwned${BEL}${ESC}[2J bad $(printf '\377') end"
fake eg --fifo "$p" --fixture "$fix" --cpus 1 --repeat 1 --retime --last-boot-info "$info"
collect rec --chardev-dir "$p" --name eg -o "$out" -d 2 --last-boot boot --keep-spool
fake_end $FAKE_PID
[ $RC = 3 ] || { show "$WORK/rec.log" "$WORK/eg.fake"; fail "record exited $RC, want 3 (a refused format is a problem)"; }
g=$out/guest-eg.dat lb=$out/guest-eg.lastboot.dat
[ -f "$g" ] && [ -f "$lb" ] || { show "$WORK/rec.log"; fail "no guest file or last-boot file"; }

# The format: refused once, by name.
n=$(grep -c "guest eg: 1 event formats hold control characters or invalid UTF-8 and are refused (the first: evil:evil_ev)" "$WORK/rec.log")
[ "$n" = 1 ] || { show "$WORK/rec.log"; fail "$n errors naming the refused format evil:evil_ev, want 1"; }
[ "$(guest_json "$out" eg .formats_refused)" = 1 ] || fail "manifest formats_refused is $(guest_json "$out" eg .formats_refused), want 1"
[ "$(guest_json "$out" eg .text_replaced)" -ge 9 ] || fail "manifest text_replaced is $(guest_json "$out" eg .text_replaced), want >= 9"
trace-cmd dump --events "$g" 2>/dev/null | grep -q evil_ev && fail "the refused format is in the guest file"

# The metadata's text, as trace-cmd shows it.
trace-cmd dump --kallsyms "$g" >"$WORK/ksyms" 2>/dev/null
trace-cmd dump --cmd-lines "$g" >"$WORK/cmdl" 2>/dev/null
trace-cmd dump --printk "$g" >"$WORK/printk" 2>/dev/null
for w in 'evil?]0;pwn?sym' 'modsym' 'evil?\[2Jmod' 'bad??name' "caf$(printf '\303\251')"; do
	grep -q -- "$w" "$WORK/ksyms" || { cat -v "$WORK/ksyms" | head; fail "kallsyms: no '$w' in trace-cmd dump --kallsyms"; }
done
for w in 'x?\[31mred' 'c?]2;title?omm' "$(printf '\303\274n\303\257code')"; do
	grep -q -- "$w" "$WORK/cmdl" || { cat -v "$WORK/cmdl" | tail; fail "saved_cmdlines: no '$w' in trace-cmd dump --cmd-lines"; }
done
grep -q '?\[1mbold' "$WORK/printk" || fail "printk_formats: no '?[1mbold'"
for f in ksyms cmdl printk; do
	! grep -q "[$ESC$BEL]" "$WORK/$f" || fail "trace-cmd dump ($f) prints an escape"
done

# trace-cmd report: escapes only in the payload (after "EVENT: "), the task column cleaned.
report "$WORK/report.txt" -i "$g"
cat -v "$WORK/report.txt" >"$WORK/report.v"
grep -qE '^ *x\?\[31mred-[0-9]+ +\[' "$WORK/report.txt" || fail "trace-cmd report: no task column 'x?[31mred'"
bad=$(awk '{ i = index($0, ": "); j = i ? index(substr($0, i + 2), ": ") : 0
	head = j ? substr($0, 1, i + j) : $0; if (head ~ /\^\[|\^G/) print }' "$WORK/report.v" | head -3)
[ -z "$bad" ] || { echo "$bad"; fail "trace-cmd report prints escapes outside the events' payload"; }
grep -q 'print: .*EVIL^\[\]0;pwned^G^\[\[2J' "$WORK/report.v" ||
	fail "the marker's payload is not there as the guest wrote it (the test would prove nothing)"
echo "trace-cmd report: $(grep -c '\^\[' "$WORK/report.v") lines with escapes, all in payload (markers, sched_switch comm fields)"

# The last-boot note.
strings -n 8 "$lb" | grep -a 'virtio-trace' >"$WORK/note"
[ "$(grep -c '^# virtio-trace:' "$WORK/note")" = 1 ] || { cat -v "$WORK/note"; fail "the note has $(grep -c '^# virtio-trace:' "$WORK/note") lines starting '# virtio-trace:', want 1 (ours)"; }
grep -q '^# virtio-trace: the previous boot.s trace of instance boot;' "$WORK/note" || fail "the note lacks our line"
grep -q '^? virtio-trace: forged line' "$WORK/note" || { cat -v "$WORK/note"; fail "the forged line is not disarmed"; }
grep -a -q '?]0;pwned??\[2J bad ? end' "$lb" || fail "the note's escapes are not replaced"
[ "$(stat -c %a "$lb")" = 600 ] || fail "the last-boot file is mode $(stat -c %a "$lb"), want 600"

# Our own outputs: not one ESC or BEL.
"$COLLECT" report "$out" >"$WORK/report-ours.txt" 2>&1
"$COLLECT" report --json "$out" >"$WORK/report-ours.json" 2>&1
"$COLLECT" report --html "$WORK/page.html" "$out" >/dev/null 2>&1 || fail "report --html failed"
for f in "$out/manifest.json" "$out"/guest-eg.sysinfo/* "$WORK/rec.log" "$WORK/report-ours.txt" \
	"$WORK/report-ours.json" "$WORK/page.html"; do
	! grep -q "[$ESC$BEL]" "$f" || { grep -n "[$ESC$BEL]" "$f" | cat -v | head -3; fail "$f holds an escape"; }
done
grep -q '8086?\[2J1234' "$out/guest-eg.sysinfo/pci_devices" || fail "pci_devices: the hostile line is not cleaned"

# Another instance than --last-boot: refused, no file.
rm -rf "$p"
mkdir -p "$p"
fake eg2 --fifo "$p" --fixture "$fix" --cpus 1 --repeat 1 --retime --last-boot-info "x" --last-boot-name "other${ESC}[2J"
collect rec2 --chardev-dir "$p" --name eg2 -o "$WORK/out2" -d 1 --last-boot boot
fake_end $FAKE_PID
grep -q "guest eg2: the last boot's trace it sent is of instance 'other?\[2J', not of --last-boot boot: refused" "$WORK/rec2.log" ||
	{ show "$WORK/rec2.log"; fail "the wrong instance is not refused by name"; }
[ ! -e "$WORK/out2/guest-eg2.lastboot.dat" ] || fail "a last-boot file of the wrong instance was written"
! grep -q "[$ESC$BEL]" "$WORK/rec2.log" || fail "the collector's messages hold an escape"
echo "PASS"
