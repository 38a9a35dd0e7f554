// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Host events, recorded in a private tracefs instance with the x86-tsc clock
 * (never the top-level buffer, which may be shared), through the same page
 * path as the guests: one thread per host CPU splices trace_pipe_raw into a
 * pipe whose other end the engine reads as a stream. The instance is removed
 * on exit.
 *
 * Task names: the metadata is read at the start (what `recover` finds) and
 * again at the end, when the kernel's saved_cmdlines holds the tasks that ran
 * (trace-cmd reads it then too). That cache keeps only the tasks switched out
 * after an event, and only saved_cmdlines_size of them (128 on 6.1, 6552 seen
 * on 6.18), so the names of the threads in /proc at the start and at the end
 * are added to it: a task that existed when the recording started is never
 * "<...>". For a task alive at the end, /proc's name wins: the cache may hold
 * a stale one (see spool_meta()). (Before, the start's cache alone went into
 * host.dat: empty when no event had been enabled since boot.)
 *
 * The stop's own work runs beside what the stop waits for (a daemon's
 * snapshot waits for the whole of it): the end's metadata is read by a
 * thread once the host's rings are drained, while the guests answer their
 * last clock probes and metadata requests (it reads /proc/kallsyms: 60-90 ms
 * of kernel time here); the instance is removed by a thread while the
 * trace.dat files are written (its rmdir took 45-55 ms).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <tracefs.h>

#include "collect.h"
#include "engine.h"
#include "hold.h"
#include "hostrec.h"
#include "live.h"
#include "recopts.h"
#include "stream.h"
#include "store/spool.h"
#include "vt_suggest.h"
#include "vt_time.h"

#define HOST_PIPE_SIZE	(1 << 20)
/*
 * vCPU threads the sched filters of --kvm-exits name; a filter must fit in a
 * page (the kernel's limit), about a hundred threads: past that every switch
 * is recorded.
 */
#define HOST_MAX_VCPU_TIDS	256u
#define HOST_FILTER_MAX		4000u

struct hcpu {
	unsigned int cpu;
	int raw_fd;
	int pipe[2];		/* [0] read by the engine, [1] written here */
	pthread_t thread;
	bool running;
	atomic_bool stopping;
	uint32_t subbuf;
	unsigned int flush_ms;	/* --live: the partial page goes out this long after the last */
	struct stream stream;
};

struct hostrec {
	struct tracefs_instance *inst;
	char *dir;		/* the instance's directory (libtracefs allocates it) */
	char name[64];
	int marker_fd;
	unsigned int nr_cpus;
	uint32_t subbuf;
	struct hcpu *cpus;
	int spool;		/* its directory in the run's spool */
	struct vt_blob comms;	/* the tasks in /proc at the start */
	bool mounted;		/* tracefs was not mounted: libtracefs mounted it for us */
	bool vcpu_filter;	/* --kvm-exits' sched events: only those of vCPU threads */
	uint32_t vcpu_tids[HOST_MAX_VCPU_TIDS];
	unsigned int nr_vcpu_tids;
	pthread_t respool;	/* the end's metadata (hostrec_respool_begin()) */
	bool respooling, respool_tried;
	pthread_t remover;	/* the instance's removal (hostrec_release()) */
	bool removing;
	bool released;
};

#define TRACEFS_DIR	"/sys/kernel/tracing"

/* Is tracefs mounted where libtracefs mounts it when it finds none? */
static bool tracefs_is_mounted(void)
{
	struct statfs st;

	return statfs(TRACEFS_DIR, &st) == 0 && (unsigned long)st.f_type == TRACEFS_MAGIC;
}

static int write_page(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -errno;
		buf += n;
		len -= n;
	}
	return 0;
}

/* --live: the partial page, read() and padded (nothing when the buffer is empty). */
static int flush_partial(struct hcpu *c, char *page)
{
	ssize_t n = read(c->raw_fd, page, c->subbuf);

	if (n <= 0)
		return n < 0 && errno != EAGAIN && errno != EINTR ? -errno : 0;
	memset(page + n, 0, c->subbuf - n);
	return write_page(c->pipe[1], page, c->subbuf);
}

