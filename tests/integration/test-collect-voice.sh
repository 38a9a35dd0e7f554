#!/bin/sh
# Proves: every subcommand refuses a bad option and a bad value in one voice: exit 2, nothing on
# stdout, and exactly two lines on stderr, "virtio-trace-collect SUB: ..." naming the option and
# the value (an unknown long option with the closest ones, from lib/suggest.c) and
# "Try 'virtio-trace-collect SUB --help'."; trace-cmd's letters that mean something else here
# (-v, -b, -C, -m) are refused naming our option, -p and -P are trace-cmd's; -o names its role.
# Every subcommand, report included, refuses an unknown option, and every option its table checks
# (`SUB --list-options`) a bad value, so: an option added to a table is tried without a new line.
echo "collect voice: every subcommand's usage errors name the option, the value and what it takes, in one voice (exit 2)"
: "${VT_BUILDDIR:?run through make check}"
export LC_ALL=C
COLLECT=$VT_BUILDDIR/host-collector/virtio-trace-collect
WORK=$(mktemp -d "${TMPDIR:-/tmp}/vt-voice.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
trap 'exit 1' INT TERM
failed=0
fail() { echo "FAIL: $*"; failed=1; }

# said SUB WANT ARGS...: `SUB ARGS` exits 2 with the two lines "virtio-trace-collect SUB: WANT"
# and the Try line, and writes nothing to stdout.
said() {
	sub=$1 want=$2
	shift 2
	"$COLLECT" "$sub" "$@" >"$WORK/out" 2>"$WORK/err" </dev/null
	rc=$?
	[ $rc = 2 ] && [ "$(sed -n 1p "$WORK/err")" = "virtio-trace-collect $sub: $want" ] &&
		[ "$(sed -n 2p "$WORK/err")" = "Try 'virtio-trace-collect $sub --help'." ] &&
		[ "$(wc -l <"$WORK/err")" = 2 ] && [ ! -s "$WORK/out" ] ||
		fail "$sub $*: exit $rc, said '$(head -c 400 "$WORK/err" | tr '\n' '|')', want 'virtio-trace-collect $sub: $want'"
}

# said1 SUB ARGS...: as said, the first line beginning "virtio-trace-collect SUB: $wanted".
said1() {
	sub=$1
	shift
	"$COLLECT" "$sub" "$@" >"$WORK/out" 2>"$WORK/err" </dev/null
	rc=$?
	case $(sed -n 1p "$WORK/err") in
	"virtio-trace-collect $sub: $wanted"?*) ok=1 ;;
	*) ok= ;;
	esac
	[ $rc = 2 ] && [ -n "$ok" ] && [ "$(sed -n 2p "$WORK/err")" = "Try 'virtio-trace-collect $sub --help'." ] &&
		[ "$(wc -l <"$WORK/err")" = 2 ] && [ ! -s "$WORK/out" ] ||
		fail "$sub $*: exit $rc, said '$(head -c 400 "$WORK/err" | tr '\n' '|')', want 'virtio-trace-collect $sub: $wanted...'"
}

mkdir "$WORK/rec"
# A bad option: a long one (with its closest), a short one, and a value missing.
said check "unknown option '--timout'; did you mean --timeout?" --timout 1
said join "unknown option '--nmae'; did you mean --name?" --nmae x
said list "unknown option '--jsn'; did you mean --json?" --jsn
said record "unknown option '--dration'; did you mean --duration?" --dration 3
said recover "unknown option '--bogus'" --bogus
said report "unknown option '--exts'; did you mean --exits?" --exts "$WORK/rec"
said setup "unknown option '--bakend=pipe'; did you mean --backend?" --bakend=pipe
for sub in check join list record report setup; do
	said $sub "unknown option '-Z'" -Z
done
said check "option '-D' needs a value" -D
said setup "option '--vcpus' needs a value" --vcpus
said list "option '--json' takes no value, not '3'" --json=3

# A bad value: the option, the value and what it takes.
said check "--timeout '0': seconds, more than 0 and at most 60" --timeout 0
said join "--host-sync-bound '1ms': nanoseconds, a whole number from 0 to 18446744073709551615" \
	--host-sync-bound 1ms a b
said join "--name '../x': a guest's name, of [A-Za-z0-9_.-]" --name ../x a b
said join "--dst-name 'a b': a guest's name, of [A-Za-z0-9_.-]" --dst-name 'a b' a b
said list "--timeout '99': seconds, more than 0 and at most 60" --timeout 99
said record "--buffer-size '4x': KiB per CPU, a whole number from 1 to 4294967295" \
	--chardev-dir "$WORK" --buffer-size 4x
said record "--sync 'bogus': one of auto, kvm, probe, offset or none" --chardev-dir "$WORK" --sync bogus
said record "--file-version '5': one of 6 or 7" --chardev-dir "$WORK" --file-version 5
said record "--sync-probes '0': probes per vCPU and burst, a whole number from 1 to 65536" \
	--chardev-dir "$WORK" --sync-probes 0
said record "--live '0': the window in milliseconds, a whole number from 1 to 60000 (no value: 500)" \
	--chardev-dir "$WORK" --live=0
said record "--wait 'x': seconds, more than 0 and at most 2678400 (no value: no limit)" \
	--chardev-dir "$WORK" --wait=x
