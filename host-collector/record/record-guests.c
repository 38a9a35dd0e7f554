// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * record's guests before their sessions: --all's, found by `list`; each one
 * started when its ports are there (--wait looks again); and the open files
 * they need, against RLIMIT_NOFILE.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attach.h"
#include "hostrec.h"
#include "live.h"
#include "record.h"
#include "record-int.h"
#include "session.h"
#include "setup/libvirt.h"
#include "setup/list.h"
#include "text.h"

/* How long record --all waits for the agents' answers to its HELLO, all at once. */
#define ALL_PROBE_MS	2000

/*
 * --all: the guests `list` finds, with their ports in place and an agent
 * answering (with --wait, answering or not). Those another process records
 * are left out, and every guest left out is named with the reason.
 * Return: 0, or -errno after a message (nothing to record).
 */
int record_add_all(const struct record_opts *o, struct guest **gs, unsigned int *nr)
{
	struct list_found f;
	unsigned int i, j;
	const char *why;
	char buf[200];

	if (list_find(o->all_uri, o->no_libvirt, o->any_user, &f) < 0) {
		log_err("--all: out of memory");
		return -ENOMEM;
	}
	if (o->all_names) {
		char *copy = strdup(o->all_names), *names[COLLECT_MAX_GUESTS], *p, *save = NULL;
		int n = 0;

		for (p = copy ? strtok_r(copy, ",", &save) : NULL; p && n < COLLECT_MAX_GUESTS;
		     p = strtok_r(NULL, ",", &save))
			names[n++] = p;
		list_keep(&f, names, n);
		free(copy);
	}
	for (i = 0; i < f.nr_skipped; i++)
		log_info("--all: pid %d (%s) is left out: %s", (int)f.skipped[i].pid,
			 f.skipped[i].name, f.skipped[i].why);
	list_probe(&f, ALL_PROBE_MS);
	for (i = 0; i < f.nr; i++) {
		const struct list_guest *l = &f.g[i];
		const char *who = l->libvirt ? l->domain : l->name;
		struct guest *g;
		bool dup = false;

		why = NULL;
		for (j = 0; j < *nr; j++)
			dup = dup || !strcmp(gs[j]->name, l->name);
		if (!list_ports_ready(l)) {
			why = l->running ? "its ports are not all there" : "it is not running";
		} else if (l->agent == LIST_AGENT_BUSY) {
			if (l->busy_pid)
				snprintf(buf, sizeof(buf), "another process (pid %d) records it",
					 (int)l->busy_pid);
			else
				snprintf(buf, sizeof(buf), "another process (a connected client) records it");
			why = buf;
		} else if (l->listen) {
			why = "QEMU connects to its ports: record it with --chardev-dir DIR --listen";
		} else if (l->agent == LIST_AGENT_ERROR) {
			why = l->why[0] ? l->why : "its control port cannot be opened";
		} else if (l->agent != LIST_AGENT_ANSWERS && !o->wait) {
			snprintf(buf, sizeof(buf), "%s (with --wait it is waited for)",
				 l->why[0] ? l->why : "no trace-agent answered");
			why = buf;
		} else if (!l->name[0] || collect_name_reserved(l->name)) {
			why = "its name cannot name a file: record it with --domain NAME --name OTHER";
		} else if (!l->libvirt && !l->chardev_dir[0]) {
			why = "its ports are not in one directory: record it with --ctl PATH --cpu PATH...";
		} else if (dup) {
			why = "another guest has its name: record it with --name";
		}
		if (why) {
			log_info("--all: %s is left out: %s", who, why);
			continue;
		}
		g = record_new_guest(gs, nr);
		if (!g) {
			log_err("--all: at most %d guests: %s and the ones after it are left out",
				COLLECT_MAX_GUESTS, who);
			break;
		}
		snprintf(g->name, sizeof(g->name), "%s", l->name);
		if (l->libvirt) {
			snprintf(g->link.domain, sizeof(g->link.domain), "%s", l->domain);
			snprintf(g->link.connect_uri, sizeof(g->link.connect_uri), "%s", l->uri);
		} else {
			snprintf(g->link.chardev_dir, sizeof(g->link.chardev_dir), "%s", l->chardev_dir);
			snprintf(g->link.qmp_path, sizeof(g->link.qmp_path), "%s", l->qmp_path);
			g->link.qemu_pid = l->qemu_pid;
			/* The ports (and QMP) record opens must be that QEMU's, as list checked. */
			g->link.owner = (struct qemuproc_owner){ .known = l->owner_known,
								 .uid = l->owner, .pid = l->qemu_pid };
		}
		if (l->libvirt)
			snprintf(buf, sizeof(buf), "libvirt domain");
		else
			snprintf(buf, sizeof(buf), "QEMU pid %d", (int)l->qemu_pid);
		log_info("--all: %s (%s, %s)", g->name, buf, l->agent == LIST_AGENT_ANSWERS ?
			 "its agent answers" : "waiting for its agent");
	}
	if (!*nr)
		log_err("--all: no guest to record%s%s: `virtio-trace-collect list` shows the guests "
			"and their ports", f.libvirt_note[0] ? "; " : "", f.libvirt_note);
	list_free(&f);
	return *nr ? 0 : -ENOENT;
}

