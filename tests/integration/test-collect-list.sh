#!/bin/sh
# Proves: `virtio-trace-collect list` finds what can be traced and says whether an agent answers,
# quickly, and `record --all` records exactly those. The guests (no VM: vt-fake-agent plays the
# guest, run as a copy named qemu-system-x86_64 in a root-owned 0755 directory of the test's, with
# a QEMU command line after "--", so that /proc/PID/exe, which is what the collector believes,
# names a root-owned QEMU binary and it is the "QEMU" that holds its ports):
#   lv-pipe   a libvirt domain (libvirt's test driver, no daemon) whose running XML has pipe
#             channels served by an answering fake agent
#   q-pipe    a QEMU process with pipe ports on its command line, agent answering
#   q-sock    a QEMU process with socket ports (QEMU listens), agent answering
#   q-dead    a QEMU process (vt-fake-qemu) holding pipe ports with no agent behind them
#   q-busy    a QEMU process whose ports a running `record` holds
# plus a QEMU process without trace ports and a domain without channels, which are not listed.
# Checks: the table and --json give each its state (answers / silent / busy with the recorder's
# pid), the agent's version and the fixture's kernel (HELLO_REPLY); the whole list, with a
# silent guest among them, takes less than 3.5 s (the 2 s wait); q-dead's HELLO was taken back
# (its control FIFO is empty afterwards, no agent starting later would answer it); a second
# list answers the same (the HELLO left no state behind); --names prints the domain only;
# --no-probe asks nothing; unknown names list nothing; `record --all=NAMES` (the test's guests
# only: another test's QEMU on this machine is not ours to record) records lv-pipe, q-pipe and
# q-sock, each file exact, leaves out the busy q-dead naming its recorder, and exits 0; alone,
# the silent q-dead is left out ("with --wait it is waited for") and record exits 1.
echo "collect list: libvirt domains and QEMU processes with trace ports, whether an agent answers (2 s); record --all records those"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools
[ -x "$TOOLS/vt-fake-qemu" ] || fail "$TOOLS/vt-fake-qemu is not built"
# The libvirt module: next to the built collector (libvirt-module.c looks there).
[ -f "$VT_BUILDDIR/host-collector/virtio-trace-collect-libvirt.so" ] ||
	{ echo "SKIP: no libvirt module built"; exit 77; }

mkdir -p "$WORK/bin" "$WORK/dead-bin" "$WORK/lv" "$WORK/qp" "$WORK/qs" "$WORK/qd" "$WORK/qb" "$WORK/none"
# Copies, not links: a QEMU is what /proc/PID/exe names, a root-owned file nobody else may write.
cp "$FAKE" "$WORK/bin/qemu-system-x86_64"
cp "$TOOLS/vt-fake-qemu" "$WORK/dead-bin/qemu-system-x86_64"
chmod 0755 "$WORK/bin" "$WORK/dead-bin" "$WORK/bin/qemu-system-x86_64" "$WORK/dead-bin/qemu-system-x86_64"
QEMU=$WORK/bin/qemu-system-x86_64

# pipe_args NAME DIR: a QEMU command line with pipe ports DIR/PORT for 2 vCPUs
pipe_args() {
	echo "-name $1,debug-threads=on -device virtio-serial-pci,id=vser0" \
		"-chardev pipe,id=c0,path=$2/trace-path-cpu0 -device virtserialport,bus=vser0.0,nr=1,chardev=c0,name=trace-path-cpu0" \
		"-chardev pipe,id=c1,path=$2/trace-path-cpu1 -device virtserialport,bus=vser0.0,nr=2,chardev=c1,name=trace-path-cpu1" \
		"-chardev pipe,id=c2,path=$2/agent-ctl-path -device virtserialport,bus=vser0.0,nr=3,chardev=c2,name=agent-ctl-path"
}
# qemu NAME ARGS... -- QEMU-ARGS...: a fake agent named NAME that looks like QEMU in /proc
qemu() {
	fake_as "$QEMU" "$@"
}

