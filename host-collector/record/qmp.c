// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Following a guest's QMP socket (--qmp PATH): `stop`/`cont` moves a TCG
 * guest's TSC offset (the guest's clock does not run while it is stopped),
 * so on RESUME the guest is synced again at once and the new epoch starts at
 * the moment RESUME arrived. A RESET (system_reset, or the guest rebooting)
 * ends the guest's recording: its ring buffers and its agent's session are
 * gone, and the problem says so at once. MIGRATION events follow a live
 * migration (setup, active, completed, failed...): QEMU sends them only with
 * the migration capability "events", which is turned on when following
 * starts; query-migrate is asked then (a migration may be under way), at
 * every STOP (a switchover, were the events off) and when one completed
 * (QEMU's downtime and total time). GUEST_PANICKED (a pvpanic device, or
 * Hyper-V's crash MSRs: the guest's kernel says it panicked) is logged and
 * handed to the owner, which passes it on (--trigger-fd: the daemon seals
 * a snapshot). QMP is JSON, one message per
 * line; what it says is parsed with the bounded reader, though QEMU is the
 * host's own process.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "collect.h"
#include "engine.h"
#include "json.h"
#include "qmp.h"
#include "text.h"
#include "setup/link.h"
#include "setup/qmp-reply.h"
#include "store/spool.h"
#include "vt_tsync.h"

#define QMP_LINE_MAX	(64u << 10)

struct qmp {
	struct qmp_guest v;		/* the part of the guest it follows */
	uint64_t tsc_khz;
	int fd;
	struct engine_fd *watch;
	char buf[QMP_LINE_MAX];
	size_t have;
};

/*
 * The host TSC when QEMU emitted an event. QMP stamps events with the wall
 * clock in microseconds; reading the event can come much later (the
 * collector may be in a probe burst), so the stamp, not the read, says when.
 */
static uint64_t event_tsc(const struct json_value *root, uint64_t tsc_khz)
{
	const struct json_value *ts = json_get(root, "timestamp");
	uint64_t now_tsc = vt_tsc_read(), sec, usec;
	struct timespec now;
	int64_t ago_us;

	if (!ts || json_u64(json_get(ts, "seconds"), &sec) < 0 ||
	    json_u64(json_get(ts, "microseconds"), &usec) < 0 || !tsc_khz)
		return now_tsc;
	clock_gettime(CLOCK_REALTIME, &now);
	ago_us = (int64_t)(now.tv_sec - sec) * 1000000 + now.tv_nsec / 1000 - (int64_t)usec;
	if (ago_us < 0 || ago_us > 60 * 1000000LL)
		return now_tsc;		/* clocks that disagree: trust the read */
	return now_tsc - (uint64_t)ago_us * tsc_khz / 1000;
}

/*
 * The answer to query-cpus-fast: each vCPU's host thread, for the GUEST
 * option of host.dat. QEMU's word outranks thread names (found only with
 * -name ...,debug-threads=on).
 */
static void got_cpus(struct qmp *q, const char *line, size_t len)
{
	uint32_t tids[COLLECT_MAX_CPUS] = { 0 };
	unsigned int nr = 0;

	if (qmp_parse_cpus_fast(line, len, tids, COLLECT_MAX_CPUS, &nr) < 0 || !nr) {
		log_warn("guest %s: QMP's query-cpus-fast gave no vCPU threads", q->v.name);
		return;
	}
	memcpy(q->v.link->vcpu_tids, tids, sizeof(tids));
	q->v.link->nr_vcpu_tids = nr;
	log_debug("guest %s: %u vCPU threads from QMP", q->v.name, nr);
	q->v.event(q->v.owner, QMP_EV_CPUS, NULL);	/* the owner hands them on (host recorder, live view) */
}

/* A migration's status, as QEMU words it: a short word of [a-z-]. */
static void got_status(struct qmp *q, const struct json_value *st, const char *how)
{
	const char *s = json_string(st);
	char status[sizeof(q->v.seen->status)];

	if (!s)
		return;
	collect_sanitize(status, sizeof(status), s, false);
	if (!status[0] || !strcmp(status, q->v.seen->status))
		return;
	log_debug("guest %s: migration %s (%s)", q->v.name, status, how);
	q->v.event(q->v.owner, QMP_EV_MIGRATION, status);
}

/*
 * query-migrate's "completed" for the migration that brought the guest in: a
 * QEMU started with -incoming reports that migration's status (QEMU's
 * fill_destination_migration_info()), "completed" without a source's
 * figures, where a source's "completed" always has its total-time. A guest
 * that arrived is no guest that left: a plain record of it (the daemon's
 * child after a snapshot) goes on; --incoming's takes the word, which it
 * only logs.
 */
static bool came_in(const struct qmp *q, const struct json_value *ret)
{
	const char *s = json_string(json_get(ret, "status"));

	return !*q->v.incoming && s && !strcmp(s, "completed") && !json_get(ret, "total-time");
}

