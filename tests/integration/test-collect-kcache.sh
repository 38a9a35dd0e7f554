#!/bin/sh
# Proves: the kallsyms cache (--kallsyms-cache DIR) against a guest that says what it likes.
# A fake agent with made-up kallsyms (1000 text symbols) and a key (--kallsyms-key); a
# long-lived process stands in for its QEMU (--qemu-pid): the VM the host knows.
#   1. DIR is made 0700; the guest's kallsyms go into DIR/qemu-PID-START-BOOT.kallsyms (0600,
#      the key in its header; named by the VM, not the guest); the manifest says
#      kallsyms_from_cache false and names the entry;
#   2. again: the key the guest reports matches the entry's (compared on the host, never sent):
#      the agent is only ever asked without kallsyms, the guest file has the 1000 symbols all
#      the same and the manifest says true;
#   3. the VM's next boot (another key): the entry is not used, the guest's kallsyms are asked
#      for and replace it;
#   4. a cache directory others may write, or one that is a link: not used, a warning, the
#      recording otherwise the same (and nothing is written there);
#   5. --no-kallsyms-cache: the cache is neither read nor written;
#   6. a guest the host knows nothing of (no --qemu-pid, --qmp or --domain): nothing cached,
#      the manifest says why.
# Every recording: exit 0 and the exact events of the fixture; no key is ever sent to an agent.
echo "collect: kallsyms kept between recordings, per VM, keys compared on the host and never sent"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools

p=$WORK/ports
kc=$WORK/kc
mkdir -p "$p"
sleep 600 &
VM=$!
track $VM
n=0
# rec NAME FAKE-ARGS... -- COLLECT-ARGS...: one recording of guest kg, its checks in common.
rec() {
	name=$1
	shift
	fargs=
	while [ "$1" != -- ]; do fargs="$fargs $1"; shift; done
	shift
	n=$((n + 1))
	# shellcheck disable=SC2086
	fake kg --fifo "$p" --fixture "$DATA/cap-guest" --repeat 1 --retime $fargs
	collect $name --chardev-dir "$p" --name kg -o "$WORK/o-$name" --duration 1 "$@"
	fake_end $FAKE_PID
	[ $RC = 0 ] || { show "$WORK/$name.log" "$WORK/kg.fake"; fail "$name: record exited $RC, want 0"; }
	check_exact "$WORK/o-$name" kg "$DATA/cap-guest" 1
	cp "$WORK/kg.fake" "$WORK/$name.fake"
	trace-cmd dump --kallsyms "$WORK/o-$name/guest-kg.dat" 2>/dev/null | grep -c ' T vt_fake_sym_' >"$WORK/$name.syms"
	! grep -q "META_REQ gives the key" "$WORK/$name.fake" || fail "$name: the collector sent the agent a key"
}
syms() { cat "$WORK/$1.syms"; }
fromcache() { guest_json "$WORK/o-$1" kg .kallsyms_from_cache; }
entry=$kc/qemu-$VM-$(awk '{ sub(/.*\) /, ""); split($0, f, " "); print f[20] }' /proc/$VM/stat)-$(tr -d '-' </proc/sys/kernel/random/boot_id | cut -c1-8).kallsyms
key() { od -An -tx8 -j8 -N8 "$entry" | tr -d ' '; }

# 1. made, filled
rec r1 --kallsyms-key 5eed1234 -- --kallsyms-cache "$kc" --qemu-pid $VM
[ "$(stat -c %a "$kc")" = 700 ] || fail "r1: $kc is mode $(stat -c %a "$kc"), want 700"
[ -f "$entry" ] || { ls -l "$kc"; fail "r1: no entry $(basename "$entry")"; }
[ "$(stat -c %a "$entry")" = 600 ] || fail "r1: the entry is mode $(stat -c %a "$entry"), want 600"
[ "$(key)" = 000000005eed1234 ] || fail "r1: the entry's key is $(key), want 000000005eed1234"
[ "$(fromcache r1)" = false ] || fail "r1: kallsyms_from_cache = $(fromcache r1), want false"
[ "$(guest_json "$WORK/o-r1" kg .kallsyms_cache_vm).kallsyms" = "$(basename "$entry")" ] ||
	fail "r1: the manifest names the entry $(guest_json "$WORK/o-r1" kg .kallsyms_cache_vm)"
[ "$(syms r1)" = 1000 ] || fail "r1: $(syms r1) made-up symbols in the guest file, want 1000"
[ "$(ls -A "$kc")" = "$(basename "$entry")" ] || fail "r1: $kc holds $(ls -A "$kc" | tr '\n' ' ')"

