// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * `record`: its output and spool, the engine it runs, the command run beside
 * it, and the timers and signals that end it. Its command line is
 * record-opts.c's, its guests' start and open files record-guests.c's;
 * everything else it does is the engine's, the sessions' and the store's.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attach.h"
#include "engine.h"
#include "hold.h"
#include "hostrec.h"
#include "kcache.h"
#include "live.h"
#include "livestat.h"
#include "qmp.h"
#include "record.h"
#include "record-int.h"
#include "session.h"
#include "stream.h"
#include "setup/libvirt.h"
#include "store/output.h"
#include "store/spool.h"
#include "opts.h"
#include "text.h"
#include "vt_conn.h"

static bool status_line;

/* A trace's id: random, never 0. */
static uint64_t random_id(void)
{
	uint64_t id = 0;

	while (!id && getrandom(&id, sizeof(id), 0) != sizeof(id))
		;
	return id ? id : 1;
}

static void show_status(struct guest **gs, unsigned int nr, double elapsed, double dt)
{
	char line[1024];
	size_t n = 0;
	unsigned int i, j;

	for (i = 0; i < nr && n < sizeof(line) - 128; i++) {
		struct guest *g = gs[i];
		uint64_t bytes = 0, pages = 0, lost = 0, missed = 0;

		for (j = 0; j < g->nr_streams; j++) {
			bytes += g->streams[j].bytes;
			pages += g->streams[j].pages;
			lost += g->streams[j].lost_events;
			missed += g->streams[j].missed_pages;
		}
		n += snprintf(line + n, sizeof(line) - n, "%s%s: ", i ? " | " : "", g->name);
		if (g->state < G_RUNNING || (g->state == G_FAILED && !g->setup.recorded))
			n += snprintf(line + n, sizeof(line) - n, "%s", session_doing(g));
		else
			n += snprintf(line + n, sizeof(line) - n, "%.1f MB/s %" PRIu64 " pages lost %"
				      PRIu64 "%s%s", dt > 0 ? (bytes - g->status_bytes) / dt / 1e6 : 0.0,
				      pages, lost, missed && !lost ? "+" : "",
				      g->state == G_FAILED ? " FAILED" : "");
		g->status_bytes = bytes;
	}
	collect_status("[%6.1fs] %s", elapsed, line);
}

static int write_options(int spool, const struct record_opts *o, uint64_t host_id,
			 const struct host_tsc *tsc)
{
	struct spool_options so = {
		.version = o->file_version, .compress = o->compress && o->file_version >= 7,
		.host_trace_id = host_id, .tsc_khz = tsc->khz, .tsc_mult = tsc->mult,
		.tsc_shift = tsc->shift, .have_perm = true, .hold = o->hold,
	};

	spool_perm_get(&so.perm);	/* for recover */
	snprintf(so.tsc_method, sizeof(so.tsc_method), "%s", tsc->method);
	snprintf(so.cmdline, sizeof(so.cmdline), "%s", o->cmdline);
	return spool_save_options(spool, &so);
}

/* Open (make) the output directory; refuse a link, a spool left behind, or a recording. */
static int open_output(const struct record_opts *o, bool *created)
{
	struct stat st;
	int fd, ret;

	fd = output_open_dir(o->out_dir, true, created);
	if (fd < 0) {
		log_err("-o/--output '%s': the output directory: %s", o->out_dir, fd == -ELOOP ?
			"a symbolic link, refused (give the directory it points to)" : strerror(-fd));
		return fd;
	}
	if (fstatat(fd, ".spool", &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISLNK(st.st_mode))
			log_err("%s/.spool is a symbolic link: refused", o->out_dir);
		else
			log_err("%s/.spool already exists: an earlier run did not finish. Run "
				"`virtio-trace-collect recover %s` to turn it into files, or remove "
				"it", o->out_dir, o->out_dir);
		close(fd);
		return -EEXIST;
	}
	ret = output_previous(fd, o->out_dir, o->force);
	if (ret < 0) {
		close(fd);
		return ret;
	}
	return fd;
}

