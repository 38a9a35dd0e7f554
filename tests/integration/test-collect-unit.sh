#!/bin/sh
# Proves (issue 40): virtio-trace-collect.service as the build generates it passes
# `systemd-analyze verify` (offline, in a root of the test's own that holds the built
# executable at the unit's ExecStart= path) and `systemd-analyze security --offline=true`
# rates it below 3.4 with no setting it cannot parse; its ReadWritePaths= lists the kallsyms
# cache the record children use by default (it named /var/cache/virtio-trace whatever
# configure said). Then, as root with tracefs (no systemd runs here), the daemon runs confined
# as the unit says, as far as that can be done without systemd: the unit's
# CapabilityBoundingSet= (parsed from it), NoNewPrivileges=, UMask=0077; in a private mount
# namespace every mount read-only but /proc, /dev, /sys, the test's state directory (in place
# of /var/lib/virtio-trace: the daemon's state-dir), tracefs, the kallsyms cache and the
# RuntimeDirectory= (ProtectSystem=strict, ReadWritePaths=, ProtectHome=read-only),
# /sys/fs/cgroup read-only (ProtectControlGroups=), a private /tmp and /var/tmp
# (PrivateTmp=), a /dev of null, zero, full, random, urandom and tty (PrivateDevices=), its
# own hostname (ProtectHostname=); and the system call filter (tests/tools/vt-seccomp): the
# unit's SystemCallFilter= sets expanded by `systemd-analyze syscall-filter`, every other call
# EPERM, socket() AF_UNIX only (EAFNOSUPPORT), MemoryDenyWriteExecute= and
# RestrictNamespaces=. A probe shows each of these refusing what it should. Under all of that
# the daemon attaches a fake guest, `snapshot` seals one whose guest file trace-cmd reads with
# the fixture's events and whose host.dat has sched_switch, its host TSC rate taken as an
# unconfined record takes it, `daemon --status` answers, and SIGTERM to the daemon alone
# (KillMode=mixed) ends it with 0 within TimeoutStopSec=, its record children ended too,
# having written their files; the filter refused it and its children no call (perf_event_open
# was, before the unit allowed it); everything it wrote is 0600/0700 and nothing was written
# but in the state directory. test-collect-systemd has a real systemd (booted in
# systemd-nspawn) start and stop the unit itself and reads the same confinement from the daemon.
echo "collect-unit: virtio-trace-collect.service verifies, scores below 3.4, and the daemon works under its confinement"
: "${VT_SRCDIR:?run through make check}" "${VT_BUILDDIR:?run through make check}"
command -v systemd-analyze >/dev/null 2>&1 || { echo "SKIP: systemd-analyze (systemd) is not installed"; exit 77; }
systemd-analyze security --help 2>/dev/null | grep -q -- '--offline' ||
	{ echo "SKIP: this systemd-analyze has no --offline (systemd 250 or later)"; exit 77; }
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools
SECCOMP=$TOOLS/vt-seccomp

# The unit as the build makes it; KC the kallsyms cache the record children use by default.
collect_unit "$WORK/virtio-trace-collect.service"
# value KEY: the unit's values of KEY, on one line
value() {
	unit_value "$1"
}
case " $(value ReadWritePaths) " in *" $KC "* | *" -$KC "*) ;;
*) fail "ReadWritePaths=$(value ReadWritePaths) lacks $KC, the kallsyms cache record uses (ProtectSystem=strict: read-only)" ;;
esac

# verify: in a root of the test's own, the executable where ExecStart= says (no man pages:
# they are checked in doc/ instead; no dependencies: there is no systemd's tree to find).
exe=$(value ExecStart | cut -d' ' -f1)
mkdir -p "$WORK/root/etc/systemd/system" "$WORK/root${exe%/*}"
cp "$COLLECT" "$WORK/root$exe" && cp "$UNIT" "$WORK/root/etc/systemd/system/" || fail "cannot make the verify root"
if systemd-analyze verify --man=no --recursive-errors=no --root="$WORK/root" \
	virtio-trace-collect.service >"$WORK/verify.out" 2>&1; then
	[ ! -s "$WORK/verify.out" ] || { show "$WORK/verify.out"; fail "systemd-analyze verify warns"; }
	echo "systemd-analyze verify: clean"