/*
 * query-migrate's answer: its status (a migration that began before the
 * collector followed QMP), and once completed QEMU's own figures.
 */
static void got_migrate(struct qmp *q, const char *line, size_t len)
{
	const struct json_value *ret;
	struct json_doc *doc;
	uint64_t v;

	doc = json_parse(line, len, NULL, NULL);
	if (!doc)
		return;
	ret = json_get(json_root(doc), "return");
	if (ret && json_u64(json_get(ret, "downtime"), &v) == 0)
		q->v.seen->downtime_ms = v;
	if (ret && json_u64(json_get(ret, "total-time"), &v) == 0)
		q->v.seen->total_ms = v;
	if (ret && came_in(q, ret))
		log_debug("guest %s: its QEMU took it in by a migration that completed", q->v.name);
	else if (ret && json_get(ret, "status"))
		got_status(q, json_get(ret, "status"), "query-migrate");
	if (ret && q->v.seen->downtime_ms)
		q->v.event(q->v.owner, QMP_EV_MIGRATION_INFO, NULL);
	json_free(doc);
}

/*
 * GUEST_PANICKED: QEMU's word that the guest's kernel panicked, with the
 * action QEMU took (-action panic=...: pause, the default, poweroff, or
 * run). The action goes on only as one of those words: the owner writes it
 * into a line of its own.
 */
static void got_panic(struct qmp *q, const struct json_value *root)
{
	static const char *const actions[] = { "pause", "poweroff", "run" };
	const char *said = json_string(json_get(json_get(root, "data"), "action"));
	const char *action = "unknown";
	unsigned int i;

	for (i = 0; said && i < sizeof(actions) / sizeof(actions[0]); i++)
		if (!strcmp(said, actions[i]))
			action = actions[i];
	log_warn("guest %s: QEMU says it panicked (QMP GUEST_PANICKED, action %s)", q->v.name, action);
	q->v.event(q->v.owner, QMP_EV_PANIC, action);
}

static void qmp_line(struct qmp *q, const char *line, size_t len)
{
	const struct json_value *ev;
	struct json_doc *doc;
	const char *name;

	if (memmem(line, len, "\"vt-cpus\"", 9)) {
		got_cpus(q, line, len);
		return;
	}
	if (memmem(line, len, "\"vt-uuid\"", 9)) {
		/* QEMU's -uuid: an identity of the VM its guest cannot choose (kcache.c). */
		if (qmp_parse_uuid(line, len, q->v.qemu->uuid, sizeof(q->v.qemu->uuid)) < 0)
			q->v.qemu->uuid[0] = '\0';
		else
			log_debug("guest %s: QMP says its UUID is %s", q->v.name, q->v.qemu->uuid);
		return;
	}
	if (memmem(line, len, "\"vt-migrate\"", 12)) {
		got_migrate(q, line, len);
		return;
	}
	doc = json_parse(line, len, NULL, NULL);
	if (!doc)
		return;
	ev = json_get(json_root(doc), "event");
	name = ev ? json_string(ev) : NULL;
	if (name && !strcmp(name, "MIGRATION")) {
		const struct json_value *st = json_get(json_get(json_root(doc), "data"), "status");
		const char *s = json_string(st);
		uint64_t tsc = event_tsc(json_root(doc), q->tsc_khz);

		if (s && !strcmp(s, "active") && !q->v.seen->active_tsc)
			q->v.seen->active_tsc = tsc;
		else if (s && !strcmp(s, "completed"))
			q->v.seen->completed_tsc = tsc;
		got_status(q, st, "QMP event");
	} else if (name && !strcmp(name, "RESUME")) {
		q->v.qemu->resume_tsc = event_tsc(json_root(doc), q->tsc_khz);
		if (*q->v.incoming && !q->v.seen->resume_tsc)
			q->v.seen->resume_tsc = q->v.qemu->resume_tsc;
		if (*q->v.incoming && !q->v.seen->resumed)
			log_info("guest %s: QEMU started it here (an incoming migration)", q->v.name);
		else
			log_info("guest %s: QEMU resumed it: syncing its clock again", q->v.name);
		q->v.event(q->v.owner, QMP_EV_RESUME, NULL);
	} else if (name && !strcmp(name, "STOP")) {
		q->v.qemu->stop_tsc = event_tsc(json_root(doc), q->tsc_khz);
		/* During a migration, the stop before the switchover: the blackout starts here. */
		if (*q->v.migrating)
			q->v.seen->stop_tsc = q->v.qemu->stop_tsc;
		log_info("guest %s: QEMU stopped it%s", q->v.name,
			 *q->v.migrating ? " (migration switchover)" : "");
		/* A stop may be a migration's switchover even when QEMU sends no MIGRATION events. */
		qmp_query_migrate(q);
	} else if (name && !strcmp(name, "RESET")) {
		/* The guest reboots: its ring buffers and its agent's session are gone. */
		const char *why = json_string(json_get(json_get(json_root(doc), "data"), "reason"));
		char reason[64];

		collect_sanitize(reason, sizeof(reason), why ? why : "", false);
		q->v.qemu->reset_tsc = event_tsc(json_root(doc), q->tsc_khz);
		q->v.event(q->v.owner, QMP_EV_RESET, reason[0] ? reason : "unknown");
	} else if (name && !strcmp(name, "GUEST_PANICKED")) {
		got_panic(q, json_root(doc));
	}
	json_free(doc);
}

