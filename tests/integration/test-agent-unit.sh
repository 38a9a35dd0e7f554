#!/bin/sh
# Proves (issue 37, item 11): trace-agent.service is confined: `systemd-analyze security
# --offline=true` rates the generated unit below 4 (it was 9.0 UNSAFE), with no setting it
# cannot parse; and the confinement leaves what the agent needs: tracefs writable
# (ReadWritePaths=/sys/kernel/tracing, and no ProtectKernelTunables=, whose read-only
# /sys/kernel/tracing wins over ReadWritePaths=), /proc/kallsyms readable with its addresses
# (no ProtectKernelTunables=, which hides the file, no ProtectKernelLogs=, which drops
# CAP_SYSLOG, and CAP_SYSLOG in the bounding set), its ports (no PrivateDevices=, the
# virtio-portsdev devices allowed read-write). Then, as root with tracefs (no systemd runs
# here, and no e2e guest boots one), the real agent runs confined as far as that can be
# done without systemd: the unit's CapabilityBoundingSet= and NoNewPrivileges=, and /sys
# and /proc/sys read-only but tracefs (unshare); a recording through stand-in ports has
# sched_switch events, its kallsyms have the addresses root sees (CAP_SYSLOG: with
# perf_event_paranoid > 1 they read as zeros without it), the agent puts its priority back
# after each bundle (CAP_SYS_NICE) and removes its instance.
echo "agent: trace-agent.service scores below 4 in systemd-analyze security and keeps tracefs, kallsyms and the ports"
: "${VT_SRCDIR:?run through make check}" "${VT_BUILDDIR:?run through make check}"
command -v systemd-analyze >/dev/null 2>&1 || { echo "SKIP: systemd-analyze (systemd) is not installed"; exit 77; }
systemd-analyze security --help 2>/dev/null | grep -q -- '--offline' ||
	{ echo "SKIP: this systemd-analyze has no --offline (systemd 250 or later)"; exit 77; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/vt-unit.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
fail() {
	echo "FAIL: $*"
	exit 1
}

# The unit as the build makes it, or as its rule would (configure --with-systemdsystemunitdir=no).
UNIT=$WORK/trace-agent.service
if [ -f "$VT_BUILDDIR/guest-agent/trace-agent.service" ]; then
	cp "$VT_BUILDDIR/guest-agent/trace-agent.service" "$UNIT"
else
	sed -e 's|@sbindir[@]|/usr/sbin|g' "$VT_SRCDIR/guest-agent/trace-agent.service.in" >"$UNIT"
fi

systemd-analyze security --offline=true --no-pager "$UNIT" >"$WORK/out" 2>"$WORK/err"
score=$(sed -nE 's/.*Overall exposure level for trace-agent\.service: ([0-9]+\.[0-9]+).*/\1/p' "$WORK/out")
[ -n "$score" ] || { cat "$WORK/out" "$WORK/err"; fail "no overall exposure level in systemd-analyze's output"; }
echo "systemd-analyze security: $score ($(grep -c '^✗' "$WORK/out") settings left open)"
if grep -iE 'unknown|failed to parse|invalid|ignoring' "$WORK/err"; then
	fail "systemd-analyze cannot read some of the unit's settings (above)"
fi
awk -v s="$score" 'BEGIN { exit !(s < 4) }' || { grep '^✗' "$WORK/out"; fail "exposure $score, want below 4"; }

# value KEY: the unit's values of KEY, one line
value() {
	sed -nE "s/^$1=//p" "$UNIT" | tr '\n' ' '
}
case " $(value ProtectKernelTunables) " in *yes* | *true* | *1\ *)
	fail "ProtectKernelTunables= hides /proc/kallsyms and makes /sys/kernel/tracing read-only" ;;
esac
case " $(value ProtectKernelLogs) " in *yes* | *true* | *1\ *)
	fail "ProtectKernelLogs= drops CAP_SYSLOG: kallsyms would read as zeros" ;;
esac
case " $(value PrivateDevices) " in *yes* | *true* | *1\ *)
	fail "PrivateDevices= hides the ports (/dev/vport*)" ;;