said record "-o/--output '': the output directory, where the recording goes" --chardev-dir "$WORK" -o ''
said recover "'b': one recording's directory only (DIR is 'a')" a b
said report "--guest '../x': a guest's name, of [A-Za-z0-9_.-]" --guest ../x "$WORK/rec"
said report "'b': one recording's directory only (DIR is 'a')" a b
said setup "-n/--vcpus '0': the guest's vCPUs, a whole number from 1 to 1024" --vcpus 0
said setup "-b/--backend 'tcp': one of pipe, unix or unix-connect" --vcpus 1 --backend tcp
said setup "--format 'xml': one of qemu or libvirt" --vcpus 1 --format xml
said setup "--accel 'hvf': one of auto, kvm, tcg or none" --vcpus 1 --accel hvf
said setup "-d: record's --duration; setup's directory is --dir" -d x
said setup "--controller-index '1001': the first virtio-serial controller's index, a whole number from 0 to 1000" \
	--vcpus 1 --format libvirt --controller-index 1001
said setup "-N/--name '.x': a guest's name, 1 to 63 of A-Z a-z 0-9 _ - ., not starting with '.' or '-'" -N .x
said setup "--qmp '': the path of QEMU's QMP socket" --qmp ''
said setup "--last-boot '4X': a size in bytes, more than 0, with an optional K, M or G suffix (e.g. 4M)" --last-boot 4X
# -o names its role.
said join "-o/--output is missing: the output directory, where the joined recording goes" a b
said join "-o/--output '': the output directory, where the joined recording goes" -o '' a b
said check "-d/--duration '61': seconds, from 0 and at most 60" -d 61

said report "--latency '1x': a duration, N with ns, us, ms or s (a bare number is nanoseconds)" \
	--latency=1x "$WORK/rec"
said report "--interval 'a:b': SYS:START,SYS:END[,FIELD], two different events (e.g. block:block_rq_issue,block:block_rq_complete,sector)" \
	--interval a:b "$WORK/rec"
said report "--html '': the HTML page to write, a path, not empty" --html '' "$WORK/rec"
# daemon's keys are its configuration file's, checked as the file's are (conf.c), in the one voice.
said daemon "--window 'abc': seconds, more than 0 and at most 86400" --window abc

# Every option of every subcommand whose value its table checks (as `SUB --list-options` prints
# it: a number, seconds, a size, a pid, a choice, a guest's name, a path) refuses a bad one in the
# one voice, naming the option as its table spells it and the value; every subcommand refuses an
# unknown option. record's are given after a guest.
for sub in check daemon join list record recover report setup snapshot; do
	said $sub "unknown option '--no-such-option'" --no-such-option
	"$COLLECT" $sub --list-options >"$WORK/table" || fail "$sub --list-options exited $?"
	n=0
	while IFS='	' read -r long short kind value choices; do
		case $kind in
		uint|u64|int64|seconds|size|pid|choice|name) bad='x%z' ;;
		path) bad= ;;	# any path but the empty one
		*) continue ;;
		esac
		name=$long
		[ "$short" = - ] || name="$short/$long"
		pre=
		[ $sub = record ] && pre="--chardev-dir $WORK"
		if [ "$value" = optional ]; then
			wanted="$name '$bad': " said1 $sub $pre "$long=$bad"
		else
			wanted="$name '$bad': " said1 $sub $pre "$long" "$bad"
		fi
		n=$((n + 1))
	done <"$WORK/table"
	echo "$sub: $n options with a checked value refuse a bad one ('x%z', a path '') in the one voice"
	case $sub in recover) min=0 ;; list|daemon) min=1 ;; *) min=2 ;; esac
	[ $n -ge $min ] || fail "$sub: only $n options with a checked value in its table"
done

# trace-cmd's letters: refused naming ours where they would mean something else.
said record "-v: trace-cmd's \"leave out the next -e\" is not supported (record only the events you want); more messages are --verbose" \
	--chardev-dir "$WORK" -v -e sched:sched_wakeup
said record "-b: trace-cmd's buffer size is --buffer-size KB here (-b is setup's --backend)" -b 4096
said record "-C: trace-cmd's clock is --clock NAME here (-C is --connect in check, list and setup)" -C local
said record "-m: trace-cmd's -m is KiB per CPU; the budget here is --max-size SIZE, bytes per guest with a K, M or G suffix" -m 1000
# -p and -P are trace-cmd's --tracer and --host-pid: their values are read as those options'.
said record "--host-pid 'x': a process id (at most 64 of them)" --chardev-dir "$WORK" -P x
"$COLLECT" record --help | grep -q '^  -p, --tracer NAME ' || fail "record --help: no -p, --tracer"

# -o of record: a file where the directory should be is named as the output directory.
: >"$WORK/file"
"$COLLECT" record --chardev-dir "$WORK" -o "$WORK/file" -d 1 >/dev/null 2>"$WORK/err" </dev/null
grep -q "^virtio-trace-collect record: error: -o/--output '$WORK/file': the output directory: " "$WORK/err" ||
	fail "record -o FILE said '$(head -c 300 "$WORK/err" | tr '\n' '|')'"

[ "$failed" = 0 ] || exit 1
echo "PASS"