elif grep -qiE 'unknown|failed to parse|invalid|ignoring|not executable' "$WORK/verify.out"; then
	show "$WORK/verify.out"
	fail "systemd-analyze verify rejects the unit"
else
	echo "systemd-analyze verify: not run here ($(head -n 1 "$WORK/verify.out"))"
fi
for m in $(value Documentation); do
	page=$(echo "${m#man:}" | sed -E 's/\(([0-9])\)$/.\1/')
	[ -f "$VT_SRCDIR/doc/$page" ] || fail "Documentation=$m: no doc/$page"
done

# security: the score, and the settings that weigh nothing in it checked by name.
systemd-analyze security --offline=true --no-pager "$UNIT" >"$WORK/sec.out" 2>"$WORK/sec.err"
score=$(sed -nE 's/.*Overall exposure level for virtio-trace-collect\.service: ([0-9]+\.[0-9]+).*/\1/p' "$WORK/sec.out")
[ -n "$score" ] || { show "$WORK/sec.out" "$WORK/sec.err"; fail "no overall exposure level in systemd-analyze's output"; }
echo "systemd-analyze security: $score ($(grep -c '^✗' "$WORK/sec.out") settings left open)"
if grep -iE 'unknown|failed to parse|invalid|ignoring' "$WORK/sec.err"; then
	fail "systemd-analyze cannot read some of the unit's settings (above)"
fi
# 3.3 with systemd 252 (3.2 without perf_event_open, which it counts as @debug); without any
# one of SystemCallFilter=, CapabilityBoundingSet=, RestrictAddressFamilies=,
# RestrictNamespaces=, PrivateDevices=, ProtectSystem=, NoNewPrivileges=, ProtectHome=,
# PrivateTmp=, IPAddressDeny=, ProtectKernelModules=, ProtectClock=, RestrictSUIDSGID=,
# SystemCallArchitectures=, RestrictRealtime= or ProtectControlGroups= it is 3.4 to 4.5. What
# is left open is what the daemon needs: root, its capabilities, AF_UNIX, /proc, tracefs
# (ProtectKernelTunables= would make it read-only), the kernel's TSC rate (perf_event_open).
awk -v s="$score" 'BEGIN { exit !(s < 3.4) }' || { grep '^✗' "$WORK/sec.out"; fail "exposure $score, want below 3.4"; }
for k in MemoryDenyWriteExecute UMask LockPersonality ProtectHostname; do
	grep -q "^✓ $k=" "$WORK/sec.out" || fail "systemd-analyze security: $k= is not set"
done

# The daemon under what of the unit can be had without systemd.
T=/sys/kernel/tracing
[ "$(id -u)" = 0 ] || { echo "SKIP: the confined daemon needs root (the unit's checks above passed)"; exit 77; }
[ -w $T/instances ] || { echo "SKIP: no writable tracefs at $T (the unit's checks above passed)"; exit 77; }
for c in setpriv unshare mount ps; do
	command -v $c >/dev/null 2>&1 || { echo "SKIP: $c is not installed (the unit's checks above passed)"; exit 77; }
done
[ -x "$SECCOMP" ] || { echo "SKIP: $SECCOMP is not built: configure found no libseccomp (install libseccomp-dev)"; exit 77; }
. "$VT_SRCDIR/tests/integration/daemon-lib.sh"

[ "$(value UMask)" = 0077 ] || fail "UMask=$(value UMask), want 0077"
[ "$(value NoNewPrivileges)" = yes ] || fail "NoNewPrivileges=$(value NoNewPrivileges)"
[ "$(value SystemCallErrorNumber)" = EPERM ] || fail "SystemCallErrorNumber=$(value SystemCallErrorNumber)"
[ "$(value RestrictAddressFamilies)" = AF_UNIX ] || fail "RestrictAddressFamilies=$(value RestrictAddressFamilies)"
caps=$(value CapabilityBoundingSet | tr 'A-Z' 'a-z' | sed -E 's/cap_//g; s/ +/,+/g')
[ -n "$caps" ] || fail "no CapabilityBoundingSet= to run the daemon with"
stop_timeout=$(value TimeoutStopSec)
# SystemCallFilter=: every set expanded to its calls, as systemd does.
filter() {
	systemd-analyze syscall-filter "$1" 2>/dev/null | sed -e 1d -e 's/^ *//' -e '/^#/d' -e '/^$/d' |
		while read -r _c; do
			case $_c in @*) filter "$_c" ;; *) echo "$_c" ;; esac
		done
}
case " $(value SystemCallFilter)" in *" ~"* | *:*)
	fail "SystemCallFilter=$(value SystemCallFilter): this test knows allow lists without errnos only" ;;
