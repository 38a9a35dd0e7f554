// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What `check` looks at on the host, one function per line: tracefs, the
 * KVM device, KVM's debugfs offsets, the host TSC, the kvm events, QEMU's
 * vCPU threads and the agent. Every path hangs off an option (--tracefs,
 * --debugfs, --sysfs, --procfs) so that tests can point them at fixtures;
 * the KVM device itself is setup/kvmcheck.c's question, asked of /dev/kvm.
 *
 * Each reads what record reads, the way record reads it: the VM directory
 * and the offsets through record/kvm.c, the agent through list's HELLO. A
 * line that fails names the file or the thing that failed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "check.h"
#include "record/hostclock.h"
#include "setup/kvmcheck.h"

#define TRACEFS_MAGIC_NR	0x74726163
#define DEBUGFS_MAGIC_NR	0x64626720

/**
 * check_set() - give a line its verdict and detail
 * @c: the check
 * @i: the line
 * @v: the verdict
 * @fmt: printf format of the detail
 */
void check_set(struct check *c, enum check_item i, enum check_verdict v, const char *fmt, ...)
{
	va_list ap;

	c->lines[i].v = v;
	va_start(ap, fmt);
	vsnprintf(c->lines[i].detail, sizeof(c->lines[i].detail), fmt, ap);
	va_end(ap);
}

/* The first line of a small file, without its newline; -errno. */
static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	char *nl;
	int ret = 0;

	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f))
		ret = ferror(f) ? -EIO : -ENODATA;
	fclose(f);
	if (ret)
		buf[0] = '\0';
	nl = strchr(buf, '\n');
	if (nl)
		*nl = '\0';
	return ret;
}

/**
 * check_tracefs() - tracefs mounted, and a private instance can be made
 * @c: the check
 *
 * record's host events and its kvm_write_tsc_offset watch each live in an
 * instance of their own: making (and removing) one is the proof.
 */
void check_tracefs(struct check *c)
{
	char inst[4200];
	struct statfs sf;

	if (statfs(c->tracefs, &sf) < 0) {
		check_set(c, CK_TRACEFS, CV_NO, "%s: %s: `mount -t tracefs nodev %s`", c->tracefs,
			  strerror(errno), c->tracefs);
		return;
	}
	if (sf.f_type != TRACEFS_MAGIC_NR && sf.f_type != DEBUGFS_MAGIC_NR) {
		check_set(c, CK_TRACEFS, CV_NO, "%s is not a tracefs mount: `mount -t tracefs nodev %s`",
			  c->tracefs, c->tracefs);
		return;
	}
	snprintf(inst, sizeof(inst), "%s/instances/vt-check-%d", c->tracefs, (int)getpid());
	if (mkdir(inst, 0700) < 0) {
		check_set(c, CK_TRACEFS, CV_NO, "%s is mounted, but no instance can be made there (%s: "
			  "%s): record's host events and its KVM offset watch need one", c->tracefs,
			  inst, strerror(errno));
		return;
	}
	if (rmdir(inst) < 0) {
		check_set(c, CK_TRACEFS, CV_WARN, "%s: an instance was made but cannot be removed (%s: "
			  "%s)", c->tracefs, inst, strerror(errno));
		return;
	}
	check_set(c, CK_TRACEFS, CV_YES, "%s is mounted and writable: a private instance was made "
		  "and removed", c->tracefs);
}

/**
 * check_kvm_device() - whether /dev/kvm runs stock guests (setup/kvmcheck.c)
 * @c: the check
 */
void check_kvm_device(struct check *c)
{
	char cpuinfo[4200];
	struct kvmcheck k;

	snprintf(cpuinfo, sizeof(cpuinfo), "%s/cpuinfo", c->procfs);
	kvmcheck_run(KVMCHECK_DEVICE, c->sysfs, cpuinfo, &k);
	snprintf(c->kvm_module, sizeof(c->kvm_module), "%s", k.module);
	c->kvm_usable = k.usable;
	if (k.usable)
		check_set(c, CK_KVMDEV, CV_YES, "%s is %s's and creates VMs", KVMCHECK_DEVICE, k.module);
	else
		check_set(c, CK_KVMDEV, CV_NO, "%s", k.reason);
}