/*
 * Wait for a whole page to splice, or @timeout_ms. Never inside splice(): a
 * splice that waits for the buffer to fill (buffer_percent) does so holding
 * the pipe's lock, and the engine's read of the pipe, O_NONBLOCK or not,
 * then sleeps on that lock (state D) until the buffer fills: every guest,
 * timer and signal of the run waits with it, for as long as the host is
 * quiet. poll() on trace_pipe_raw waits for the same fill without the lock.
 * With the pipe full, the room in it is waited for instead (the trace
 * buffer is readable then, and a poll on it would return at once).
 *
 * Return: true when the poll said a page was there.
 */
static bool wait_page(struct hcpu *c, int timeout_ms)
{
	struct pollfd room = { .fd = c->pipe[1], .events = POLLOUT };
	struct pollfd page = { .fd = c->raw_fd, .events = POLLIN };

	if (timeout_ms < 0)
		timeout_ms = 0;
	if (poll(&room, 1, 0) == 1 && (room.revents & POLLOUT))
		return poll(&page, 1, timeout_ms) == 1;
	poll(&room, 1, timeout_ms);
	return false;
}

/*
 * Like the agent's data path, into a pipe instead of a port, but never
 * blocking in splice (see wait_page()); with --live as the agent's FLUSH:
 * the partial page sent once no whole page came for flush_ms.
 */
static void *hcpu_thread(void *arg)
{
	struct hcpu *c = arg;
	size_t chunk = 64 * (size_t)c->subbuf;
	char *page = malloc(c->subbuf);
	long long last_out = vt_now_ms();
	bool ready = false;

	if (c->flush_ms)
		fcntl(c->raw_fd, F_SETFL, fcntl(c->raw_fd, F_GETFL) | O_NONBLOCK);
	if (c->stream.hold.span)	/* --hold: nothing read until the stop (hold.c) */
		hold_wait(&c->stopping);
	while (page && !atomic_load(&c->stopping)) {
		ssize_t n = splice(c->raw_fd, NULL, c->pipe[1], NULL, chunk,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		int timeout = 100;

		if (n < 0 && errno != EINTR && errno != EAGAIN) {
			log_err("host cpu%u: splice: %m", c->cpu);
			break;
		}
		if (n > 0) {
			last_out = vt_now_ms();
			ready = false;
			continue;
		}
		if (c->flush_ms) {
			long long now = vt_now_ms();

			if (now - last_out >= c->flush_ms) {
				if (flush_partial(c, page) < 0)
					break;
				last_out = now;
			}
			timeout = (int)(last_out + c->flush_ms - now);
		}
		if (atomic_load(&c->stopping))
			break;
		/* poll() said a page was there and splice found none: no spinning on it. */
		if (ready)
			poll(NULL, 0, 10);
		ready = wait_page(c, timeout);
	}
	/* Tracing is off: take the whole pages left, then the partial ones. */
	while (page && splice(c->raw_fd, NULL, c->pipe[1], NULL, chunk,
			      SPLICE_F_MOVE | SPLICE_F_NONBLOCK) > 0)
		;
	fcntl(c->raw_fd, F_SETFL, fcntl(c->raw_fd, F_GETFL) | O_NONBLOCK);
	while (page) {
		ssize_t n = read(c->raw_fd, page, c->subbuf);

		if (n <= 0)
			break;
		memset(page + n, 0, c->subbuf - n);
		if (write_page(c->pipe[1], page, c->subbuf) < 0)
			break;
	}
	free(page);
	close(c->pipe[1]);	/* the engine sees the end of the stream */
	c->pipe[1] = -1;
	return NULL;
}

/* A tracefs file whole (tracefs reports no sizes), NUL-terminated, at most 16 MiB. */
static int read_tracefs(const char *path, char **out)
{
	size_t len = 0, cap = 0;
	char *buf = NULL;
	int fd, ret = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t n;

		if (cap - len < 4096) {
			char *b = cap < (16u << 20) ? realloc(buf, cap + 65536) : NULL;

			if (!b) {
				ret = -ENOMEM;
				break;
			}
			buf = b;
			cap += 65536;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? -errno : 0;
			break;
		}
		len += n;
	}
	close(fd);
	if (ret < 0) {
		free(buf);
		return ret;
	}
	buf[len] = '\0';
	*out = buf;
	return 0;
}

