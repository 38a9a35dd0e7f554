#!/bin/bash
# vt-suite: e2e
# test-collect-iommu.sh: iommu events through the transport. A 2-vCPU q35 TCG guest with the
# vIOMMU (-device intel-iommu,intremap=off first, guest intel_iommu=on) boots with the ports
# `virtio-trace-collect setup` prints, its virtio-serial controller made to go through the
# vIOMMU (iommu_platform=on,disable-legacy=on): the transport's own DMA then feeds iommu
# map/unmap events back into the trace, the case that needs tracing_on=0 before the last drain.
# An e1000 at 00:05.0 is removed and rescanned, then its driver is loaded and the link brought
# up, while `record -e iommu` runs. Checks:
#   - exactly one remove_device_from_group and one add_device_to_group for 0000:00:05.0, and an
#     attach_device_to_domain for it, with groupID/device decoded by `trace-cmd report`;
#   - map (iova, paddr, size) and unmap (iova, size, unmapped_size) events with decoded fields;
#   - per CPU: report = manifest = the guest's read_events, nothing lost or overrun;
#   - the recording ends (the self-feeding source stops), clean console;
#   - `report --iommu`: the group topology equals the guest's own sysfs listing taken in the guest
#     after the recording, and its topology changes equal the group events of `trace-cmd report`;
#   - `report --json`: map/unmap counts, bytes and the size histogram equal those counted from
#     `trace-cmd report`; with the transport's controller and the e1000 both in DMA domains no
#     mapping can be attributed to one device, so every one is "unattributed" and no device is
#     credited.
# With VT_E2E_KVM=1 (tests/e2e/test-kvm-iommu.sh, the e2e-kvm suite) the same scenario runs with
# the guest under real KVM: inside a TCG L1 with nested SVM (vt_l1_guest_run), the guest as L2
# with -accel kvm on q35 with intel-iommu,intremap=off first (QEMU 7.2 wants kernel-irqchip=split
# only for interrupt remapping), the same controller and e1000 (no option ROM: L1 has none),
# `record --qemu-pid` there; the recording and L2's console come back here for the same checks.
# Env: VT_BUILDDIR, VT_STATIC_AGENT, VT_KEEP=1, VT_E2E_KVM=1. Exit: 0 pass, 1 fail, 77 skip.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
. "$HERE/scenario-lib.sh"
if [ "${VT_E2E_KVM:-0}" = 1 ]; then
    ME=test-kvm-iommu
else
    ME=test-collect-iommu
    echo "test-collect-iommu: guest iommu group, attach, map and unmap events recorded through a transport that itself goes through the vIOMMU, decoded and counted exactly"
fi
VT_LOG_PREFIX=$ME
DEV=0000:00:05.0
WORK_LINE="sh echo 1 >/sys/bus/pci/devices/$DEV/remove && sleep 0.2 && echo 1 >/sys/bus/pci/rescan && modprobe e1000 && ip link set eth0 up && sleep 0.5"
GROUPS_LINE="sh for g in /sys/kernel/iommu_groups/*; do echo E2E-GROUP \${g##*/} \$(ls \$g/devices); done"

if [ "${VT_E2E_KVM:-0}" = 1 ]; then
    scn_kvm_begin
    VT_L1_WORK=("$WORK_LINE") VT_L1_POST=("$GROUPS_LINE")
    VT_L1_ENV="REC_ARGS=\"-e iommu\"
L2_MACHINE=q35
L2_QEMU_FIRST=\"-device intel-iommu,intremap=off\"
L2_SERIAL_OPTS=,iommu_platform=on,disable-legacy=on
L2_APPEND=intel_iommu=on
L2_KEEP=sched,irq,timer,iommu
L2_QEMU_EXTRA=\"-device e1000,addr=0x5,romfile=\""
    scn_kvm_run
    echo "$ME: guest work: $(cat "$KOUT/work.answers" 2>/dev/null)"
    [ "$CRC" = 0 ] || { sed 's/^/    | /' "$KOUT/record.log"; bad "record exited $CRC, want 0"; }
    grep -q ' -> ok' "$KOUT/post.answers" 2>/dev/null || bad "the guest did not list its iommu groups"
    scn_kvm_end
else
    scn_begin
    scn_ports pipe
    # The transport through the vIOMMU (setup prints a plain controller).
    n=0
    for i in "${!SETUP_ARGS[@]}"; do
        case "${SETUP_ARGS[$i]}" in
        virtio-serial-pci,*) SETUP_ARGS[$i]+=",iommu_platform=on,disable-legacy=on"; n=$((n + 1)) ;;
        esac
    done
    [ $n = 1 ] || bad "setup printed $n virtio-serial controllers, want 1"
    VT_IOMMU=1
    SCN_QEMU_EXTRA=(-device e1000,addr=0x5)
    scn_boot

    scn_script "$WORK/work" "$WORK_LINE"
    scn_record --chardev-dir "$PORTS" --name e2e -e iommu -- "$WORK/work"
    echo "$ME: guest work: $(cat "$WORK/work.answers" 2>/dev/null)"
    [ $CRC = 0 ] || { sed 's/^/    | /' "$WORK/record.log"; bad "record exited $CRC, want 0"; }
    vt_test_say "$PORTS" "$GROUPS_LINE" 20 || bad "the guest did not list its iommu groups"
    scn_end
    CONSOLE=$RUN/console.log
fi
scn_counts e2e "0 1"