esac
for f in $(value SystemCallFilter); do
	case $f in @*) filter "$f" ;; *) echo "$f" ;; esac
done | sort -u >"$WORK/allow"
[ "$(wc -l <"$WORK/allow")" -gt 100 ] || fail "SystemCallFilter=$(value SystemCallFilter): only $(wc -l <"$WORK/allow") calls"
grep -qx execve "$WORK/allow" && ! grep -qx reboot "$WORK/allow" || fail "the expanded filter is not @system-service's"
# The sanitizer build (the suite's ASan pass): LeakSanitizer stops the world at exit by
# attaching to each thread with ptrace(2), which @system-service refuses; that one call is
# allowed to it, and to no build a user runs.
if ldd "$COLLECT" 2>/dev/null | grep -q libasan; then
	echo ptrace >>"$WORK/allow"
	echo "sanitizer build: ptrace allowed too (LeakSanitizer's, at exit)"
fi

S=$WORK/state
mkdir -m 0700 "$S"
# quiet_guest's, serving one record child after another (the daemon starts a new one after the snapshot)
mkdir -p "$WORK/alpha"
fake alpha --listen "$WORK/alpha" --fixture "$DATA/cap-guest" --repeat 0 --rate 20K --retime --again
named_conf "$WORK/daemon.conf" "$S" alpha
printf 'libvirt = no\nmode = stream\nhost-events = sched:sched_switch\n' >>"$WORK/daemon.conf"
rw="$S $T"
[ -d "$KC" ] && rw="$rw $KC"
# RuntimeDirectory=: made by systemd (as record would make it), writable under ProtectSystem=strict.
for d in $(value RuntimeDirectory); do
	mkdir -p "/run/$d" && rw="$rw /run/$d" || fail "cannot make /run/$d"
