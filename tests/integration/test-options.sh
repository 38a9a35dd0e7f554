#!/bin/sh
# Proves: the options of every subcommand agree in the three places a user meets them: the
# subcommand's --help, its own man page virtio-trace-collect-SUB(1) and the bash completion.
# For each of check, daemon, join, list, record, recover, report, setup and snapshot the long options (and each short option's long
# form) that --help lists, with -h/--help where the subcommand takes them, equal those its page
# lists (the tags of OPTIONS, and of GUESTS for record) and those its table declares; a short
# option means the same long option in every subcommand; an unknown option is a usage error.
# The overview page virtio-trace-collect(1) lists the top-level -V and -h, which work, and names
# every subcommand's page and virtio-trace-collect-files(5) (so do the subcommands' pages); every
# page renders without a warning. The completion offers each subcommand's options as its table
# declares them (`SUB --list-options`, undocumented: for this test) and no other, and a choice's
# words after it. Then the completion itself: subcommands, options, values. And
# trace-agent's --help lists the options trace-agent(8) does.
echo "collect options: each subcommand's --help, its man page and the bash completion list the same options; short options mean one thing"
: "${VT_SRCDIR:?run through make check}" "${VT_BUILDDIR:?run through make check}"
export LC_ALL=C
COLLECT=$VT_BUILDDIR/host-collector/virtio-trace-collect
MANDIR=$VT_SRCDIR/doc
SUBS="check daemon join list record recover report setup snapshot"
COMP=$VT_SRCDIR/shell-completion/bash/virtio-trace-collect
WORK=$(mktemp -d "${TMPDIR:-/tmp}/vt-options.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
trap 'exit 1' INT TERM
failed=0
fail() { echo "FAIL: $*"; failed=1; }

# help_opts SUB: "LONG" or "-S LONG" per line, from the option column of SUB --help: an
# indented line starting with "-", up to the first run of two spaces (the description); and
# "-h --help" when both work (recover's --help is a usage text with no option column).
help_opts() {
	{
		"$COLLECT" "$1" --help | help_parse
		"$COLLECT" "$1" -h >/dev/null 2>&1 && "$COLLECT" "$1" --help >/dev/null 2>&1 &&
			echo "-h --help"
	} | sort -u
}

# help_parse: help_opts' work on a --help text on stdin.
help_parse() {
	awk '
	/^(  |      )-/ {
		s = $0; sub(/^ +/, "", s)
		i = index(s, "  "); if (i) s = substr(s, 1, i - 1)
		n = split(s, t, /[ ,\[\]]+/); short = ""
		for (k = 1; k <= n; k++) {
			if (t[k] ~ /^-[A-Za-z]$/) short = t[k]
			else if (t[k] ~ /^--[a-z][a-z0-9-]*$/) { print (short != "" ? short " " : "") t[k]; short = "" }
		}
	}' | sort -u
}

# man_opts PAGE [SECTION]: the same from the .TP tags of PAGE's OPTIONS section, and of
# SECTION too when given (record's GUESTS).
man_opts() {
	awk -v also="${2:-OPTIONS}" '
	/^\.SH / { sec = $0; sub(/^\.SH +/, "", sec); gsub(/"/, "", sec) }
	prev == ".TP" {
		if (sec == "OPTIONS" || sec == also) {
			s = $0; gsub(/\\-/, "-", s); gsub(/\\f[A-Z]/, "", s); gsub(/"/, " ", s)
			sub(/^\.[A-Z]+ +/, "", s)
			n = split(s, t, /[ ,\[\]|]+/); short = ""
			for (k = 1; k <= n; k++) {
				if (t[k] ~ /^-[A-Za-z]$/) short = t[k]
				else if (t[k] ~ /^--[a-z][a-z0-9-]*$/) { print (short != "" ? short " " : "") t[k]; short = "" }
			}
		}
	}
	{ prev = $0 }' "$1" | sort -u
}

# comp_opts SUB: the words the completion offers after "virtio-trace-collect SUB -".
comp_opts() {
	bash -c '
	. "$1"
	COMP_WORDS=(virtio-trace-collect "$2" -); COMP_CWORD=2
	_virtio_trace_collect
	printf "%s\n" "${COMPREPLY[@]}"' sh "$COMP" "$1" | grep -v '^--$' | sort -u
}

# comp_values SUB OPT: the words the completion offers after "virtio-trace-collect SUB OPT ".
comp_values() {
	bash -c '
	. "$1"
	COMP_WORDS=(virtio-trace-collect "$2" "$3" ""); COMP_CWORD=3
	_virtio_trace_collect
	printf "%s\n" "${COMPREPLY[@]}"' sh "$COMP" "$1" "$2" | sort | tr '\n' ' '
}

for sub in $SUBS; do
	page=$MANDIR/virtio-trace-collect-$sub.1
	[ -f "$page" ] || { fail "$sub: no man page $page"; continue; }
	help_opts $sub >"$WORK/$sub.help"
	man_opts "$page" "$([ $sub = record ] && echo GUESTS)" >"$WORK/$sub.man"
	n=$(wc -l <"$WORK/$sub.help")
	echo "$sub: $n options in --help, $(wc -l <"$WORK/$sub.man") in virtio-trace-collect-$sub(1)"
	case $sub in	# the least each --help has, so that a broken parser cannot pass
	record|setup|check|daemon) min=10 ;; report|list) min=7 ;; join|snapshot) min=5 ;; recover) min=1 ;;
	esac
	[ "$n" -ge $min ] || fail "$sub: only $n options found in --help (is the parser broken?)"
	diff "$WORK/$sub.help" "$WORK/$sub.man" >"$WORK/$sub.diff" ||
		{ sed 's/^/    /' "$WORK/$sub.diff"; fail "$sub: --help (<) and virtio-trace-collect-$sub(1) (>) differ"; }
	# The completion offers every long and short option of the subcommand's table (what
	# `SUB --list-options` prints, the rows opt_parse() reads), and none it does not have.
	"$COLLECT" $sub --list-options >"$WORK/$sub.table" ||
		fail "$sub --list-options exited $?"
	awk -F '\t' '{ print $1; if ($2 != "-") print $2 }' "$WORK/$sub.table" | sort -u >"$WORK/$sub.words"
	[ "$(wc -l <"$WORK/$sub.words")" -ge $min ] || fail "$sub --list-options: only $(wc -l <"$WORK/$sub.words") words"
	comp_opts $sub >"$WORK/$sub.comp"
	diff "$WORK/$sub.words" "$WORK/$sub.comp" >"$WORK/$sub.cdiff" ||
		{ sed 's/^/    /' "$WORK/$sub.cdiff"; fail "$sub: its table (<) and the bash completion (>) differ"; }
	# --help lists the table's options (the top-level -V too, in record's).
	tr ' ' '\n' <"$WORK/$sub.help" | grep -v -e '^--version$' -e '^-V$' | sort -u |
		diff - "$WORK/$sub.words" >/dev/null || fail "$sub: --help and its table differ"
	# A choice's words are what the completion offers after the option (each spelling).
	awk -F '\t' '$3 == "choice" { print $1, $5; if ($2 != "-") print $2, $5 }' "$WORK/$sub.table" \
		>"$WORK/$sub.choices"
	while read -r opt words; do
		want=$(echo "$words" | tr ',' '\n' | sort | tr '\n' ' ')
		got=$(comp_values $sub "$opt")
		[ "$got" = "$want" ] || fail "$sub $opt: the completion offers '$got', the table '$want'"
		echo "$sub $opt: $want"
	done <"$WORK/$sub.choices"
