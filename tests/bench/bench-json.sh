#!/bin/bash
# bench-json.sh: the collector's JSON reader (host-collector/json.c) against jansson (Debian's
# libjansson-dev) and json-c (libjson-c-dev) in the same run, on the document it reads most: a
# manifest.json, here of GUESTS guests (default 1024) with 2 vCPUs and 20 clock epochs each.
#   - parse time (median, min and max of 7) and MB/s; the peak RSS of a process that parsed it
#     once, and the ratios;
#   - what each reader accepts of 16 inputs RFC 8259 forbids (json-c at its strictest), which
#     matter where guest text reaches a terminal (doc/boundary.md);
#   - what each gives back of the 64-bit integers a manifest holds (a guest's page timestamps
#     and TSCs are u64, up to 2^64-1, written as JSON numbers).
# Why json.c is kept rather than replaced: json.c's header cites these figures.
#
#   tests/bench/bench-json.sh [GUESTS]      needs gcc, python3, libjansson-dev and libjson-c-dev
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
GUESTS=${1:-1024}
for t in gcc python3; do command -v $t >/dev/null || { echo "SKIP: $t not found"; exit 77; }; done
[ -f /usr/include/json-c/json.h ] || { echo "SKIP: json-c is not installed (apt-get install libjson-c-dev)"; exit 77; }
[ -f /usr/include/jansson.h ] || { echo "SKIP: jansson is not installed (apt-get install libjansson-dev)"; exit 77; }
W=$(mktemp -d /tmp/vt-bench-json.XXXXXX)
trap 'rm -rf "$W"' EXIT

gcc -O2 -DOURS -I "$REPO/host-collector" -I "$REPO/lib" -o "$W/ours" "$REPO/tests/bench/json-reader.c" \
	"$REPO/host-collector/json.c" "$REPO/host-collector/text.c"
gcc -O2 -DJANSSON -o "$W/jansson" "$REPO/tests/bench/json-reader.c" -ljansson
gcc -O2 -o "$W/jsonc" "$REPO/tests/bench/json-reader.c" -ljson-c

python3 - "$GUESTS" "$W" <<'PY'
import json, random, sys
n, w = int(sys.argv[1]), sys.argv[2]
random.seed(1)
guests = []
for g in range(n):
    cpus = [{"cpu": c, "bytes": random.randrange(1 << 40), "pages": random.randrange(1 << 30),
             "events": random.randrange(1 << 40), "lost": 0,
             "stats": "entries: 1234\noverrun: 0\ncommit overrun: 0\nbytes: 5678\n"} for c in range(2)]
    epochs = [{"cpu": c, "from": random.randrange(1 << 60), "offset": -random.randrange(1 << 40),
               "bound_ns": 0.5, "source": "kvm"} for c in range(2) for _ in range(20)]
    guests.append({"name": "guest%d" % g, "trace_id": "0x%016x" % random.randrange(1 << 64),
                   "file": "guest-guest%d.dat" % g, "cpus": cpus,
                   "sync": {"method": "kvm", "epochs": epochs}, "problems": []})
open(w + "/manifest.json", "w").write(json.dumps(
    {"version": "bench", "host": {"trace_id": "0x1"}, "guests": guests}, indent=2))
bad = [
    (b'"a\nb"', "raw newline in a string"),
    (b'"\t"', "raw tab in a string"),
    (b'"\x1b[2J"', "raw ESC [2J (a screen clear)"),
    (b'"\\ud83d"', "lone high surrogate \\ud83d"),
    (b'"\\ude00"', "lone low surrogate \\ude00"),
    (b'"\xed\xa0\x80"', "encoded surrogate ED A0 80"),
    (b'"\xc0\x80"', "overlong NUL C0 80"),
    (b'"\xf4\x90\x80\x80"', "beyond U+10FFFF"),
    (b'"\xff"', "invalid byte FF"),
    (b"{'a':1}", "single-quoted key"),
    (b"[1,]", "trailing comma"),
    (b"01", "leading zero"),
    (b"NaN", "NaN"),
    (b"/* c */ 1", "comment"),
    (b"\xef\xbb\xbf{}", "byte order mark"),
    (b"{} {}", "two documents"),
]
with open(w + "/bad.list", "w") as l:
    for i, (doc, what) in enumerate(bad):
        open("%s/bad%d" % (w, i), "wb").write(doc)
        l.write("%d %s\n" % (i, what))
