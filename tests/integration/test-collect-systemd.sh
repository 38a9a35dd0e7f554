#!/bin/sh
# Proves (issue 40): a real systemd starts and stops virtio-trace-collect.service as the build
# generates it, and the daemon runs confined as the unit says. systemd does not run here, so
# the test boots one as PID 1 in a container (systemd-nspawn --volatile=yes on this host's own
# /usr, a tmpfs root, a target of the test's own and nothing else), the unit and the built
# executable installed where the unit and its ExecStart= say (read-only overlays on /etc and
# the unit's bindir), /etc/virtio-trace/daemon.conf following one fake guest whose ports are
# bound in, the state directory and tracefs bound from the host. Then: `systemctl start`,
# is-active; `daemon --status` (the default state directory's control socket) shows the guest
# attached; the daemon's /proc status: NoNewPrivs 1, Seccomp 2, its bounding and effective
# capabilities the unit's CapabilityBoundingSet= (as far as this host's own bounding set has
# them); its mount namespace read-only (ProtectSystem=strict, ProtectControlGroups=) but the
# state directory, tracefs and /run/virtio-trace, its /tmp private, its /dev private; a
# `snapshot` whose guest file trace-cmd reads with the fixture's events, its host.dat with
# sched_switch and kallsyms addresses (CAP_SYSLOG); `systemctl stop`:
# Result=success, exit status 0, no daemon or record child left, control.sock removed, the
# children's segments written, the daemon's last log line "stopped" (the journal), no tracefs
# instance of its left. The container, its cgroups and its mounts are gone when the test ends.
echo "collect-systemd: a real systemd (nspawn) starts and stops virtio-trace-collect.service, the daemon confined as the unit says"
: "${VT_SRCDIR:?run through make check}" "${VT_BUILDDIR:?run through make check}"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools
T=/sys/kernel/tracing
[ "$(id -u)" = 0 ] || { echo "SKIP: booting systemd in a container needs root"; exit 77; }
command -v systemd-nspawn >/dev/null 2>&1 ||
	{ echo "SKIP: systemd-nspawn is not installed (Debian's systemd-container; scripts/install-deps.sh)"; exit 77; }
for c in nsenter unshare findmnt setpriv ps; do
	command -v $c >/dev/null 2>&1 || { echo "SKIP: $c is not installed"; exit 77; }
done
[ -x /usr/lib/systemd/systemd ] || { echo "SKIP: no /usr/lib/systemd/systemd to boot"; exit 77; }
[ -w $T/instances ] || { echo "SKIP: no writable tracefs at $T (the unit's ReadWritePaths=)"; exit 77; }
# The sanitizer build: LeakSanitizer's ptrace(2) at exit is refused by the unit's
# SystemCallFilter= (test-collect-unit allows it in its own filter; the unit is the product's):
# run anyway, each record child exits 1 ("LeakSanitizer has encountered a fatal error") and
# the snapshot fails.
if ldd "$COLLECT" 2>/dev/null | grep -q libasan; then
	echo "SKIP: sanitizer build: LeakSanitizer needs ptrace(2), which the unit's SystemCallFilter=@system-service refuses (its record children exit 1)"
	exit 77
fi
. "$VT_SRCDIR/tests/integration/daemon-lib.sh"

