# Shared by the virtio-trace-collect integration tests (sourced, not run).
# The guests are vt-fake-agent processes serving fixture pages over stand-in
# ports; the oracle for what a file must contain is vt-mkdat + trace-cmd on
# the same fixture. Exit codes: 0 pass, 1 fail, 77 skip.

: "${VT_SRCDIR:?run through make check}" "${VT_BUILDDIR:?run through make check}"
TOOLS=$VT_BUILDDIR/tests/tools
DATA=$VT_SRCDIR/tests/data
COLLECT=$VT_BUILDDIR/host-collector/virtio-trace-collect
FAKE=$TOOLS/vt-fake-agent
T_PIDS=""
T_COLLECTORS=""
WORK=$(mktemp -d "${TMPDIR:-/tmp}/vt-collect.XXXXXX") || exit 1

t_cleanup() {
	for p in $T_PIDS; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in $T_PIDS; do
		_ti=0
		while kill -0 "$p" 2>/dev/null && [ $_ti -lt 20 ]; do
			sleep 0.1
			_ti=$((_ti + 1))
		done
		kill -KILL "$p" 2>/dev/null
	done
	# A collector that had to be killed cannot remove its host instance.
	for p in $T_COLLECTORS; do
		_inst=/sys/kernel/tracing/instances/virtio-trace-collect-$p
		[ -d "$_inst" ] && ! kill -0 "$p" 2>/dev/null && rmdir "$_inst" 2>/dev/null &&
			echo "note: removed $_inst left by killed collector $p"
	done
	[ -n "$KEEP" ] || rm -rf "$WORK"
}
trap t_cleanup EXIT
trap 'exit 1' INT TERM

fail() {
	echo "FAIL: $*"
	exit 1
}

# show FILE...: put a log into the test's output (for a failure's context)
show() {
	for _sf in "$@"; do
		[ -f "$_sf" ] || continue
		echo "--- $_sf"
		tail -n 40 "$_sf"
	done
}

need_tools() {
	command -v trace-cmd >/dev/null 2>&1 || { echo "SKIP: trace-cmd is not installed"; exit 77; }
	command -v jq >/dev/null 2>&1 || { echo "SKIP: jq is not installed"; exit 77; }
	[ -x "$FAKE" ] || fail "$FAKE is not built"
	# The collector is what these tests are about: its absence is a failure.
	[ -x "$COLLECT" ] || fail "$COLLECT is not built"
}

# need_agent: the real trace-agent, built, and this host's tracefs with instances/ writable
# (root), else skip (77); sets AGENT and T (the tracefs)
need_agent() {
	AGENT=$VT_BUILDDIR/guest-agent/trace-agent
	T=/sys/kernel/tracing
	[ -w $T/instances ] || { echo "SKIP: no writable tracefs at $T (needs root)"; exit 77; }
	[ -x "$AGENT" ] || fail "$AGENT is not built"
}

# need_host_tracefs SYS:EVENT...: skip (77) unless this host's tracefs can record host events:
# its instances/ writable (a private instance can be made: root) and each event's format there.
need_host_tracefs() {
	_nt=/sys/kernel/tracing _nok=true _nwhat= _nwhy="not root?"
	[ -w $_nt/instances ] || _nok=false
	for _ne in "$@"; do
		[ -r "$_nt/events/${_ne%%:*}/${_ne#*:}/format" ] || _nok=false
		_nwhat="${_nwhat:+$_nwhat and }$_ne"
		case $_ne in kvm:*) _nwhy="not root? no kvm module?" ;; esac
	done
	$_nok && return 0
	echo "SKIP: no writable $_nt/instances with $_nwhat ($_nwhy)"
	exit 77
}