/* "sched", "sched:sched_switch", "sched/sched_switch" -> system and event ("*" for a system). */
static void split_spec(const char *tok, char *sys, char *ev, size_t size)
{
	size_t n = strcspn(tok, ":/");

	snprintf(sys, size, "%.*s", (int)n, tok);
	snprintf(ev, size, "%s", tok[n] && tok[n + 1] ? tok + n + 1 : "*");
}

/*
 * One --host-events item against the kernel's available_events ("sys:event"
 * lines): true when something matches, else said with the closest names.
 */
static bool check_event(const char *tok, const char *avail)
{
	char sys[VT_SUGGEST_NAME_MAX], ev[VT_SUGGEST_NAME_MAX], hint[VT_SUGGEST_MAX * VT_SUGGEST_NAME_MAX + 32];
	char line[2 * VT_SUGGEST_NAME_MAX], exact[VT_SUGGEST_NAME_MAX] = "";
	bool whole, glob;
	struct vt_suggest sg;
	const char *p, *nl;

	split_spec(tok, sys, ev, sizeof(sys));
	whole = !strcmp(ev, "*");
	glob = strpbrk(sys, "*?[") || (!whole && strpbrk(ev, "*?["));
	vt_suggest_init(&sg, whole ? sys : tok);
	for (p = avail; *p; p = *nl ? nl + 1 : nl) {
		char *colon;

		nl = strchrnul(p, '\n');
		if ((size_t)(nl - p) >= sizeof(line))
			continue;
		memcpy(line, p, nl - p);
		line[nl - p] = '\0';
		colon = strchr(line, ':');
		if (!colon)
			continue;
		*colon = '\0';
		if (!fnmatch(sys, line, 0) && !fnmatch(ev, colon + 1, 0))
			return true;
		if (whole && !exact[0] && !strcmp(colon + 1, sys))
			snprintf(exact, sizeof(exact), "did you mean %s:%s?", line, sys);
		if (whole) {
			vt_suggest_add(&sg, line);
		} else {
			*colon = ':';
			vt_suggest_add(&sg, line);
		}
	}
	if (glob)
		hint[0] = '\0';
	else if (exact[0])
		snprintf(hint, sizeof(hint), "%s", exact);
	else
		vt_suggest_format(&sg, hint, sizeof(hint));
	log_err("--host-events: the host has no event %s%s%s%s", whole ? "system " : "", tok,
		hint[0] ? "; " : "", hint[0] ? hint : " (the kernel's available_events lists them)");
	return false;
}

/**
 * hostrec_check() - refuse host events and processes that do not exist,
 * before anything is made or started
 * @o: options (--host-events, --host-pid)
 *
 * Each --host-events item must match an event of the kernel's
 * available_events (its closest names are offered when none does), and each
 * --host-pid must be a process. Without a readable tracefs nothing is said
 * here: hostrec_start() will say why it cannot record.
 *
 * Return: 0, or -EINVAL with the reasons logged.
 */
int hostrec_check(const struct record_opts *o)
{
	char *avail = NULL, *copy, *tok, *save = NULL;
	bool mounted = false;
	unsigned int i;
	int ret = 0;

	for (i = 0; i < o->nr_host_pids; i++) {
		if (kill(o->host_pids[i], 0) < 0 && errno == ESRCH) {
			log_err("--host-pid %d: no such process", (int)o->host_pids[i]);
			ret = -EINVAL;
		}
	}
	/*
	 * Not through libtracefs, which would mount tracefs for good and keep
	 * its path: mounted here only for the read, as hostrec_start() will
	 * mount it again (and unmount it at the end).
	 */
	if (!tracefs_is_mounted()) {
		if (mount("nodev", TRACEFS_DIR, "tracefs", 0, NULL) < 0) {
			log_debug("cannot mount tracefs to check the host events: %m");
			return ret;
		}
		mounted = true;
	}
	copy = strdup(o->host_events);
	if (!copy || read_tracefs(TRACEFS_DIR "/available_events", &avail) < 0) {
		log_debug("cannot read available_events: the host events are checked when enabled");
		goto out;
	}
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (!check_event(tok, avail))
			ret = -EINVAL;
out:
	free(avail);
	free(copy);
	if (mounted && umount2(TRACEFS_DIR, 0) < 0)
		log_warn("cannot unmount %s, mounted to check the host events: %m", TRACEFS_DIR);
	return ret;
}

