#!/bin/sh
# Proves (issue 37): what a local user puts on a process's command line reaches root's terminal
# through `list` and `record --all` as no escape sequence and no forged line. A fake QEMU
# (vt-fake-agent copied as a root-owned qemu-system-x86_64, so that /proc/PID/exe is one) names
# its ports in a directory whose name holds OSC "ESC]0;pwned BEL", "ESC[2J", a C1 CSI (U+009B),
# "cafe" with an accent, an invalid byte, and a newline followed by "virtio-trace-collect list:
# forged"; the fake QEMU does not hold those FIFOs (its control port's .in is missing too), so
# the collector refuses them: "PATH.out is not a FIFO the QEMU (pid N) has open".
# (A -name with escapes never shows: list and record call such a QEMU qemu-PID.) Then:
#   - list's table and hints, list --json, and record --all's messages (stdout and stderr):
#     not one byte below 0x20 but the newlines that end lines, no DEL, no C1, no invalid UTF-8;
#   - the exact lines: list's hint "  q-esc: DIR/agent-ctl-path.out is not a FIFO the QEMU (pid
#     N) has open" and record --all's "--all: q-esc is left out: DIR/..." with each
#     control character, the C1 and the invalid byte shown as '?', the newline as a space, the
#     accent kept; no line starts with the forged text;
#   - list --json keeps the text exact (escaped as JSON: jq reads back the raw path, the
#     invalid byte as U+FFFD).
echo "collect: a process's command line reaches no terminal as escapes or forged lines through list and record --all"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (the fake QEMU is a root-owned binary, as a real one is)"; exit 77; }
export LC_ALL=C

ESC=$(printf '\033') BEL=$(printf '\007') C1=$(printf '\302\233') ACC=$(printf '\303\251') BAD=$(printf '\377')
NL='
'
# The fake QEMU: a root-owned copy named qemu-system-x86_64 in a root-owned 0755 directory.
mkdir -p "$WORK/bin"
chmod 0755 "$WORK/bin"
cp "$FAKE" "$WORK/bin/qemu-system-x86_64"
chmod 0755 "$WORK/bin/qemu-system-x86_64"
QEMU=$WORK/bin/qemu-system-x86_64

H="e${ESC}]0;pwned${BEL}${ESC}[2J${C1}caf${ACC}${BAD}${NL}virtio-trace-collect list: forged"
SAFE="e?]0;pwned??[2J?caf${ACC}? virtio-trace-collect list: forged"
D=$WORK/$H
mkdir -p "$D" "$WORK/f1"
for f in trace-path-cpu0.in trace-path-cpu0.out trace-path-cpu1.in trace-path-cpu1.out agent-ctl-path.out; do
	mkfifo -m 0600 "$D/$f" || fail "mkfifo $f"
done

# qemu NAME ARGS... -- QEMU-ARGS...: the fake QEMU (its own ports elsewhere, unused)
qemu() {
	fake_as "$QEMU" "$@"
}
# (The paths hold a newline: the arguments go through "$@", not through word splitting.)
set -- -name q-esc -device virtio-serial-pci,id=vser0 \
	-chardev "pipe,id=c0,path=$D/trace-path-cpu0" -device virtserialport,chardev=c0,name=trace-path-cpu0 \
	-chardev "pipe,id=c1,path=$D/trace-path-cpu1" -device virtserialport,chardev=c1,name=trace-path-cpu1 \
	-chardev "pipe,id=c2,path=$D/agent-ctl-path" -device virtserialport,chardev=c2,name=agent-ctl-path
qemu q-esc --fifo "$WORK/f1" --fixture "$DATA/cap-guest" --repeat 0 -- "$@"
# clean FILE WHAT: no control byte but newlines, no DEL, no C1, valid UTF-8 only
clean() {
	n=$(grep -c "$ESC" "$1")
	[ "$n" = 0 ] || { cat -v "$1" | head -5; fail "$2: $n lines hold ESC"; }
	if LC_ALL=C grep -q "$(printf '[\001-\011\013-\037\177]')" "$1"; then
		cat -v "$1" | head -5
		fail "$2: a control character (BEL, CR, ...) is printed raw"
	fi
	grep -q "$C1" "$1" && fail "$2: a C1 control (U+009B) is printed raw"
	iconv -f UTF-8 -t UTF-8 "$1" >/dev/null 2>&1 || { cat -v "$1" | head -5; fail "$2: invalid UTF-8 is printed"; }
	grep -q '^virtio-trace-collect list: forged' "$1" && { cat -v "$1"; fail "$2: a forged line"; }
	return 0
}

"$COLLECT" list --no-libvirt q-esc >"$WORK/list.out" 2>"$WORK/list.err"
rc=$?
sed 's/^/  | /' "$WORK/list.out" | cat -v
[ $rc = 0 ] || { show "$WORK/list.err"; fail "list exited $rc"; }
clean "$WORK/list.out" "list (stdout)"
clean "$WORK/list.err" "list (stderr)"
REFUSED="agent-ctl-path.out is not a FIFO the QEMU (pid $FAKE_PID) has open"
want="  q-esc: $WORK/$SAFE/$REFUSED"
[ "$(grep -c -x -F -- "$want" "$WORK/list.out")" = 1 ] ||
	{ cat -v "$WORK/list.out"; fail "list: no line '$want' (the path made safe)"; }

"$COLLECT" list --no-libvirt --json q-esc >"$WORK/list.json" 2>"$WORK/list.jerr" || fail "list --json exited $?"
clean "$WORK/list.json" "list --json"
clean "$WORK/list.jerr" "list --json (stderr)"
got=$(jq -r '.guests[] | select(.name == "q-esc") | .agent.why' "$WORK/list.json")
# (The invalid byte becomes U+FFFD: JSON holds only valid UTF-8.)
J=$WORK/$(printf '%s' "$H" | sed "s/$BAD/$(printf '\357\277\275')/")
[ "$got" = "$J/$REFUSED" ] ||
	{ echo "$got" | cat -v; fail "list --json: the why is not the path as it is (JSON escapes it, keeps it)"; }

"$COLLECT" record --all="q-esc" -o "$WORK/out" -d 1 >"$WORK/all.out" 2>"$WORK/all.err"
rc=$?
sed 's/^/  | /' "$WORK/all.err" | cat -v
[ $rc = 1 ] || { show "$WORK/all.err"; fail "record --all exited $rc, want 1 (nothing to record)"; }
clean "$WORK/all.out" "record --all (stdout)"
clean "$WORK/all.err" "record --all (stderr)"
want="virtio-trace-collect record: --all: q-esc is left out: $WORK/$SAFE/$REFUSED"
[ "$(grep -c -x -F -- "$want" "$WORK/all.err")" = 1 ] ||
	{ cat -v "$WORK/all.err"; fail "record --all: no line '$want'"; }
echo "PASS"