# for_user AS [FILE...]: give the user of AS (a command prefix such as "setpriv
# --reuid=nobody --regid=nogroup --clear-groups") what a run as that user needs. The
# build and source trees may sit where only root can enter (a clone in /root, mode
# 0700): each FILE (a built program, a fixture file or directory) is copied into
# $FOR_USER, a directory of this test's own under $WORK that the user can reach, keeping
# its name ($FOR_USER/vt-fake-agent); $WORK becomes traversable (0711), not listable.
# The LSan suppressions that LSAN_OPTIONS names are copied there too (a sanitizer build's
# program stops at exit when it cannot read them). Skips (77), saying why, when the user
# cannot reach the copies either (a TMPDIR only root can enter).
for_user() {
	_fa=$1
	shift
	FOR_USER=$WORK/for-user
	chmod 0711 "$WORK" && mkdir -p "$FOR_USER" && chmod 0755 "$FOR_USER" || fail "cannot make $FOR_USER"
	for _ff in "$@"; do
		cp -R "$_ff" "$FOR_USER/" && chmod -R a+rX "$FOR_USER/${_ff##*/}" || fail "cannot copy $_ff into $FOR_USER"
	done
	case $LSAN_OPTIONS in *suppressions=*)
		_fs=${LSAN_OPTIONS#*suppressions=}
		_fs=${_fs%%:*}
		if [ -f "$_fs" ] && [ "$_fs" != "$FOR_USER/lsan.supp" ]; then
			cp "$_fs" "$FOR_USER/lsan.supp" && chmod 0644 "$FOR_USER/lsan.supp" || fail "cannot copy $_fs"
			LSAN_OPTIONS=$(printf '%s' "$LSAN_OPTIONS" | sed "s|suppressions=$_fs|suppressions=$FOR_USER/lsan.supp|")
			export LSAN_OPTIONS
		fi
	esac
	# shellcheck disable=SC2086
	_fw=$($_fa id -un 2>/dev/null) || fail "cannot run id as another user ($_fa)"
	_fr=$FOR_USER
	for _ff in "$@"; do
		_fr="$_fr $FOR_USER/${_ff##*/}"
	done
	for _ff in $_fr; do
		# shellcheck disable=SC2086
		$_fa test -r "$_ff" || {
			echo "SKIP: the user $_fw cannot reach $_ff (\$WORK is under ${TMPDIR:-/tmp}: set TMPDIR to a directory others may enter)"
			exit 77
		}
	done
}

# track PID: kill it at exit
track() {
	T_PIDS="$T_PIDS $1"
}

# fake NAME ARGS...: start a fake agent in the background; its stderr goes to
# $WORK/NAME.fake; $FAKE_PID is its pid. Waits until its ports exist (except
# in --connect mode, where it waits for the collector's listeners itself).
fake() {
	fake_as "$FAKE" "$@"
}

# fake_as BIN NAME ARGS...: fake(), with BIN for the fake agent (a copy of it, e.g. a root-owned
# qemu-system-x86_64 that list finds in /proc as a QEMU)
fake_as() {
	_fb=$1
	_fn=$2
	shift 2
	: >"$WORK/$_fn.fake"
	"$_fb" --name "$_fn" "$@" 2>"$WORK/$_fn.fake" &
	FAKE_PID=$!
	track $FAKE_PID
	case " $* " in
	*" --connect "*) return 0 ;;
	esac
	_fi=0
	while ! grep -q 'ports ready' "$WORK/$_fn.fake"; do
		kill -0 $FAKE_PID 2>/dev/null || { show "$WORK/$_fn.fake"; fail "fake agent $_fn died"; }
		[ $_fi -lt 100 ] || fail "fake agent $_fn: no ports after 10 s"
		sleep 0.1
		_fi=$((_fi + 1))
	done
}

# fake_end PID: let a fake agent exit after its BYE (or EOF), else SIGTERM it;
# either way it prints its totals
fake_end() {
	_ei=0
	while kill -0 "$1" 2>/dev/null && [ $_ei -lt 50 ]; do
		sleep 0.1
		_ei=$((_ei + 1))
	done
	kill -TERM "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

# fake_total NAME CPU pages|bytes: what the fake agent sent (its exit summary)
fake_total() {
	awk -v c="cpu$2" -v k="$3" '$2 == "total" && $3 == c {
		for (i = 4; i < NF; i++) if ($i == k) v = $(i + 1) } END { print v }' "$WORK/$1.fake"
}

# fake_stats NAME CPU pages|bytes: what its STATS said for CPU
fake_stats() {
	awk -v c="cpu$2" -v k="$3" '$2 == "STATS" && $3 == c {
		for (i = 4; i < NF; i++) if ($i == k) v = $(i + 1) } END { print v }' "$WORK/$1.fake"
}