# The unit as the build makes it, installed in the container's /etc (below).
mkdir -p "$WORK/etc/systemd/system" "$WORK/etc/virtio-trace" "$WORK/bin" || fail "cannot make the unit's tree"
collect_unit "$WORK/etc/systemd/system/virtio-trace-collect.service"
value() {
	unit_value "$1"
}
exe=$(value ExecStart | cut -d' ' -f1)
bindir=${exe%/*}
[ "$exe" = "$bindir/virtio-trace-collect" ] || fail "ExecStart=$(value ExecStart): not virtio-trace-collect"
cp "$COLLECT" "$WORK/bin/virtio-trace-collect" || fail "cannot copy $COLLECT"
# The test's target: the journal (the daemon logs to it), nothing else of this host's.
cat >"$WORK/etc/systemd/system/vt-test.target" <<EOF
[Unit]
Description=virtio-trace test: the journal only
Wants=systemd-journald.service
EOF

mkdir -p "$WORK/alpha" "$WORK/state"
fake alpha --listen "$WORK/alpha" --fixture "$DATA/cap-guest" --repeat 0 --rate 20K --retime --again
cat >"$WORK/etc/virtio-trace/daemon.conf" <<EOF
# the test's guest, named with its ports (bound into the container); nothing else on this host
domains = none
libvirt = no
guest = alpha /run/vt-test/alpha
min-free = 0
mode = stream
after = 1
host-events = sched:sched_switch
EOF

# The container. Its cgroups under a group of the test's own in each hierarchy nspawn uses
# (this host's systemd layout, "hybrid": name=systemd and cgroup2), removed at the end; its
# /run/systemd/nspawn in a mount namespace of its own. CAP_SYSLOG is not in nspawn's default
# set: the container gets the unit's capabilities (what this host has of them).
CG=vt-test-systemd-$$
CGS=
for h in /sys/fs/cgroup/systemd /sys/fs/cgroup/unified /sys/fs/cgroup; do
	[ -f $h/cgroup.procs ] || continue
	mkdir "$h/$CG" || fail "cannot make the cgroup $h/$CG"
	CGS="$CGS $h/$CG"
done
NSPAWN_PID=
LEADER=
ct_down() {
	if [ -n "$NSPAWN_PID" ] && kill -0 "$NSPAWN_PID" 2>/dev/null; then
		kill -TERM "$NSPAWN_PID"	# the container's orderly halt
		_ci=0
		while kill -0 "$NSPAWN_PID" 2>/dev/null && [ $_ci -lt 150 ]; do
			sleep 0.1
			_ci=$((_ci + 1))
		done
		# not halted in 15 s: SIGKILL to its PID 1 ends every process of the container
		if kill -0 "$NSPAWN_PID" 2>/dev/null; then
			[ -n "$LEADER" ] && [ "$(cat /proc/"$LEADER"/comm 2>/dev/null)" = systemd ] &&
				kill -KILL "$LEADER"
			kill -KILL "$NSPAWN_PID" 2>/dev/null
		fi
		wait "$NSPAWN_PID" 2>/dev/null
	fi
	for _cg in $CGS; do
		find "$_cg" -depth -type d -exec rmdir {} + 2>/dev/null
		[ ! -d "$_cg" ] || echo "note: could not remove $_cg"
	done
}
trap 'ct_down; t_cleanup' EXIT
case $bindir in
/usr/*) [ -d "$bindir" ] && install_exe="--overlay-ro=$bindir:$WORK/bin:$bindir" ;;
esac
: "${install_exe:=--bind-ro=$WORK/bin/virtio-trace-collect:$exe}"
caps=$(value CapabilityBoundingSet | tr ' ' ',')
# shellcheck disable=SC2016
sh -c 'for g in $1; do echo $$ >"$g/cgroup.procs" || exit 1; done; shift
	exec unshare --mount --propagation private sh -c "mount -t tmpfs -o mode=0755 tmpfs /run && exec \"\$@\"" sh "$@"' \
	sh "$CGS" systemd-nspawn --quiet -D / --volatile=yes --register=no --keep-unit --link-journal=no \
	--machine="vt-test-$$" --capability="$caps" --system-call-filter=perf_event_open \
	--overlay-ro="/etc:$WORK/etc:/etc" "$install_exe" \
	--bind="$WORK/state:/var/lib/virtio-trace" --bind-ro="$WORK/alpha:/run/vt-test/alpha" --bind=$T \
	--boot -- systemd.unit=vt-test.target >"$WORK/nspawn.log" 2>&1 </dev/null &
NSPAWN_PID=$!
# in_ct COMMAND...: COMMAND in the container (its mounts, its pids)
in_ct() {
	nsenter -t "$LEADER" -m -u -i -p -- "$@"
}
i=0
state=
until [ "$state" = running ]; do
	kill -0 $NSPAWN_PID 2>/dev/null || { show "$WORK/nspawn.log"
		echo "SKIP: systemd-nspawn could not boot systemd here (its log above)"; exit 77; }
	# the container's PID 1: nspawn's child that runs systemd (not its short-lived helpers)
	[ -n "$LEADER" ] || LEADER=$(ps -o pid=,comm= --ppid $NSPAWN_PID | awk '$2 == "systemd" { print $1 }')
	[ -n "$LEADER" ] && state=$(in_ct systemctl is-system-running 2>/dev/null)
	[ $i -lt 200 ] || { show "$WORK/nspawn.log"; fail "systemd in the container not running within 20 s (state '$state')"; }
	sleep 0.1
	i=$((i + 1))
done
nspid=$(sed -n 's/^NSpid:.*\t//p' /proc/"$LEADER"/status)
[ "$nspid" = 1 ] || fail "the container's systemd ($LEADER) is pid $nspid in its namespace, not 1"
echo "container: $(in_ct systemctl --version | head -n 1) as PID 1, $(in_ct systemctl show -P Virtualization) virtualization"

t0=$(date +%s)
in_ct timeout 30 systemctl start virtio-trace-collect.service 2>"$WORK/start.err" ||
	{ show "$WORK/start.err"; in_ct journalctl -b --no-pager -n 30; fail "systemctl start failed"; }
journal() {
	in_ct journalctl --no-pager -o cat -u virtio-trace-collect.service
}
st=$(in_ct systemctl is-active virtio-trace-collect.service)
[ "$st" = active ] || { journal; fail "is-active says '$st' after the start"; }
# ct_attached WHEN: alpha attached within 10 s, as the daemon's --status says over the default
# state directory's socket, in the container; else fail, saying WHEN
ct_attached() {
	_ca=0
	until in_ct "$exe" daemon --status 2>/dev/null | awk '$1 == "alpha" && $2 == "attached" { ok = 1 } END { exit !ok }'; do
		[ $_ca -lt 100 ] || { journal; fail "alpha not attached within 10 s $1"; }
		sleep 0.1
		_ca=$((_ca + 1))
	done
}
ct_attached "of the start"
pid=$(in_ct systemctl show -P MainPID virtio-trace-collect.service)
[ "$pid" -gt 1 ] 2>/dev/null || fail "MainPID '$pid'"
[ "$(in_ct cat /proc/"$pid"/comm)" = virtio-trace-co ] || fail "MainPID $pid is $(in_ct cat /proc/"$pid"/comm)"
echo "started: active, MainPID $pid, alpha attached in $(($(date +%s) - t0)) s"

# The confinement, read from the running daemon.
in_ct grep -E '^(NoNewPrivs|Seccomp|CapBnd|CapEff):' /proc/"$pid"/status | tr -s '\t' ' ' >"$WORK/proc.out"
unit_status_want >"$WORK/proc.want"
diff "$WORK/proc.want" "$WORK/proc.out" >"$WORK/proc.diff" || { show "$WORK/proc.diff"; fail "the daemon's /proc/$pid/status is not what the unit says (diff: want, got)"; }
# Each path: ro or rw, as the daemon's mount namespace has it.
for p in / /etc /usr "$bindir" /var /var/lib/virtio-trace /run /run/virtio-trace /sys/fs/cgroup $T /tmp; do
	echo "$p $(in_ct findmnt --task "$pid" -no OPTIONS -T "$p" | tail -n 1 | cut -d, -f1)"
done >"$WORK/mounts.out"
cat >"$WORK/mounts.want" <<EOF
/ ro
/etc ro
/usr ro
$bindir ro
/var ro
/var/lib/virtio-trace rw
/run ro
/run/virtio-trace rw
/sys/fs/cgroup ro
$T rw
/tmp rw
EOF
diff "$WORK/mounts.want" "$WORK/mounts.out" >"$WORK/mounts.diff" || { show "$WORK/mounts.diff"
	in_ct findmnt --task "$pid" -rno TARGET,OPTIONS; fail "the daemon's mounts are not what the unit says (diff: want, got)"; }
# PrivateTmp=: the daemon's /tmp is not the container's; PrivateDevices=: nor is its /dev.
tmp_src=$(in_ct findmnt --task "$pid" -no SOURCE -T /tmp)
case $tmp_src in *"/systemd-private-"*"-virtio-trace-collect.service-"*"/tmp]") ;;
*) fail "the daemon's /tmp is $tmp_src, not systemd's private one (PrivateTmp=)" ;; esac
devs=$(in_ct nsenter -t "$pid" -m ls /dev | tr '\n' ' ')
case " $devs " in *" null "*" urandom "*) ;; *) fail "the daemon's /dev lacks null, urandom: $devs" ;; esac
case " $devs " in *" vda "* | *" sda "* | *" kmsg "* | *" mem "*) fail "the daemon's /dev is not private (PrivateDevices=): $devs" ;; esac
echo "confined: NoNewPrivs 1, Seccomp 2, $(grep '^CapBnd' "$WORK/proc.want"); read-only but the state, tracefs and /run/virtio-trace; private /tmp and /dev"

# A snapshot through the control socket, in the container.
sleep 2	# some of the window before the trigger
snap=$(in_ct "$exe" snapshot alpha --reason systemd 2>"$WORK/snap.err")
rc=$?
[ $rc = 0 ] || { show "$WORK/snap.err"; journal; fail "snapshot exited $rc"; }
case $snap in /var/lib/virtio-trace/snapshots/*) ;; *) fail "snapshot's path $snap is not in the state directory" ;; esac
hsnap=$WORK/state/${snap#/var/lib/virtio-trace/}
check_unit_snapshot "$hsnap" systemd
echo "snapshot ${snap##*/}: $NG guest events, $NH host sched_switch, $KS_ADDRS host kallsyms addresses"
# The next segment's child, attached, so that the stop has it write its files.
ct_attached "of the snapshot"
children=$(in_ct ps -o pid= --ppid "$pid" | tr -d ' ' | tr '\n' ' ')
[ -n "$children" ] || fail "the daemon has no record child"
sleep 1