done
mkdir -m 1777 "$WORK/ptmp" "$WORK/pvartmp"
# shellcheck disable=SC2016
NS_SETUP='
	rw=$1 work=$2 caps=$3 build=$4
	shift 4
	# ReadWritePaths= (and the private /tmp and /var/tmp to be): mounts of their own, left writable.
	for d in $rw "$work/ptmp" "$work/pvartmp"; do
		mount --bind "$d" "$d" || exit 125
	done
	# ProtectSystem=strict, ProtectHome=read-only, ProtectControlGroups=: every other mount
	# read-only but the API file systems /proc, /dev and /sys (but its cgroups).
	mounts=$(awk '\''{ print $5 }'\'' /proc/self/mountinfo | perl -pe '\''s/\\([0-7]{3})/chr(oct($1))/ge'\'')
	while IFS= read -r m; do
		case " $rw $work/ptmp $work/pvartmp " in *" $m "*) continue ;; esac
		case $m in /proc | /proc/* | /dev | /dev/* | /sys/kernel/tracing | /sys/kernel/tracing/*) continue ;;
		/sys | /sys/*) case $m in /sys/fs/cgroup | /sys/fs/cgroup/*) ;; *) continue ;; esac ;;
		esac
		mount -o remount,bind,ro "$m" 2>/dev/null || mount -o remount,bind,ro,nosuid,nodev,noexec "$m" || exit 125
	done <<EOF
$mounts
EOF
	# PrivateTmp=: the build tree (the executable) and the test'\''s $WORK (the configuration, the
	# guest'\''s ports, the state) are carried into the private /tmp as they are (read-only but
	# the state), when they are in /tmp.
	for t in /tmp:ptmp /var/tmp:pvartmp; do
		d=${t%%:*} p=$work/${t#*:}
		for c in "$build" "$work"; do
			case $c in "$d"/*)
				mkdir -p "$p/${c#"$d"/}" && mount --rbind "$c" "$p/${c#"$d"/}" || exit 125 ;;
			esac
		done
		mount --rbind "$p" "$d" || exit 125
	done
	# PrivateDevices=.
	mount -t tmpfs -o mode=0755,nosuid,noexec tmpfs /dev || exit 125
	for n in null:1:3 zero:1:5 full:1:7 random:1:8 urandom:1:9 tty:5:0; do
		mknod -m 0666 /dev/${n%%:*} c $(echo ${n#*:} | tr : " ") || exit 125
	done
	mkdir -m 1777 /dev/shm && ln -s /proc/self/fd /dev/fd || exit 125
	# ProtectKernelModules=.
	[ ! -d /usr/lib/modules ] || mount -t tmpfs -o ro,mode=0 tmpfs /usr/lib/modules || exit 125
	hostname localhost
	umask 0077
	exec setpriv --bounding-set "-all,+$caps" --inh-caps -all --no-new-privs "$@"'
# confined LOG COMMAND [ARG]...: COMMAND in the namespace above, with the unit's capabilities,
# no_new_privs, UMask= and system call filter, each call the filter refuses named in $WORK/LOG;
# it replaces the shell (run it in a subshell or in the background, where $! is then the
# COMMAND's pid)
confined() {
	_log=$WORK/$1
	shift
	exec unshare --mount --uts --propagation private sh -c "$NS_SETUP" sh "$rw" "$WORK" "$caps" "$VT_BUILDDIR" \
		"$SECCOMP" --allow "$WORK/allow" --af-unix --deny-write-exec --restrict-namespaces \
		--log-fd 3 -- "$@" 3>>"$_log"
}

# First what the confinement refuses, so that a setup that confines nothing cannot pass.
# shellcheck disable=SC2016
PROBE='
	try() {
		_o=$("$@" 2>&1 >/dev/null) && echo "$what: ok" ||
			echo "$what: $(echo "$_o" | grep -v "^[[:space:]]" | tail -n 1 | sed -E "s/.*: //; s/^\[Errno [0-9]+\] //; s/\.$//")"
	}
	echo "umask: $(umask)"
	what=state try touch "$1/state/probe"
	what=work try touch "$1/probe"
	what=etc try touch /etc/vt-unit-probe
	what=tmp try touch /tmp/vt-unit-probe
	what=run try touch /run/virtio-trace/vt-unit-probe
	what=cgroup try mkdir /sys/fs/cgroup/vt-unit-probe
	echo "dev: $(ls /dev | tr "\n" " ")"
	what=af_unix try perl -MSocket -e "socket(my \$s, AF_UNIX, SOCK_STREAM, 0) or die \"\$!\n\""
	what=af_inet try perl -MSocket -e "socket(my \$s, AF_INET, SOCK_STREAM, 0) or die \"\$!\n\""
	what=mount try mount -t tmpfs tmpfs /tmp
	what=unshare try unshare --mount true
	what=wx try python3 -c "import mmap; mmap.mmap(-1, 4096, prot=7)"
	what=wr try python3 -c "import mmap; mmap.mmap(-1, 4096, prot=3)"
	grep -E "^(CapBnd|CapEff|NoNewPrivs|Seccomp):" /proc/self/status | tr -s "\t" " "'
(confined probe.refused sh -c "$PROBE" sh "$WORK") >"$WORK/probe.raw" 2>&1
rc=$?
grep -v '^vt-seccomp: ' "$WORK/probe.raw" >"$WORK/probe.out"
[ $rc != 125 ] || { show "$WORK/probe.out"; echo "SKIP: cannot make the mount namespace the unit asks for"; exit 77; }
cat >"$WORK/probe.want" <<EOF
umask: 0077
state: ok
work: Read-only file system
etc: Read-only file system
tmp: ok
run: ok
cgroup: Read-only file system
dev: fd full null random shm tty urandom zero 
af_unix: ok
af_inet: Address family not supported by protocol
mount: permission denied
unshare: Operation not permitted
wx: Operation not permitted
wr: ok
$(unit_status_want)
EOF
diff "$WORK/probe.want" "$WORK/probe.out" >"$WORK/probe.diff" || { show "$WORK/probe.diff"; fail "the confinement is not what the unit says (diff above: want, got)"; }
[ -f "$WORK/ptmp/vt-unit-probe" ] && [ ! -e /tmp/vt-unit-probe ] || fail "/tmp is not private"
refused=$(sed -E 's/^refused ([a-z0-9_]+) .*/\1/' "$WORK/probe.refused" | sort -u | tr '\n' ' ')
[ "$refused" = "mmap mount socket unshare " ] || { show "$WORK/probe.refused"; fail "the filter's log names '$refused', want 'mmap mount socket unshare '"; }
rm -f "$WORK/ptmp/vt-unit-probe" "$S/probe" /run/virtio-trace/vt-unit-probe
echo "confinement: read-only but the state (and private /tmp), private /dev, AF_UNIX only, no mount, unshare or W+X mapping (each refusal logged), umask 0077"