PY

size=$(stat -c %s "$W/manifest.json")
echo "bench-json: manifest.json of $GUESTS guests, $(awk -v s="$size" 'BEGIN { printf "%.1f", s / 1e6 }') MB;" \
	"$(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
printf '%-22s %10s %16s %8s %14s\n' reader "median ms" "(min-max)" "MB/s" "peak RSS KiB"
for r in ours jansson jsonc; do
	read -r med lo hi < <("$W/$r" "$W/manifest.json")
	rss=$("$W/$r" "$W/manifest.json" rss)
	printf -v "med_$r" %s "$med"
	printf -v "rss_$r" %s "$rss"
	name="json.c (ours)"
	[ $r = jansson ] && name="jansson $(dpkg-query -W -f='${Version}' libjansson-dev 2>/dev/null)"
	[ $r = jsonc ] && name="json-c $(dpkg-query -W -f='${Version}' libjson-c-dev 2>/dev/null)"
	printf '%-22s %10s %16s %8.0f %14s\n' "$name" "$med" "($lo-$hi)" \
		"$(awk -v s="$size" -v m="$med" 'BEGIN { print s / 1e3 / m }')" "$rss"
done
# The document's own buffer is in both peaks: the ratio is of what the readers add to it.
for r in jansson jsonc; do
	eval "a=\$med_$r ra=\$rss_$r"
	awk -v r="$r" -v a="$a" -v b="$med_ours" -v ra="$ra" -v rb="$rss_ours" -v s="$size" 'BEGIN {
		printf "%s against ours: %.2fx the time; %.1fx the memory beyond the document (%d KiB against %d)\n",
			r, a / b, (ra - s / 1024) / (rb - s / 1024), ra - s / 1024, rb - s / 1024 }'
done

echo
echo "inputs RFC 8259 forbids:"
printf '%-34s %-10s %-10s %s\n' input ours jansson json-c
acc_o=0 acc_a=0 acc_j=0
while read -r i what; do
	o=$("$W/ours" -a "$W/bad$i")
	a=$("$W/jansson" -a "$W/bad$i")
	j=$("$W/jsonc" -a "$W/bad$i")
	[ "$o" != ACCEPTED ] || acc_o=$((acc_o + 1))
	[ "$a" != ACCEPTED ] || acc_a=$((acc_a + 1))
	[ "$j" != ACCEPTED ] || acc_j=$((acc_j + 1))
	printf '%-34s %-10s %-10s %s\n' "$what" "$o" "$a" "$j"
done <"$W/bad.list"
echo "accepted: ours $acc_o of 16, jansson $acc_a of 16, json-c $acc_j of 16"

echo
echo "64-bit integers given back (a guest's u64 page timestamp or TSC in manifest.json):"
printf '%-22s %-22s %-22s %s\n' input ours jansson json-c
exact_o=0 exact_a=0 exact_j=0
for v in 9223372036854775807 9223372036854775808 18446744073709551615; do
	echo "[$v]" >"$W/u64"
	o=$("$W/ours" -u "$W/u64")
	a=$("$W/jansson" -u "$W/u64")
	j=$("$W/jsonc" -u "$W/u64")
	[ "$o" != "$v" ] || exact_o=$((exact_o + 1))
	[ "$a" != "$v" ] || exact_a=$((exact_a + 1))
	[ "$j" != "$v" ] || exact_j=$((exact_j + 1))
	printf '%-22s %-22s %-22s %s\n' "$v" "$o" "$a" "$j"
done
echo "exact: ours $exact_o of 3, jansson $exact_a of 3, json-c $exact_j of 3"
