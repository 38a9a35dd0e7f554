#!/bin/bash
# vt-suite: kernel
# test-kpatch-steal.sh: kernel-patches/0002 (ftrace pipe buffers may be stolen again, so
# virtio_console's splice_write takes the ring-buffer page instead of copying it). Boots the
# unpatched and the patched kernel from kernel-patches/build.sh with the same guest program
# (tests/kpatch/kpatch-guest.c, run by /etc/vt/kpatch-run):
#  - CPU 0: R rounds of M markers of B bytes into a private instance, every full sub-buffer spliced
#    trace_pipe_raw -> pipe -> virtio port trace-path-cpu0, the last partial page written; the host
#    parses what came out of the port: exactly R*M markers, in order, byte-exact payloads, no page
#    flagged with lost events;
#  - CPU 1: the same with tee(): each batch is tee()d into a second pipe before the first goes to
#    port trace-path-cpu1; the guest checks the second copy (count, payloads) and sends its FNV-1a;
#    the host's FNV of what the port delivered must be equal;
#  - order-0 page allocations during the splice phase, from kmem:mm_page_alloc in a second
#    instance, split into the ring buffer's (__GFP_NORETRY) and the rest (virtio_console's copy
#    pages), and /proc/vmstat pgalloc per MiB. Unpatched: the rest is ~256 per MiB (one copy per
#    page). Patched, plain: the rest is below 64 per MiB (pages are stolen), the ring buffer
#    allocates the spare pages instead. Patched, tee: the rest is ~256 per MiB again (shared
#    buffers are never stolen).
#  - both consoles clean (no BUG:/WARNING:), guest command rc 0.
# Env: VT_KPATCH_MARKERS (default 6000), VT_KPATCH_SIZE (200), VT_KPATCH_ROUNDS (2), VT_KEEP=1.
# Exit: 0 pass, 1 fail, 77 skip.
echo "test-kpatch-steal: ring-buffer pages spliced to a virtio port arrive byte-exact, tee() copies stay intact, and the patched kernel stops copying pages"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/../kpatch/kpatch-lib.sh"
VT_LOG_PREFIX=test-kpatch-steal

for t in qemu-system-x86_64 busybox cpio depmod timeout gcc; do
	command -v "$t" >/dev/null || { echo "test-kpatch-steal: SKIP: $t not found"; exit 77; }
done
M=${VT_KPATCH_MARKERS:-6000}
B=${VT_KPATCH_SIZE:-200}
R=${VT_KPATCH_ROUNDS:-2}

T0=$(vt_now)
WORK=$(mktemp -d /tmp/vt-test-kpatch-steal.XXXXXX)
KEEP=${VT_KEEP:-0}
cleanup() {
	vt_guest_stop 2>/dev/null
	if [ "$KEEP" = 1 ]; then echo "test-kpatch-steal: kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

kp_setup "$WORK"; rc=$?
[ $rc = 0 ] || exit $rc
fail=0
bad() { echo "test-kpatch-steal: FAIL: $*"; fail=1; }

# field LINE NAME: the number after "NAME " or "NAME=" in LINE
field() { sed -n "s/.*[ (]$2[ =]\([0-9.a-f]*\).*/\1/p" <<<"$1" | head -n1; }
# per_mib LINE WHICH: the "(X per MiB)" figure after WHICH in a kmem line
per_mib() { sed -n "s/.*$2 [0-9]* (\([0-9.]*\) per MiB).*/\1/p" <<<"$1" | head -n1; }
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 >= b + 0) }'; }

