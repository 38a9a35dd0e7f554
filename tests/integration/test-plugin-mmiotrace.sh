#!/bin/sh
# Proves: with plugin_mmiotrace.so in TRACEEVENT_PLUGIN_DIR, trace-cmd report prints the
# mmiotrace tracer's entries as mmiotrace users read them (R/W/UNKNOWN width map phys value
# pc, MAP/UNMAP map phys virt len), resolves pc through the file's kallsyms, says when a
# record is too short for its fields, and loads it from that directory; with plugins
# disabled (-N) the same file prints the kernel's bare numbers. The file is vt-mkdat's,
# from the guest fixture's formats (mmiotrace_rw id 7, mmiotrace_map id 8) and one page of
# entries built here.
echo "plugin_mmiotrace: trace-cmd report prints mmiotrace entries as R/W/MAP/UNMAP lines"
: "${VT_SRCDIR:?run through make check}" "${VT_BUILDDIR:?run through make check}"
command -v trace-cmd >/dev/null 2>&1 || { echo "SKIP: trace-cmd is not installed"; exit 77; }
command -v perl >/dev/null 2>&1 || { echo "SKIP: perl is not installed"; exit 77; }
PLUGIN=$VT_BUILDDIR/plugins/plugin_mmiotrace.so
[ -f "$PLUGIN" ] || { echo "FAIL: $PLUGIN is not built"; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/vt-plugin.XXXXXX") || exit 1
trap '[ -n "$KEEP" ] || rm -rf "$WORK"' EXIT
fail() {
	echo "FAIL: $*"
	exit 1
}

cap=$WORK/cap
mkdir -p "$cap"
cp -r "$VT_SRCDIR/tests/data/cap-guest/formats" "$VT_SRCDIR/tests/data/cap-guest/header_page" \
	"$VT_SRCDIR/tests/data/cap-guest/header_event" "$VT_SRCDIR/tests/data/cap-guest/saved_cmdlines" \
	"$VT_SRCDIR/tests/data/cap-guest/trace_clock" "$VT_SRCDIR/tests/data/cap-guest/uname" "$cap/"
grep -q '^ID: 7$' "$cap/formats/ftrace/mmiotrace_rw" && grep -q '^ID: 8$' "$cap/formats/ftrace/mmiotrace_map" ||
	fail "the fixture's mmiotrace ids are not 7 and 8"
echo 1 >"$cap/nr_cpus"
printf 'ffffffffc0012340 t e1000_read_phy_reg\t[e1000]\nffffffffc0012400 t e1000_write_reg\t[e1000]\nffffffffc0012500 t e1000_probe\t[e1000]\n' \
	>"$cap/kallsyms"
# One 4096-byte page: u64 timestamp, u64 commit (data length), then events: a u32 header
# (type_len = payload words, time delta << 5) and the payload (u16 type, u8 flags,
# u8 preempt count, s32 pid, then the fields). Pid 1986 is "bash" in saved_cmdlines.
perl -e '
my $d = "";
sub ev { my ($p) = @_; $p .= "\0" x ((4 - length($p) % 4) % 4); $d .= pack("V", (length($p) / 4) | (1000 << 5)) . $p }
sub rw { my ($phys, $val, $pc, $map, $op, $w) = @_;
	ev(pack("vCCl<", 7, 0, 0, 1986) . pack("Q<Q<Q<l<CC", $phys, $val, $pc, $map, $op, $w)) }
sub mapev { my ($phys, $virt, $len, $map, $op) = @_;
	ev(pack("vCCl<", 8, 0, 0, 1986) . pack("Q<Q<Q<l<C", $phys, $virt, $len, $map, $op)) }
mapev(0xfebc0000, 0xffffc90000080000, 0x20000, 1, 3);
rw(0x20040008, 0x80080783, 0xffffffffc0012358, 1, 1, 4);
rw(0xfebc00d0, 0x1f, 0xffffffffc0012410, 1, 2, 2);
rw(0xfebc0010, 0x0fb702, 0, 1, 5, 0);
rw(0xfebc0014, 0x7, 0xffffffff81000000, -1, 9, 1);
mapev(0, 0xffffc90000080000, 0, 1, 4);
mapev(0x1000, 0x2000, 0x10, 2, 7);
ev(pack("vCCl<", 7, 0, 0, 1986) . pack("Q<Q<Q<", 0xfebc0000, 1, 2));	# no map_id, opcode, width
print pack("Q<Q<", 1000000, length($d)) . $d . "\0" x (4080 - length($d));
' >"$cap/cpu0.raw" || fail "cannot build the page"
[ "$(wc -c <"$cap/cpu0.raw")" = 4096 ] || fail "the page is not 4096 bytes"
"$VT_BUILDDIR/tests/tools/vt-mkdat" -i "$cap" -o "$WORK/mmio.dat" >/dev/null || fail "vt-mkdat"

cat >"$WORK/want" <<'EOF'
mmiotrace_map: MAP map=1 phys=0xfebc0000 virt=0xffffc90000080000 len=0x20000
mmiotrace_rw: R 4 map=1 phys=0x20040008 value=0x80080783 pc=0xffffffffc0012358 <e1000_read_phy_reg+0x18>
mmiotrace_rw: W 2 map=1 phys=0xfebc00d0 value=0x1f pc=0xffffffffc0012410 <e1000_write_reg+0x10>
mmiotrace_rw: UNKNOWN 0 map=1 phys=0xfebc0010 value=0xfb702 pc=0x0
mmiotrace_rw: UNKNOWN 1 map=-1 phys=0xfebc0014 value=0x7 pc=0xffffffff81000000 opcode=9
mmiotrace_map: UNMAP map=1 virt=0xffffc90000080000
mmiotrace_map: UNKNOWN map=2 phys=0x1000 virt=0x2000 len=0x10 opcode=7
mmiotrace_rw: [truncated record: 32 bytes, no map_id]
EOF
# "bash-1986 [000] TS: EVENT: TEXT" -> "EVENT: TEXT", the event name's padding squeezed.
strip() {
	grep -E '^ *bash-1986 +\[000\]' "$1" | sed -E 's/^ *bash-1986 +\[000\] +[0-9.]+: +//; s/^([a-z_]+): +/\1: /; s/ +$//'
}

# A directory with only our plugin, so that the line below proves where it came from.
mkdir "$WORK/plugins"
ln -s "$PLUGIN" "$WORK/plugins/plugin_mmiotrace.so"
TRACEEVENT_PLUGIN_DIR=$WORK/plugins trace-cmd report --verbose=all -i "$WORK/mmio.dat" \
	>"$WORK/with.txt" 2>"$WORK/with.err" || { cat "$WORK/with.err"; fail "trace-cmd report exited $?"; }
grep -q "registering plugin: $WORK/plugins/plugin_mmiotrace.so" "$WORK/with.err" "$WORK/with.txt" ||
	{ cat "$WORK/with.err"; fail "trace-cmd did not load the plugin from TRACEEVENT_PLUGIN_DIR"; }
strip "$WORK/with.txt" >"$WORK/got"
echo "with the plugin: $(wc -l <"$WORK/got") mmiotrace lines"
cat "$WORK/got"
diff -u "$WORK/want" "$WORK/got" || fail "trace-cmd report with the plugin differs from the expected lines"

# Plugins off: the kernel's print fmt ("%lx %lx %lx %d %x %x"), whatever is installed.
trace-cmd report -N -i "$WORK/mmio.dat" >"$WORK/without.txt" 2>/dev/null || fail "trace-cmd report -N"
strip "$WORK/without.txt" | sed -n 2p >"$WORK/raw"
echo "without plugins: $(cat "$WORK/raw")"
[ "$(cat "$WORK/raw")" = "mmiotrace_rw: 20040008 80080783 ffffffffc0012358 1 1 4" ] ||
	fail "without plugins the read prints '$(cat "$WORK/raw")'"

# The same file as a run's guest: report --json's mmiotrace object as doc/report.schema.json says.
COLLECT=$VT_BUILDDIR/host-collector/virtio-trace-collect
if [ -x "$COLLECT" ] && command -v jq >/dev/null 2>&1 && python3 -c 'import jsonschema' 2>/dev/null; then
	mkdir "$WORK/run" && cp "$WORK/mmio.dat" "$WORK/run/guest-fx.dat" || fail "making a run directory"
	printf '{"tool":"fixture","version":"0","guests":[{"name":"fx","file":"guest-fx.dat"}]}\n' \
		>"$WORK/run/manifest.json"
	"$COLLECT" report --json "$WORK/run" >"$WORK/report.json" || fail "report --json exited $?"
	jq -e '.traces[0].mmiotrace | (.map_list | length) > 0 and (.registers | length) > 0' \
		"$WORK/report.json" >/dev/null || fail "report --json shows no mmiotrace maps and registers"
	python3 "$VT_SRCDIR/scripts/validate-json.py" "$VT_SRCDIR/doc/report.schema.json" "$WORK/report.json" ||
		fail "report --json does not match doc/report.schema.json"
else
	echo "note: no collector, jq or python3-jsonschema: report --json's mmiotrace object not checked"
fi
echo "PASS"
