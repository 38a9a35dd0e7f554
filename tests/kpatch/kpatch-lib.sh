# shellcheck shell=bash
# tests/kpatch/kpatch-lib.sh: shared by test-kpatch-splice.sh, test-kpatch-steal.sh and
# tests/bench/bench-kpatch.sh. Source lib.sh first.
#
# kp_setup WORK: build (or take from the cache) the unpatched and patched kernels with
# kernel-patches/build.sh, build tests/kpatch/kpatch-guest statically, make the initramfs with
# tests/e2e/mkguest.sh (no modules: everything is built into these kernels; kpatch-guest and
# /etc/vt/kpatch-run in an overlay) and two image dirs WORK/image-unpatched, WORK/image-patched.
# Sets KP_OUT (build output dir), KP_TOOL (host copy of kpatch-guest), KP_T_BUILD (seconds).
# Returns 77 when no kernel source or no guest image can be had, 1 on failure.
#
# The guest runs /etc/vt/kpatch-run, which takes its orders from the kernel command line:
#   kp.mode=splice-block [kp.wait=S]
#   kp.mode=stream kp.markers=M kp.size=B kp.rounds=R: two streams one after the other,
#       CPU 0 -> port trace-path-cpu0 plain and CPU 1 -> port trace-path-cpu1 with --tee,
#       both with --kmem.
#   kp.mode=bench kp.markers=M kp.size=B kp.rounds=R: one plain stream, CPU 1 -> trace-path-cpu1.
# Both stream modes then wait for the host's "ack" on agent-ctl-path (kp_boot sends it once
# the port files hold every byte the guest's "sent=" figures announce) before powering off:
# QEMU may still hold port data when the guest's splice() has returned.

KP_CC=${CC:-gcc}

kp_setup() {
	local work=$1 t rc ov env initrd
	KP_WORK=$work
	t=$(vt_now)
	KP_OUT=$("$VT_REPO/kernel-patches/build.sh" -q 2>"$work/build.log")
	rc=$?
	[ $rc = 2 ] && { echo "$VT_LOG_PREFIX: SKIP: no kernel source: $(tail -n1 "$work/build.log")"; return 77; }
	# not root and build tools missing: build.sh says "missing: PKGS"
	grep -q 'error: missing: ' "$work/build.log" &&
		{ echo "$VT_LOG_PREFIX: SKIP: $(grep 'error: missing: ' "$work/build.log" | tail -n1)"; return 77; }
	[ $rc = 0 ] || { tail -n 30 "$work/build.log" >&2; echo "$VT_LOG_PREFIX: FAIL: kernel-patches/build.sh exited $rc"; return 1; }
	KP_T_BUILD=$(vt_secs "$t" "$(vt_now)")

	ov=$work/overlay
	mkdir -p "$ov/bin" "$ov/etc/vt"
	"$KP_CC" -O2 -Wall -static -o "$ov/bin/kpatch-guest" "$VT_REPO/tests/kpatch/kpatch-guest.c" 2>"$work/cc.log" ||
		{ cat "$work/cc.log" >&2; echo "$VT_LOG_PREFIX: FAIL: cannot build tests/kpatch/kpatch-guest.c statically"; return 1; }
	strip "$ov/bin/kpatch-guest" 2>/dev/null
	KP_TOOL=$ov/bin/kpatch-guest
	cat >"$ov/etc/vt/kpatch-run" <<'SH'
#!/bin/sh
# Orders from the kernel command line: kp.NAME=VALUE -> $KP_NAME
read -r cl </proc/cmdline
for w in $cl; do
	case "$w" in kp.*=*) k=${w%%=*}; eval "KP_${k#kp.}=\${w#*=}" ;; esac
done
read -r rel </proc/sys/kernel/osrelease
echo "KP: kernel $rel mode ${KP_mode:-none}"
P=/dev/virtio-ports
case "$KP_mode" in
splice-block)
	kpatch-guest splice-block --cpu 1 --wait "${KP_wait:-5}"
	exit $? ;;
stream)
	kpatch-guest stream --port $P/trace-path-cpu0 --cpu 0 --kmem \
		--markers "$KP_markers" --size "$KP_size" --rounds "$KP_rounds" || exit 1
	kpatch-guest stream --port $P/trace-path-cpu1 --cpu 1 --kmem --tee \
		--markers "$KP_markers" --size "$KP_size" --rounds "$KP_rounds" || exit 1
	kpatch-guest wait-ack --port $P/agent-ctl-path --wait 60
	exit $? ;;
bench)
	kpatch-guest stream --port $P/trace-path-cpu1 --cpu 1 \
		--markers "$KP_markers" --size "$KP_size" --rounds "$KP_rounds" || exit 1
	kpatch-guest wait-ack --port $P/agent-ctl-path --wait 60
	exit $? ;;
