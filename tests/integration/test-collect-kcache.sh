#!/bin/sh
# Proves: the kallsyms cache (--kallsyms-cache DIR) against a guest that says what it likes.
# A fake agent with made-up kallsyms (1000 text symbols) and a key (--kallsyms-key):
#   1. DIR is made 0700; the guest's kallsyms go into DIR/NAME.kallsyms (0600, the key in its
#      header); the manifest says kallsyms_from_cache false;
#   2. again: the collector gives the key, the agent leaves kallsyms out, the guest file has
#      the 1000 symbols all the same and the manifest says true;
#   3. a guest that leaves kallsyms out but says another key (--lie-kallsyms-key): the cached
#      kallsyms are not used for it; the collector warns, names the guest, asks again without
#      the key, and the guest file has the guest's own kallsyms;
#   4. a cache directory others may write, or one that is a link: not used, a warning, the
#      recording otherwise the same (and nothing is written there);
#   5. --no-kallsyms-cache: the cache is neither read nor written.
# Every recording: exit 0 and the exact events of the fixture.
echo "collect: kallsyms kept between recordings, given back only to the guest whose key it is"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools

p=$WORK/ports
kc=$WORK/kc
mkdir -p "$p"
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
}
syms() { cat "$WORK/$1.syms"; }
fromcache() { guest_json "$WORK/o-$1" kg .kallsyms_from_cache; }
key() { od -An -tx8 -j8 -N8 "$kc/kg.kallsyms" | tr -d ' '; }

# 1. made, filled
rec r1 --kallsyms-key 5eed1234 -- --kallsyms-cache "$kc"
[ "$(stat -c %a "$kc")" = 700 ] || fail "r1: $kc is mode $(stat -c %a "$kc"), want 700"
[ "$(stat -c %a "$kc/kg.kallsyms")" = 600 ] || fail "r1: the entry is mode $(stat -c %a "$kc/kg.kallsyms"), want 600"
[ "$(key)" = 000000005eed1234 ] || fail "r1: the entry's key is $(key), want 000000005eed1234"
[ "$(fromcache r1)" = false ] || fail "r1: kallsyms_from_cache = $(fromcache r1), want false"
[ "$(syms r1)" = 1000 ] || fail "r1: $(syms r1) made-up symbols in the guest file, want 1000"
[ "$(ls -A "$kc")" = kg.kallsyms ] || fail "r1: $kc holds $(ls -A "$kc" | tr '\n' ' ')"

# 2. used: the agent was asked with the key and left kallsyms out
rec r2 --kallsyms-key 5eed1234 -- --kallsyms-cache "$kc"
grep -q 'META without kallsyms: the host has key 5eed1234 (+' "$WORK/r2.fake" ||
	{ show "$WORK/r2.fake"; fail "r2: the agent was not asked with the key"; }
[ "$(fromcache r2)" = true ] || fail "r2: kallsyms_from_cache = $(fromcache r2), want true"
[ "$(syms r2)" = 1000 ] || fail "r2: $(syms r2) made-up symbols in the guest file, want 1000 (from the cache)"

# 3. a guest that leaves kallsyms out under another key: asked again, its own kallsyms
rec r3 --kallsyms-key 0bad0bad --lie-kallsyms-key -- --kallsyms-cache "$kc"
grep -q 'META without kallsyms: the host has key 5eed1234 (it says' "$WORK/r3.fake" ||
	{ show "$WORK/r3.fake"; fail "r3: the agent was not asked with the cached key"; }
grep -q "guest kg: the cached kallsyms cannot be used (.*): asking the guest" "$WORK/r3.log" ||
	{ show "$WORK/r3.log"; fail "r3: no warning that the cached kallsyms were not used"; }
[ "$(fromcache r3)" = false ] || fail "r3: kallsyms_from_cache = $(fromcache r3), want false"
[ "$(syms r3)" = 1000 ] || fail "r3: $(syms r3) made-up symbols in the guest file, want 1000 (the guest's)"
[ "$(key)" = 000000000bad0bad ] || fail "r3: the entry's key is $(key), want the guest's 000000000bad0bad"

# 4. a directory others may write, and a link to the cache: not used
mkdir -m 0777 "$WORK/kc-open"
chmod 0777 "$WORK/kc-open"
rec r4 --kallsyms-key 5eed1234 -- --kallsyms-cache "$WORK/kc-open"
grep -q "the kallsyms cache $WORK/kc-open is not used: it is not this user's, or others may write it" "$WORK/r4.log" ||
	{ show "$WORK/r4.log"; fail "r4: no warning about a cache others may write"; }
[ -z "$(ls -A "$WORK/kc-open")" ] || fail "r4: files written in a cache others may write"
ln -s "$kc" "$WORK/kc-link"
before=$(md5sum <"$kc/kg.kallsyms")
rec r5 --kallsyms-key 7777 -- --kallsyms-cache "$WORK/kc-link"
grep -q "the kallsyms cache $WORK/kc-link is not used: Too many levels of symbolic links" "$WORK/r5.log" ||
	{ show "$WORK/r5.log"; fail "r5: no warning about a cache that is a link"; }
[ "$(md5sum <"$kc/kg.kallsyms")" = "$before" ] || fail "r5: the cache was written through a link"
[ "$(fromcache r5)" = false ] || fail "r5: kallsyms_from_cache = $(fromcache r5), want false"

# 5. --no-kallsyms-cache
rec r6 --kallsyms-key 0bad0bad -- --kallsyms-cache "$kc" --no-kallsyms-cache
grep -q 'META without kallsyms' "$WORK/r6.fake" && fail "r6: the agent was given a key with --no-kallsyms-cache"
[ "$(fromcache r6)" = false ] || fail "r6: kallsyms_from_cache = $(fromcache r6), want false"
echo "ok: $n recordings, the cache made, used, refused to a lying guest, not used where others may write or through a link"
echo "PASS"