/* vCPU threads of a QEMU process: /proc/PID/task/TID/comm is "CPU n/KVM" (or /TCG). */
static void find_vcpu_threads(struct guest *g)
{
	char dir[64], path[320], comm[64];
	struct dirent *de;
	unsigned int cpu;
	DIR *d;
	FILE *f;

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)g->link.qemu_pid);
	d = opendir(dir);
	if (!d) {
		log_warn("guest %s: cannot read %s: %m (no vCPU thread map)", g->name, dir);
		return;
	}
	while ((de = readdir(d))) {
		snprintf(path, sizeof(path), "%s/%s/comm", dir, de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && sscanf(comm, "CPU %u/", &cpu) == 1 &&
		    cpu < COLLECT_MAX_CPUS) {
			g->link.vcpu_tids[cpu] = strtoul(de->d_name, NULL, 10);
			if (cpu + 1 > g->link.nr_vcpu_tids)
				g->link.nr_vcpu_tids = cpu + 1;
		}
		fclose(f);
	}
	closedir(d);
}

/* --wait: a guest whose ports are not there yet is looked for again this often. */
#define WAIT_RETRY_NS		(500 * NSEC_PER_MSEC)

static bool port_exists(const char *base)
{
	char out[4200];
	struct stat st;

	snprintf(out, sizeof(out), "%s.out", base);
	return (stat(out, &st) == 0 && S_ISFIFO(st.st_mode)) ||
	       (stat(base, &st) == 0 && (S_ISSOCK(st.st_mode) || S_ISFIFO(st.st_mode)));
}

/*
 * --wait: are the guest's ports there to open? A chardev directory needs its
 * control port and its first data port (pipe FIFOs made ahead of a hot-plug
 * are there: the HELLO then waits in the FIFO for QEMU and the agent); a
 * domain needs its channels in the live XML. -EAGAIN: not yet; another
 * -errno: never (a message said why).
 */
static int ports_ready(struct guest *g)
{
	char base[4200];
	int ret;

	if (g->link.listen || g->wait.link_ready)
		return 0;
	if (g->link.domain[0]) {
		ret = libvirt_guest_resolve(&g->link, g->name, g->link.connect_uri);
		g->wait.link_ready = ret == 0;
		return ret;
	}
	if (g->link.chardev_dir[0]) {
		snprintf(base, sizeof(base), "%s/trace-path-cpu0", g->link.chardev_dir);
		if (!port_exists(base))
			return -EAGAIN;
		snprintf(base, sizeof(base), "%s/agent-ctl-path", g->link.chardev_dir);
		return port_exists(base) ? 0 : -EAGAIN;
	}
	return port_exists(g->link.ctl_path) ? 0 : -EAGAIN;
}