done

# A short option is one long option everywhere.
for sub in $SUBS; do cat "$WORK/$sub.help"; done | awk 'NF == 2 {
	if (($1 in long) && long[$1] != $2) { print "FAIL: " $1 " is " long[$1] " and " $2; bad = 1 }
	long[$1] = $2 }
	END { exit bad }' || failed=1

# An unknown option is a usage error, in every subcommand.
for sub in $SUBS; do
	"$COLLECT" $sub --bogus >/dev/null 2>&1
	rc=$?
	[ $rc = 2 ] || fail "$sub --bogus exited $rc, want 2"
done

# A bad value is a usage error whose one line names the subcommand, the option, the value and
# what the option takes (before, record said only "Try ... --help").
bad_value() { # bad_value WANT ARGS...: record ARGS must exit 2 with the line WANT, then "Try"
	want=$1; shift
	"$COLLECT" record --chardev-dir "$WORK" "$@" >"$WORK/bv.out" 2>"$WORK/bv.err"
	rc=$?
	[ $rc = 2 ] && [ "$(sed -n 1p "$WORK/bv.err")" = "virtio-trace-collect record: $want" ] &&
		[ "$(sed -n 2p "$WORK/bv.err")" = "Try 'virtio-trace-collect record --help'." ] &&
		[ "$(wc -l <"$WORK/bv.err")" = 2 ] && [ ! -s "$WORK/bv.out" ] ||
		fail "record $*: exit $rc, said '$(head -c 300 "$WORK/bv.err" | tr '\n' '|')', want 'virtio-trace-collect record: $want'"
}
bad_value "-d/--duration 'abc': seconds, more than 0" -d abc
bad_value "-d/--duration '0': seconds, more than 0" -d 0
bad_value "-d/--duration '5s': seconds, more than 0" --duration 5s
bad_value "--max-size '10X': a size in bytes, more than 0, with an optional K, M or G suffix (e.g. 512M)" --max-size 10X
bad_value "--qemu-pid 'abc': a process id, a whole number above 0" --qemu-pid abc
bad_value "--qemu-pid '-5': a process id, a whole number above 0" --qemu-pid -5
bad_value "--buffer-size 'abc': KiB per CPU, a whole number from 1 to 4294967295" --buffer-size abc
bad_value "--stop-timeout '-1': seconds, more than 0" --stop-timeout -1
bad_value "--tsc-offset 'zz': an integer (decimal, or hexadecimal with 0x), within 64 bits" --tsc-offset zz
bad_value "unknown option '--bogus'" --bogus
# A guest's option before any guest: named as the option, not as its value.
"$COLLECT" record --qemu-pid 123 >"$WORK/bv.out" 2>"$WORK/bv.err"
rc=$?
[ $rc = 2 ] && [ "$(sed -n 1p "$WORK/bv.err")" = "virtio-trace-collect record: --qemu-pid must follow --chardev-dir, --ctl or --domain (it is that guest's)" ] ||
	fail "record --qemu-pid 123: exit $rc, said '$(head -c 300 "$WORK/bv.err" | tr '\n' '|')'"
