#!/bin/sh
# Proves: the collector's folders depend on each other one way only, as collect.h draws them:
#   check -> record, setup; record -> store, setup, report (livestat.c runs report's vCPU state
#   machine on live events); report -> store; daemon -> setup (it finds guests with list.c and
#   runs `record` as a child, never calls it); store and setup call no
#   other folder; no folder calls check or daemon; every folder may use the shared base
#   (libcollect.a) and lib/.
# Checked twice, so that neither a header nor a call slips through:
# - includes: no file in a folder includes a header of a folder it may not use;
# - symbols: no object of a folder's library leaves undefined a symbol that a library it may
#   not use defines (what the linker would resolve across the line).
# Also: each folder's library exists, and the executable's main.c is only a command table.
# And within record/, module by module: no new include cycle (see "record/'s modules" below),
# and its private headers refuse other folders.
echo "layering: check -> record, setup; record -> store, setup, report; report -> store; daemon -> setup; store and setup use no other folder"
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
	check) echo "store report daemon" ;;
	record) echo "check daemon" ;;
	store) echo "record setup report check daemon" ;;
	setup) echo "record store report check daemon" ;;
	report) echo "record setup check daemon" ;;
	daemon) echo "record store report check" ;;
	esac
}

for f in check record store setup report daemon; do
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
for x in check record store setup report daemon; do
	nm --defined-only -g "$B/$x/lib$x.a" 2>/dev/null | awk 'NF == 3 { print $3 }' | sort -u >"$WORK/def-$x"
	nm -u "$B/libcollect.a" | awk '{ print $NF }' | sort -u >"$WORK/undef-base"
	comm -12 "$WORK/undef-base" "$WORK/def-$x" >"$WORK/cross"
	[ ! -s "$WORK/cross" ] || fail "libcollect.a calls into $x/: $(head -n 5 "$WORK/cross" | tr '\n' ' ')"
done

# main.c dispatches; it defines nothing but main().
defs=$(nm --defined-only -g "$B/virtio_trace_collect-main.o" 2>/dev/null | awk 'NF == 3 { print $3 }' | tr '\n' ' ')
[ "$defs" = "main " ] || fail "main.c defines more than main(): $defs"

# record/'s modules: no new include cycle. A module is a record/ header and the files that
# implement it: X.h, X.c, X-int.h and X-*.c when X-* has no header of its own (session.c and
# session-*.c are one module), and a .c without a header of its own belongs to the record/
# header without a .c that it includes (kvm.c and tscrate.c are hostclock). Module A depends
# on B when a file of A includes a header of B ("B.h", record/ headers only).
# When the check came (issue 38), 11 of record's modules formed one
# knot with 10 two-way cycles, and qmp <-> record came with --kvm-exits; lastboot-file <->
# session is gone (lastboot_save() takes the guest's name and bundle). Then the options went
# to recopts.h and the host TSC rate to hostclock.h (hostrec, lastboot-file, attach and live
# need no record.h or sync.h), the streams registered with the engine as readers of their
# own (engine.c knows no stream), the compressor became the stream's (stream-compress.c),
# QMP hands the vCPU threads to its owner, and attach takes the guest's ports (struct
# guest_link) and control descriptors, not the guest: 4 modules and 3 pairs were left. QMP
# then took the part of the guest it follows (struct qmp_guest: its name, link, QEMU's
# state, the migration's times and a handler), not the guest: 3 modules and 2 pairs were
# left. What a guest sees of its `record` (struct recording, record_fds_claim()) then went
# to recording.h: the sessions and the clock include no record.h, 2 modules and 1 pair were
# left. Last, struct guest went to guest.h (data the session drives and the clock keeps) and
# the clock saves the sync file through g->sync.save, not spool_save_sync(): sync*.c include
# no session.h and call no session, and no cycle is left: both lists are empty. Cycles
# are listed here and only here; the check fails on a two-way cycle not in RECORD_PAIRS and on a
# module in a cycle (of any length) not in RECORD_KNOT, and says which listed ones are gone
# so that the lists shrink as cycles are broken. What it does not see: a new longer cycle
# among modules already in the knot made of one-way dependencies only.
RECORD_PAIRS=""
RECORD_KNOT=""

# record_module DIR FILE: the module FILE (in DIR) belongs to.
record_module() {
	s=${2%.*}
	case $s in *-int) s=${s%-int} ;; esac
	if [ -f "$1/$s.h" ]; then echo "$s"; return; fi
	p=${s%%-*}
	if [ "$p" != "$s" ] && [ -f "$1/$p.h" ]; then echo "$p"; return; fi
	h=$(sed -n 's/^#include "\([a-z0-9_-]*\)\.h".*/\1/p' "$1/$2" | while read -r h; do
		if [ -f "$1/$h.h" ] && [ ! -f "$1/$h.c" ]; then echo "$h"; break; fi
	done)
	echo "${h:-$s}"
}

