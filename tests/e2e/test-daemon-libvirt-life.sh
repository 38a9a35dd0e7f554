#!/bin/bash
# vt-suite: e2e
# test-daemon-libvirt-life.sh: the always-on daemon (issue 40) follows a libvirt TCG domain
# through what happens to it, each followed by a snapshot that must hold exactly N new markers
# per CPU (and none of the earlier ones). libvirt, the domain and the daemon as in
# test-daemon-libvirt.sh (daemon-e2e-lib.sh), the domain with <on_reboot>restart</on_reboot>.
#   - libvirtd restarts (ours: stopped by pid, started again; skipped when one ran already):
#     the guest stays attached with the same child all along (its snapshot after the reset
#     below holds markers only from that child's successor);
#   - the guest is reset (`virsh reset`) and boots again: a snapshot holds the new boot's markers;
#   - the agent is restarted in the guest (SIGTERM, a new trace-agent): a snapshot holds the
#     markers written after it;
# Env: VT_BUILDDIR (default <repo>/build), VT_E2E_MARKERS (default 300), VT_KEEP=1 keeps the
# work dir. Exit: 0 pass, 1 fail, 77 skip.
echo "test-daemon-libvirt-life: the daemon follows a libvirt TCG domain through a libvirtd restart, a reset and an agent restart (a snapshot after each holds the new markers)"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
. "$HERE/libvirt-lib.sh"
. "$HERE/daemon-e2e-lib.sh"
VT_LOG_PREFIX=test-daemon-libvirt-life
ME=test-daemon-libvirt-life
N=${VT_E2E_MARKERS:-300}
DOM=vt-e2e-daemon-life
DESC="virtio-trace e2e test domain (tests/e2e/test-daemon-libvirt-life.sh)"

de_begin
de_domain restart
de_daemon_start
de_start_domain
de_boot
de_settled || bad "the guest's child did not settle: $(tail -n 3 "$WORK/status.log")"

# --- libvirtd restarts under the daemon ---
if [ -n "$LIBVIRTD_PID" ]; then
    de_status_pid
    child=$PID
    stop_pid "$LIBVIRTD_PID"
    LIBVIRTD_PID=
    sleep 3
    st=$(de_state)
    de_status_pid
    echo "$ME: libvirtd stopped 3 s: state $st, child $PID (was $child)"
    [ "$st" = attached ] && [ "$PID" = "$child" ] ||
        bad "libvirtd stopped: the guest is $st with child $PID, want attached with $child"
    libvirt_up
    sleep 2
    de_status_pid
    [ "$(de_state)" = attached ] && [ "$PID" = "$child" ] ||
        bad "libvirtd back: the guest is $(de_state) with child $PID, want attached with $child"
else
    echo "$ME: libvirtd restart: not tried (a libvirtd of the system's runs)"
fi

# --- a reset: the guest boots again ---
de_settled || bad "the child did not settle before the reset"
de_markers vt-p
de_status_pid
child=$PID
V reset "$DOM" >/dev/null || bad "virsh reset failed"
T_BOOT0=$(vt_now)
sleep 1
de_boot
boots=$(tr -d '\r' <"$WORK/console.log" | grep -ac 'VT-INIT: ready')
[ "$boots" = 2 ] || bad "the guest booted $boots times, want 2"
de_new_child "$child" "the reset"
de_markers vt-r
sleep 1
de_snapshot 30 1 reset
[ -n "$SNAP" ] && de_check_snap "$SNAP" "vt-r" "vt-p"

# --- the agent restarted in the guest ---
de_settled || bad "the child did not settle before the agent's restart"
de_status_pid
child=$PID
T_BOOT0=$(vt_now)
vt_test_say "$WORK/ports" "sh kill -TERM \$(pidof trace-agent); sleep 1; trace-agent --quiet &" 30 ||
    bad "vt-e2e-guest did not restart the agent"
echo "$ME: agent restarted in the guest: $ANSWER"
de_new_child "$child" "the agent's restart"
de_markers vt-g
sleep 1
de_snapshot 30 1 agent-restart
[ -n "$SNAP" ] && de_check_snap "$SNAP" "vt-g" "vt-r vt-p"

de_end