declare -A OTHER NORETRY PGALLOC TASKCPU
for k in unpatched patched; do
	VT_TIMEOUT=${VT_TIMEOUT_STEAL:-240}
	kp_boot "$k" "$WORK/$k" "kp.mode=stream kp.markers=$M kp.size=$B kp.rounds=$R" ||
		{ bad "QEMU did not start ($k)"; continue; }
	declare "T_$k=$KP_T_BOOT"
	echo "  $k guest console:"
	kp_console "$WORK/$k" | sed 's/^/    /'
	[ "$KP_QEMU_RC" = 0 ] || bad "$k guest: QEMU exited $KP_QEMU_RC"
	vt_check_console "$WORK/$k/console.log" || bad "$k guest console"
	suffix=-vt; [ $k = patched ] && suffix=-vt-kpatch
	grep -aq "KP: kernel [^ ]*$suffix mode stream" "$WORK/$k/console.log" || bad "$k kernel did not run the test"
	for cpu in 0 1; do
		con=$(tr -d '\r' <"$WORK/$k/console.log")
		main=$(grep -a "KP: stream cpu=$cpu " <<<"$con" | head -n1)
		# the cost and kmem lines follow the cpu line
		cost=$(grep -a -A3 "KP: stream cpu=$cpu " <<<"$con" | grep -a 'KP: stream cost:' | head -n1)
		kmem=$(grep -a -A3 "KP: stream cpu=$cpu " <<<"$con" | grep -a 'KP: stream kmem:' | head -n1)
		[ -n "$main" ] && [ -n "$cost" ] && [ -n "$kmem" ] || { bad "$k cpu$cpu: no stream report"; continue; }
		args=(--cpu "$cpu" --markers "$M" --size "$B" --rounds "$R")
		if [ $cpu = 1 ]; then
			pages=$(( $(field "$main" pages) + $(field "$main" partial) ))
			args+=(--pages "$pages" --fnv "$(field "$main" fnv)")
			grep -aq "KP: stream tee copy: markers $((M * R)) bad 0 lost_pages 0" <<<"$con" ||
				bad "$k: the guest's tee() copy is not intact"
		fi
		echo "  $k cpu$cpu port data: $("$KP_TOOL" check "$WORK/$k/port$cpu.bin" "${args[@]}" 2>&1 | tr '\n' ' ')"
		"$KP_TOOL" check "$WORK/$k/port$cpu.bin" "${args[@]}" >/dev/null 2>&1 ||
			bad "$k cpu$cpu: the port data is not exact"
		OTHER[$k$cpu]=$(per_mib "$kmem" other)
		NORETRY[$k$cpu]=$(per_mib "$kmem" '__GFP_NORETRY)')
		PGALLOC[$k$cpu]=$(sed -n 's/.*pgalloc [0-9]* (\([0-9.]*\) per MiB).*/\1/p' <<<"$cost")
		TASKCPU[$k$cpu]=$(sed -n 's/.*task cpu [0-9.]* s (\([0-9.]*\) s per GiB).*/\1/p' <<<"$cost")
	done
done

echo "  order-0 page allocations per MiB spliced (kmem:mm_page_alloc) and CPU of the splicing task:"
printf '    %-10s %-5s %14s %14s %16s %16s\n' kernel cpu ring-buffer copies vmstat-pgalloc "task s/GiB"
for k in unpatched patched; do
	for cpu in 0 1; do
		printf '    %-10s %-5s %14s %14s %16s %16s\n' "$k" "$cpu$([ $cpu = 1 ] && echo +tee)" \
			"${NORETRY[$k$cpu]:--}" "${OTHER[$k$cpu]:--}" "${PGALLOC[$k$cpu]:--}" "${TASKCPU[$k$cpu]:--}"
	done
done
if [ $fail = 0 ]; then
	ge "${OTHER[unpatched0]}" 192 || bad "unpatched: expected ~256 copy pages per MiB, got ${OTHER[unpatched0]}"
	ge 64 "${OTHER[patched0]}" || bad "patched: pages were still copied (${OTHER[patched0]} per MiB, want < 64)"
	ge "${NORETRY[patched0]}" 192 || bad "patched: expected the ring buffer to allocate ~256 spare pages per MiB, got ${NORETRY[patched0]}"
	ge "${OTHER[patched1]}" 192 || bad "patched + tee(): shared pages must be copied, not stolen (${OTHER[patched1]} per MiB)"
fi

echo "test-kpatch-steal: timings: kernels ${KP_T_BUILD} s (build.sh, cached when unchanged)," \
	"unpatched boot ${T_unpatched:--} s, patched boot ${T_patched:--} s, whole test $(vt_secs "$T0" "$(vt_now)") s"
if [ $fail = 0 ]; then echo "test-kpatch-steal: PASS"; exit 0; fi
KEEP=1
echo "test-kpatch-steal: FAIL"
exit 1
