// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Can this host's /dev/kvm run a stock guest? `setup` prints -accel kvm only
 * when it can, and otherwise the TCG recipe with the reason.
 *
 * A /dev/kvm that answers is not enough. kvm_pvm (PVM, a paravirtual KVM that
 * needs neither VMX nor SVM, as on the machines this project is built on)
 * answers KVM_GET_API_VERSION with 12, creates VMs and vCPUs, and even runs a
 * real-mode test guest through its instruction emulator (tried: `out` then
 * `hlt` gave KVM_EXIT_IO and KVM_EXIT_HLT), yet a stock Linux guest dies in
 * early boot under it: it runs kernels built as PVM guests only (tried: with
 * -cpu qemu64 Debian's 6.1 bzImage printed its real-mode "Probing EDD ... ok"
 * and nothing more in 30 s; with -cpu host QEMU aborted setting MSR 0x10a). A tiny test
 * guest would have to reach long mode and beyond to tell, which is neither
 * cheap nor sure. What does tell is the vendor module serving the device:
 * hardware KVM on x86 is kvm_intel (VMX) or kvm_amd (SVM), and both show in
 * /sys/module when loaded or built in (they have parameters). With neither,
 * kvm_pvm there (or no vmx/svm flag in /proc/cpuinfo) names the reason. The
 * checks go from cheap to dear: the device, its API version, the module, and
 * last one KVM_CREATE_VM, closed at once, for what the rest cannot see (another
 * hypervisor holding VMX, a KVM that refuses VMs, a seccomp'd container).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kvmcheck.h"

static bool module_loaded(const char *sysfs, const char *name)
{
	char path[4200];
	struct stat st;

	snprintf(path, sizeof(path), "%s/module/%s", sysfs, name);
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* "vmx", "svm" or "" from the first flags line of @cpuinfo. */
static const char *cpu_virt_flag(const char *cpuinfo)
{
	const char *flag = "";
	char line[8192];
	FILE *f;

	f = fopen(cpuinfo, "re");
	if (!f)
		return "?";
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5))
			continue;
		if (strstr(line, " vmx"))
			flag = "vmx";
		else if (strstr(line, " svm"))
			flag = "svm";
		break;
	}
	fclose(f);
	return flag;
}

/**
 * kvmcheck_run() - whether a KVM device can run a stock guest
 * @device: the device (KVMCHECK_DEVICE)
 * @sysfs: where sysfs is mounted ("/sys"): module/NAME tells the vendor module
 * @cpuinfo: "/proc/cpuinfo", for the CPU's vmx or svm flag in the reason
 * @k: the answer
 *
 * Creates (and closes) one VM when every cheaper check passed.
 *
 * Return: 0 (the answer is in @k, usable or not).
 */
int kvmcheck_run(const char *device, const char *sysfs, const char *cpuinfo, struct kvmcheck *k)
{
	bool intel = module_loaded(sysfs, "kvm_intel"), amd = module_loaded(sysfs, "kvm_amd");
	bool pvm = module_loaded(sysfs, "kvm_pvm");
	const char *flag = cpu_virt_flag(cpuinfo);
	struct stat st;
	int fd, ret, vm;

	memset(k, 0, sizeof(*k));
	snprintf(k->module, sizeof(k->module), "%s",
		 intel ? "kvm_intel" : amd ? "kvm_amd" : pvm ? "kvm_pvm" : "");
	if (stat(device, &st) < 0) {
		snprintf(k->reason, sizeof(k->reason), "there is no %s (%s)%s", device, strerror(errno),
			 *flag == 'v' ? ": `modprobe kvm_intel` may give it (the CPU has vmx)" :
			 *flag == 's' ? ": `modprobe kvm_amd` may give it (the CPU has svm)" :
			 ": the CPU has neither vmx nor svm (no hardware virtualisation here)");
		return 0;
	}
	if (!S_ISCHR(st.st_mode)) {
		snprintf(k->reason, sizeof(k->reason), "%s is not a character device", device);
		return 0;
	}
	fd = open(device, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		snprintf(k->reason, sizeof(k->reason), "cannot open %s: %s (QEMU run by this user "
			 "could not either: the kvm group or root)", device, strerror(errno));
		return 0;
	}
	ret = ioctl(fd, KVM_GET_API_VERSION, 0);
	if (ret != KVM_API_VERSION) {
		snprintf(k->reason, sizeof(k->reason), "%s is not KVM: KVM_GET_API_VERSION gave %d%s%s",
			 device, ret, ret < 0 ? ", " : "", ret < 0 ? strerror(errno) : "");
		goto out_close;
	}
	if (!intel && !amd && pvm) {
		snprintf(k->reason, sizeof(k->reason), "%s is kvm_pvm's (paravirtual KVM, "
			 "%s/module/kvm_pvm; no kvm_intel or kvm_amd%s): it runs only guest kernels "
			 "built for PVM, and a stock kernel dies in its early boot", device, sysfs,
			 *flag == 'v' || *flag == 's' ? "" : ", and the CPU has neither vmx nor svm");
		goto out_close;
	}
	if (!intel && !amd && *flag != 'v' && *flag != 's') {
		snprintf(k->reason, sizeof(k->reason), "%s answers, but neither kvm_intel nor kvm_amd "
			 "serves it and the CPU has neither vmx nor svm: not hardware KVM", device);
		goto out_close;
	}
	vm = ioctl(fd, KVM_CREATE_VM, 0);
	if (vm < 0) {
		snprintf(k->reason, sizeof(k->reason), "%s cannot create a VM: %s%s", device,
			 strerror(errno), errno == EBUSY ?
			 " (another hypervisor may hold the CPU's virtualisation)" : "");
		goto out_close;
	}
	close(vm);
	k->usable = true;
out_close:
	close(fd);
	return 0;
}