static bool qmp_readable(void *arg, int revents)
{
	struct qmp *q = arg;

	for (;;) {
		ssize_t n = read(q->fd, q->buf + q->have, sizeof(q->buf) - q->have);
		char *nl;

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return true;
		if (n <= 0) {
			log_warn("guest %s: the QMP socket closed", q->v.name);
			q->watch = NULL;	/* the engine frees it: qmp_detach() must not touch it */
			return false;
		}
		q->have += n;
		while ((nl = memchr(q->buf, '\n', q->have))) {
			size_t len = nl - q->buf + 1;

			qmp_line(q, q->buf, len);
			memmove(q->buf, q->buf + len, q->have - len);
			q->have -= len;
		}
		if (q->have == sizeof(q->buf))
			q->have = 0;	/* a line longer than any QMP event: drop it */
	}
}

/**
 * qmp_attach() - follow a guest's QMP socket for STOP and RESUME, and ask it
 * for the vCPU threads and the VM's UUID
 * @v: the part of the guest QMP reads and writes, with @v->link->qmp_path
 *	set; copied (what it points to must outlive the connection)
 * @e: the engine that will watch the socket
 * @tsc_khz: the host TSC rate, to place QMP's event stamps on the TSC
 *
 * The connection is @v->qemu->qmp; @v->event is told of what QMP said (the
 * guest's owner acts on it).
 *
 * Return: 0 or -errno (the recording goes on without it).
 */
int qmp_attach(const struct qmp_guest *v, struct engine *e, uint64_t tsc_khz)
{
	static const char hello[] = "{\"execute\":\"qmp_capabilities\"}\n"
				    "{\"execute\":\"query-cpus-fast\",\"id\":\"vt-cpus\"}\n"
				    "{\"execute\":\"query-uuid\",\"id\":\"vt-uuid\"}\n"
				    "{\"execute\":\"migrate-set-capabilities\",\"arguments\":"
				    "{\"capabilities\":[{\"capability\":\"events\",\"state\":true}]},"
				    "\"id\":\"vt-events\"}\n"
				    "{\"execute\":\"query-migrate\",\"id\":\"vt-migrate\"}\n";
	struct guest_link *l = v->link;
	char why[800];
	struct qmp *q;
	int ret;

	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->v = *v;
	q->tsc_khz = tsc_khz;
	/*
	 * Never through a link; for a QEMU `record --all` found, QEMU itself must
	 * listen there, whatever its command line named (setup/qemuproc.c).
	 */
	ret = qemuproc_connect(l->qmp_path, &l->owner, true, &q->fd, why, sizeof(why));
	if (ret < 0) {
		q->fd = -1;
		free(q);
		log_warn("guest %s: cannot follow QMP: %s", v->name, why);
		return ret;
	}
	/* The greeting is answered with capabilities; events follow. */
	if (write(q->fd, hello, sizeof(hello) - 1) != (ssize_t)sizeof(hello) - 1) {
		ret = -EIO;
		goto err;
	}
	q->watch = engine_add_fd(e, q->fd, POLLIN, qmp_readable, q);
	if (!q->watch) {
		ret = -ENOMEM;
		goto err;
	}
	v->qemu->qmp = q;
	return 0;
err:
	if (q->fd >= 0)
		close(q->fd);
	free(q);
	log_warn("guest %s: cannot follow QMP at %s: %s", v->name, l->qmp_path, strerror(-ret));
	return ret;
}

/**
 * qmp_query_migrate() - ask QEMU how the migration stands (answered as
 * QMP_EV_MIGRATION and QMP_EV_MIGRATION_INFO)
 * @q: the guest's QMP connection (its qemu.qmp), NULL if it follows none
 *
 * Return: 0 or -errno (the answer then does not come).
 */
int qmp_query_migrate(struct qmp *q)
{
	static const char req[] = "{\"execute\":\"query-migrate\",\"id\":\"vt-migrate\"}\n";

	if (!q)
		return -ENOTCONN;
	if (write(q->fd, req, sizeof(req) - 1) != (ssize_t)sizeof(req) - 1)
		return -EIO;
	return 0;
}

/**
 * qmp_detach() - close a guest's QMP connection
 * @qemu: what the guest's QEMU said, its connection in @qemu->qmp
 */
void qmp_detach(struct guest_qemu *qemu)
{
	struct qmp *q = qemu->qmp;

	if (!q)
		return;
	engine_fd_remove(q->watch);
	close(q->fd);
	free(q);
	qemu->qmp = NULL;
}