/* Open the guest's ports and start its session; with --wait, ports not there yet are waited for. */
void record_start_guest(struct guest *g)
{
	const struct record_opts *o = g->rec->o;
	int ret;

	if (g->state != G_NEW || g->rec->stopping)
		return;
	if (o->wait) {
		ret = ports_ready(g);
		if (ret == -EAGAIN && g->wait.until != UINT64_MAX && engine_now_ns() >= g->wait.until) {
			session_fail(g, "its trace ports did not appear within %g s (--wait): `virtio-trace-"
				     "collect list` shows the guests that have them; %s", o->wait_s,
				     g->link.domain[0] ? "`setup --domain NAME --apply --live` hot-plugs them" :
				     "`setup --qmp SOCKET --hotplug` hot-plugs them into a running QEMU");
			return;
		}
		if (ret == -EAGAIN) {
			if (!g->wait.said) {
				g->wait.said = true;
				log_info("guest %s: waiting for its trace ports to appear%s", g->name,
					 o->wait_s ? "" : " (no time limit: Ctrl-C ends)");
			}
			engine_timer_arm(g->rec->e, &g->wait.timer, WAIT_RETRY_NS, 0);
			return;
		}
		if (ret < 0) {
			session_fail(g, "cannot find its ports");
			return;
		}
	}
	if (g->link.qemu_pid && !g->link.nr_vcpu_tids)
		find_vcpu_threads(g);
	hostrec_vcpus(g->rec->host, g->link.vcpu_tids, g->link.nr_vcpu_tids);
	if (live_set_vcpus(g->rec->live, g->live_idx, g->link.vcpu_tids, g->link.nr_vcpu_tids) < 0)
		log_warn("guest %s: its vCPUs are not in the --live-stat table", g->name);
	if (attach_guest(g->name, &g->link, o, &g->ctl.rfd, &g->ctl.wfd, &g->ctl.lfd) < 0) {
		session_fail(g, "cannot attach");
		return;
	}
	session_begin(g);
}

/* --wait's timer: look for the guest's ports again. */
void record_wait_tick(void *arg)
{
	record_start_guest(arg);
}

/*
 * Open files: a guest holds its control port (two FIFOs) and its spool
 * directory, and per vCPU its port, its spool data file and its compressed
 * chunks, now and then a file of malformed or overflowing pages (and with
 * --listen the port's listening socket beside the connection); the host
 * recorder per CPU its trace_pipe_raw, a pipe and the same spool files; the
 * finish a directory per trace at once. Measured: 8 guests of 2 vCPUs held
 * 81. A thousand such guests need about 12,000, past the usual soft limit of
 * 1024.
 */
#define FDS_BASE	64
#define FDS_GUEST	4
#define FDS_VCPU	4
#define FDS_LISTEN	1
#define FDS_HOST_CPU	6

/* The limit as the collector found it: what COMMAND gets back. */
static struct rlimit nofile_found;
static bool nofile_raised;

/*
 * The files set aside: FDS_BASE, the host's CPUs and each guest's share
 * (guest->fds), guessed before its HELLO and set again when its agent says
 * how many vCPUs it has (record_fds_claim()).
 */
static uint64_t fds_reserved;

/* The files guest @g needs with @cpus vCPUs. */
static uint64_t guest_fds_for(const struct guest *g, unsigned int cpus)
{
	return FDS_GUEST + (FDS_VCPU + (g->link.listen ? FDS_LISTEN : 0)) * (uint64_t)cpus;
}

/* The files guest @g needs, as far as is known before its HELLO (2 vCPUs when unknown). */
static uint64_t guest_fds(const struct guest *g)
{
	unsigned int ports = attach_count_ports(&g->link);

	return guest_fds_for(g, ports ? ports : 2);
}

/* Raise the soft limit @rl to the hard one; Return: whether it was (@rl then is the new one). */
static bool raise_to_hard(struct rlimit *rl)
{
	struct rlimit up = { .rlim_cur = rl->rlim_max, .rlim_max = rl->rlim_max };

	if (rl->rlim_cur >= rl->rlim_max || setrlimit(RLIMIT_NOFILE, &up) < 0)
		return false;
	nofile_raised = true;
	*rl = up;
	return true;
}