# The libvirt domain: the test driver's node, its channels the fake agent's FIFOs.
sed "s|@DIR@|$WORK|g" >"$WORK/node.xml" <<'XML'
<node>
  <domain type='test'>
    <name>lv-pipe</name>
    <memory>524288</memory>
    <vcpu>2</vcpu>
    <os><type>hvm</type></os>
    <devices>
      <channel type='pipe'><source path='@DIR@/lv/trace-path-cpu0'/><target type='virtio' name='trace-path-cpu0'/></channel>
      <channel type='pipe'><source path='@DIR@/lv/trace-path-cpu1'/><target type='virtio' name='trace-path-cpu1'/></channel>
      <channel type='pipe'><source path='@DIR@/lv/agent-ctl-path'/><target type='virtio' name='agent-ctl-path'/></channel>
    </devices>
  </domain>
  <domain type='test'>
    <name>lv-plain</name>
    <memory>524288</memory>
    <vcpu>1</vcpu>
    <os><type>hvm</type></os>
  </domain>
</node>
XML
URI=test://$WORK/node.xml

# (The domain's "QEMU": libvirt's test driver runs none, the fake agent stands in.)
qemu lv-pipe --fifo "$WORK/lv" --fixture "$DATA/cap-guest" --repeat 2 --retime -- -name guest=lv-pipe
LV=$FAKE_PID
qemu q-pipe --fifo "$WORK/qp" --fixture "$DATA/cap-guest" --repeat 3 --retime -- $(pipe_args q-pipe "$WORK/qp")
QP=$FAKE_PID
qemu q-sock --listen "$WORK/qs" --fixture "$DATA/cap-host" --repeat 2 --retime -- -name q-sock \
	-chardev "socket,id=s0,path=$WORK/qs/trace-path-cpu0,server=on,wait=off" -device virtserialport,chardev=s0,name=trace-path-cpu0 \
	-chardev "socket,id=s1,path=$WORK/qs/trace-path-cpu1,server=on,wait=off" -device virtserialport,chardev=s1,name=trace-path-cpu1 \
	-chardev "socket,id=s2,path=$WORK/qs/agent-ctl-path,server=on,wait=off" -device virtserialport,chardev=s2,name=agent-ctl-path
QS=$FAKE_PID
"$COLLECT" setup --vcpus 2 --dir "$WORK/qd" --create >/dev/null || fail "setup --create exited $?"
"$WORK/dead-bin/qemu-system-x86_64" $(pipe_args q-dead "$WORK/qd") 2>"$WORK/q-dead.fake" &
QD=$!
track $QD
qemu q-busy --fifo "$WORK/qb" --fixture "$DATA/cap-guest" --repeat 0 --retime -- $(pipe_args q-busy "$WORK/qb")
QB=$FAKE_PID
"$WORK/dead-bin/qemu-system-x86_64" -name q-none -device virtio-serial-pci 2>/dev/null &
track $!
collect_bg() {
	"$COLLECT" record "$@" >"$WORK/busy.log" 2>&1 &
	BUSY_PID=$!
	track $BUSY_PID
	T_COLLECTORS="$T_COLLECTORS $BUSY_PID"
}
collect_bg --chardev-dir "$WORK/qb" --name q-busy -o "$WORK/out-busy" --quiet -d 30
_i=0
while ! grep -q 'START' "$WORK/q-busy.fake" && [ $_i -lt 100 ]; do sleep 0.1; _i=$((_i + 1)); done
grep -q 'ready 3' "$WORK/q-dead.fake" || { sleep 0.5; grep -q 'ready 3' "$WORK/q-dead.fake"; } ||
	fail "vt-fake-qemu did not open its 3 ports: $(cat "$WORK/q-dead.fake")"