/* "vcpuN" -> N; false for anything else. */
static bool vcpu_id(const char *name, uint32_t *id)
{
	char *end;
	unsigned long v;

	if (strncmp(name, "vcpu", 4) || name[4] < '0' || name[4] > '9')
		return false;
	v = strtoul(name + 4, &end, 10);
	if (*end || v >= VT_KVM_MAX_VCPUS)
		return false;
	*id = (uint32_t)v;
	return true;
}

static int cmp_vcpu(const void *a, const void *b)
{
	const struct check_vcpu *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/*
 * Which of a vCPU's files record could not read: the first that is there
 * but does not open, or the one of the scaling pair that is missing.
 */
static void bad_file(const char *vcpu_dir, char *buf, size_t len)
{
	static const char *const files[] = {
		"tsc-offset", "tsc-scaling-ratio", "tsc-scaling-ratio-frac-bits"
	};
	char path[4200];
	bool there[3];
	unsigned int i;
	int fd;

	for (i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", vcpu_dir, files[i]);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		there[i] = fd >= 0;
		if (fd >= 0) {
			close(fd);
			continue;
		}
		if (errno != ENOENT || i == 0) {
			snprintf(buf, len, "%s: %s", path, strerror(errno));
			return;
		}
	}
	if (there[1] != there[2]) {
		snprintf(buf, len, "%s/%s is there without %s", vcpu_dir, files[there[1] ? 1 : 2],
			 files[there[1] ? 2 : 1]);
		return;
	}
	snprintf(buf, len, "%s/tsc-offset (or its scaling files) does not hold a number record takes",
		 vcpu_dir);
}

/* The VM directory's vCPUs, read as record reads them; 0 or -1 with the line set. */
static int read_vcpus(struct check *c)
{
	char dir[4200], what[4400];
	struct vt_kvm_vcpu v;
	struct dirent *d;
	unsigned int i;
	uint32_t id;
	DIR *dp;
	int ret;

	dp = opendir(c->vm_dir);
	if (!dp) {
		check_set(c, CK_DEBUGFS, CV_NO, "%s: %s", c->vm_dir, strerror(errno));
		return -1;
	}
	while ((d = readdir(dp)) && c->nr_vcpus < CHECK_MAX_VCPUS)
		if (vcpu_id(d->d_name, &id))
			c->vcpus[c->nr_vcpus++].id = id;
	closedir(dp);
	if (!c->nr_vcpus) {
		check_set(c, CK_DEBUGFS, CV_NO, "%s has no vcpuN directory", c->vm_dir);
		return -1;
	}
	qsort(c->vcpus, c->nr_vcpus, sizeof(c->vcpus[0]), cmp_vcpu);
	for (i = 0; i < c->nr_vcpus; i++) {
		ret = vt_kvm_read_vcpu(c->vm_dir, c->vcpus[i].id, &v);
		if (ret < 0) {
			snprintf(dir, sizeof(dir), "%s/vcpu%u", c->vm_dir, c->vcpus[i].id);
			bad_file(dir, what, sizeof(what));
			check_set(c, CK_DEBUGFS, CV_NO, "%s (%s): record cannot read this vCPU's TSC "
				  "offset", what, strerror(-ret));
			return -1;
		}
		c->vcpus[i].offset = v.map.offset;
		c->vcpus[i].ratio = v.map.ratio;
		c->vcpus[i].frac_bits = v.map.frac_bits;
		c->vcpus[i].has_scaling = v.has_scaling;
	}
	return 0;
}

/**
 * check_debugfs() - the QEMU's VM under <debugfs>/kvm, every vCPU's offset
 * and scaling readable
 * @c: the check (needs the QEMU pid)
 */
void check_debugfs(struct check *c)
{
	const struct check_vcpu *v0 = &c->vcpus[0];
	char kvm[4200], scale[160];
	unsigned int i, zero = 0;
	struct stat st;
	int ret;

	if (!c->qemu_pid) {
		if (c->missing[0])
			check_set(c, CK_DEBUGFS, CV_SKIPPED, "%s", c->missing);
		else if (c->domain)
			check_set(c, CK_DEBUGFS, CV_SKIPPED, "libvirt gave no QEMU pid for domain %s: "
				  "KVM's offsets are found by it", c->domain);
		else
			check_set(c, CK_DEBUGFS, CV_SKIPPED, "no QEMU pid (--qemu-pid, or --domain): "
				  "KVM's offsets are found by it");
		return;
	}
	snprintf(kvm, sizeof(kvm), "%s/kvm", c->debugfs);
	ret = vt_kvm_find_vm(c->debugfs, c->qemu_pid, c->vm_dir, sizeof(c->vm_dir));
	if (ret == -EEXIST) {
		check_set(c, CK_DEBUGFS, CV_NO, "QEMU pid %d has more than one VM under %s", (int)c->qemu_pid,
			  kvm);
		return;
	}
	if (ret < 0 && stat(kvm, &st) < 0) {
		check_set(c, CK_DEBUGFS, CV_NO, "%s: %s: debugfs is not mounted at %s (`mount -t debugfs "
			  "none %s`), or no KVM module is loaded", kvm, strerror(errno), c->debugfs,
			  c->debugfs);
		return;
	}
	if (ret == -ENOENT) {
		check_set(c, CK_DEBUGFS, CV_NO, "%s has no %d-* directory: QEMU pid %d runs no KVM VM "
			  "(TCG, or not this host's KVM)", kvm, (int)c->qemu_pid, (int)c->qemu_pid);
		return;
	}
	if (ret < 0) {
		check_set(c, CK_DEBUGFS, CV_NO, "%s: %s", kvm, strerror(-ret));
		return;
	}
	if (read_vcpus(c) < 0)
		return;
	for (i = 0; i < c->nr_vcpus; i++)
		zero += !c->vcpus[i].offset;
	if (v0->has_scaling)
		snprintf(scale, sizeof(scale), "tsc-scaling-ratio %" PRIu64 " >> %u (tsc-scaling-ratio-"
			 "frac-bits)", v0->ratio, v0->frac_bits);
	else
		snprintf(scale, sizeof(scale), "no tsc-scaling-ratio (the guest's TSC runs at the "
			 "host's rate)");
	if (zero == c->nr_vcpus)
		check_set(c, CK_DEBUGFS, CV_WARN, "%s: %u vCPU%s, every tsc-offset reads 0 (as under "
			  "kvm_pvm): the short recording tells whether that is the guest's offset; %s",
			  c->vm_dir, c->nr_vcpus, c->nr_vcpus == 1 ? "" : "s", scale);
	else
		check_set(c, CK_DEBUGFS, CV_YES, "%s: vcpu%u..vcpu%u (%u) tsc-offset readable (vcpu%u: "
			  "%" PRId64 "); %s", c->vm_dir, v0->id, c->vcpus[c->nr_vcpus - 1].id, c->nr_vcpus,
			  v0->id, v0->offset, scale);
}

/**
 * check_host_tsc() - a constant TSC that runs in every C-state, and the
 * kernel keeping time with it
 * @c: the check
 *
 * A TSC the kernel found unstable is no longer among the clocksources it
 * offers; KVM then writes each vCPU's offset at every vCPU load, which only
 * kvm_write_tsc_offset follows exactly. None of it makes the guest's mapping
 * onto the host's TSC less exact (KVM's offsets are in the TSC's own ticks):
 * it is the host's ticks that measure time less well, so these are warnings.
 */
void check_host_tsc(struct check *c)
{
	char path[4200], line[8192], avail[512] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/cpuinfo", c->procfs);
	f = fopen(path, "re");
	if (!f) {
		check_set(c, CK_TSC, CV_NO, "%s: %s", path, strerror(errno));
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5))
			continue;
		c->constant_tsc = strstr(line, " constant_tsc") != NULL;
		c->nonstop_tsc = strstr(line, " nonstop_tsc") != NULL;
		break;
	}
	fclose(f);
	snprintf(path, sizeof(path), "%s/devices/system/clocksource/clocksource0/current_clocksource",
		 c->sysfs);
	read_line(path, c->clocksource, sizeof(c->clocksource));
	snprintf(path, sizeof(path), "%s/devices/system/clocksource/clocksource0/available_clocksource",
		 c->sysfs);
	read_line(path, avail, sizeof(avail));
	snprintf(line, sizeof(line), " %s ", avail);
	c->tsc_available = strstr(line, " tsc ") != NULL;
	if (!c->constant_tsc) {
		check_set(c, CK_TSC, CV_WARN, "no constant_tsc in %s/cpuinfo (clocksource %s): the TSC's "
			  "rate may follow the CPU's frequency; guest events still fall exactly among the "
			  "host's (both count this TSC), but the seconds trace-cmd shows (one rate, "
			  "TSC2NSEC) may be off", c->procfs, c->clocksource[0] ? c->clocksource : "?");
		return;
	}
	if (!c->tsc_available || strcmp(c->clocksource, "tsc")) {
		check_set(c, CK_TSC, CV_WARN, "constant_tsc%s; the kernel keeps time with %s%s: KVM "
			  "then moves each vCPU's offset at every vCPU load, which only "
			  "kvm:kvm_write_tsc_offset follows exactly", c->nonstop_tsc ? " nonstop_tsc" : "",
			  c->clocksource[0] ? c->clocksource : "?", c->tsc_available ? "" :
			  " (tsc is not among the available clocksources: marked unstable)");
		return;
	}
	if (!c->nonstop_tsc) {
		check_set(c, CK_TSC, CV_WARN, "constant_tsc but no nonstop_tsc: the TSC may stop in deep "
			  "C-states; the kernel keeps time with tsc");
		return;
	}
	check_set(c, CK_TSC, CV_YES, "constant_tsc nonstop_tsc; clocksource tsc");
}