esac
case " $(value CapabilityBoundingSet) " in *" CAP_SYSLOG "*) ;;
*) fail "CAP_SYSLOG is not in the bounding set: kallsyms would read as zeros" ;;
esac
case " $(value ReadWritePaths) " in *" /sys/kernel/tracing "* | *" -/sys/kernel/tracing "*) ;;
*) fail "tracefs is not in ReadWritePaths= (ProtectSystem=strict)" ;;
esac
case " $(value DeviceAllow) " in *"char-virtio-portsdev rw"*) ;;
*) [ -z "$(value DevicePolicy)" ] || fail "DevicePolicy= without DeviceAllow=char-virtio-portsdev rw: the ports cannot be opened" ;;
esac
grep -q '^PrivateNetwork=yes' "$UNIT" || fail "no PrivateNetwork=yes"
echo "tracefs writable, kallsyms and its addresses readable, the ports allowed"

# The agent under what of the unit can be had without systemd.
T=/sys/kernel/tracing
AGENT=$VT_BUILDDIR/guest-agent/trace-agent
if [ "$(id -u)" != 0 ] || [ ! -w $T/instances ] || [ ! -x "$AGENT" ] ||
   ! command -v setpriv >/dev/null 2>&1 || ! command -v unshare >/dev/null 2>&1 ||
   ! command -v trace-cmd >/dev/null 2>&1 || ! command -v jq >/dev/null 2>&1; then
	echo "the agent's confined run: not tried (needs root, tracefs at $T, the agent, setpriv, unshare, trace-cmd, jq)"
	echo "PASS"
	exit 0
fi
UNIT_WORK=$WORK
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools
trap 'rm -rf "$UNIT_WORK"; t_cleanup' EXIT
caps=$(value CapabilityBoundingSet | tr 'A-Z' 'a-z' | sed -E 's/cap_//g; s/ +$//; s/ +/,+/g')
[ -n "$caps" ] || fail "no CapabilityBoundingSet= to run the agent with"
inst=vt-unit-$$ p=$WORK/ports out=$WORK/out
mkdir -p "$p"
ncpu=$(ls -d $T/per_cpu/cpu* | wc -l)
i=0
for n in agent-ctl-path $(while [ $i -lt "$ncpu" ]; do echo trace-path-cpu$i; i=$((i + 1)); done); do
	mkfifo "$p/$n.in" "$p/$n.out" || fail "mkfifo $p/$n"
done
# shellcheck disable=SC2016
unshare --mount --propagation private sh -c '
	for d in /sys /proc/sys; do
		mountpoint -q $d || mount --rbind $d $d || exit 125
		mount -o remount,bind,ro $d || exit 125
	done
	exec setpriv --bounding-set "-all,+$0" --inh-caps -all --no-new-privs "$@"' "$caps" \
	"$AGENT" --port-dir "$p" --instance $inst --keep-instance 0 --once --wait 20 2>"$WORK/agent.log" &
apid=$!
track $apid
collect rec --chardev-dir "$p" --name unitvm -e sched:sched_switch -o "$out" --duration 2 -q
# --once: the agent leaves after the collector's bye (bounded: 20 s, then SIGTERM)
_w=0
while kill -0 $apid 2>/dev/null && [ $_w -lt 200 ]; do
	sleep 0.1
	_w=$((_w + 1))
done
kill -TERM $apid 2>/dev/null
wait $apid
arc=$?
[ $arc != 125 ] || { echo "SKIP: cannot make /sys read-only in a mount namespace of the test's"; exit 77; }
[ $RC = 0 ] && [ $arc = 0 ] || { show "$WORK/rec.log" "$WORK/agent.log"; fail "confined: the collector exited $RC, the agent $arc, want 0 and 0"; }
[ ! -d $T/instances/$inst ] || { rmdir $T/instances/$inst; fail "confined: the agent left its instance $inst"; }
! grep -q "priority back" "$WORK/agent.log" || { show "$WORK/agent.log"; fail "confined: the agent cannot put its priority back"; }
report "$WORK/report.txt" -i "$out/guest-unitvm.dat"
sw=$(grep -c " sched_switch: " "$WORK/report.txt")
[ "$sw" -gt 0 ] || fail "confined: no sched_switch event recorded"
check_kallsyms_addrs "$out/guest-unitvm.dat" "confined: the agent's"
echo "confined (bounding set +$caps, no_new_privs, /sys and /proc/sys read-only): $sw sched_switch events, $KS_ADDRS kallsyms addresses (root sees $KS_ROOT), instance removed"
echo "PASS"