t0=$(date +%s)
in_ct timeout 100 systemctl stop virtio-trace-collect.service 2>"$WORK/stop.err" ||
	{ show "$WORK/stop.err"; journal; fail "systemctl stop failed"; }
took=$(($(date +%s) - t0))
for k in ActiveState:inactive Result:success ExecMainStatus:0 MainPID:0; do
	got=$(in_ct systemctl show -P "${k%%:*}" virtio-trace-collect.service)
	[ "$got" = "${k#*:}" ] || { journal; fail "after the stop ${k%%:*}=$got, want ${k#*:}"; }
done
left=$(in_ct ps -e -o pid=,comm= | awk '$2 ~ /^virtio-trace/')
[ -z "$left" ] || fail "left after the stop: $left"
[ ! -e "$WORK/state/control.sock" ] || fail "control.sock is still there after the stop"
st=$(in_ct "$exe" daemon --status >/dev/null 2>&1; echo $?)
[ "$st" = 6 ] || fail "daemon --status after the stop exited $st, want 6 (no daemon answers)"
journal >"$WORK/journal.txt"
# systemd's words for a main process that exited 0 (not "Main process exited, code=...").
grep -qx 'virtio-trace-collect.service: Deactivated successfully.' "$WORK/journal.txt" &&
	! grep -q 'Main process exited\|Failed with result\|Killing process' "$WORK/journal.txt" ||
	{ show "$WORK/journal.txt"; fail "systemd did not see the daemon exit 0 by itself"; }