/**
 * check_kvm_events() - kvm:kvm_exit, kvm:kvm_entry and kvm:kvm_write_tsc_offset
 * in tracefs
 * @c: the check
 */
void check_kvm_events(struct check *c)
{
	static const char *const names[] = { "kvm_exit", "kvm_entry", "kvm_write_tsc_offset" };
	bool *have[] = { &c->ev_exit, &c->ev_entry, &c->ev_write_tsc };
	char path[4200], missing[256] = "", err[160] = "";
	unsigned int i;
	size_t n = 0;
	int fd;

	for (i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/events/kvm/%s/format", c->tracefs, names[i]);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		*have[i] = fd >= 0;
		if (fd >= 0) {
			close(fd);
			continue;
		}
		if (!err[0])
			snprintf(err, sizeof(err), "%s", strerror(errno));
		n += snprintf(missing + n, sizeof(missing) - n, "%skvm:%s", n ? ", " : "", names[i]);
	}
	if (!n)
		check_set(c, CK_EVENTS, CV_YES, "kvm:kvm_exit, kvm:kvm_entry, kvm:kvm_write_tsc_offset "
			  "in %s/events", c->tracefs);
	else
		check_set(c, CK_EVENTS, CV_NO, "%s not in %s/events (%s)%s", missing, c->tracefs, err,
			  c->ev_write_tsc ? "" : ": without kvm_write_tsc_offset, record finds KVM's "
			  "offset changes by re-reading debugfs every second (bounded, not exact)");
}