static int enable_events(struct hostrec *h, const char *list)
{
	char *copy = strdup(list), *save = NULL, *tok;
	int ret = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char spec[512];

		/* set_event takes SYSTEM:EVENT with globs; a bare system means all of it. */
		snprintf(spec, sizeof(spec), "%s%s\n", tok, strchr(tok, ':') ? "" : ":*");
		for (char *p = spec; *p; p++)
			if (*p == '/')
				*p = ':';
		if (tracefs_instance_file_append(h->inst, "set_event", spec) < 0) {
			log_err("host events: the kernel refused \"%s\" (see %s/available_events)", tok,
				tracefs_tracing_dir());
			ret = -EINVAL;
			break;
		}
	}
	free(copy);
	return ret;
}

/*
 * --host-pid: the instance's set_event_pid takes thread ids, so every thread
 * of each process goes in, and options/event-fork adds what they create later.
 * (sched_switch is kept when either side is in the list; markers are not
 * events and always pass.)
 */
static int filter_pids(struct hostrec *h, const struct record_opts *o)
{
	unsigned int i, n = 0;

	if (!o->nr_host_pids)
		return 0;
	if (tracefs_instance_file_write(h->inst, "options/event-fork", "1") < 0)
		log_warn("host: no options/event-fork: threads and children started later are not followed");
	for (i = 0; i < o->nr_host_pids; i++) {
		char dir[64], tid[32];
		struct dirent *de;
		DIR *d;

		snprintf(dir, sizeof(dir), "/proc/%d/task", (int)o->host_pids[i]);
		d = opendir(dir);
		if (!d) {
			log_err("host: --host-pid %d: no such process", (int)o->host_pids[i]);
			return -ESRCH;
		}
		while ((de = readdir(d))) {
			if (de->d_name[0] < '0' || de->d_name[0] > '9')
				continue;
			snprintf(tid, sizeof(tid), "%s\n", de->d_name);
			/* A thread may end meanwhile: the kernel refuses it, the others stay. */
			if (tracefs_instance_file_append(h->inst, "set_event_pid", tid) >= 0)
				n++;
		}
		closedir(d);
	}
	if (!n) {
		log_err("host: the kernel took none of the --host-pid threads (they all ended?)");
		return -EINVAL;
	}
	log_info("host: events of %u threads of %u processes", n, o->nr_host_pids);
	return 0;
}

/*
 * --kvm-exits records sched_switch and sched_wakeup for `report --vcpus`, but
 * only where a vCPU thread is involved (switched out or in, woken): the switch
 * names the task that takes the CPU itself, so the volume stays that of the
 * vCPUs. Before any vCPU thread is known the filters let nothing through.
 */
static int write_vcpu_filters(struct hostrec *h)
{
	char sw[HOST_FILTER_MAX + 64], wk[HOST_FILTER_MAX + 64];
	size_t ns = 0, nw = 0;
	unsigned int i;

	if (!h->nr_vcpu_tids) {
		snprintf(sw, sizeof(sw), "prev_pid < 0");
		snprintf(wk, sizeof(wk), "pid < 0");
	}
	for (i = 0; i < h->nr_vcpu_tids && ns < HOST_FILTER_MAX && nw < HOST_FILTER_MAX; i++) {
		ns += snprintf(sw + ns, sizeof(sw) - ns, "%sprev_pid == %u || next_pid == %u",
			       i ? " || " : "", h->vcpu_tids[i], h->vcpu_tids[i]);
		nw += snprintf(wk + nw, sizeof(wk) - nw, "%spid == %u", i ? " || " : "", h->vcpu_tids[i]);
	}
	if (ns >= HOST_FILTER_MAX || nw >= HOST_FILTER_MAX) {
		/* "0" clears a filter. */
		snprintf(sw, sizeof(sw), "0");
		snprintf(wk, sizeof(wk), "0");
		log_info("host: %u vCPU threads are more than a sched filter holds: every switch "
			 "and wakeup is recorded", h->nr_vcpu_tids);
	}
	if (tracefs_instance_file_write(h->inst, "events/sched/sched_switch/filter", sw) < 0 ||
	    tracefs_instance_file_write(h->inst, "events/sched/sched_wakeup/filter", wk) < 0) {
		log_warn("host: the kernel refused the vCPU threads' sched filter: every switch "
			 "and wakeup is recorded");
		return -EINVAL;
	}
	return 0;
}