# record_edges DIR: "A B" for each module A that includes a header of module B.
record_edges() {
	for f in "$1"/*.c "$1"/*.h; do
		f=${f##*/}
		m=$(record_module "$1" "$f")
		sed -n 's/^#include "\([a-z0-9_-]*\.h\)".*/\1/p' "$1/$f" | while read -r h; do
			[ -f "$1/$h" ] || continue
			t=$(record_module "$1" "$h")
			[ "$t" = "$m" ] || echo "$m $t"
		done
	done | sort -u
}

# record_cycles DIR: "pair A:B" for each two-way dependency (A < B), "knot M" for each module
# that reaches itself (the transitive closure of a graph of twenty nodes).
record_cycles() {
	record_edges "$1" | awk '
	{ n[$1] = 1; n[$2] = 1; r[$1, $2] = 1; e[$1, $2] = 1 }
	END {
		for (k in n) for (i in n) if ((i, k) in r) for (j in n) if ((k, j) in r) r[i, j] = 1
		for (i in n) for (j in n) if (i < j && (i, j) in e && (j, i) in e) print "pair " i ":" j
		for (i in n) if ((i, i) in r) print "knot " i
	}' | sort
}

# record_check DIR: the cycles in DIR not listed; prints them, fails if any.
record_check() {
	record_cycles "$1" >"$WORK/cycles" || return 1
	bad=0
	while read -r kind what; do
		case $kind in
		pair) list=$RECORD_PAIRS ;;
		*) list=$RECORD_KNOT ;;
		esac
		if ! echo "$list" | tr -s ' \t' '\n' | grep -qxF "$what"; then
			echo "record/: a new include cycle: $kind $what" | sed 's/pair \([^:]*\):/\1 <-> /;s/knot /module /'
			bad=1
		fi
	done <"$WORK/cycles"
	return $bad
}

out=$(record_check "$HC/record") || fail "$out"
for p in $RECORD_PAIRS; do
	grep -qx "pair $p" "$WORK/cycles" ||
		echo "note: record/'s $p is no longer a two-way cycle: take it off RECORD_PAIRS"
done
for m in $RECORD_KNOT; do
	grep -qx "knot $m" "$WORK/cycles" ||
		echo "note: record/'s $m is in no cycle any more: take it off RECORD_KNOT"
done
nknot=$(grep -c '^knot ' "$WORK/cycles")
npair=$(grep -c '^pair ' "$WORK/cycles")

# The check itself can fail: a copy of record/ where kcache and livequiet (in no cycle) include
# each other's header is refused, naming the two.
mkdir "$WORK/planted" && cp "$HC"/record/*.[ch] "$WORK/planted/" &&
	sed -i '0,/^#include "/s//#include "livequiet.h"\n&/' "$WORK/planted/kcache.c" &&
	sed -i '0,/^#include "/s//#include "kcache.h"\n&/' "$WORK/planted/livequiet.c"
out=$(record_check "$WORK/planted")
case $out in
*"kcache <-> livequiet"*) ;;
*) fail "the module check misses a planted kcache <-> livequiet cycle: $out" ;;
esac

# record/'s private headers (struct guest, the session's parts) refuse any file built without
# record/'s VT_RECORD_INTERNAL, as another folder's are: the #error is what stops them.
for h in guest.h session.h session-int.h record-int.h sync-int.h live-int.h; do
	out=$(printf '#include "%s"\n' "$h" | cc -fsyntax-only -I"$HC/record" -I"$HC" -x c - 2>&1)
	case $out in
	*"#error"*"record/'s own"*) ;;
	*) fail "record/$h is not refused outside record/: $(echo "$out" | head -n 2)" ;;
	esac
done

# The check itself can fail: a planted call from store into record is seen.
printf 'void session_stop(void *g);\nvoid vt_layer_probe(void) { session_stop(0); }\n' >"$WORK/probe.c"
cc -c -o "$WORK/probe.o" "$WORK/probe.c" && ar cr "$WORK/libstore.a" "$WORK/probe.o" &&
	nm -u "$WORK/libstore.a" | awk '{ print $NF }' | sort -u >"$WORK/undef-probe"
nm --defined-only -g "$B/record/librecord.a" | awk 'NF == 3 { print $3 }' | sort -u >"$WORK/def-record"
[ -n "$(comm -12 "$WORK/undef-probe" "$WORK/def-record")" ] ||
	fail "the symbol check misses a planted store -> record call"

[ "$fails" = 0 ] || exit 1
if [ "$npair$nknot" = 00 ]; then
	echo "PASS: 6 folders, no call or include against the layering; record/: no include cycle"
else
	echo "PASS: 6 folders, no call or include against the layering; record/: no include cycle" \
		"but the $npair two-way ones and the knot of $nknot modules listed"
fi