esac
echo "KP: unknown kp.mode"
exit 1
SH
	chmod 755 "$ov/etc/vt/kpatch-run"
	"$VT_E2E_DIR/mkguest.sh" -q --modules "" --extra-modules "" --overlay "$ov" --out "$work/mkguest" \
		>/dev/null 2>"$work/mkguest.log"
	rc=$?
	[ $rc = 2 ] && { echo "$VT_LOG_PREFIX: SKIP: no guest image: $(tail -n1 "$work/mkguest.log")"; return 77; }
	[ $rc = 0 ] || { cat "$work/mkguest.log" >&2; echo "$VT_LOG_PREFIX: FAIL: mkguest.sh exited $rc"; return 1; }
	env=$work/mkguest/guest.env
	initrd=$(sed -n 's/^INITRAMFS=//p' "$env")
	[ -f "$initrd" ] || { echo "$VT_LOG_PREFIX: FAIL: mkguest.sh made no initramfs"; return 1; }
	for k in unpatched patched; do
		mkdir -p "$work/image-$k"
		ln -f "$KP_OUT/$k/vmlinux" "$work/image-$k/vmlinux" 2>/dev/null ||
			cp "$KP_OUT/$k/vmlinux" "$work/image-$k/vmlinux"
		ln -f "$initrd" "$work/image-$k/initramfs.cpio" 2>/dev/null ||
			cp "$initrd" "$work/image-$k/initramfs.cpio"
	done
}

# kp_boot KERNEL RUNDIR APPEND: boot WORK image-KERNEL running /etc/vt/kpatch-run with APPEND on
# the command line, under VT_TIMEOUT; starts a reader for each data port's FIFO (RUNDIR/portN.bin).
# Returns when QEMU has ended. Sets KP_QEMU_RC (124: killed by the timeout) and KP_T_BOOT.
kp_boot() {
	local kernel=$1 i t pids=() s0 s1 n
	VT_IMAGE=$KP_WORK/image-$kernel
	VT_RUNDIR=$2
	VT_APPEND=$3
	VT_GUEST_RUN=/etc/vt/kpatch-run
	VT_SMP=2
	VT_CHARDEV=pipe
	mkdir -p "$VT_RUNDIR"
	t=$(vt_now)
	n=0
	if [ "${VT_PORTS:-1}" = 1 ]; then
		vt_make_ports || return 1
		n=${VT_NPORTS:-2}
	fi
	for ((i = 0; i < n; i++)); do
		# O_RDWR: no EOF, no blocking open; ended below by pid.
		cat 0<>"$VT_RUNDIR/ports/trace-path-cpu$i.out" >"$VT_RUNDIR/port$i.bin" &
		pids+=($!)
	done
	if ! vt_guest_start; then
		[ ${#pids[@]} = 0 ] || { kill "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null; }
		KP_QEMU_RC=1
		return 1
	fi
	# Once the guest says it waits, ack on agent-ctl-path when every byte its "sent=" figures
	# announce has arrived; the guest powers off only then.
	if [ "$n" -gt 0 ]; then
		local acked=0 want have f fd
		exec {fd}<>"$VT_RUNDIR/ports/agent-ctl-path.in"
		while [ $acked = 0 ] && kill -0 "$VT_TIMEOUT_PID" 2>/dev/null; do
			if grep -aq 'KP: waiting for the host' "$VT_RUNDIR/console.log" 2>/dev/null; then
				want=$(grep -ao ' sent=[0-9]*' "$VT_RUNDIR/console.log" | awk -F= '{ s += $2 } END { print s + 0 }')
				have=0
				for f in "$VT_RUNDIR"/port*.bin; do have=$((have + $(stat -c %s "$f"))); done
				if [ "$have" -ge "$want" ]; then
					echo ack >&"$fd"
					acked=1
				fi
			fi
			[ $acked = 1 ] || sleep 0.1
		done
		exec {fd}>&-
	fi
	# A guest whose command is done but which does not power off within KP_OFF_GRACE seconds
	# (default 10; the unpatched kernel's stuck CPU can block the power-off) is stopped here:
	# KP_QEMU_RC=124 then, as for the timeout.
	local off_by=
	while kill -0 "$VT_TIMEOUT_PID" 2>/dev/null; do
		if grep -aq 'VT-INIT: done' "$VT_RUNDIR/console.log" 2>/dev/null; then
			[ -n "$off_by" ] || off_by=$(($(date +%s) + ${KP_OFF_GRACE:-10}))
			if [ "$(date +%s)" -ge "$off_by" ]; then
				vt_log "the guest did not power off ${KP_OFF_GRACE:-10} s after its command: stopping QEMU"
				vt_guest_stop
				break
			fi
		fi
		sleep 0.1
	done
	vt_guest_wait
	KP_QEMU_RC=$VT_QEMU_RC
	[ -z "$off_by" ] || ! [ "$(date +%s)" -ge "$off_by" ] || KP_QEMU_RC=124
	# let the readers drain the FIFOs: sizes stable for 0.3 s
	for ((i = 0; i < 50 && n > 0; i++)); do
		s0=$(stat -c %s "$VT_RUNDIR"/port*.bin | tr '\n' ' ')
		sleep 0.3
		s1=$(stat -c %s "$VT_RUNDIR"/port*.bin | tr '\n' ' ')
		[ "$s0" = "$s1" ] && break
	done
	[ ${#pids[@]} = 0 ] || { kill "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null; }
	VT_QEMU_PID=
	KP_T_BOOT=$(vt_secs "$t" "$(vt_now)")
	return 0
}

# kp_console RUNDIR: the guest's KP: and VT-INIT: lines
kp_console() {
	tr -d '\r' <"$1/console.log" | grep -a -E '^(VT-INIT|KP):'
}