NAMES="lv-pipe lv-plain q-pipe q-sock q-dead q-busy q-none"
# JSON for scripts, timed.
t0=$(date +%s%N)
"$COLLECT" list --connect "$URI" --json $NAMES >"$WORK/list.json" 2>"$WORK/list.err" || fail "list --json exited $?"
t1=$(date +%s%N)
ms=$(( (t1 - t0) / 1000000 ))
echo "measured: list took $ms ms (one guest silent: the wait is 2 s)"
[ "$ms" -lt 3500 ] || fail "list took $ms ms, want < 3500"
[ -s "$WORK/list.err" ] && { show "$WORK/list.err"; fail "list printed errors"; }
jq -c '.guests[] | [.name, .source, .agent.state, .agent.software, .agent.kernel]' "$WORK/list.json" | sed 's/^/  | /'
J() { jq -r --arg n "$1" ".guests[] | select(.name == \$n) | $2" "$WORK/list.json"; }
[ "$(jq '.guests | length' "$WORK/list.json")" = 5 ] || fail "list --json has $(jq '.guests | length' "$WORK/list.json") guests, want 5"
for n in lv-pipe q-pipe q-sock; do
	[ "$(J $n .agent.state)" = answers ] || fail "$n: agent state $(J $n .agent.state), want answers"
	[ "$(J $n .agent.software)" = "vt-fake-agent 0.1.0 (Linux $(J $n .agent.kernel))" ] || fail "$n: software '$(J $n .agent.software)'"
	[ "$(J $n .ports.ready)" = true ] || fail "$n: ports not ready"
done
[ "$(J lv-pipe .agent.kernel)" = 6.18.44-fc-v769 ] || fail "lv-pipe kernel '$(J lv-pipe .agent.kernel)'"
[ "$(J q-sock .agent.kernel)" = "$(awk '{ print $2 }' "$DATA/cap-host/uname")" ] || fail "q-sock kernel '$(J q-sock .agent.kernel)'"
[ "$(J lv-pipe .source)" = libvirt ] && [ "$(J lv-pipe .uri)" = "$URI" ] || fail "lv-pipe source/uri"
[ "$(J q-pipe .qemu_pid)" = "$QP" ] && [ "$(J q-pipe .ports.chardev_dir)" = "$WORK/qp" ] || fail "q-pipe pid/dir"
[ "$(J q-dead .agent.state)" = silent ] || fail "q-dead: $(J q-dead .agent.state)"
[ "$(J q-busy .agent.state)" = busy ] && [ "$(J q-busy .agent.busy_pid)" = "$BUSY_PID" ] ||
	fail "q-busy: $(J q-busy .agent.state) $(J q-busy .agent.busy_pid) (the recorder is $BUSY_PID)"
[ "$(J q-pipe .agent.cpus)" = 2 ] || fail "q-pipe: agent cpus $(J q-pipe .agent.cpus)"
# The HELLO nobody read is no longer in q-dead's control FIFO.
left=$(dd if="$WORK/qd/agent-ctl-path.in" iflag=nonblock bs=64k count=1 2>/dev/null | wc -c)
echo "measured: $left bytes left in q-dead's control FIFO after list"
[ "$left" = 0 ] || fail "list left $left bytes (its HELLO) in q-dead's control FIFO"

# The table; they answer again (the first HELLO left nothing behind).
"$COLLECT" list --connect "$URI" $NAMES >"$WORK/list.txt" 2>"$WORK/list.err" || fail "list exited $?"
sed 's/^/  | /' "$WORK/list.txt"
row() { awk -v n="$1" '$1 == n' "$WORK/list.txt"; }
row lv-pipe | grep -q 'libvirt .*2 vCPUs + control .*vt-fake-agent 0.1.0 .*6.18.44-fc-v769$' || fail "lv-pipe row: '$(row lv-pipe)'"
row q-pipe | grep -q "qemu pid $QP .*2 vCPUs + control .*vt-fake-agent 0.1.0 .*6.18.44-fc-v769\$" || fail "q-pipe row: '$(row q-pipe)'"
row q-sock | grep -q "qemu pid $QS .*2 vCPUs + control .*vt-fake-agent 0.1.0 " || fail "q-sock row: '$(row q-sock)'"
row q-dead | grep -q "qemu pid $QD .*2 vCPUs + control .*no answer " || fail "q-dead row: '$(row q-dead)'"
row q-busy | grep -q "qemu pid $QB .*busy (pid $BUSY_PID) " || fail "q-busy row: '$(row q-busy)' (the recorder is $BUSY_PID)"
[ -z "$(row lv-plain)$(row q-none)" ] || fail "a guest without trace ports is listed"
grep -q '^  q-dead: no answer within 2.0 s: is trace-agent installed and running in the guest?' "$WORK/list.txt" ||
	fail "no hint for the silent guest"