/**
 * hostrec_lists_sched() - whether a --host-events list asks for sched_switch
 * or sched_wakeup itself (by name, a glob, or the whole sched system)
 * @list: the list, or NULL
 *
 * Return: true when it does: --kvm-exits then leaves them unfiltered.
 */
bool hostrec_lists_sched(const char *list)
{
	char *copy = list ? strdup(list) : NULL, *tok, *save = NULL;
	bool found = false;

	for (tok = copy ? strtok_r(copy, ",", &save) : NULL; tok && !found;
	     tok = strtok_r(NULL, ",", &save)) {
		char *ev = strchr(tok, ':');

		if (!ev)
			ev = strchr(tok, '/');
		if (ev)
			*ev++ = '\0';
		found = !fnmatch(tok, "sched", 0) &&
			(!ev || !fnmatch(ev, "sched_switch", 0) || !fnmatch(ev, "sched_wakeup", 0));
	}
	free(copy);
	return found;
}

/**
 * hostrec_vcpus() - a guest's vCPU threads are known: --kvm-exits' sched
 * events include theirs from now on
 * @h: the recorder, or NULL (no host events)
 * @tids: the host thread of each vCPU (0: not known)
 * @nr: entries in @tids
 *
 * Return: 0, or -errno when the filter could not be written (the sched
 * events are then all recorded).
 */
int hostrec_vcpus(struct hostrec *h, const uint32_t *tids, unsigned int nr)
{
	unsigned int i, j, before;

	if (!h || !h->vcpu_filter)
		return 0;
	before = h->nr_vcpu_tids;
	for (i = 0; i < nr; i++) {
		if (!tids[i])
			continue;
		for (j = 0; j < h->nr_vcpu_tids && h->vcpu_tids[j] != tids[i]; j++)
			;
		if (j == h->nr_vcpu_tids && h->nr_vcpu_tids < HOST_MAX_VCPU_TIDS)
			h->vcpu_tids[h->nr_vcpu_tids++] = tids[i];
	}
	if (h->nr_vcpu_tids == before)
		return 0;
	log_debug("host: sched events of %u vCPU threads", h->nr_vcpu_tids);
	return write_vcpu_filters(h);
}

/*
 * Write the host's meta.bin: @m with the task names merged in this order,
 * the first name of a pid winning: the /proc scan made now (@now), then what
 * the kernel saved, then the start's scan. The kernel's cache is keyed by pid
 * and outlives tasks: for a task that slept through the recording it may hold
 * the name from before an exec, or a dead task's of the same pid, while /proc
 * is right about every task alive now. A task that ran has the same name in
 * both.
 */
static int spool_meta(struct hostrec *h, struct vt_meta *m, const struct vt_blob *now)
{
	struct vt_blob kernel = m->saved_cmdlines;
	int ret = 0;

	m->saved_cmdlines = (struct vt_blob){ 0 };
	if (now)
		ret = vt_meta_merge_cmdlines(m, now->data, now->len);
	if (ret == 0)
		ret = vt_meta_merge_cmdlines(m, kernel.data, kernel.len);
	if (ret == 0 && now != &h->comms)
		ret = vt_meta_merge_cmdlines(m, h->comms.data, h->comms.len);
	if (ret < 0) {
		log_warn("host: task names from /proc left out: %s", strerror(-ret));
		free(m->saved_cmdlines.data);
		m->saved_cmdlines = kernel;
	} else {
		free(kernel.data);
	}
	return spool_encode_meta(h->spool, m);
}

/* Each CPU's trace_pipe_raw, spliced by a thread of its own into a pipe the engine reads. */
static int start_cpus(struct hostrec *h, const struct record_opts *o, struct engine *e,
		      struct live *live)
{
	char path[4200];
	unsigned int i;

