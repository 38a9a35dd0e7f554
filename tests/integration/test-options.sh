#!/bin/sh
# Proves: the options of every subcommand agree in the three places a user meets them: the
# subcommand's --help, virtio-trace-collect(1) and the bash completion. For record and setup
# the long options (and each short option's long form) in --help equal those the man page
# lists (tags of RECORD OPTIONS and GUESTS; the setup item's option list) and those the
# completion offers; a short option means the same long option in every subcommand; report
# and recover take --help. Then the completion itself: subcommands, options, values. And
# trace-agent's --help lists the options trace-agent(8) does.
echo "collect options: --help, the man page and the bash completion list the same options; short options mean one thing"
: "${VT_SRCDIR:?run through make check}" "${VT_BUILDDIR:?run through make check}"
export LC_ALL=C
COLLECT=$VT_BUILDDIR/host-collector/virtio-trace-collect
MAN=$VT_SRCDIR/doc/virtio-trace-collect.1
COMP=$VT_SRCDIR/shell-completion/bash/virtio-trace-collect
WORK=$(mktemp -d "${TMPDIR:-/tmp}/vt-options.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
trap 'exit 1' INT TERM
failed=0
fail() { echo "FAIL: $*"; failed=1; }

# help_opts SUB: "LONG" or "-S LONG" per line, from the option column of SUB --help: an
# indented line starting with "-", up to the first run of two spaces (the description).
help_opts() {
	"$COLLECT" "$1" --help | help_parse
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

# man_opts SECTION-SET [PAGE]: the same from the man page's .TP tags; "record" = GUESTS and
# RECORD OPTIONS, "setup" = the tags between the setup item and its .RE, "agent" = OPTIONS
# (of PAGE: trace-agent(8)).
man_opts() {
	awk -v want="$1" '
	/^\.SH / { sec = $0; sub(/^\.SH +/, "", sec); gsub(/"/, "", sec); insetup = 0 }
	sec == "COMMANDS" && prev == ".TP" && $0 == ".B setup" { insetup = 1 }
	insetup && /^\.RE/ { insetup = 0 }
	prev == ".TP" {
		ok = (want == "record" && (sec == "GUESTS" || sec == "RECORD OPTIONS")) ||
		     (want == "setup" && insetup) || (want == "agent" && sec == "OPTIONS")
		if (ok) {
			s = $0; gsub(/\\-/, "-", s); gsub(/\\f[A-Z]/, "", s); gsub(/"/, " ", s)
			sub(/^\.[A-Z]+ +/, "", s)
			n = split(s, t, /[ ,\[\]|]+/); short = ""
			for (k = 1; k <= n; k++) {
				if (t[k] ~ /^-[A-Za-z]$/) short = t[k]
				else if (t[k] ~ /^--[a-z][a-z0-9-]*$/) { print (short != "" ? short " " : "") t[k]; short = "" }
			}
		}
	}
	{ prev = $0 }' "${2:-$MAN}" | sort -u
}

# comp_opts SUB: the words the completion offers after "virtio-trace-collect SUB -".
comp_opts() {
	bash -c '
	. "$1"
	COMP_WORDS=(virtio-trace-collect "$2" -); COMP_CWORD=2
	_virtio_trace_collect
	printf "%s\n" "${COMPREPLY[@]}"' sh "$COMP" "$1" | grep -v '^--$' | sort -u
}

for sub in record setup; do
	help_opts $sub >"$WORK/$sub.help"
	man_opts $sub >"$WORK/$sub.man"
	n=$(wc -l <"$WORK/$sub.help")
	echo "$sub: $n options in --help, $(wc -l <"$WORK/$sub.man") in the man page"
	[ "$n" -ge 10 ] || fail "$sub: only $n options found in --help (is the parser broken?)"
	diff "$WORK/$sub.help" "$WORK/$sub.man" >"$WORK/$sub.diff" ||
		{ sed 's/^/    /' "$WORK/$sub.diff"; fail "$sub: --help (<) and virtio-trace-collect(1) (>) differ"; }
	# The completion offers every long and short option --help has (and --version/-V only
	# at the top level, where they work).
	tr ' ' '\n' <"$WORK/$sub.help" | grep -v -e '^--version$' -e '^-V$' | sort -u >"$WORK/$sub.words"
	comp_opts $sub >"$WORK/$sub.comp"
	diff "$WORK/$sub.words" "$WORK/$sub.comp" >"$WORK/$sub.cdiff" ||
		{ sed 's/^/    /' "$WORK/$sub.cdiff"; fail "$sub: --help (<) and the bash completion (>) differ"; }
done

# A short option is one long option everywhere.
cat "$WORK/record.help" "$WORK/setup.help" | awk 'NF == 2 {
	if (($1 in long) && long[$1] != $2) { print "FAIL: " $1 " is " long[$1] " and " $2; bad = 1 }
	long[$1] = $2 }
	END { exit bad }' || failed=1

# report and recover: --help works and is offered; an unknown option is a usage error.
for sub in report recover; do
	"$COLLECT" $sub --help >/dev/null || fail "$sub --help exited $?"
	"$COLLECT" $sub --bogus >/dev/null 2>&1
	rc=$?
	[ $rc = 2 ] || fail "$sub --bogus exited $rc, want 2"
	comp_opts $sub | grep -qx -- --help || fail "the completion does not offer $sub --help"
done

# trace-agent: its --help and trace-agent(8) list the same options.
AGENT=$VT_BUILDDIR/guest-agent/trace-agent
if [ -x "$AGENT" ]; then
	"$AGENT" --help | help_parse >"$WORK/agent.help"
	man_opts agent "$VT_SRCDIR/doc/trace-agent.8" >"$WORK/agent.man"
	[ "$(wc -l <"$WORK/agent.help")" -ge 15 ] || fail "trace-agent --help: only $(wc -l <"$WORK/agent.help") options read"
	diff "$WORK/agent.help" "$WORK/agent.man" >"$WORK/agent.diff" ||
		fail "trace-agent --help (<) and trace-agent(8) (>) differ: $(tr '\n' ' ' <"$WORK/agent.diff")"
else
	fail "$AGENT is not built"
fi

# The completion: subcommands, values of a few options, directories for report.
mkdir -p "$WORK/d/outdir"
comp() { # comp WORD... : what the completion offers for the last word
	(cd "$WORK/d" && bash -c '. "$1"; shift; COMP_WORDS=(virtio-trace-collect "$@"); COMP_CWORD=$#
	_virtio_trace_collect; printf "%s\n" "${COMPREPLY[@]}"' sh "$COMP" "$@") | sort | tr '\n' ' '
}
[ "$(comp '')" = "--help --version -V -h record recover report setup " ] || fail "subcommands: '$(comp '')'"
[ "$(comp re)" = "record recover report " ] || fail "'re': '$(comp re)'"
[ "$(comp setup --backend '')" = "pipe unix unix-connect " ] || fail "setup --backend: '$(comp setup --backend '')'"
[ "$(comp setup --format '')" = "libvirt qemu " ] || fail "setup --format: '$(comp setup --format '')'"
[ "$(comp record --sync '')" = "auto kvm none offset probe " ] || fail "record --sync: '$(comp record --sync '')'"
[ "$(comp record -o out)" = "outdir " ] || fail "record -o: '$(comp record -o out)'"
[ "$(comp report out)" = "outdir " ] || fail "report DIR: '$(comp report out)'"
[ "$(comp record --chardev-dir d -- ech)" != "" ] || fail "record ... -- COMMAND: nothing offered"
case " $(comp record --dura) " in *" --duration "*) ;; *) fail "record --dura: '$(comp record --dura)'" ;; esac
[ "$failed" = 0 ] || exit 1
echo "PASS"
