#!/bin/bash
# vt-suite: e2e
# vt-suite: e2e-6.12
# test-collect-kcache.sh: the kallsyms cache (--kallsyms-cache DIR), with a real agent in a TCG
# guest. One agent (vt.agent_keep=1) serves four recordings of the same boot; the VM is its QEMU
# process (--qemu-pid), which names the entry DIR/qemu-PID-START-BOOT.kallsyms:
#   first   DIR does not exist: it is made (mode 0700); the guest sends kallsyms, which are kept
#           in the VM's entry (mode 0600, the agent's key in its header);
#   again   the key the agent reports in the setup's bundle is the entry's (compared by the
#           collector, never sent to the agent): kallsyms are not asked for, they come from the
#           cache (the manifest's kallsyms_from_cache): the guest file's kallsyms are the
#           first's, line for line;
#   link    the entry is a symbolic link to a file outside DIR: it is not followed (a
#           warning), the guest sends kallsyms, the link is replaced by a regular file, and the
#           file it pointed to is unchanged;
#   stale   the entry's key is changed (as if the guest had rebooted or loaded a module): the
#           agent sends kallsyms, and the entry gets the agent's key back.
# Checks, per recording: exit 0, no problems, the exact marker counts, and the guest file's
# kallsyms (`trace-cmd dump --kallsyms`) equal to the first recording's.
# Env: VT_BUILDDIR, VT_STATIC_AGENT, VT_E2E_MARKERS (default 500), VT_KEEP=1.
# Exit: 0 pass, 1 fail, 77 skip.
echo "test-collect-kcache: kallsyms kept between recordings of one boot, the agent not asked for them again; a link in the cache never followed"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
. "$HERE/scenario-lib.sh"
VT_LOG_PREFIX=test-collect-kcache
ME=test-collect-kcache
N=${VT_E2E_MARKERS:-500}

scn_begin
scn_ports pipe
VT_APPEND="vt.agent_keep=1"
scn_boot

KC=$WORK/kcache
ENTRY=$KC/qemu-$VT_QEMU_PID-$(awk '{ sub(/.*\) /, ""); split($0, f, " "); print f[20] }' /proc/$VT_QEMU_PID/stat)-$(tr -d '-' </proc/sys/kernel/random/boot_id | cut -c1-8).kallsyms
scn_script "$WORK/flood" "flood vt-kc $N 0 64" "!sleep 0.3"

# one NAME: record with the cache, then the checks every recording shares.
one() {
    local name=$1 cpu got
    OUT=$WORK/out-$name
    scn_record --verbose --kallsyms-cache "$KC" --chardev-dir "$PORTS" --name e2e --qemu-pid "$VT_QEMU_PID" \
        -e sched:sched_switch -- "$WORK/flood"
    cp "$WORK/record.log" "$WORK/record-$name.log"
    grep -E 'cache|recording$' "$WORK/record.log" | sed "s/^/    $name | /"
    [ $CRC = 0 ] || { sed 's/^/    | /' "$WORK/record.log"; bad "$name: record exited $CRC, want 0"; }
    [ "$(scn_m '.guests[0].problems')" = "" ] || bad "$name: problems: $(scn_m '.guests[0].problems')"
    scn_counts e2e "0 1"
    for cpu in 0 1; do
        got=$(grep -cE "\[00$cpu\] .* vt-kc cpu$cpu [0-9]+ " "$WORK/guest.txt")
        [ "$got" = "$N" ] || bad "$name cpu$cpu: $got markers, want $N"
    done
    trace-cmd dump --kallsyms "$OUT/guest-e2e.dat" >"$WORK/ks-$name.txt" 2>/dev/null
    echo "$ME: $name: $(grep -c ' [tT] ' "$WORK/ks-$name.txt") kallsyms text symbols in guest-e2e.dat"
}
key() { od -An -tx8 -j8 -N8 "$ENTRY" | tr -d ' '; }

one first
[ "$(scn_m '.guests[0].kallsyms_from_cache')" = false ] || bad "first: kallsyms from an empty cache"
[ "$(stat -c %a "$KC" 2>/dev/null)" = 700 ] || bad "first: $KC is mode $(stat -c %a "$KC" 2>/dev/null), want 700 (made)"
[ -f "$ENTRY" ] && [ ! -L "$ENTRY" ] || bad "first: no $ENTRY"
[ "$(stat -c %a "$ENTRY" 2>/dev/null)" = 600 ] || bad "first: $ENTRY is mode $(stat -c %a "$ENTRY"), want 600"
[ "$(grep -c ' [tT] ' "$WORK/ks-first.txt")" -gt 10000 ] || bad "first: the guest file lacks the guest's kallsyms"
k1=$(key)
echo "$ME: the entry: $(stat -c %s "$ENTRY") bytes, key $k1"

one again
[ "$(scn_m '.guests[0].kallsyms_from_cache')" = true ] || bad "again: kallsyms not taken from the cache (manifest)"
cmp -s "$WORK/ks-first.txt" "$WORK/ks-again.txt" || bad "again: the guest file's kallsyms differ from the first's"
[ "$(key)" = "$k1" ] || bad "again: the entry's key changed"

echo "not kallsyms" >"$WORK/elsewhere"
cp "$WORK/elsewhere" "$WORK/elsewhere.orig"
rm -f "$ENTRY" && ln -s "$WORK/elsewhere" "$ENTRY"
one link
grep -q "guest e2e: its VM's entry .* in the kallsyms cache is not used" "$WORK/record-link.log" ||
    bad "link: no warning about the link"
[ "$(scn_m '.guests[0].kallsyms_from_cache')" = false ] || bad "link: kallsyms from a link"
cmp -s "$WORK/elsewhere" "$WORK/elsewhere.orig" || bad "link: the file the link pointed to was changed"
[ -f "$ENTRY" ] && [ ! -L "$ENTRY" ] && [ "$(key)" = "$k1" ] || bad "link: the link was not replaced by the guest's entry"
cmp -s "$WORK/ks-first.txt" "$WORK/ks-link.txt" || bad "link: the guest file's kallsyms differ from the first's"

printf '\x01\x02\x03\x04\x05\x06\x07\x08' | dd of="$ENTRY" bs=1 seek=8 conv=notrunc status=none
[ "$(key)" != "$k1" ] || bad "stale: the key was not changed"
one stale
[ "$(scn_m '.guests[0].kallsyms_from_cache')" = false ] || bad "stale: kallsyms from an entry of another key"
[ "$(key)" = "$k1" ] || bad "stale: the entry has key $(key), want the agent's $k1"
cmp -s "$WORK/ks-first.txt" "$WORK/ks-stale.txt" || bad "stale: the guest file's kallsyms differ from the first's"
[ -z "$(find "$KC" -name '*.tmp')" ] || bad "temporary files left in $KC"

SCN_AGENT_END=SIGTERM scn_end
scn_result