	h->cpus = calloc(h->nr_cpus, sizeof(*h->cpus));
	if (!h->cpus)
		return -1;
	for (i = 0; i < h->nr_cpus; i++) {
		struct hcpu *c = &h->cpus[i];
		char label[32];

		c->cpu = i;
		c->subbuf = h->subbuf;
		c->flush_ms = o->live_ms ? live_flush_ms(o->live_ms) : 0;
		c->pipe[0] = c->pipe[1] = -1;
		snprintf(path, sizeof(path), "%s/per_cpu/cpu%u/trace_pipe_raw", h->dir, i);
		c->raw_fd = open(path, O_RDONLY | O_CLOEXEC);
		if (c->raw_fd < 0 || pipe2(c->pipe, O_CLOEXEC) < 0) {
			log_err("host cpu%u: cannot open %s: %m", i, path);
			return -1;
		}
		fcntl(c->pipe[1], F_SETPIPE_SZ, HOST_PIPE_SIZE);
		snprintf(label, sizeof(label), "host cpu%u", i);
		if (stream_init(&c->stream, c->pipe[0], label, i, h->subbuf, h->spool) < 0)
			return -1;
		c->stream.live = live;
		c->stream.hold.span = o->hold;	/* (live_trace 0: stream_init()) */
		c->stream.live_trace = 0;
		if (stream_serve(&c->stream, e) < 0)
			return -1;
		if (pthread_create(&c->thread, NULL, hcpu_thread, c) != 0)
			return -1;
		c->running = true;
	}
	return 0;
}

/**
 * hostrec_start() - create the private instance and start reading it
 * @o: options (--host-events, --buffer-size)
 * @e: the engine
 * @spool_fd: the run's spool directory
 * @live: --live's view, or NULL: the host's pages are shown as trace 0
 *
 * Return: the recorder, or NULL with the reason logged.
 */
struct hostrec *hostrec_start(const struct record_opts *o, struct engine *e, int spool_fd,
			      struct live *live)
{
	struct hostrec *h = calloc(1, sizeof(*h));
	char path[4200];
	struct vt_meta meta;
	int ret;

	if (!h)
		return NULL;
	h->marker_fd = -1;
	h->spool = -1;
	h->mounted = !tracefs_is_mounted();
	snprintf(h->name, sizeof(h->name), "virtio-trace-collect-%d", (int)getpid());
	h->inst = tracefs_instance_create(h->name);
	if (!h->inst) {
		log_err("cannot create the tracefs instance %s: %m (root and tracefs needed for "
			"--host-events)", h->name);
		free(h);
		return NULL;
	}
	h->dir = tracefs_instance_get_dir(h->inst);
	if (!h->dir)
		goto err;
	if (tracefs_instance_file_write(h->inst, "trace_clock", "x86-tsc") < 0)
		log_warn("host: no x86-tsc trace clock: host and guest timelines will not line up");
	if (tracefs_instance_file_write(h->inst, "tracing_on", "0") < 0 ||
	    (o->hold && tracefs_instance_file_write(h->inst, "options/overwrite", "1") < 0))
		goto err;
	if (o->buffer_kb) {
		snprintf(path, sizeof(path), "%u", o->buffer_kb);
		tracefs_instance_file_write(h->inst, "buffer_size_kb", path);
	}
	if (enable_events(h, o->host_events) < 0 || filter_pids(h, o) < 0)
		goto err;
	h->vcpu_filter = o->kvm_sched;
	if (h->vcpu_filter)
		write_vcpu_filters(h);
	/* The markers that pair with the agent's need the ftrace print format. */
	ret = vt_meta_load(&meta, tracefs_tracing_dir(), h->name, 0);
	if (ret < 0) {
		log_err("host: cannot read the tracefs metadata: %s", strerror(-ret));
		goto err;
	}
	h->nr_cpus = meta.nr_cpus;
	h->subbuf = meta.subbuf_size;
	ret = vt_meta_scan_comms("/proc", &h->comms);
	if (ret < 0)
		log_warn("host: cannot read the task names in /proc: %s", strerror(-ret));
	ret = spool_guest_dir(spool_fd, "host", &h->spool);
	if (ret < 0) {
		vt_meta_free(&meta);
		log_err("host: cannot create .spool/host: %s", strerror(-ret));
		goto err;
	}
	ret = spool_meta(h, &meta, h->comms.data ? &h->comms : NULL);
	vt_meta_free(&meta);
	if (ret < 0) {
		log_err("host: cannot spool the metadata: %s", strerror(-ret));
		goto err;
	}

