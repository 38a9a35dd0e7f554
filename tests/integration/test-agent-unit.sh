#!/bin/sh
# Proves (issue 37, item 11): trace-agent.service is confined: `systemd-analyze security
# --offline=true` rates the generated unit below 4 (it was 9.0 UNSAFE), with no setting it
# cannot parse; and the confinement leaves what the agent needs: tracefs writable
# (ReadWritePaths=/sys/kernel/tracing, and no ProtectKernelTunables=, whose read-only
# /sys/kernel/tracing wins over ReadWritePaths=), /proc/kallsyms readable with its addresses
# (no ProtectKernelTunables=, which hides the file, no ProtectKernelLogs=, which drops
# CAP_SYSLOG, and CAP_SYSLOG in the bounding set), its ports (no PrivateDevices=, the
# virtio-portsdev devices allowed read-write).
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
echo "PASS"
