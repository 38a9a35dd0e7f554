#!/bin/sh
# Proves: the collector's folders depend on each other one way only, as collect.h draws them:
#   check -> record, setup; record -> store, setup; report -> store; store and setup call no
#   other folder; no folder calls check; every folder may use the shared base (libcollect.a)
#   and lib/.
# Checked twice, so that neither a header nor a call slips through:
# - includes: no file in a folder includes a header of a folder it may not use;
# - symbols: no object of a folder's library leaves undefined a symbol that a library it may
#   not use defines (what the linker would resolve across the line).
# Also: each folder's library exists, and the executable's main.c is only a command table.
echo "layering: check -> record, setup; record -> store, setup; report -> store; store and setup use no other folder"
: "${VT_SRCDIR:?run through make check}" "${VT_BUILDDIR:?run through make check}"
export LC_ALL=C
HC=$VT_SRCDIR/host-collector
B=$VT_BUILDDIR/host-collector
WORK=$(mktemp -d "${TMPDIR:-/tmp}/vt-layer.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# The folders each folder may not use.
forbidden() {
	case $1 in
	check) echo "store report" ;;
	record) echo "report check" ;;
	store) echo "record setup report check" ;;
	setup) echo "record store report check" ;;
	report) echo "record setup check" ;;
	esac
}

for f in check record store setup report; do
	[ -d "$HC/$f" ] || { fail "no folder host-collector/$f"; continue; }
	lib=$B/$f/lib$f.a
	[ -f "$lib" ] || { fail "no library $lib"; continue; }
	for x in $(forbidden "$f"); do
		# A header of X named from F: "X/..." or, within X's own folder, nothing else names it.
		hits=$(grep -n "#include \"$x/" "$HC/$f"/*.[ch] 2>/dev/null)
		[ -z "$hits" ] || fail "$f/ includes $x/: $(echo "$hits" | head -n 3 | tr '\n' ' ')"
		nm --defined-only -g "$B/$x/lib$x.a" 2>/dev/null | awk 'NF == 3 { print $3 }' |
			sort -u >"$WORK/def-$x"
		nm -u "$lib" 2>/dev/null | awk '{ print $NF }' | sort -u >"$WORK/undef-$f"
		comm -12 "$WORK/undef-$f" "$WORK/def-$x" >"$WORK/cross"
		if [ -s "$WORK/cross" ]; then
			fail "$f/ calls into $x/: $(head -n 5 "$WORK/cross" | tr '\n' ' ')"
		fi
	done
done

# The shared base calls no folder at all.
for x in check record store setup report; do
	nm --defined-only -g "$B/$x/lib$x.a" 2>/dev/null | awk 'NF == 3 { print $3 }' | sort -u >"$WORK/def-$x"
	nm -u "$B/libcollect.a" | awk '{ print $NF }' | sort -u >"$WORK/undef-base"
	comm -12 "$WORK/undef-base" "$WORK/def-$x" >"$WORK/cross"
	[ ! -s "$WORK/cross" ] || fail "libcollect.a calls into $x/: $(head -n 5 "$WORK/cross" | tr '\n' ' ')"
done

# main.c dispatches; it defines nothing but main().
defs=$(nm --defined-only -g "$B/virtio_trace_collect-main.o" 2>/dev/null | awk 'NF == 3 { print $3 }' | tr '\n' ' ')
[ "$defs" = "main " ] || fail "main.c defines more than main(): $defs"

# The check itself can fail: a planted call from store into record is seen.
printf 'void session_stop(void *g);\nvoid vt_layer_probe(void) { session_stop(0); }\n' >"$WORK/probe.c"
cc -c -o "$WORK/probe.o" "$WORK/probe.c" && ar cr "$WORK/libstore.a" "$WORK/probe.o" &&
	nm -u "$WORK/libstore.a" | awk '{ print $NF }' | sort -u >"$WORK/undef-probe"
nm --defined-only -g "$B/record/librecord.a" | awk 'NF == 3 { print $3 }' | sort -u >"$WORK/def-record"
[ -n "$(comm -12 "$WORK/undef-probe" "$WORK/def-record")" ] ||
	fail "the symbol check misses a planted store -> record call"

[ "$fails" = 0 ] || exit 1
echo "PASS: 5 folders, no call or include against the layering"