# Unconfined, record takes the host's TSC rate from the kernel (perf) when it can, else this
# boot's calibration kept in /run/virtio-trace: the confined daemon's children must get the same,
# or their files and a record run by hand convert the TSC apart.
collect ref --chardev-dir "$WORK/alpha" --name alpha -o "$WORK/ref" --duration 1 --quiet --no-kallsyms-cache
[ $RC = 0 ] || { show "$WORK/ref.log"; fail "the unconfined reference recording exited $RC"; }
ref_tsc=$(jq -r .host_tsc.method "$WORK/ref/manifest.json")

: >"$WORK/daemon.refused"
touch "$WORK/stamp"
confined daemon.refused "$COLLECT" daemon --config "$WORK/daemon.conf" --after 1 >"$WORK/daemon.log" 2>&1 &
DAEMON_PID=$!
track $DAEMON_PID
wait_log "$WORK/daemon.log" "vt-seccomp: " 5 "vt-seccomp did not start"
i=0
until [ "$(status_of "$S" alpha)" = attached ]; do
	kill -0 $DAEMON_PID 2>/dev/null || { wait $DAEMON_PID; rc=$?; show "$WORK/daemon.log"
		[ $rc != 125 ] || { echo "SKIP: cannot make the mount namespace the unit asks for"; exit 77; }
		fail "the confined daemon exited $rc"; }
	[ $i -lt 100 ] || { show "$WORK/daemon.log"; fail "alpha not attached within 10 s under the unit's confinement"; }
	sleep 0.1
	i=$((i + 1))
done
want=$(setpriv --bounding-set "-all,+$caps" grep '^CapBnd:' /proc/self/status)
got=$(grep '^CapBnd:' /proc/$DAEMON_PID/status)
[ "$got" = "$want" ] && [ "$(grep '^CapEff:' /proc/$DAEMON_PID/status | cut -f2)" = "${want#CapBnd:	}" ] ||
	fail "the daemon's capabilities: $got, $(grep '^CapEff:' /proc/$DAEMON_PID/status), want $want"
grep -q '^NoNewPrivs:	1$' /proc/$DAEMON_PID/status || fail "the daemon runs without no_new_privs"
grep -q '^Seccomp:	2$' /proc/$DAEMON_PID/status || fail "the daemon runs without a seccomp filter"
echo "confined: $(sed -n 's/^vt-seccomp: //p' "$WORK/daemon.log"), bounding set +$caps, no_new_privs; alpha attached"
pid0=$("$COLLECT" daemon --status --state-dir "$S" 2>/dev/null | awk '$1 == "alpha" { print $3 }')
sleep 2	# some of the window before the trigger