static int cmp_thread(const void *a, const void *b)
{
	const struct check_thread *x = a, *y = b;

	return x->cpu < y->cpu ? -1 : x->cpu > y->cpu;
}

/**
 * check_threads() - QEMU's vCPU threads, by their names "CPU n/KVM"
 * @c: the check (needs the QEMU pid)
 *
 * QEMU names them so with -name ...,debug-threads=on (libvirt always does);
 * "/TCG" says the guest runs without KVM.
 */
void check_threads(struct check *c)
{
	char dir[4200], path[4400], comm[64], list[512];
	struct check_thread *t;
	struct dirent *de;
	unsigned int i, cpu, ntcg = 0;
	size_t n = 0;
	DIR *d;

	if (!c->qemu_pid) {
		if (c->missing[0])
			check_set(c, CK_THREADS, CV_SKIPPED, "%s", c->missing);
		else if (c->domain)
			check_set(c, CK_THREADS, CV_SKIPPED, "libvirt gave no QEMU pid for domain %s",
				  c->domain);
		else
			check_set(c, CK_THREADS, CV_SKIPPED, "no QEMU pid (--qemu-pid, or --domain)");
		return;
	}
	snprintf(dir, sizeof(dir), "%s/%d/task", c->procfs, (int)c->qemu_pid);
	d = opendir(dir);
	if (!d) {
		check_set(c, CK_THREADS, CV_NO, "%s: %s (does QEMU pid %d run?)", dir, strerror(errno),
			  (int)c->qemu_pid);
		return;
	}
	while ((de = readdir(d)) && c->nr_threads < CHECK_MAX_VCPUS) {
		char accel[16];

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/comm", dir, de->d_name);
		/* A thread names itself: only "CPU n/WORD", WORD letters and digits, is taken. */
		if (read_line(path, comm, sizeof(comm)) < 0 ||
		    sscanf(comm, "CPU %u/%15[A-Za-z0-9]", &cpu, accel) != 2 || cpu >= CHECK_MAX_VCPUS)
			continue;
		t = &c->threads[c->nr_threads++];
		t->cpu = cpu;
		t->tid = (pid_t)strtol(de->d_name, NULL, 10);
		snprintf(t->accel, sizeof(t->accel), "%s", accel);
		ntcg += !strcmp(accel, "TCG");
	}
	closedir(d);
	if (!c->nr_threads) {
		check_set(c, CK_THREADS, CV_WARN, "no thread of QEMU pid %d is named \"CPU n/KVM\": QEMU "
			  "names them only with -name NAME,debug-threads=on (libvirt sets it); without, "
			  "host.dat has no vCPU map", (int)c->qemu_pid);
		return;
	}
	qsort(c->threads, c->nr_threads, sizeof(c->threads[0]), cmp_thread);
	for (i = 0; i < c->nr_threads && n < sizeof(list) - 64; i++)
		n += snprintf(list + n, sizeof(list) - n, "%sCPU %u/%s tid %d", i ? ", " : "",
			      c->threads[i].cpu, c->threads[i].accel, (int)c->threads[i].tid);
	c->tcg = ntcg > 0;
	if (c->tcg)
		check_set(c, CK_THREADS, CV_NO, "QEMU pid %d runs its vCPUs under TCG (%s): the CPUs are "
			  "emulated, and KVM keeps no offsets for them", (int)c->qemu_pid, list);
	else
		check_set(c, CK_THREADS, CV_YES, "%u vCPU thread%s: %s", c->nr_threads,
			  c->nr_threads == 1 ? "" : "s", list);
}