# collect OUTNAME ARGS...: run `virtio-trace-collect record ARGS`, bounded:
# SIGTERM after $COLLECT_LIMIT (60) s, SIGKILL 10 s later; output in $WORK/OUTNAME.log, exit
# status in $RC (128 + signal when it had to be stopped).
collect() {
	collect_start "$@"
	collect_wait "${COLLECT_LIMIT:-60}"
}

# collect_start OUTNAME ARGS...: collect() without the wait: record runs in the background as
# $COLLECT_PID (tracked, its instance removed at the end if it had to be killed); collect_wait
# waits for it
collect_start() {
	_cl=$WORK/$1.log
	shift
	"$COLLECT" record "$@" >"$_cl" 2>&1 &
	COLLECT_PID=$!
	track $COLLECT_PID
	T_COLLECTORS="$T_COLLECTORS $COLLECT_PID"
}

# collect_wait SECS: wait for $COLLECT_PID as collect() does; sets $RC
collect_wait() {
	_cw=0
	while kill -0 $COLLECT_PID 2>/dev/null && [ $_cw -lt $(($1 * 10)) ]; do
		sleep 0.1
		_cw=$((_cw + 1))
	done
	if kill -0 $COLLECT_PID 2>/dev/null; then
		echo "collector still running after $1 s: SIGTERM" >>"$_cl"
		kill -TERM $COLLECT_PID
		_cw=0
		while kill -0 $COLLECT_PID 2>/dev/null && [ $_cw -lt 100 ]; do
			sleep 0.1
			_cw=$((_cw + 1))
		done
		kill -KILL $COLLECT_PID 2>/dev/null
	fi
	wait $COLLECT_PID
	RC=$?
}

# wait_log LOG PATTERN SECS WHAT: wait until LOG has a line matching PATTERN;
# after SECS seconds, show LOG and fail with WHAT. The tenths of a second it
# waited are left in _wl.
wait_log() {
	_wl=0
	until grep -q -- "$2" "$1" 2>/dev/null; do
		[ $_wl -lt $(($3 * 10)) ] || { show "$1"; fail "$4 (no '$2' within $3 s)"; }
		sleep 0.1
		_wl=$((_wl + 1))
	done
}

# wait_count LOG PATTERN N SECS WHAT: wait_log() for N lines matching PATTERN (or more); the
# tenths of a second it waited are left in _wc
wait_count() {
	_wc=0
	until [ "$(grep -c -- "$2" "$1" 2>/dev/null)" -ge "$3" ]; do
		[ $_wc -lt $(($4 * 10)) ] || { show "$1"; fail "$5 (fewer than $3 '$2' within $4 s)"; }
		sleep 0.1
		_wc=$((_wc + 1))
	done
}

# oracle FIXTURE K: per-CPU event counts of the fixture's pages times K, as
# trace-cmd reads them from a vt-mkdat file: sets ORACLE_CPU0, ORACLE_CPU1, ...
oracle() {
	_oo=$WORK/oracle-$(basename "$1")
	if [ ! -f "$_oo.txt" ]; then
		"$TOOLS/vt-mkdat" -i "$1" -o "$_oo.dat" >/dev/null || fail "vt-mkdat -i $1"
		trace-cmd report -i "$_oo.dat" >"$_oo.txt" 2>/dev/null || fail "trace-cmd report (oracle)"
	fi
	for _oc in 0 1 2 3; do
		_on=$(cpu_events "$_oo.txt" $_oc)
		eval "ORACLE_CPU$_oc=\$((_on * $2))"
	done
}

# cpu_events REPORT CPU: event lines of that CPU ("comm-pid [00N] ts: ...")
cpu_events() {
	grep -cE -- "-[0-9]+ +\[$(printf %03d "$2")\] *[0-9]+(\.[0-9]+)?: " "$1"
}

# all_events REPORT: every event line
all_events() {
	grep -cE -- '-[0-9]+ +\[[0-9]{3}\] *[0-9]+(\.[0-9]+)?: ' "$1"
}

# report OUT FILE...: trace-cmd report; warnings fail the test
report() {
	_ro=$1
	shift
	trace-cmd report "$@" >"$_ro" 2>"$_ro.err" || { show "$_ro.err"; fail "trace-cmd report $* exited $?"; }
	if grep -v '^$' "$_ro.err" | grep -q .; then
		show "$_ro.err"
		fail "trace-cmd report $* printed warnings"
	fi
}

