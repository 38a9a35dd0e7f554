#!/bin/sh
# Proves (issue 28): two VMs whose guests share a name ("kg") never reach each other's kallsyms
# cache entry, though one of them is hostile: it claims the other's key. Two long-lived
# processes stand in for their QEMUs (--qemu-pid: what the host knows of each VM).
#   a1: VM A's guest records: its entry is made (key 5eed1234);
#   b1: VM B's guest claims key 5eed1234 and sends no kallsyms (theft): it is never sent a key,
#       its file holds none of A's symbols, nothing comes from the cache, A's entry is untouched;
#   b2: B sends its own kallsyms (evil_sym_*) under A's key (poisoning): they go to B's entry;
#       A's entry is untouched;
#   a2: A again: its own kallsyms from its own entry (1000 vt_fake_sym_, no evil_sym_);
#   b3: B again: its own entry, never A's.
# Exactly two entries, one per VM; no agent was ever sent a key.
echo "collect: kallsyms cache entries are per VM: a hostile same-name guest neither reads nor writes another's"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools

kc=$WORK/kc
sleep 600 &
VMA=$!
track $VMA
sleep 600 &
VMB=$!
track $VMB
# rec RUN VM FAKE-ARGS...: one recording of guest kg in VM (a stand-in pid)
rec() {
	r=$1 vm=$2
	shift 2
	mkdir -p "$WORK/p-$r"
	fake kg --fifo "$WORK/p-$r" --fixture "$DATA/cap-guest" --repeat 1 --retime "$@"
	collect $r --chardev-dir "$WORK/p-$r" --name kg -o "$WORK/o-$r" --duration 1 \
		--kallsyms-cache "$kc" --qemu-pid "$vm"
	fake_end $FAKE_PID
	cp "$WORK/kg.fake" "$WORK/$r.fake"
	[ $RC = 0 ] || { show "$WORK/$r.log" "$WORK/$r.fake"; fail "$r: record exited $RC, want 0"; }
	check_exact "$WORK/o-$r" kg "$DATA/cap-guest" 1
	trace-cmd dump --kallsyms "$WORK/o-$r/guest-kg.dat" >"$WORK/$r.ks" 2>/dev/null
	! grep -q "META_REQ gives the key" "$WORK/$r.fake" ||
		{ grep "META_REQ gives the key" "$WORK/$r.fake"; fail "$r: the collector sent the agent a key"; }
}
count() { grep -c " T $2" "$WORK/$1.ks"; }
fromcache() { guest_json "$WORK/o-$1" kg .kallsyms_from_cache; }
# the entries in the cache but FILE
others() { ls -A "$kc" | grep -vxF "$(basename "${1:-/}")"; }

rec a1 "$VMA" --kallsyms-key 5eed1234
[ "$(others | wc -l)" = 1 ] || { ls -l "$kc"; fail "a1: $(others | wc -l) entries, want 1 for VM A"; }
A=$kc/$(others)
[ "$(guest_json "$WORK/o-a1" kg .kallsyms_cache_vm).kallsyms" = "$(basename "$A")" ] ||
	fail "a1: the manifest does not name VM A's entry $(basename "$A")"
sumA=$(md5sum <"$A")
[ "$(count a1 vt_fake_sym_)" = 1000 ] || fail "a1: $(count a1 vt_fake_sym_) of A's symbols, want 1000"

rec b1 "$VMB" --kallsyms-key 5eed1234 --kallsyms-name evil_sym_ --lie-kallsyms-key
[ "$(count b1 vt_fake_sym_)" = 0 ] || fail "b1 (theft): B's file holds $(count b1 vt_fake_sym_) of A's symbols, want 0"
[ "$(fromcache b1)" = false ] || fail "b1: kallsyms_from_cache = $(fromcache b1), want false"
[ "$(md5sum <"$A")" = "$sumA" ] || fail "b1: A's entry changed"
[ -z "$(others "$A")" ] || fail "b1: an entry made from a guest that sent no kallsyms: $(others "$A")"

rec b2 "$VMB" --kallsyms-key 5eed1234 --kallsyms-name evil_sym_
[ "$(others "$A" | wc -l)" = 1 ] || { ls -l "$kc"; fail "b2: no entry of its own for VM B"; }
[ "$(md5sum <"$A")" = "$sumA" ] || fail "b2 (poisoning): A's entry changed"
[ "$(count b2 evil_sym_)" = 1000 ] || fail "b2: $(count b2 evil_sym_) of B's own symbols, want 1000"

rec a2 "$VMA" --kallsyms-key 5eed1234
[ "$(fromcache a2)" = true ] || fail "a2: kallsyms_from_cache = $(fromcache a2), want true"
[ "$(count a2 vt_fake_sym_)" = 1000 ] || fail "a2: $(count a2 vt_fake_sym_) of A's symbols, want 1000"
[ "$(count a2 evil_sym_)" = 0 ] || fail "a2: A's file holds $(count a2 evil_sym_) of B's symbols"

rec b3 "$VMB" --kallsyms-key 5eed1234 --kallsyms-name evil_sym_
[ "$(fromcache b3)" = true ] || fail "b3: kallsyms_from_cache = $(fromcache b3), want true (its own entry)"
[ "$(count b3 vt_fake_sym_)" = 0 ] && [ "$(count b3 evil_sym_)" = 1000 ] ||
	fail "b3: B's file holds $(count b3 vt_fake_sym_) of A's and $(count b3 evil_sym_) of its own symbols"
[ "$(ls -A "$kc" | wc -l)" = 2 ] || fail "$kc holds $(ls -A "$kc" | tr '\n' ' '), want one entry per VM"
echo "entries: $(ls -A "$kc" | tr '\n' ' ')"
echo "PASS"
