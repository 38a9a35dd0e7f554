# apt-lib.sh: a PRIVATE apt configuration, sourced by kernel-deb.sh and qemu-deb.sh.
# The system's apt configuration (/etc/apt) is neither read for sources nor changed: apt runs
# with -o Dir::Etc::sourcelist=DIR/sources.list -o Dir::Etc::sourceparts=- and its own lists,
# cache and preferences under DIR. Lists younger than a day are reused.

# apt_args [--suite-ok] ARGS...: the fetch scripts' options (ME names the script): --dir DIR,
# --refresh, --offline, -q, -h|--help (the script's header comment, up to its `set -e` line), and
# --suite NAME when --suite-ok comes first. Sets DIR (empty when not given), REFRESH, OFFLINE,
# QUIET, and SUITE when given; exits 1 on an option it does not know.
apt_args() {
	local suite_ok=0
	if [ "${1:-}" = --suite-ok ]; then suite_ok=1; shift; fi
	DIR= REFRESH=0 OFFLINE=0 QUIET=0
	while [ $# -gt 0 ]; do
		case "$1:$suite_ok" in
		--suite:1) SUITE=$2; shift 2 ;;
		--dir:*) DIR=$2; shift 2 ;;
		--refresh:*) REFRESH=1; shift ;;
		--offline:*) OFFLINE=1; shift ;;
		-q:*) QUIET=1; shift ;;
		-h:*|--help:*) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
		*) echo "$ME: unknown option '$1' (see --help)" >&2; exit 1 ;;
		esac
	done
}

# apt_private DIR SUITE...: make DIR's tree (DIR/sources.list naming each SUITE's main from
# deb.debian.org, DIR/lists, DIR/cache) and set APT_OPTS for apt-get and apt-cache. Also takes
# DIR/.lock (fd 9) so that two scripts never update the same lists at once. Returns 1 with a
# line on stderr when the archive keyring is missing.
apt_private() {
	local dir=$1 suite keyring=/usr/share/keyrings/debian-archive-keyring.gpg
	shift
	mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial" "$dir/etc/preferences.d" || return 1
	[ -f "$keyring" ] || { echo "$keyring missing (apt-get install debian-archive-keyring)" >&2; return 1; }
	exec 9>"$dir/.lock"
	flock 9
	for suite in "$@"; do
		printf 'deb [signed-by=%s] http://deb.debian.org/debian %s main\n' "$keyring" "$suite"
	done >"$dir/sources.list"
	APT_OPTS=(-o "Dir::Etc::sourcelist=$dir/sources.list" -o Dir::Etc::sourceparts=-
		-o "Dir::Etc::preferences=$dir/etc/preferences" -o "Dir::Etc::preferencesparts=$dir/etc/preferences.d"
		-o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir/cache" -o Dir::State::status=/dev/null
		-o APT::Architecture=amd64 -o APT::Architectures::=amd64 -o Acquire::Languages=none
		-o APT::Sandbox::User=root -o Debug::NoLocking=1)
}

# apt_lists_fresh DIR: whether DIR's lists were updated within a day.
apt_lists_fresh() {
	[ -n "$(find "$1/lists" -maxdepth 1 -name '*_Packages*' -mmin -1440 2>/dev/null)" ]
}

# apt_update DIR: update DIR's lists (apt_private first). Returns 1 and sets APT_ERR (one line)
# when the archive cannot be reached or apt warns.
apt_update() {
	APT_ERR=
	if ! timeout 300 apt-get -qq "${APT_OPTS[@]}" update >"$1/update.log" 2>&1 ||
	   grep -q '^[WE]:' "$1/update.log"; then
		APT_ERR=$(grep -m1 '^[WE]:' "$1/update.log" | cut -c1-160)
		return 1
	fi
}