# check_kallsyms_addrs DAT WHAT: DAT's kallsyms (trace-cmd dump --kallsyms) have addresses when
# root's /proc/kallsyms has (CAP_SYSLOG: with perf_event_paranoid > 1 they read as zeros
# without it), else fail, naming WHAT; $KS_ADDRS and $KS_ROOT are the two counts
check_kallsyms_addrs() {
	KS_ROOT=$(awk '$1 !~ /^0+$/ { n++ } END { print n + 0 }' /proc/kallsyms)
	trace-cmd dump --kallsyms "$1" >"$WORK/ks.txt" 2>/dev/null || fail "trace-cmd dump --kallsyms $1"
	KS_ADDRS=$(awk '$1 ~ /^[0-9a-f]+$/ && $1 !~ /^0+$/ { n++ } END { print n + 0 }' "$WORK/ks.txt")
	[ "$KS_ROOT" = 0 ] || [ "$KS_ADDRS" -gt 0 ] ||
		fail "$2 kallsyms have no address ($(wc -l <"$WORK/ks.txt") symbols; root sees $KS_ROOT)"
}

# man DIR JQ: a value from DIR/manifest.json
man() {
	jq -r "$2" "$1/manifest.json" 2>/dev/null
}

# guest_json DIR NAME JQ: a value from the manifest entry of guest NAME
guest_json() {
	jq -r --arg n "$2" ".guests[] | select(.name == \$n) | $3" "$1/manifest.json" 2>/dev/null
}