# --names: the libvirt domains with channels (shell completion); --no-probe asks nothing.
[ "$("$COLLECT" list --connect "$URI" --names lv-pipe lv-plain q-pipe)" = lv-pipe ] || fail "--names: '$("$COLLECT" list --connect "$URI" --names lv-pipe lv-plain q-pipe)'"
hellos=$(grep -c 'HELLO' "$WORK/q-pipe.fake")
"$COLLECT" list --connect "$URI" --no-probe q-pipe | grep -q "q-pipe .* - " || fail "--no-probe q-pipe: agent column not '-'"
[ "$(grep -c 'HELLO' "$WORK/q-pipe.fake")" = "$hellos" ] || fail "--no-probe sent a HELLO"
[ -z "$("$COLLECT" list --connect "$URI" --no-probe nosuch | grep -v '^no guest')" ] || fail "an unknown name lists something"

# record --all: those that answer, each exact; the silent and the busy one left out, named.
kill -TERM $BUSY_PID 2>/dev/null
wait $BUSY_PID 2>/dev/null
# q-busy's recorder is gone: it answers again, so stop its agent (it would be recorded).
kill -TERM $QB 2>/dev/null
wait $QB 2>/dev/null

collect_bg --chardev-dir "$WORK/qd" --name q-dead -o "$WORK/out-hold" --quiet -d 60
sleep 0.5
# (q-dead is held by that record now: busy, and left out as such.)
# --all=NAMES: only the test's guests (a QEMU of another test on this machine is none of ours).
"$COLLECT" record --all="$(echo $NAMES | tr ' ' ,)" --connect "$URI" -o "$WORK/out-all" -d 2 \
	>"$WORK/all.log" 2>&1
RC=$?
sed 's/^/  | /' "$WORK/all.log" | grep -- '--all'
[ $RC = 0 ] || { show "$WORK/all.log"; fail "record --all exited $RC, want 0"; }
got=$(man "$WORK/out-all" '[.guests[].name] | sort | join(" ")')
[ "$got" = "lv-pipe q-pipe q-sock" ] || fail "record --all recorded '$got', want 'lv-pipe q-pipe q-sock'"
grep -q -- "--all: q-dead is left out: another process (pid $BUSY_PID) records it" "$WORK/all.log" ||
	fail "record --all did not say q-dead is left out as busy"
fake_end $LV
fake_end $QP
fake_end $QS
check_exact "$WORK/out-all" lv-pipe "$DATA/cap-guest" 2
check_exact "$WORK/out-all" q-pipe "$DATA/cap-guest" 3
check_exact "$WORK/out-all" q-sock "$DATA/cap-host" 2
kill -TERM $BUSY_PID
wait $BUSY_PID 2>/dev/null

# --all without --wait leaves a silent guest out; with --wait=1 it is included, and fails alone.
"$COLLECT" record --all=q-dead -o "$WORK/out-silent" -d 1 >"$WORK/silent.log" 2>&1
RC=$?
grep -q -- "--all: q-dead is left out: no answer within 2.0 s (with --wait it is waited for)" "$WORK/silent.log" ||
	{ show "$WORK/silent.log"; fail "record --all did not leave the silent guest out, naming why"; }
[ $RC = 1 ] || fail "record --all with nothing to record exited $RC, want 1"
echo "PASS"