[ "$(grep '^virtio-trace-collect daemon: ' "$WORK/journal.txt" | tail -n 1)" = "virtio-trace-collect daemon: stopped" ] ||
	{ show "$WORK/journal.txt"; fail "the daemon's last log line is not 'stopped'"; }
ls "$WORK"/state/guests/alpha/*/guest-alpha.dat >/dev/null 2>&1 || fail "the children wrote no guest-alpha.dat on their stop"
for f in "$WORK"/state/guests/alpha/*/guest-alpha.dat; do
	report "$WORK/seg.txt" -i "$f"
	grep -q 'softirq_entry' "$WORK/seg.txt" || fail "$f has no softirq_entry"
done
for c in $pid $children; do
	for inst in $T/instances/virtio-trace-collect-$c $T/instances/virtio-trace-collect-daemon-$c; do
		[ ! -d "$inst" ] || fail "$inst left after the stop"
	done
done
# UMask=0077 and StateDirectoryMode=0700, as systemd applied them.
bad=$(find "$WORK/state" \( -type f ! -perm 0600 \) -o \( -type d ! -perm 0700 \))
[ -z "$bad" ] || fail "not 0600/0700 (UMask=0077, StateDirectoryMode=0700): $(echo "$bad" | head -n 5)"
echo "stopped in $took s: Result=success, exit 0, no process left, control.sock removed, --status 6, 'stopped' logged, $(ls "$WORK"/state/guests/alpha/*/guest-alpha.dat | wc -l) segment(s) readable, files 0600/0700"

ct_down
[ ! -d /proc/"$LEADER" ] || fail "the container's systemd outlived the halt"
NSPAWN_PID=
echo "PASS"