/*
 * Raise the soft RLIMIT_NOFILE to the hard one when the guests need more
 * than the soft one allows, and say when even the hard one is short.
 *
 * Return: how many guests, in order, fit in the limit (@nr when all do): the
 * rest are failed before they take a descriptor, so that those that fit
 * record whole rather than every guest failing halfway. Those that fit have
 * their guess set aside; record_fds_claim() checks it again at each HELLO.
 */
unsigned int record_fd_limit(struct guest **gs, unsigned int nr, const struct record_opts *o)
{
	uint64_t need = FDS_BASE, host_cpus = 0, used;
	struct rlimit rl, was;
	unsigned int i, fit;

	for (i = 0; i < nr; i++) {
		gs[i]->fds = guest_fds(gs[i]);
		need += gs[i]->fds;
	}
	if (o->host_events) {
		long n = sysconf(_SC_NPROCESSORS_CONF);

		host_cpus = n > 0 ? (uint64_t)n : 1;
		need += FDS_HOST_CPU * host_cpus;
	}
	fds_reserved = need;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return nr;
	nofile_found = rl;
	if (need <= rl.rlim_cur)
		return nr;
	was = rl;
	if (raise_to_hard(&rl))
		log_info("%u guests%s need about %" PRIu64 " open files: the limit is raised from "
			 "%llu to the hard limit, %llu", nr, host_cpus ? " and the host events" : "",
			 need, (unsigned long long)was.rlim_cur, (unsigned long long)rl.rlim_cur);
	if (need <= rl.rlim_cur)
		return nr;
	used = FDS_BASE + FDS_HOST_CPU * host_cpus;
	for (fit = 0; fit < nr && used + gs[fit]->fds <= rl.rlim_cur; fit++)
		used += gs[fit]->fds;
	for (i = fit; i < nr; i++)
		gs[i]->fds = 0;
	fds_reserved = used;
	log_warn("%u guests%s need about %" PRIu64 " open files, more than the limit of %llu (the "
		 "hard limit is %llu): only the first %u are recorded. Raise it (as root `ulimit -Hn %"
		 PRIu64 "`, or LimitNOFILE= for a service)", nr, host_cpus ? " and the host events" : "",
		 need, (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max, fit, need);
	return fit;
}

/**
 * record_fds_claim() - set aside the open files a guest needs, now that its
 * agent said how many vCPUs it has
 * @g: the guest, its agent.nr_cpus from the HELLO_REPLY
 * @b: filled in: what it needs, the limit, and the limit all would fit in
 *
 * The guess made before the start counted 2 vCPUs for a guest whose ports
 * were not known yet (--listen, --wait). When the real share does not fit
 * in what the others leave, the soft RLIMIT_NOFILE is raised to the hard one
 * first; when even that is short, nothing is set aside beyond the guest's
 * control port and spool directory, so that the guest fails alone instead of
 * taking the descriptors the other guests (and the finish) need.
 *
 * Return: 0 (set aside), -EMFILE (it does not fit: @b says by how much).
 */
int record_fds_claim(struct guest *g, struct record_fds *b)
{
	uint64_t others = fds_reserved - g->fds;
	struct rlimit rl;

	b->guest = guest_fds_for(g, g->agent.nr_cpus);
	b->need = others + b->guest;
	b->limit = 0;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || b->need <= rl.rlim_cur)
		goto fits;
	b->limit = rl.rlim_cur;
	if (raise_to_hard(&rl))
		log_info("guest %s: %u vCPUs: the guests need about %" PRIu64 " open files: the limit "
			 "is raised from %llu to the hard limit, %llu", g->name, g->agent.nr_cpus,
			 b->need, (unsigned long long)b->limit, (unsigned long long)rl.rlim_cur);
	b->limit = rl.rlim_cur;
	if (b->need <= rl.rlim_cur)
		goto fits;
	g->fds = FDS_GUEST;
	fds_reserved = others + g->fds;
	return -EMFILE;
fits:
	g->fds = b->guest;
	fds_reserved = b->need;
	return 0;
}

/* In the command's child: the open-file limit back to what the collector found. */
void record_fd_limit_restore(void)
{
	/* Programs that select() break above 1024: the command gets the limit we found. */
	if (nofile_raised)
		setrlimit(RLIMIT_NOFILE, &nofile_found);
}