	if (start_cpus(h, o, e, live) < 0)
		goto err;
	snprintf(path, sizeof(path), "%s/trace_marker", h->dir);
	h->marker_fd = open(path, O_WRONLY | O_CLOEXEC);
	if (tracefs_instance_file_write(h->inst, "tracing_on", "1") < 0)
		goto err;
	log_info("host: recording %s in tracefs instance %s", o->host_events, h->name);
	return h;
err:
	hostrec_free(h);
	return NULL;
}

/**
 * hostrec_spool() - the host trace's spool directory (its metadata bundle)
 * @h: the recorder
 *
 * Return: the directory's fd, open until hostrec_free().
 */
int hostrec_spool(const struct hostrec *h)
{
	return h->spool;
}

/**
 * hostrec_marker() - write a marker into the host trace
 * @h: the recorder
 * @text: the marker
 *
 * Return: 0 or -errno.
 */
int hostrec_marker(struct hostrec *h, const char *text)
{
	size_t len = strlen(text);

	if (h->marker_fd < 0)
		return -EBADF;
	return write(h->marker_fd, text, len) == (ssize_t)len ? 0 : -errno;
}

/**
 * hostrec_stop() - stop tracing and let each CPU drain into its stream
 * @h: the recorder
 *
 * The streams end (EOF) once drained; the engine keeps reading them.
 *
 * Return: 0.
 */
int hostrec_stop(struct hostrec *h)
{
	unsigned int i;

	if (h->released)
		return 0;
	if (h->inst)
		tracefs_instance_file_write(h->inst, "tracing_on", "0");
	for (i = 0; h->cpus && i < h->nr_cpus; i++) {
		struct hcpu *c = &h->cpus[i];

		if (!c->running)
			continue;
		atomic_store(&c->stopping, true);
		c->stream.eager = true;		/* the last bytes without a rest */
		ioctl(c->raw_fd, 0);	/* wakes a poll waiting for buffer_percent */
	}
	return 0;
}

/* Spool the metadata again with the task names the recording saw. */
static void respool_meta(struct hostrec *h)
{
	struct vt_blob now = { 0 };
	struct vt_meta meta;
	int ret;

	ret = vt_meta_load(&meta, tracefs_tracing_dir(), h->name, 0);
	if (ret < 0) {
		log_warn("host: cannot read the metadata again (%s): the task names are those of "
			 "the start", strerror(-ret));
		return;
	}
	if (meta.nr_cpus != h->nr_cpus || meta.subbuf_size != h->subbuf) {
		log_warn("host: the buffer geometry changed: the task names are those of the start");
		goto out_free;
	}
	if (vt_meta_scan_comms("/proc", &now) < 0)
		log_warn("host: cannot read the task names in /proc at the end");
	ret = spool_meta(h, &meta, now.data ? &now : NULL);
	if (ret < 0)
		log_warn("host: cannot spool the metadata again (%s): the task names are those "
			 "of the start", strerror(-ret));
	free(now.data);
out_free:
	vt_meta_free(&meta);
}

static void *respool_thread(void *arg)
{
	respool_meta(arg);
	return NULL;
}

/**
 * hostrec_respool_begin() - read the end's metadata now, in a thread of its own
 * @h: the recorder, stopped and drained (hostrec_drained())
 *
 * Once the rings are drained nothing more comes into saved_cmdlines: the
 * bundle reads as it would at hostrec_save_stats(), which waits for it. Called
 * again, or when the thread cannot start, it does nothing (hostrec_save_stats()
 * then reads it itself).
 */
void hostrec_respool_begin(struct hostrec *h)
{
	if (h->respool_tried || h->spool < 0)
		return;
	h->respool_tried = true;
	h->respooling = !pthread_create(&h->respool, NULL, respool_thread, h);
}