/**
 * check_agent() - one HELLO on the guest's control port, as `list` sends it
 * @c: the check (its guest's control port found)
 */
void check_agent(struct check *c)
{
	struct list_found f = { .g = &c->guest, .nr = 1 };
	struct list_guest *g = &c->guest;

	if (c->missing[0]) {
		check_set(c, CK_AGENT, CV_SKIPPED, "%s", c->missing);
		return;
	}
	if (!c->have_ports) {
		check_set(c, CK_AGENT, CV_SKIPPED, "no control port known (agent-ctl-path): give "
			  "--chardev-dir, or --domain");
		return;
	}
	list_probe(&f, c->timeout_ms);
	switch (g->agent) {
	case LIST_AGENT_ANSWERS:
		check_set(c, CK_AGENT, CV_YES, "%s answers on %s (%u CPU%s)", g->software, g->ctl_path,
			  g->agent_cpus, g->agent_cpus == 1 ? "" : "s");
		break;
	case LIST_AGENT_BUSY:
		if (g->busy_pid)
			check_set(c, CK_AGENT, CV_NO, "process %d has %s open: a recording? (check "
				  "cannot ask the agent meanwhile)", (int)g->busy_pid, g->ctl_path);
		else
			check_set(c, CK_AGENT, CV_NO, "a client is connected to %s: a recording? "
				  "(check cannot ask the agent meanwhile)", g->ctl_path);
		break;
	case LIST_AGENT_SILENT:
		check_set(c, CK_AGENT, CV_NO, "%s: %s: is trace-agent running in the guest?", g->ctl_path,
			  g->why);
		break;
	default:
		check_set(c, CK_AGENT, CV_NO, "%s: %s", g->ctl_path, g->why[0] ? g->why :
			  "the port is not ready");
	}
}