/* A run that wrote nothing leaves nothing: its spool, and the directory if it made it. */
static void abandon_output(int out_fd, int spool_fd, const char *out_dir, bool created)
{
	char path[4096];
	size_t len = strlen(out_dir);

	if (spool_fd >= 0)
		close(spool_fd);
	if (spool_remove(out_fd, out_dir) < 0 && spool_fd >= 0)
		log_warn("%s/.spool is not removed entirely", out_dir);
	close(out_fd);
	while (len > 1 && out_dir[len - 1] == '/')
		len--;
	if (created && len < sizeof(path)) {
		memcpy(path, out_dir, len);
		path[len] = '\0';
		rmdir(path);
	}
}

/* The command after `--` starts once every guest records (or failed), or this long after the first did. */
#define COMMAND_GRACE_NS	(5 * NSEC_PER_SEC)
#define END_CHECK_NS		(20 * NSEC_PER_MSEC)


static void start_command(struct recording *r)
{
	if (!r->command || r->command_started || r->stopping)
		return;
	r->command_started = true;
	engine_timer_cancel(r->e, &r->command_grace);
	r->child = fork();
	if (r->child == 0) {
		sigprocmask(SIG_UNBLOCK, &r->mask, NULL);
		record_fd_limit_restore();
		execvp(r->command[0], r->command);
		log_err("cannot run %s: %s", r->command[0], strerror(errno));
		_exit(127);
	}
	if (r->child < 0)
		log_err("cannot start %s: %m", r->command[0]);
}

static void command_grace(void *arg)
{
	start_command(arg);
}

static void begin_stop(struct recording *r);

/*
 * Every guest settled: what their setups freed (the metadata bundles, the
 * kallsyms) stays in glibc's heap unless given back, and a recording of quiet
 * guests (a daemon's, one per guest) would keep it for its whole life.
 */
static void settle_memory(struct recording *r)
{
	unsigned int i;

	if (r->trimmed)
		return;
	r->trimmed = true;
	malloc_trim(0);
	/* Their control connections' receive buffers, written through by the bundles, too. */
	for (i = 0; i < r->nr; i++)
		if (r->gs[i]->ctl.conn)
			vt_conn_rest(r->gs[i]->ctl.conn);
	malloc_trim(0);
}

static void check_end(struct recording *r)
{
	unsigned int i, settled = 0, finished = 0, recording = 0;

	for (i = 0; i < r->nr; i++) {
		finished += session_finished(r->gs[i]);
		/*
		 * Settled: recording with its clock synced (a workload would disturb
		 * the burst); or, --incoming, still waiting for its guest, which the
		 * command may be what migrates.
		 */
		recording += (r->gs[i]->state == G_RUNNING && r->gs[i]->setup.synced) ||
			     (r->gs[i]->mig.incoming && !r->gs[i]->mig.seen.resumed &&
			      !session_finished(r->gs[i]));
	}
	settled = finished + recording;
	if (!r->stopping && recording && r->o->duration && !r->duration_armed) {
		/* --wait: the duration counts from the first guest's start. */
		r->duration_armed = true;
		engine_timer_arm(r->e, &r->duration, (uint64_t)(r->o->duration * NSEC_PER_SEC), 0);
	}
	if (!r->stopping) {
		if (recording && r->command && !r->command_started && !r->command_grace.armed)
			engine_timer_arm(r->e, &r->command_grace, COMMAND_GRACE_NS, 0);
		if (settled == r->nr && r->nr) {
			start_command(r);
			settle_memory(r);
		}
		if (r->nr && finished == r->nr) {
			/* The host recorder is stopped and drained as at any stop. */
			log_info("no guest is recording any more");
			begin_stop(r);
		}
		return;
	}
	if (r->host && hostrec_drained(r->host))
		hostrec_respool_begin(r->host);	/* the end's metadata while the guests finish */
	if (finished == r->nr && (!r->host || hostrec_drained(r->host)))
		engine_quit(r->e);
}

static void rec_changed(struct recording *r)
{
	check_end(r);
}

static void end_check(void *arg)
{
	check_end(arg);
}

static void deadline(void *arg)
{
	struct recording *r = arg;
	unsigned int i;

	for (i = 0; i < r->nr; i++)
		if (!session_finished(r->gs[i]))
			session_fail(r->gs[i], "not finished within --stop-timeout (%g s)",
				     r->o->stop_timeout);
	if (r->host && !hostrec_drained(r->host))
		log_warn("the host events did not drain within --stop-timeout: keeping what arrived");
	engine_quit(r->e);
}