# 2. used: every bundle asked for without kallsyms, none read in the guest
rec r2 --kallsyms-key 5eed1234 -- --kallsyms-cache "$kc" --qemu-pid $VM
sent=$(grep -c "META sent" "$WORK/r2.fake") without=$(grep -c "META without kallsyms (NO_KALLSYMS)" "$WORK/r2.fake")
[ "$sent" -ge 2 ] && [ "$sent" = "$without" ] ||
	{ show "$WORK/r2.fake"; fail "r2: $sent bundles sent, $without of them asked without kallsyms; want all"; }
[ "$(fromcache r2)" = true ] || fail "r2: kallsyms_from_cache = $(fromcache r2), want true"
[ "$(syms r2)" = 1000 ] || fail "r2: $(syms r2) made-up symbols in the guest file, want 1000 (from the cache)"

# 3. another boot of the VM: its own kallsyms, the entry replaced
rec r3 --kallsyms-key 0bad0bad -- --kallsyms-cache "$kc" --qemu-pid $VM
[ "$(fromcache r3)" = false ] || fail "r3: kallsyms_from_cache = $(fromcache r3), want false"
[ "$(syms r3)" = 1000 ] || fail "r3: $(syms r3) made-up symbols in the guest file, want 1000 (the guest's)"
[ "$(key)" = 000000000bad0bad ] || fail "r3: the entry's key is $(key), want the guest's 000000000bad0bad"

# 4. a directory others may write, and a link to the cache: not used
mkdir -m 0777 "$WORK/kc-open"
chmod 0777 "$WORK/kc-open"
rec r4 --kallsyms-key 5eed1234 -- --kallsyms-cache "$WORK/kc-open" --qemu-pid $VM
grep -q "the kallsyms cache $WORK/kc-open is not used: it is not this user's, or others may write it" "$WORK/r4.log" ||
	{ show "$WORK/r4.log"; fail "r4: no warning about a cache others may write"; }
[ -z "$(ls -A "$WORK/kc-open")" ] || fail "r4: files written in a cache others may write"
ln -s "$kc" "$WORK/kc-link"
before=$(md5sum <"$entry")
rec r5 --kallsyms-key 7777 -- --kallsyms-cache "$WORK/kc-link" --qemu-pid $VM
grep -q "the kallsyms cache $WORK/kc-link is not used: Too many levels of symbolic links" "$WORK/r5.log" ||
	{ show "$WORK/r5.log"; fail "r5: no warning about a cache that is a link"; }
[ "$(md5sum <"$entry")" = "$before" ] || fail "r5: the cache was written through a link"
[ "$(fromcache r5)" = false ] || fail "r5: kallsyms_from_cache = $(fromcache r5), want false"

# 5. --no-kallsyms-cache
before=$(md5sum <"$entry")
rec r6 --kallsyms-key 5eed1234 -- --kallsyms-cache "$kc" --no-kallsyms-cache --qemu-pid $VM
[ "$(fromcache r6)" = false ] || fail "r6: kallsyms_from_cache = $(fromcache r6), want false"
[ "$(syms r6)" = 1000 ] || fail "r6: $(syms r6) made-up symbols in the guest file, want 1000 (the guest's)"
[ "$(md5sum <"$entry")" = "$before" ] || fail "r6: the cache was written with --no-kallsyms-cache"

# 6. no VM the host knows: nothing cached, and said
rec r7 --kallsyms-key 0bad0bad -- --kallsyms-cache "$kc" --verbose
[ "$(fromcache r7)" = false ] || fail "r7: kallsyms_from_cache = $(fromcache r7), want false"
[ "$(ls -A "$kc")" = "$(basename "$entry")" ] || fail "r7: $kc holds $(ls -A "$kc" | tr '\n' ' ')"
guest_json "$WORK/o-r7" kg .kallsyms_cache_note | grep -q "^nothing the host knows tells its VM apart" ||
	fail "r7: the manifest's kallsyms_cache_note: $(guest_json "$WORK/o-r7" kg .kallsyms_cache_note)"
[ "$(guest_json "$WORK/o-r7" kg .kallsyms_cache_vm)" = null ] || fail "r7: an entry is named without a VM"
grep -q "guest kg: kallsyms cache: nothing the host knows tells its VM apart" "$WORK/r7.log" ||
	{ show "$WORK/r7.log"; fail "r7: -v does not say why nothing is cached"; }
echo "ok: $n recordings, the cache made per VM, used by key on the host, replaced at another boot, not used where others may write, through a link, or without a VM"
echo "PASS"
