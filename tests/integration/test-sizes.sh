#!/bin/sh
# Proves: the size limits hold (issue 38): no function of the product (guest-agent/,
# host-collector/, lib/, plugins/) over 150 lines, none in host-collector/record/ over 100, and
# no file in record/ over 1200 lines. A function's lines run from the line that names it to its
# closing brace (kernel style: the body's braces at column 0).
# The product functions over 150 when the check came are listed in SHRINKING with the size they
# had: each may shrink, never grow, and the check says when one is under the limit and can leave
# the list, so that the list only gets shorter.
echo "sizes: functions <= 150 lines (record/: 100), record/ files <= 1200 lines"
: "${VT_SRCDIR:?run through make check}"
export LC_ALL=C
cd "$VT_SRCDIR" || exit 1
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

SHRINKING=""

# fn_lines FILE...: "LINES FILE NAME" for each function.
fn_lines() {
	awk '
	FNR == 1 { start = 0; inbody = 0 }
	!inbody && /^[A-Za-z_].*\(/ && !/;[ \t]*$/ {
		s = $0; sub(/\(.*/, "", s); n = split(s, w, /[ \t*]+/); name = w[n]; start = FNR
	}
	!inbody && /^\{/ && start { inbody = 1; next }
	inbody && /^\}/ { print FNR - start + 1, FILENAME, name; inbody = 0; start = 0 }
	' "$@"
}

files=$(find guest-agent host-collector lib plugins -name '*.c' 2>/dev/null | sort)
[ -n "$files" ] || { echo "FAIL: no source found under $VT_SRCDIR"; exit 1; }
nfn=0
for f in $files; do
	fn_lines "$f"
done >"${TMPDIR:-/tmp}/vt-sizes.$$"
trap 'rm -f "${TMPDIR:-/tmp}/vt-sizes.$$"' EXIT
while read -r n f name; do
	nfn=$((nfn + 1))
	case $f in
	host-collector/record/*) max=100 ;;
	*) max=150 ;;
	esac
	[ "$n" -gt "$max" ] || continue
	listed=$(echo "$SHRINKING" | awk -F: -v f="$f" -v n="$name" '$1 == f && $2 == n { print $3 }')
	if [ -z "$listed" ]; then
		fail "$f: $name() is $n lines, over $max"
	elif [ "$n" -gt "$listed" ]; then
		fail "$f: $name() grew to $n lines (SHRINKING allows it $listed, and only less)"
	fi
done <"${TMPDIR:-/tmp}/vt-sizes.$$"
for entry in $SHRINKING; do
	f=${entry%%:*}; rest=${entry#*:}; name=${rest%%:*}
	n=$(awk -v f="$f" -v n="$name" '$2 == f && $3 == n { print $1 }' "${TMPDIR:-/tmp}/vt-sizes.$$")
	if [ -z "$n" ]; then
		echo "note: $f: $name() is gone: take it off SHRINKING"
	elif [ "$n" -le 150 ]; then
		echo "note: $f: $name() is $n lines now: take it off SHRINKING"
	fi
done
[ "$nfn" -gt 500 ] || fail "only $nfn functions measured: the measure is broken"
for f in host-collector/record/*.[ch]; do
	n=$(wc -l <"$f")
	[ "$n" -le 1200 ] || fail "$f is $n lines, over 1200"
done

# The measure itself can fail: a planted 101-line function in a record/ file is found.
planted=${TMPDIR:-/tmp}/vt-sizes-planted.$$.c
{ echo "static int planted(void)"; echo "{"; i=0
  while [ $i -lt 98 ]; do echo "	i++;"; i=$((i + 1)); done; echo "}"; } >"$planted"
n=$(fn_lines "$planted" | awk '$3 == "planted" { print $1 }')
rm -f "$planted"
[ "$n" = 101 ] || fail "the measure takes a 101-line function for '$n' lines"

[ "$fails" = 0 ] || exit 1
echo "PASS: $nfn functions, none over its limit but the $(echo "$SHRINKING" | grep -c .) shrinking ones;" \
	"record/ files at most $(wc -l host-collector/record/*.[ch] | grep -v ' total$' | sort -n | tail -n 1 | awk '{ print $1 }') lines"
