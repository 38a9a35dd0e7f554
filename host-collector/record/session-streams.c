// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A guest's data streams (session.c's part): one per vCPU port, opened when
 * the setup reaches them or accepted as QEMU connects (--listen).
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "attach.h"
#include "collect.h"
#include "engine.h"
#include "hostrec.h"
#include "kcache.h"
#include "lastboot-file.h"
#include "live.h"
#include "qmp.h"
#include "recording.h"
#include "session.h"
#include "session-int.h"
#include "stream.h"
#include "sync.h"
#include "text.h"
#include "store/spool.h"
#include "vt_conn.h"

static void stream_event(void *owner, struct stream *s, enum stream_ev ev, int err)
{
	struct guest *g = owner;

	switch (ev) {
	case STREAM_EV_ERROR:
		session_fail(g, "cannot write the spool: %s", strerror(-err));
		break;
	case STREAM_EV_LIMIT:
		log_warn("guest %s: reached --max-size (%llu of %llu bytes taken: %llu in pages, "
			 "%llu in malformed pages, %llu in fragments, %llu in metadata): stopping it",
			 g->name, (unsigned long long)g->figures.budget.used,
			 (unsigned long long)g->figures.budget.max,
			 (unsigned long long)g->figures.budget.pages,
			 (unsigned long long)g->figures.budget.bad,
			 (unsigned long long)g->figures.budget.frag,
			 (unsigned long long)g->figures.budget.meta);
		session_stop(g);
		break;
	case STREAM_EV_EOF:
		log_debug("%s: end of stream", s->label);
		sess_check_drained(g);
		break;
	}
}

/* Serve one vCPU's port as the next stream (g->streams has room for every vCPU). */
static int add_stream(struct guest *g, unsigned int cpu, int fd)
{
	struct stream *s = &g->streams[g->nr_streams];
	char label[96];
	size_t stale;
	int ret;

	/* --incoming: what waits in the port is the guest's, from before the takeover. */
	stale = g->mig.incoming ? 0 : attach_discard_stale(fd);
	if (stale)
		log_info("guest %s cpu%u: discarded %zu stale bytes left in the port", g->name, cpu,
			 stale);
	snprintf(label, sizeof(label), "guest %s cpu%u", g->name, cpu);
	ret = stream_init(s, fd, label, cpu, g->agent.subbuf, g->spool_fd);
	if (ret < 0) {
		close(fd);
		return ret;
	}
	s->owner = g;
	s->notify = stream_event;
	s->budget = &g->figures.budget;
	s->live = g->rec->live;
	s->live_trace = g->live_idx;
	s->hold.span = g->rec->o->hold;
	g->nr_streams++;
	return stream_serve(s, sess_eng(g));
}

int sess_open_streams(struct guest *g)
{
	unsigned int cpu;
	int ret;

	g->streams = calloc(g->agent.nr_cpus, sizeof(*g->streams));
	if (!g->streams)
		return -ENOMEM;
	for (cpu = 0; cpu < g->agent.nr_cpus; cpu++) {
		int fd;

		if (g->mig.early_fds && cpu < g->link.nr_cpu_paths && g->mig.early_fds[cpu] >= 0) {
			fd = g->mig.early_fds[cpu];
			g->mig.early_fds[cpu] = -1;
			ret = 0;
		} else {
			ret = attach_open_data(g->name, &g->link, cpu, &fd);
		}
		if (ret == -ENOENT) {
			log_warn("guest %s: vCPU %u has no data port: its events are not recorded",
				 g->name, cpu);
			continue;
		}
		if (ret < 0) {
			session_fail(g, "cannot open the data port of vCPU %u: %s", cpu, strerror(-ret));
			return ret;
		}
		ret = add_stream(g, cpu, fd);
		if (ret < 0)
			return ret;
	}
	return g->nr_streams ? 0 : -ENOENT;
}

/*
 * A connection to a --listen port (attach.c): the first one allowed is the
 * guest's (0, @fd set); a peer not allowed, or any connection once the port
 * is @taken, is refused and logged. Return: 0, -EAGAIN (none waits), -errno.
 */
int sess_take_connection(struct guest *g, int lfd, const char *path, bool taken, int *fd)
{
	char who[160];
	int turns, ret = -EAGAIN, peer = -1;

	for (turns = 0; turns < 16; turns++) {
		ret = taken ? attach_refuse(lfd, &peer, who, sizeof(who)) :
			      attach_accept(lfd, g->rec->o, &peer, who, sizeof(who));
		if (ret == 0 && !taken)
			*fd = peer;
		if (ret != -EPERM && !(taken && ret == 0))
			return ret;
		guest_log(g, GMSG_REFUSED, L_WARN, "guest %s: refused a %s to %s from %s: %s",
			  g->name, taken ? "second connection" : "connection", path, who,
			  taken ? "the port is taken" :
			  "not root, this user, --listen-uid or a member of --listen-group");
		/* Closed once logged: the peer sees its end after the line (test-collect-listen). */
		close(peer);
		ret = -EAGAIN;
	}
	return ret;
}

/* --listen: a data port QEMU connected to; later connections are refused. */
static bool port_acceptable(void *arg, int revents)
{
	struct guest_port *p = arg;
	struct guest *g = p->g;
	int fd, ret;

	(void)revents;
	if (g->state == G_FAILED)
		return false;
	ret = sess_take_connection(g, p->lfd, p->base, p->taken, &fd);
	if (ret == -EAGAIN)
		return true;
	if (ret < 0 && p->taken)
		return false;
	p->taken = true;
	if (ret < 0) {
		session_fail(g, "cannot accept QEMU's connection on %s: %s", p->base, strerror(-ret));
		return false;
	}
	ret = add_stream(g, p->cpu, fd);
	if (ret < 0) {
		session_fail(g, "cannot serve the data port of vCPU %u: %s", p->cpu, strerror(-ret));
		return false;
	}
	if (--g->ctl.nr_waiting == 0 && g->setup.step == ST_STREAMS) {
		engine_timer_cancel(sess_eng(g), &g->ctl.accept_timer);
		spool_save_state(g);
		g->setup.step++;
		sess_setup_next(g);
	}
	return true;
}

void sess_listen_streams(struct guest *g)
{
	unsigned int cpu;

	g->streams = calloc(g->agent.nr_cpus, sizeof(*g->streams));
	g->ctl.ports = calloc(g->agent.nr_cpus, sizeof(*g->ctl.ports));
	if (!g->streams || !g->ctl.ports) {
		session_fail(g, "out of memory");
		return;
	}
	for (cpu = 0; cpu < g->agent.nr_cpus; cpu++) {
		struct guest_port *p = &g->ctl.ports[cpu];

		p->g = g;
		p->cpu = cpu;
		p->lfd = -1;
		if (attach_data_path(&g->link, cpu, p->base, sizeof(p->base)) < 0)
			continue;
		p->lfd = attach_listen(p->base, g->rec->o);
		if (p->lfd < 0) {
			session_fail(g, "cannot listen on %s: %s", p->base, strerror(-p->lfd));
			return;
		}
		p->watch = engine_add_fd(sess_eng(g), p->lfd, POLLIN, port_acceptable, p);
		if (!p->watch) {
			session_fail(g, "out of memory");
			return;
		}
		g->ctl.nr_waiting++;
	}
	engine_timer_arm(sess_eng(g), &g->ctl.accept_timer, ACCEPT_TIMEOUT_NS, 0);
}