snap=$("$COLLECT" snapshot alpha --state-dir "$S" --reason unit 2>"$WORK/snap.err")
rc=$?
[ $rc = 0 ] || { show "$WORK/snap.err" "$WORK/daemon.log"; fail "snapshot exited $rc"; }
check_unit_snapshot "$snap" unit
tsc=$(jq -r .host_tsc.method "$snap/manifest.json")
[ "$tsc" = "$ref_tsc" ] || fail "the host's TSC rate: '$tsc' under the unit, '$ref_tsc' without (perf_event_open refused? /run/virtio-trace read-only?)"
"$COLLECT" daemon --status --state-dir "$S" >"$WORK/status.txt" 2>&1 || fail "daemon --status exited $?"
grep -q "^alpha .*alpha-.*-unit (unit)" "$WORK/status.txt" || { show "$WORK/status.txt"; fail "--status does not name alpha's snapshot"; }
# The next segment's child: attached, so that SIGTERM has it write its files.
i=0
until "$COLLECT" daemon --status --state-dir "$S" 2>/dev/null | awk -v p="$pid0" '$1 == "alpha" && $2 == "attached" && $3 != p { ok = 1 } END { exit !ok }'; do
	[ $i -lt 100 ] || { show "$WORK/daemon.log"; fail "no next child attached within 10 s of the snapshot"; }
	sleep 0.1
	i=$((i + 1))
done
children=$(ps -o pid= --ppid $DAEMON_PID | tr -d ' ' | tr '\n' ' ')
[ -n "$children" ] || fail "the daemon has no record child after the snapshot"
sleep 1
echo "snapshot ${snap##*/}: $NG guest events, $NH host sched_switch, $KS_ADDRS host kallsyms addresses, host TSC rate by $tsc; --status: $(grep '^alpha' "$WORK/status.txt")"

# KillMode=mixed: SIGTERM to the daemon only; it stops its children itself.
t0=$(date +%s)
kill -TERM $DAEMON_PID
i=0
while kill -0 $DAEMON_PID 2>/dev/null && [ $i -lt $((stop_timeout * 10)) ]; do
	sleep 0.1
	i=$((i + 1))
done
kill -0 $DAEMON_PID 2>/dev/null && fail "the daemon still runs $stop_timeout s (TimeoutStopSec=) after SIGTERM"
wait $DAEMON_PID
rc=$?
[ $rc = 0 ] || { show "$WORK/daemon.log"; fail "the daemon exited $rc after SIGTERM, want 0"; }
for c in $children; do
	[ ! -d /proc/$c ] || [ "$(awk '{ print $3 }' /proc/$c/stat 2>/dev/null)" = Z ] ||
		fail "record child $c outlived the daemon"
done
grep -q 'stopped$' "$WORK/daemon.log" || fail "no 'stopped' in the daemon's log"
ls "$S"/guests/alpha/*/guest-alpha.dat >/dev/null 2>&1 || { ls -R "$S/guests"; fail "the children wrote no guest-alpha.dat on their stop"; }
for f in "$S"/guests/alpha/*/guest-alpha.dat; do
	report "$WORK/seg.txt" -i "$f"
	grep -q 'softirq_entry' "$WORK/seg.txt" || fail "$f has no softirq_entry"
done
echo "SIGTERM: exit 0 in $(($(date +%s) - t0)) s (TimeoutStopSec=$stop_timeout), children ended, $(ls "$S"/guests/alpha/*/guest-alpha.dat | wc -l) segment(s) readable"

# Every call the daemon and its children made was one the unit allows.
[ ! -s "$WORK/daemon.refused" ] || { sed -E 's/ \(pid.*//' "$WORK/daemon.refused" | sort | uniq -c
	fail "SystemCallFilter= refused the daemon or its children the calls above"; }

# UMask=0077, and nothing written but in the state directory (tracefs: no instance left).
bad=$(find "$S" \( -type f ! -perm 0600 \) -o \( -type d ! -perm 0700 \) -o \( -type s ! -perm 0600 \))
[ -z "$bad" ] || fail "not 0600/0700 (UMask=0077): $(echo "$bad" | head -n 5)"
out=$(new_files_outside "$S" "$WORK/root"; find "$WORK/ptmp" "$WORK/pvartmp" -mindepth 1 -newer "$WORK/stamp" ! -type d)
[ -z "$out" ] || fail "written outside the state directory: $(echo "$out" | head -n 5)"
! grep -iE 'read-only file system|operation not permitted|not supported' "$WORK/daemon.log" ||
	fail "the confinement refused the daemon something (above)"
for c in $pid0 $children; do
	[ ! -d $T/instances/virtio-trace-collect-$c ] || fail "record child $c left its instance in $T"
done
echo "files 0600/0700, none outside the state directory"
echo "PASS"
