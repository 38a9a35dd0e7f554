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
#   - the recording ends (the self-feeding source stops), clean console.
# Env: VT_BUILDDIR, VT_STATIC_AGENT, VT_KEEP=1. Exit: 0 pass, 1 fail, 77 skip.
echo "test-collect-iommu: guest iommu group, attach, map and unmap events recorded through a transport that itself goes through the vIOMMU, decoded and counted exactly"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
. "$HERE/scenario-lib.sh"
VT_LOG_PREFIX=test-collect-iommu
ME=test-collect-iommu
DEV=0000:00:05.0

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

scn_script "$WORK/work" \
    "sh echo 1 >/sys/bus/pci/devices/$DEV/remove && sleep 0.2 && echo 1 >/sys/bus/pci/rescan && modprobe e1000 && ip link set eth0 up && sleep 0.5"
scn_record --chardev-dir "$PORTS" --name e2e -e iommu -- "$WORK/work"
echo "$ME: guest work: $(cat "$WORK/work.answers" 2>/dev/null)"
[ $CRC = 0 ] || { sed 's/^/    | /' "$WORK/record.log"; bad "record exited $CRC, want 0"; }
scn_end
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
scn_result