# check_exact DIR NAME FIXTURE K: the guest's file holds exactly the fixture's
# events K times over, per CPU, and the manifest's per-CPU bytes and pages are
# those the fake agent sent.
check_exact() {
	_d=$1 _n=$2
	oracle "$3" "$4"
	[ -f "$_d/guest-$_n.dat" ] || { show "$WORK"/*.log; fail "no $_d/guest-$_n.dat"; }
	report "$_d/$_n.txt" -i "$_d/guest-$_n.dat"
	for _c in 0 1; do
		_got=$(cpu_events "$_d/$_n.txt" $_c)
		eval "_want=\$ORACLE_CPU$_c"
		[ "$_got" = "$_want" ] || fail "guest $_n cpu$_c: trace-cmd report shows $_got events, the fixture x$4 has $_want"
		sent_b=$(fake_total "$_n" $_c bytes)
		sent_p=$(fake_total "$_n" $_c pages)
		[ -n "$sent_b" ] || fail "fake agent $_n printed no totals for cpu$_c"
		mb=$(guest_json "$_d" "$_n" ".cpus[] | select(.cpu == $_c) | .bytes")
		mp=$(guest_json "$_d" "$_n" ".cpus[] | select(.cpu == $_c) | .pages")
		me=$(guest_json "$_d" "$_n" ".cpus[] | select(.cpu == $_c) | .events")
		[ "$mb" = "$sent_b" ] || fail "guest $_n cpu$_c: manifest bytes $mb, the agent sent $sent_b"
		[ "$mp" = "$sent_p" ] || fail "guest $_n cpu$_c: manifest pages $mp, the agent sent $sent_p"
		[ "$me" = "$_want" ] || fail "guest $_n cpu$_c: manifest events $me, want $_want"
	done
}

# kill_midstream NAME PORTS OUT [FILE]: a fake guest NAME streaming into `record -o OUT`,
# SIGKILLed once 64 KiB of cpu1's pages (and FILE of its spool, if given) are in the spool.
kill_midstream() {
	fake "$1" --fifo "$2" --fixture "$DATA/cap-guest" --repeat 0 --rate 400K --retime
	_kp=$FAKE_PID
	"$COLLECT" record --chardev-dir "$2" --name "$1" -o "$3" --duration 60 --quiet \
		>"$WORK/rec.log" 2>&1 &
	_kc=$!
	track $_kc
	T_COLLECTORS=$_kc
	_ks=$3/.spool/guest-$1
	_ki=0
	while [ $_ki -lt 150 ]; do
		_kn=$(spool_pages "$_ks" 1 | wc -c)
		[ "$_kn" -ge 65536 ] && { [ -z "$4" ] || [ -f "$_ks/$4" ]; } && break
		kill -0 $_kc 2>/dev/null || { show "$WORK/rec.log"; fail "collector exited early"; }
		sleep 0.1
		_ki=$((_ki + 1))
	done
	[ "$_kn" -ge 65536 ] || { show "$WORK/rec.log"; fail "no pages spooled in 15 s ($_ks)"; }
	[ -z "$4" ] || [ -f "$_ks/$4" ] || fail "no $4 in the spool"
	kill -KILL $_kc
	wait $_kc 2>/dev/null
	kill -TERM $_kp
	wait $_kp 2>/dev/null
}

# spool_pages DIR CPU: the pages a trace's spool DIR holds for CPU, to stdout: its
# region of DIR/data (CPU N's at N * region, up to the first hole), then DIR/cpuN.pages
spool_pages() {
	_sr=$(sed -n 's/^region=//p' "$1/layout" 2>/dev/null)
	[ -f "$1/data" ] && [ -n "$_sr" ] && perl -e '
		my ($f, $r, $c) = @ARGV;
		open(my $fh, "<", $f) or exit 0;
		my $o = $c * $r;
		my $h = sysseek($fh, $o, 4);	# SEEK_HOLE; undef past EOF
		my $n = defined $h ? $h - $o : 0;
		$n = $r if $n > $r;
		sysseek($fh, $o, 0);
		while ($n > 0) {
			my $k = sysread($fh, my $b, $n > 65536 ? 65536 : $n) or last;
			print $b;
			$n -= $k;
		}' "$1/data" "$_sr" "$2"
	cat "$1/cpu$2.pages" 2>/dev/null
	return 0
}

# new_files_outside DIR...: files created under $WORK since $WORK/stamp that
# are not inside one of the DIRs and are not the tests' own logs
new_files_outside() {
	find "$WORK" -newer "$WORK/stamp" -type f | while read -r f; do
		ok=
		for d in "$@"; do
			case $f in "$d"/*) ok=1 ;; esac
		done
		case $f in *.log | *.fake | *.txt | *.err) ok=1 ;; esac
		[ -n "$ok" ] || echo "$f"
	done
}

# collect_unit FILE: virtio-trace-collect.service as the build generated it, or as its rule would
# (configure --with-systemdsystemunitdir=no: bindir /usr/local/bin), written to FILE, which
# UNIT names then; KC is the kallsyms cache record uses without --kallsyms-cache (its --help)
collect_unit() {
	UNIT=$1
	KC=$("$COLLECT" record --help 2>&1 | tr -s "\n " "  " | sed -nE 's/.*default: (\/[^ ]*) if it exists.*/\1/p')
	[ -n "$KC" ] || fail "record --help names no default kallsyms cache"
	if [ -f "$VT_BUILDDIR/systemd/virtio-trace-collect.service" ]; then
		cp "$VT_BUILDDIR/systemd/virtio-trace-collect.service" "$UNIT"
	else
		sed -e 's|@bindir[@]|/usr/local/bin|g' -e "s|@kcachedir[@]|$KC|g" \
			"$VT_SRCDIR/systemd/virtio-trace-collect.service.in" >"$UNIT"
	fi || fail "cannot write $UNIT"
}

# unit_value KEY: the values of KEY in $UNIT (collect_unit), on one line
unit_value() {
	sed -nE "s/^$1=//p" "$UNIT" | tr '\n' ' ' | sed 's/ *$//'
}

# unit_status_want: the lines CapEff, CapBnd, NoNewPrivs and Seccomp of /proc/PID/status (tabs as
# one space) of a root process confined as $UNIT says: its CapabilityBoundingSet= as far as this
# host's own bounding set has it, effective too, no_new_privs, a seccomp filter
unit_status_want() {
	_uc=$(unit_value CapabilityBoundingSet | tr '[:upper:]' '[:lower:]' | sed -E 's/cap_//g; s/ +/,+/g')
	_ub=$(setpriv --bounding-set "-all,+$_uc" grep '^CapBnd:' /proc/self/status | tr -s '\t' ' ')
	printf 'CapEff: %s\n%s\nNoNewPrivs: 1\nSeccomp: 2\n' "${_ub#CapBnd: }" "$_ub"
}