bad_value "option '-o' needs a value" -o

# The overview page: its OPTIONS are the top-level -V and -h, which work, and it names every
# subcommand's page.
OVERVIEW=$MANDIR/virtio-trace-collect.1
printf '%s\n' "-V --version" "-h --help" | sort >"$WORK/top.want"
man_opts "$OVERVIEW" >"$WORK/top.man"
diff "$WORK/top.want" "$WORK/top.man" >/dev/null ||
	fail "virtio-trace-collect(1) OPTIONS: '$(tr '\n' ' ' <"$WORK/top.man")', want -V/--version and -h/--help"
for o in -V --version -h --help; do
	"$COLLECT" $o >/dev/null || fail "virtio-trace-collect $o exited $?"
done
# The program's help lists every subcommand, one line each; `help SUB` is SUB --help; an
# unknown subcommand is a usage error naming the closest (before, all three printed record's
# 131-line help).
"$COLLECT" --help >"$WORK/top.help"
"$COLLECT" help >"$WORK/top.help2"
cmp -s "$WORK/top.help" "$WORK/top.help2" || fail "'help' and '--help' differ"
n=$(grep -cE '^  [a-z]+ +[a-z]' "$WORK/top.help")
[ "$n" = "$(echo $SUBS | wc -w)" ] || fail "--help lists $n commands, want $(echo $SUBS | wc -w)"
for sub in $SUBS; do
	grep -qE "^  $sub +[a-z]" "$WORK/top.help" || fail "--help does not list $sub"
	"$COLLECT" help $sub >"$WORK/h1" 2>&1
	"$COLLECT" $sub --help >"$WORK/h2" 2>&1
	cmp -s "$WORK/h1" "$WORK/h2" && [ -s "$WORK/h1" ] || fail "'help $sub' is not '$sub --help'"
done
"$COLLECT" >/dev/null 2>"$WORK/none.err"
rc=$?
[ $rc = 2 ] && cmp -s "$WORK/none.err" "$WORK/top.help" || fail "no command: exit $rc, want 2 and the list on stderr"
unknown() { # unknown WORD WANT: WORD as a command exits 2 with WANT as its first line
	"$COLLECT" $1 >"$WORK/u.out" 2>"$WORK/u.err"
	rc=$?
	[ $rc = 2 ] && [ "$(head -n1 "$WORK/u.err")" = "$2" ] && [ ! -s "$WORK/u.out" ] ||
		fail "'$1': exit $rc, said '$(head -n1 "$WORK/u.err")', want '$2'"
}
unknown recrod "virtio-trace-collect: unknown command 'recrod'; did you mean record?"
unknown rec "virtio-trace-collect: unknown command 'rec'; did you mean record or recover?"
unknown hlp "virtio-trace-collect: unknown command 'hlp'; did you mean help?"
unknown xyzzy "virtio-trace-collect: unknown command 'xyzzy'"
unknown "help reprot" "virtio-trace-collect: unknown command 'reprot'; did you mean report?"
for sub in $SUBS; do
	grep -q "virtio-trace-collect-$sub (1)" "$OVERVIEW" ||
		fail "virtio-trace-collect(1) does not name virtio-trace-collect-$sub(1)"