/* The thread hostrec_respool_begin() started, joined. Return: whether there was one. */
static bool respool_join(struct hostrec *h)
{
	if (!h->respooling)
		return false;
	pthread_join(h->respool, NULL);
	h->respooling = false;
	return true;
}

/* The end's metadata spooled: by the thread hostrec_respool_begin() started, else now. */
static void respool_end(struct hostrec *h)
{
	if (!respool_join(h))
		respool_meta(h);
}

/**
 * hostrec_save_stats() - spool the host's per-CPU stats and task names
 * @h: the recorder, stopped
 *
 * The metadata is spooled again with the kernel's saved_cmdlines as the
 * recording left it, and the tasks in /proc now and at the start.
 */
void hostrec_save_stats(struct hostrec *h)
{
	unsigned int i;

	respool_end(h);

	for (i = 0; i < h->nr_cpus; i++) {
		char file[64], *text;

		snprintf(file, sizeof(file), "per_cpu/cpu%u/stats", i);
		text = tracefs_instance_file_read(h->inst, file, NULL);
		if (!text)
			continue;
		spool_save_stats(h->spool, i, text);
		free(text);
	}
}

/**
 * hostrec_drained() - whether every host CPU's stream has ended (after hostrec_stop())
 * @h: the recorder
 *
 * Return: true when nothing more will come.
 */
bool hostrec_drained(const struct hostrec *h)
{
	unsigned int i;

	for (i = 0; h->cpus && i < h->nr_cpus; i++)
		if (h->cpus[i].running && !h->cpus[i].stream.eof && !h->cpus[i].stream.closed)
			return false;
	return true;
}

/* The instance removed, and tracefs unmounted if it was mounted for it. */
static void remove_instance(struct hostrec *h)
{
	if (h->inst) {
		if (tracefs_instance_destroy(h->inst) < 0)
			log_warn("cannot remove tracefs instance %s", h->name);
		tracefs_instance_free(h->inst);
		h->inst = NULL;
	}
	if (h->mounted && tracefs_is_mounted() && umount2(TRACEFS_DIR, 0) < 0)
		log_warn("cannot unmount %s, which was mounted for the host events: %s", TRACEFS_DIR,
			 strerror(errno));
}

static void *remove_thread(void *arg)
{
	remove_instance(arg);
	return NULL;
}

/**
 * hostrec_release() - join the threads, close everything; the instance is
 * removed by a thread of its own, which hostrec_free() waits for
 * @h: the recorder, or NULL
 *
 * What comes next (the trace.dat files) needs nothing of the instance.
 */
void hostrec_release(struct hostrec *h)
{
	unsigned int i;

	if (!h || h->released)
		return;
	respool_join(h);
	hostrec_stop(h);	/* a thread waiting in poll is woken to be joined */
	for (i = 0; h->cpus && i < h->nr_cpus; i++) {
		struct hcpu *c = &h->cpus[i];

		/*
		 * Nobody reads the pipe any more: a thread splicing into a full
		 * one gets EPIPE instead of waiting for ever.
		 */
		if (c->pipe[0] >= 0) {
			close(c->pipe[0]);
			c->pipe[0] = -1;
		}
		if (c->running)
			pthread_join(c->thread, NULL);
		if (c->raw_fd > 0)
			close(c->raw_fd);
		if (c->pipe[0] >= 0)
			close(c->pipe[0]);
		if (c->pipe[1] >= 0)
			close(c->pipe[1]);
		stream_close(&c->stream);
	}
	free(h->cpus);
	free(h->comms.data);
	if (h->marker_fd >= 0)
		close(h->marker_fd);
	if (h->spool >= 0)
		close(h->spool);
	h->cpus = NULL;
	h->comms.data = NULL;
	h->marker_fd = h->spool = -1;
	tracefs_put_tracing_file(h->dir);
	h->dir = NULL;
	h->released = true;
	h->removing = !pthread_create(&h->remover, NULL, remove_thread, h);
}

/**
 * hostrec_free() - release it (hostrec_release()) if not yet, the instance
 * removed, the recorder freed
 * @h: the recorder, or NULL
 */
void hostrec_free(struct hostrec *h)
{
	if (!h)
		return;
	hostrec_release(h);
	if (h->removing)
		pthread_join(h->remover, NULL);
	else
		remove_instance(h);
	free(h);
}