/* Stop: every agent drains; a second signal keeps only what is on disk. */
static void begin_stop(struct recording *r)
{
	struct engine *e = r->e;
	unsigned int i;

	if (r->stopping)
		return;
	r->stopping = true;
	log_info("stopping%s", r->signals ? " (press Ctrl-C again to write what is on disk now)" : "");
	engine_timer_cancel(e, &r->duration);
	engine_timer_cancel(e, &r->command_grace);
	for (i = 0; i < r->nr; i++)
		session_stop(r->gs[i]);
	if (r->host)
		hostrec_stop(r->host);
	engine_timer_arm(e, &r->deadline,
			 (uint64_t)(r->o->stop_timeout * NSEC_PER_SEC) + NSEC_PER_SEC / 2, 0);
	engine_timer_arm(e, &r->end_check, END_CHECK_NS, END_CHECK_NS);
	check_end(r);
}

static void duration_over(void *arg)
{
	begin_stop(arg);
}

static void status_tick(void *arg)
{
	struct recording *r = arg;
	uint64_t now = engine_now_ns();

	show_status(r->gs, r->nr, (now - r->t0) / 1e9, (now - r->last_status) / 1e9);
	r->last_status = now;
}

static void on_signal(void *arg, int signo)
{
	struct recording *r = arg;
	unsigned int i;
	int st;

	if (signo == SIGCHLD) {
		if (r->child > 0 && waitpid(r->child, &st, WNOHANG) == r->child) {
			log_info("%s exited with status %d: stopping", r->command[0],
				 WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
			r->child = 0;
			begin_stop(r);
		}
		return;
	}
	if (++r->signals == 1) {
		begin_stop(r);
		return;
	}
	for (i = 0; i < r->nr; i++)
		if (!session_finished(r->gs[i]))
			session_fail(r->gs[i], "interrupted: keeping what is on disk");
	engine_quit(r->e);
}

static int by_name(const void *a, const void *b)
{
	const struct guest *x = *(const struct guest *const *)a, *y = *(const struct guest *const *)b;

	return strcmp(x->name, y->name);
}

/*
 * --live: the view, its traces in the order of the trace-cmd report command
 * the summary suggests (the host, then the guests by name), so that equal
 * timestamps come out as trace-cmd orders them.
 */
static int open_live(struct recording *r, struct guest **gs, unsigned int nr)
{
	struct guest **sorted = calloc(nr ? nr : 1, sizeof(*sorted));
	char file[COLLECT_NAME_MAX + 16];
	unsigned int i;
	int idx;

	r->live = sorted ? live_new(r->o->live_ms, &r->tsc, stdout) : NULL;
	if (!r->live) {
		free(sorted);
		return -ENOMEM;
	}
	if (r->o->host_events && live_add_trace(r->live, "host.dat", true) < 0)
		goto err;
	if (r->o->live_stat && live_set_stat(r->live, &livestat_ops, r->o->live_lines) < 0)
		goto err;
	memcpy(sorted, gs, nr * sizeof(*sorted));
	qsort(sorted, nr, sizeof(*sorted), by_name);
	for (i = 0; i < nr; i++) {
		snprintf(file, sizeof(file), "guest-%s.dat", sorted[i]->name);
		idx = live_add_trace(r->live, file, false);
		if (idx < 0)
			goto err;
		sorted[i]->live_idx = idx;
	}
	free(sorted);
	return 0;
err:
	free(sorted);
	live_end(r->live);
	r->live = NULL;
	errno = ENOMEM;
	return -ENOMEM;
}

/* io_uring's queue: 1024 entries, more for many guests (at most io_uring's 32768). */
static unsigned int ring_entries(unsigned int nr)
{
	unsigned int want = 4 * COLLECT_MAX_CPUS, need = nr * 8;

	while (want < need && want < 32768)
		want *= 2;
	return want;
}

/*
 * The kallsyms cache (kcache.c): --kallsyms-cache DIR, made when missing;
 * else the package's directory, only when it exists and is this user's (a
 * user who is not root has none, silently). A directory that others could
 * write is not used. -1: no cache.
 */
static int open_kcache(const struct record_opts *o)
{
	const char *dir = o->kcache_dir ? o->kcache_dir : KCACHEDIR;
	int fd;

	if (o->no_kcache)
		return -1;
	fd = kcache_open(dir, o->kcache_dir != NULL);
	/* The default one is only used when it is there for this user: no warning for another. */
	if (fd < 0 && !o->kcache_dir)
		log_debug("no kallsyms cache: %s: %s", dir,
			  fd == -EPERM ? "not this user's, or others may write it" : strerror(-fd));
	else if (fd == -EPERM)
		log_warn("the kallsyms cache %s is not used: it is not this user's, or others may "
			 "write it", dir);
	else if (fd < 0)
		log_warn("the kallsyms cache %s is not used: %s", dir, strerror(-fd));
	else
		log_debug("kallsyms cache: %s", dir);
	return fd < 0 ? -1 : fd;
}

/* The command line as given, for the spool's options (recover and the manifest show it). */
static void copy_cmdline(struct record_opts *o, int argc, char **argv)
{
	size_t n = 0;
	int i;

	for (i = 0; i < argc && n < sizeof(o->cmdline) - 1; i++)
		n += snprintf(o->cmdline + n, sizeof(o->cmdline) - n, "%s%s", i ? " " : "", argv[i]);
}

/*
 * Domains first: a wrong name or a domain without ports fails before
 * anything is made; with --wait, one not running or without its ports yet
 * is looked for again while the others record (record_start_guest()).
 */
static int resolve_domains(struct guest **gs, unsigned int nr, const struct record_opts *o)
{
	unsigned int i;
	int ret;

	for (i = 0; i < nr; i++) {
		gs[i]->link.wait = o->wait;
		if (!gs[i]->link.domain[0])
			continue;
		ret = libvirt_guest_resolve(&gs[i]->link, gs[i]->name, gs[i]->link.connect_uri);
		if (ret < 0 && ret != -EAGAIN)
			return ret;
		gs[i]->wait.link_ready = ret == 0;
	}
	return 0;
}

/*
 * The output directory and its spool, private unless --mode shares them and
 * the user's under sudo (store/spool.c), the options written in it.
 * Return: 0, or -errno after a message, nothing left behind.
 */
static int open_spool(struct recording *r)
{
	const struct record_opts *o = r->o;
	struct spool_perm perm;
	int ret;

	spool_perm_default(&perm);
	perm.file = o->file_mode;
	perm.dir = spool_perm_dir_mode(o->file_mode);
	spool_perm_set(&perm);
	r->spool_fd = -1;
	r->out_fd = open_output(o, &r->out_created);
	if (r->out_fd < 0)
		return r->out_fd;
	ret = spool_prepare(r->out_fd, &r->spool_fd);
	if (ret < 0) {
		log_err("cannot create %s/.spool: %s", o->out_dir, strerror(-ret));
		abandon_output(r->out_fd, -1, o->out_dir, r->out_created);
		return ret;
	}
	host_tsc_rate(&r->tsc);
	ret = write_options(r->spool_fd, o, random_id(), &r->tsc);
	if (ret < 0) {
		log_err("cannot write the spool: %s", strerror(-ret));
		abandon_output(r->out_fd, r->spool_fd, o->out_dir, r->out_created);
		return ret;
	}
	return 0;
}

/*
 * The engine with its signals and timers, the kallsyms cache, compression
 * while streaming, the live view and the host recorder.
 * Return: 0 (@status EXIT_PARTIAL when the host events are not recorded), or
 * -1 after a message, the output abandoned.
 */
static int start_engine(struct recording *r, int *status)
{
	const struct record_opts *o = r->o;

	r->changed = rec_changed;
	sigemptyset(&r->mask);
	sigaddset(&r->mask, SIGINT);
	sigaddset(&r->mask, SIGTERM);
	sigaddset(&r->mask, SIGCHLD);
	signal(SIGPIPE, SIG_IGN);
	/* Room for a poll on every port of a dense host (completions beyond it wait, never lost). */
	r->e = engine_new(ring_entries(r->nr));
	if (!r->e || engine_add_signals(r->e, &r->mask, on_signal, r) < 0) {
		log_err("cannot set up io_uring: %m");
		goto err;
	}
	r->kcache_fd = open_kcache(o);
	/* zstd output: compress on an idle core while the pages stream in (stream-compress.c). */
	if (o->compress && o->file_version != 6 && !o->compress_at_end && compress_start(0) < 0)
		log_debug("no compression while streaming: the finish compresses everything");
	engine_timer_init(&r->duration, duration_over, r);
	engine_timer_init(&r->status, status_tick, r);
	engine_timer_init(&r->deadline, deadline, r);
	engine_timer_init(&r->end_check, end_check, r);
	engine_timer_init(&r->command_grace, command_grace, r);
	if (o->live_ms && open_live(r, r->gs, r->nr) < 0) {
		log_err("cannot start the live view: %m");
		goto err;
	}
	if (o->host_events) {
		r->host = hostrec_start(o, r->e, r->spool_fd, r->live);
		if (r->host)
			live_set_dir(r->live, 0, hostrec_spool(r->host));
		if (!r->host) {
			*status = EXIT_PARTIAL;
			log_err("host events are not recorded");
		}
	}
	return 0;
err:
	abandon_output(r->out_fd, r->spool_fd, o->out_dir, r->out_created);
	return -1;
}

/* Every guest sets itself up from here on, each at its own pace; those past @fit fail at once. */
static void start_guests(struct recording *r, unsigned int fit)
{
	const struct record_opts *o = r->o;
	char dirname[COLLECT_NAME_MAX + 8];
	unsigned int i;
	int ret;

	for (i = 0; i < r->nr; i++) {
		struct guest *g = r->gs[i];

		g->rec = r;
		g->trace_id = random_id();
		g->figures.budget.max = o->max_size;
		snprintf(dirname, sizeof(dirname), "guest-%s", g->name);
		ret = spool_guest_dir(r->spool_fd, dirname, &g->spool_fd);
		if (ret < 0) {
			session_fail(g, "cannot create .spool/%s: %s", dirname, strerror(-ret));
			continue;
		}
		snprintf(g->spool, sizeof(g->spool), "%s/.spool/%s", o->out_dir, dirname);
		if (r->live)
			live_set_dir(r->live, g->live_idx, g->spool_fd);
		if (i >= fit) {
			/* Named in the manifest (its state file), then its descriptor goes too. */
			session_fail(g, "not recorded: no file descriptor is left for it (the open-file "
				     "limit; see the warning above)");
			close(g->spool_fd);
			g->spool_fd = -1;
			continue;
		}
		if (o->wait)
			g->wait.until = o->wait_s ? engine_now_ns() + (uint64_t)(o->wait_s * NSEC_PER_SEC) :
				UINT64_MAX;
		engine_timer_init(&g->wait.timer, record_wait_tick, g);
		record_start_guest(g);
	}
}

/* The recording's timers armed, the loop run to its end, the live view and the command ended. */
static void run(struct recording *r)
{
	const struct record_opts *o = r->o;
	int ret;

	r->t0 = r->last_status = engine_now_ns();
	if (o->duration && !o->wait) {
		r->duration_armed = true;
		engine_timer_arm(r->e, &r->duration, (uint64_t)(o->duration * NSEC_PER_SEC), 0);
	}
	if (status_line)
		engine_timer_arm(r->e, &r->status, NSEC_PER_SEC, NSEC_PER_SEC);
	if (!r->nr)
		start_command(r);
	check_end(r);
	if (r->live && live_start(r->live) < 0) {
		log_warn("the live view cannot start: the recording goes on without it");
		live_end(r->live);
		r->live = NULL;
	}
	ret = engine_loop(r->e);
	if (ret < 0)
		log_err("the event loop failed: %s", strerror(-ret));
	/* Everything has arrived: the view shows the rest while the spool is still open. */
	live_end(r->live);
	r->live = NULL;

	collect_status_clear();
	if (r->child > 0) {
		kill(r->child, SIGTERM);
		waitpid(r->child, NULL, 0);
	}
}

/* What the guests did, for the exit status and what is kept. */
struct tally {
	unsigned int recorded, refused, accepted, migrated;
};

/* The guests' state saved, the engine and everything the guests held released. */
static void release_all(struct recording *r, struct tally *t, int *status)
{
	unsigned int i, j;

	if (r->host)
		hostrec_save_stats(r->host);
	for (i = 0; i < r->nr; i++) {
		struct guest *g = r->gs[i];

		t->recorded += g->setup.recorded;
		t->refused += g->setup.refused;
		t->accepted += g->setup.accepted;
		t->migrated += g->mig.out || g->mig.seen.resumed;
		if (g->state == G_FAILED)
			*status = EXIT_PARTIAL;
		for (j = 0; j < g->nr_streams; j++)
			stream_finish(&g->streams[j]);
		if (g->spool[0]) {
			spool_save_state(g);
			spool_save_migration(g);
		}
		/* Its QMP watch is the engine's: removed before the engine is freed. */
		qmp_detach(&g->qemu);
	}
	engine_free(r->e);
	hostrec_release(r->host);	/* its instance goes while the files are written */
	for (i = 0; i < r->nr; i++) {
		struct guest *g = r->gs[i];

		for (j = 0; j < g->nr_streams; j++) {
			close(g->streams[j].fd);
			stream_close(&g->streams[j]);
		}
		free(g->streams);
		session_release(g);
		detach_guest(&g->link, &g->ctl.rfd, &g->ctl.wfd, &g->ctl.lfd);
		if (g->spool_fd >= 0)
			close(g->spool_fd);
		g->spool_fd = -1;
	}
	compress_stop();
	if (r->kcache_fd >= 0)
		close(r->kcache_fd);
}

/* The files made of the spool, or nothing kept when no guest recorded. Return: the exit status. */
static int finish(struct recording *r, const struct tally *t, int status)
{
	const struct record_opts *o = r->o;
	int ret;

	if (r->nr && !t->recorded && t->refused && !t->accepted) {
		/* No guest took the command line (said above): a usage error, nothing kept. */
		log_err("no guest takes the events, tracer or clock asked for: nothing is recorded");
		abandon_output(r->out_fd, r->spool_fd, o->out_dir, r->out_created);
		return EXIT_USAGE;
	}
	if (r->nr && !t->recorded) {
		/* Nothing to keep: no manifest, no spool to block DIR (host events included). */
		log_err("no guest could be set up: nothing is written in %s", o->out_dir);
		abandon_output(r->out_fd, r->spool_fd, o->out_dir, r->out_created);
		return EXIT_FAIL;
	}
	close(r->spool_fd);
	/* A guest that migrated out or in: `join` makes one trace of the two spools. */
	if (t->migrated && !o->keep_spool && !collect_quiet)
		log_info("%s/.spool is kept for `virtio-trace-collect join` (a guest migrated)",
			 o->out_dir);
	ret = output_finalise(r->out_fd, o->out_dir, o->keep_spool || t->migrated, o->fsync, false);
	if (ret == EXIT_OK && status != EXIT_OK)
		ret = status;
	/* What was recorded and what to run next, from the manifest just written. */
	if (!collect_quiet && manifest_summary(r->out_fd, o->out_dir, ret, stderr) < 0)
		log_info("wrote %s (exit status %d)", o->out_dir, ret);
	close(r->out_fd);
	return ret;
}

/**
 * record_main() - the `record` subcommand
 * @argc: arguments from "record" on
 * @argv: their values
 *
 * Return: the exit status (collect.h).
 */
int record_main(int argc, char **argv)
{
	static struct guest *gs[COLLECT_MAX_GUESTS];
	static struct recording r;
	struct record_opts o = {
		.out_dir = "virtio-trace-out", .file_version = 7, .compress = true,
		.sync_probes = 100, .tracefs = "/sys/kernel/tracing", .stop_timeout = 60, .trig_fd = -1,
		.file_mode = 0600,
	};
	struct tally t = { 0 };
	unsigned int nr = 0, fit;
	int ret, status = EXIT_OK;

	copy_cmdline(&o, argc, argv);
	ret = record_parse(argc, argv, &o, gs, &nr);
	if (ret < 0) {
		if (ret == -EINVAL)
			opt_try_help();	/* opt_parse()'s own refusals have it */
		return EXIT_USAGE;
	}
	/* The live view's lines and a status line redrawn in place would share the terminal. */
	status_line = !collect_quiet && !o.live_ms && isatty(STDERR_FILENO);
	/* Host events and processes that do not exist stop here, before anything is made. */
	if (o.host_events && hostrec_check(&o) < 0)
		return EXIT_USAGE;
	if (o.all && record_add_all(&o, gs, &nr) < 0)
		return EXIT_FAIL;
	if (resolve_domains(gs, nr, &o) < 0)
		return EXIT_FAIL;
	r.o = &o;
	r.gs = gs;
	r.nr = nr;
	r.command = o.command;
	fit = record_fd_limit(gs, nr, &o);
	if (open_spool(&r) < 0 || start_engine(&r, &status) < 0)
		return EXIT_FAIL;
	start_guests(&r, fit);
	run(&r);
	release_all(&r, &t, &status);
	ret = finish(&r, &t, status);
	hostrec_free(r.host);
	return ret;
}
