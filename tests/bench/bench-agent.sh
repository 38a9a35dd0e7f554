#!/bin/bash
# bench-agent.sh: what trace-agent's data path costs. Not a test: it prints figures and compares
# the splice path against the --no-splice (read()+write()) path measured in the same run.
#   1. In a 2-vCPU TCG guest (tests/e2e/agent-lib.sh): the highest rate of 1 KiB trace_marker
#      writes on both vCPUs that the splice agent carries with no overrun (1 MiB buffer per CPU),
#      stepped up until the guest's stats show one; small markers flat out. Then the same
#      rate-limited flood (half the lossless rate with 16 MiB) streamed by a splice agent and by a
#      --no-splice agent: the agent's guest CPU seconds (utime+stime of /proc/PID/stat in the
#      guest, START to drained, 10 ms ticks) per GiB the host received.
#   2. The same splice/read+write comparison on this machine: stand-in socket ports, the real
#      tracefs, a private instance, a host-side flood at 40% of what a flat-out run delivered.
# Usage: tests/bench/bench-agent.sh [SECONDS per measurement, default 4]
# Env: as tests/e2e/test-agent-guest.sh (VT_BUILDDIR, VT_STATIC_AGENT). About 1 minute (4 s).
echo "bench-agent: trace-agent CPU per GiB (splice vs read+write) in a TCG guest and on this host, and the highest marker rate without loss"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/../e2e/lib.sh"
. "$HERE/../e2e/agent-lib.sh"
VT_LOG_PREFIX=bench-agent
SECS=${1:-4}

WORK=$(mktemp -d /tmp/vt-bench-agent.XXXXXX)
cleanup() { vt_guest_stop 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

vt_agent_build || exit $?
cat >"$WORK/agent-run" <<'EOF'
#!/bin/sh
# The host spawns each agent through vt-e2e-guest.
exec vt-e2e-guest
EOF
vt_agent_image "$WORK" "$WORK/agent-run" bench-agent || exit $?

VT_TIMEOUT=240
vt_agent_boot "$WORK/run" || { echo "bench-agent: QEMU did not start"; exit 1; }
timeout -k 5 200 "$VT_E2E_HOST" bench-guest "$WORK/run/ports" "$SECS" | tee "$WORK/guest.out" | grep -v '^row '

grc=${PIPESTATUS[0]}
if [ "$grc" = 0 ]; then vt_agent_wait_off 30; else vt_guest_stop; fi
vt_check_console "$WORK/run/console.log" >/dev/null 2>&1 ||
    { echo "bench-agent: guest console has errors:"; tr -d '\r' <"$WORK/run/console.log" | grep -aE 'BUG:|WARNING:|trace-agent:' | head; }

B=${VT_BUILDDIR:-$VT_REPO/build}
timeout -k 5 120 "$VT_E2E_HOST" bench-local "$B/guest-agent/trace-agent" "$SECS" | tee "$WORK/host.out" | grep -v '^row '

hrc=${PIPESTATUS[0]}

# The table: one row per measurement.
echo
echo "=== trace-agent data path: agent CPU per GiB delivered (same load for both paths in each place) ==="
printf '%-6s %-11s %10s %9s %9s %12s %10s %6s\n' where path "MiB" seconds "MiB/s" "agent CPU s" "CPU-s/GiB" lost
grep -h '^row ' "$WORK/guest.out" "$WORK/host.out" |
    awk '{ printf "%-6s %-11s %10s %9s %9s %12s %10s %6s\n", $2, $3, $4, $5, $6, $7, $8, $9 }'
grep -h 'costs\|highest\|flat out\|load' "$WORK/guest.out" "$WORK/host.out" | sed 's/^bench: /  /'
[ "$grc" = 0 ] && [ "$hrc" = 0 ]
