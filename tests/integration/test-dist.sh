#!/bin/sh
# Proves: `make dist` carries the whole source tree: every file `git ls-files` lists is in the
# tarball's tree (`make distdir`, what dist tars), except the documented exclusions below, and
# the tarball has nothing else but autotools' generated files. So the README's commands
# (scripts/demo.sh, scripts/test.sh), every test suite (e2e, fuzz corpora, kernel patches, CI)
# and the Debian packaging work from a release tarball. Skips (77) outside a git checkout.
#
# Exclusions (in git, not in the tarball):
#   .gitignore     git's, meaningless in a tarball (debian/.gitignore goes: dpkg-buildpackage
#                  leaves files in debian/ that a later `make dist` must not pick up)
# Generated files (in the tarball, not in git): configure, aclocal.m4, config.h.in, every
# Makefile.in, build-aux/*.
echo "dist: the tarball holds every file git tracks (minus .gitignore) and nothing else but autotools output"
: "${VT_SRCDIR:?run through make check}" "${VT_BUILDDIR:?run through make check}"
export LC_ALL=C
command -v git >/dev/null || { echo "SKIP: no git"; exit 77; }
git -C "$VT_SRCDIR" rev-parse --is-inside-work-tree >/dev/null 2>&1 ||
	{ echo "SKIP: $VT_SRCDIR is not a git checkout (a release tarball): nothing to compare with"; exit 77; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/vt-dist.XXXXXX") || exit 1
trap 'chmod -R u+w "$WORK" 2>/dev/null; rm -rf "$WORK"' EXIT
trap 'exit 1' INT TERM

EXCLUDE='^\.gitignore$'
GENERATED='^(configure|aclocal\.m4|config\.h\.in|(.*/)?Makefile\.in|build-aux/.*)$'

# distdir is what `make dist` tars; made in WORK so the build tree is left alone.
make -s -C "$VT_BUILDDIR" distdir distdir="$WORK/tree" >"$WORK/distdir.log" 2>&1 ||
	{ tail -20 "$WORK/distdir.log"; echo "FAIL: make distdir failed"; exit 1; }
(cd "$WORK/tree" && find . -type f -o -type l) | sed 's|^\./||' | sort >"$WORK/dist.list"
git -C "$VT_SRCDIR" ls-files | sort >"$WORK/git.list"
grep -Ev "$EXCLUDE" "$WORK/git.list" >"$WORK/want.list"
comm -23 "$WORK/want.list" "$WORK/dist.list" >"$WORK/missing"
comm -13 "$WORK/git.list" "$WORK/dist.list" | grep -Ev "$GENERATED" >"$WORK/extra"
echo "dist: $(wc -l <"$WORK/dist.list") files in the tarball, $(wc -l <"$WORK/git.list") in git," \
	"$(wc -l <"$WORK/missing") missing, $(wc -l <"$WORK/extra") unexpected"
rc=0
if [ -s "$WORK/missing" ]; then
	sed 's/^/    missing: /' "$WORK/missing" | head -40
	echo "FAIL: tracked files missing from make dist (add them to EXTRA_DIST or to the exclusions here)"
	rc=1
fi
if [ -s "$WORK/extra" ]; then
	sed 's/^/    unexpected: /' "$WORK/extra" | head -40
	echo "FAIL: make dist carries files git does not track"
	rc=1
fi
# A file the README's commands need, checked by name as well (the lists above could both be empty).
for f in scripts/demo.sh scripts/test.sh tests/e2e/mkguest.sh kernel-patches/series configure; do
	[ -f "$WORK/tree/$f" ] || { echo "FAIL: no $f in the tarball"; rc=1; }
done
[ $rc = 0 ] && echo "PASS"
exit $rc