done
# The recording directory's files have their page, virtio-trace-collect-files(5): the overview
# and every subcommand's page name it. Every page (that one too) renders without a warning and
# has a NAME line whatis can read.
for page in "$OVERVIEW" $(for sub in $SUBS; do echo "$MANDIR/virtio-trace-collect-$sub.1"; done); do
	grep -q 'virtio-trace-collect-files (5)' "$page" ||
		fail "${page##*/} does not name virtio-trace-collect-files(5)"
done
[ -f "$MANDIR/virtio-trace-collect-files.5" ] || fail "no $MANDIR/virtio-trace-collect-files.5"
for page in "$MANDIR"/*.[158]; do
	w=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null) && [ -z "$w" ] ||
		fail "man --warnings -l ${page##*/}: '$(printf '%s' "$w" | head -c 300 | tr '\n' '|')'"
	lexgrog "$page" >/dev/null 2>&1 || fail "lexgrog ${page##*/}: no NAME line whatis can read"
done

# trace-agent: its --help and trace-agent(8) list the same options.
AGENT=$VT_BUILDDIR/guest-agent/trace-agent
if [ -x "$AGENT" ]; then
	"$AGENT" --help | help_parse >"$WORK/agent.help"
	man_opts "$VT_SRCDIR/doc/trace-agent.8" >"$WORK/agent.man"
	[ "$(wc -l <"$WORK/agent.help")" -ge 15 ] || fail "trace-agent --help: only $(wc -l <"$WORK/agent.help") options read"
	diff "$WORK/agent.help" "$WORK/agent.man" >"$WORK/agent.diff" ||
		fail "trace-agent --help (<) and trace-agent(8) (>) differ: $(tr '\n' ' ' <"$WORK/agent.diff")"
	# A bad option: exit 2, the line naming it and a short usage line, not the whole help.
	"$AGENT" --bogus >"$WORK/agent.out" 2>"$WORK/agent.err"
	rc=$?
	[ $rc = 2 ] || fail "trace-agent --bogus exited $rc, want 2"
	[ "$(wc -l <"$WORK/agent.err")" = 2 ] && grep -q -- "--bogus" "$WORK/agent.err" &&
		grep -q '^Usage: trace-agent' "$WORK/agent.err" ||
		fail "trace-agent --bogus said: $(head -c 300 "$WORK/agent.err" | tr '\n' '|') (want 2 lines: the option, a usage line)"
	[ ! -s "$WORK/agent.out" ] || fail "trace-agent --bogus wrote to stdout"
else
	fail "$AGENT is not built"
fi

# The completion: subcommands, values of a few options, directories for report.
mkdir -p "$WORK/d/outdir"
comp() { # comp WORD... : what the completion offers for the last word
	(cd "$WORK/d" && bash -c '. "$1"; shift; COMP_WORDS=(virtio-trace-collect "$@"); COMP_CWORD=$#
	_virtio_trace_collect; printf "%s\n" "${COMPREPLY[@]}"' sh "$COMP" "$@") | sort | tr '\n' ' '
}
[ "$(comp '')" = "--help --version -V -h check daemon help join list record recover report setup snapshot " ] || fail "subcommands: '$(comp '')'"
[ "$(comp help re)" = "record recover report " ] || fail "help re: '$(comp help re)'"
[ "$(comp re)" = "record recover report " ] || fail "'re': '$(comp re)'"
[ "$(comp setup --backend '')" = "pipe unix unix-connect " ] || fail "setup --backend: '$(comp setup --backend '')'"
[ "$(comp setup --format '')" = "libvirt qemu " ] || fail "setup --format: '$(comp setup --format '')'"
[ "$(comp record --sync '')" = "auto kvm none offset probe " ] || fail "record --sync: '$(comp record --sync '')'"
[ "$(comp record -o out)" = "outdir " ] || fail "record -o: '$(comp record -o out)'"
[ "$(comp report out)" = "outdir " ] || fail "report DIR: '$(comp report out)'"
[ "$(comp join out)" = "outdir " ] || fail "join SRC: '$(comp join out)'"
[ "$(comp join -o out)" = "outdir " ] || fail "join -o: '$(comp join -o out)'"
[ "$(comp record --chardev-dir d -- ech)" != "" ] || fail "record ... -- COMMAND: nothing offered"
[ "$(comp check --chardev-dir out)" = "outdir " ] || fail "check --chardev-dir: '$(comp check --chardev-dir out)'"
case " $(comp record --dura) " in *" --duration "*) ;; *) fail "record --dura: '$(comp record --dura)'" ;; esac
[ "$failed" = 0 ] || exit 1
echo "PASS"