G=$WORK/guest.txt
c() { grep -cE "$1" "$G"; }
rm_n=$(c "remove_device_from_group: +IOMMU: groupID=[0-9]+ device=$DEV\$")
add_n=$(c "add_device_to_group: +IOMMU: groupID=[0-9]+ device=$DEV\$")
att_n=$(c "attach_device_to_domain: +IOMMU: device=$DEV\$")
map_n=$(c 'map: +IOMMU: iova=0x[0-9a-f]+ - 0x[0-9a-f]+ paddr=0x[0-9a-f]+ size=[0-9]+$')
unmap_n=$(c 'unmap: +IOMMU: iova=0x[0-9a-f]+ - 0x[0-9a-f]+ size=[0-9]+ unmapped_size=[0-9]+$')
all_map=$(c ' map: ')
all_unmap=$(c ' unmap: ')
echo "$ME: $DEV: remove_device_from_group $rm_n, add_device_to_group $add_n, attach_device_to_domain $att_n"
echo "$ME: map $map_n decoded of $all_map, unmap $unmap_n decoded of $all_unmap"
[ "$rm_n" = 1 ] && [ "$add_n" = 1 ] || bad "want exactly one remove and one add for $DEV"
[ "$att_n" -ge 1 ] || bad "no attach_device_to_domain for $DEV"
[ "$map_n" -gt 0 ] && [ "$map_n" = "$all_map" ] || bad "map events: $map_n decoded of $all_map"
[ "$unmap_n" -gt 0 ] && [ "$unmap_n" = "$all_unmap" ] || bad "unmap events: $unmap_n decoded of $all_unmap"
# The group events come in order: removed before added back.
order=$(grep -nE "(remove_device_from|add_device_to)_group: .*device=$DEV\$" "$G" | sed 's/:.*\(remove\|add\)_.*/ \1/' | awk '{ print $2 }' | tr '\n' ' ')
[ "$order" = "remove add " ] || bad "group events in the order '$order', want remove then add"
grep -E "(remove_device_from|add_device_to)_group: " "$G" | head -2 | sed "s/^/$ME: /"

# report --iommu: the topology against the guest's sysfs, taken in the guest after the recording.
"$COLLECT" report --iommu "$OUT" >"$WORK/iommu.txt" 2>"$WORK/iommu.err" || bad "report --iommu failed: $(head -3 "$WORK/iommu.err")"
tr -d '\r' <"$CONSOLE" | sed -n 's/^E2E-GROUP //p' | sort -n >"$WORK/groups.sysfs"
sed -n 's/^      group \([0-9][0-9]*\) [^:]*: /\1 /p' "$WORK/iommu.txt" | sort -n >"$WORK/groups.report"
echo "$ME: iommu groups: guest sysfs $(wc -l <"$WORK/groups.sysfs"), report $(wc -l <"$WORK/groups.report"):" \
     "$(tr '\n' ';' <"$WORK/groups.report")"
[ -s "$WORK/groups.sysfs" ] && cmp -s "$WORK/groups.sysfs" "$WORK/groups.report" ||
    bad "report's groups differ from the guest's sysfs: $(diff "$WORK/groups.sysfs" "$WORK/groups.report" | tr '\n' ' ')"
# Its topology changes, against trace-cmd's group events (event, device, group, in order).
grep -E ' (add_device_to_group|remove_device_from_group|attach_device_to_domain): ' "$G" |
    sed -E 's/.* (add_device_to_group|remove_device_from_group|attach_device_to_domain): +IOMMU: (groupID=([0-9]+) )?device=([^ ]+)$/\1 \4 \3/' |
    sed 's/ $//' >"$WORK/changes.tc"
sed -n '/topology changes during/,/DMA mappings/p' "$WORK/iommu.txt" | grep -E '^      [0-9]' |
    awk '{ print $2, $3 ($4 == "group" ? " " $5 : "") }' >"$WORK/changes.report"
echo "$ME: topology changes: trace-cmd $(wc -l <"$WORK/changes.tc"), report $(wc -l <"$WORK/changes.report")"
[ -s "$WORK/changes.tc" ] && cmp -s "$WORK/changes.tc" "$WORK/changes.report" ||
    bad "report's topology changes differ from trace-cmd's: $(diff "$WORK/changes.tc" "$WORK/changes.report" | tr '\n' ' ')"
# report --json: counts, bytes and sizes against trace-cmd's map and unmap lines.
"$COLLECT" report --json "$OUT" >"$WORK/report.json" || bad "report --json failed"
tc=$(awk '
    / map: +IOMMU: / { for (i = 1; i <= NF; i++) if ($i ~ /^size=/) { s = substr($i, 6) }
        m++; mb += s; if (s == 4096) h4++; else if (s == 2097152) h2++; else if (s == 1073741824) h1++; else ho++ }
    / unmap: +IOMMU: / { for (i = 1; i <= NF; i++) if ($i ~ /^unmapped_size=/) s = substr($i, 15)
        u++; ub += s }
    END { printf "%d %d %d %d %d/%d/%d/%d\n", m, u, mb, ub, h4, h2, h1, ho }' "$G")
js=$(jq -r '.traces[] | select(.name == "e2e") | .iommu |
    "\(.unattributed.maps) \(.unattributed.unmaps) \(.unattributed.bytes_mapped) \(.unattributed.bytes_unmapped) " +
    "\(.unattributed.map_sizes["4K"])/\(.unattributed.map_sizes["2M"])/\(.unattributed.map_sizes["1G"])/\(.unattributed.map_sizes.other)"' "$WORK/report.json")
credited=$(jq -r '.traces[] | select(.name == "e2e") | .iommu.devices | length' "$WORK/report.json")
echo "$ME: maps unmaps bytes-mapped bytes-unmapped 4K/2M/1G/other: trace-cmd $tc; report (unattributed) $js; devices credited $credited"
[ "$tc" = "$js" ] || bad "report's DMA figures '$js' differ from trace-cmd's '$tc'"
[ "$credited" = 0 ] || bad "$credited devices credited though two DMA domains were live throughout"
scn_result
