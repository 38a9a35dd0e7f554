#!/bin/sh
# Proves: every libFuzzer harness in tests/fuzz/ links from the sources its vt-fuzz-sources line
# names (and its vt-fuzz-libs), as scripts/fuzz.sh builds it, here with the C compiler and a
# stand-in main instead of clang's -fsanitize=fuzzer. A source that a harness needs and its list
# lacks (a new record/ file) failed only the suite's fuzz part, after make check had passed:
# fuzz-collect lacked lib/stats-text.c in stop 50's run, and session-alive.c in stop 51's.
# Each harness's undefined symbols are printed.
echo "fuzz: every harness links from its own list of sources"
: "${VT_SRCDIR:?run through make check}"
CC=${CC:-cc}
command -v "$CC" >/dev/null 2>&1 || { echo "SKIP: no C compiler ($CC)"; exit 77; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/vt-fuzzlink.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
trap 'exit 1' INT TERM
printf '#define PACKAGE_VERSION "fuzz"\n#define _GNU_SOURCE 1\n' >"$WORK/config.h"
cat >"$WORK/main.c" <<'EOC'
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int main(void)
{
	return LLVMFuzzerTestOneInput ? 0 : 1;	/* linked, not run */
}
EOC
cd "$VT_SRCDIR" || exit 1
n=0 bad=0
for src in tests/fuzz/fuzz-*.c; do
	name=$(basename "$src" .c)
	libs=$(sed -n 's/.*vt-fuzz-sources: //p' "$src")
	ldlibs=$(sed -n 's/.*vt-fuzz-libs: //p' "$src")
	n=$((n + 1))
	# shellcheck disable=SC2086
	if "$CC" -O0 -w -I lib -include config.h -I "$WORK" -o "$WORK/$name" "$WORK/main.c" "$src" \
		$libs $ldlibs 2>"$WORK/$name.log"; then
		echo "ok: $name ($(echo $libs | wc -w) sources)"
	else
		grep -E "undefined reference|error:" "$WORK/$name.log" | sed 's/^.*: //' | sort -u | head -10 | sed 's/^/    /'
		echo "FAIL: $name does not link from its vt-fuzz-sources"
		bad=$((bad + 1))
	fi
done
[ $n -gt 0 ] || { echo "FAIL: no harness in tests/fuzz"; exit 1; }
[ $bad = 0 ] || exit 1
echo "PASS: $n harnesses link"
