// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A guest that migrated out (session.c's part): QMP's events, the source
 * side's last bytes and its clock.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
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
#include "trigger-guest.h"
#include "store/spool.h"
#include "vt_conn.h"
#include "setup/qemuproc.h"

/* After QMP RESET, until QEMU's TSC writes (a few ms) and the ports' last bytes are in. */
#define RESET_GRACE_NS		(500 * NSEC_PER_MSEC)
/* After QEMU's end, until what its ports held (FIFOs keep it: the collector holds both ends) is in. */
#define END_GRACE_NS		(500 * NSEC_PER_MSEC)
/*
 * A guest that migrated out: its ports are read until nothing came for this
 * long (the source QEMU is stopped; what it still delivers is in its
 * chardevs already).
 */
#define MIGRATED_QUIET_NS	(500 * NSEC_PER_MSEC)

/*
 * This host's wall clock and TSC read together, and its boot: `join` relates
 * two hosts' TSCs through their wall clocks (PTP, chrony) when the two
 * recordings come from two machines.
 */
void sess_mig_clock(struct guest *g)
{
	struct timespec ts;
	FILE *f;

	if (g->mig.seen.rt_tsc)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	g->mig.seen.rt_tsc = sync_host_tsc();
	g->mig.seen.rt_ns = (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
	f = fopen("/proc/sys/kernel/random/boot_id", "re");
	if (f) {
		if (!fgets(g->mig.seen.boot_id, sizeof(g->mig.seen.boot_id), f))
			g->mig.seen.boot_id[0] = '\0';
		g->mig.seen.boot_id[strcspn(g->mig.seen.boot_id, "\n")] = '\0';
		fclose(f);
	}
}

static uint64_t streams_bytes(const struct guest *g)
{
	uint64_t n = 0;
	unsigned int i;

	for (i = 0; i < g->nr_streams; i++)
		n += g->streams[i].bytes;
	return n;
}

/* Drained: the guest's files end here, marked "migrated out"; no STOP, no BYE. */
void sess_migrated_done(struct guest *g)
{
	unsigned int i;

	engine_timer_cancel(sess_eng(g), &g->stop.drain_timer);
	engine_timer_cancel(sess_eng(g), &g->stop.timer);
	g->mig.seen.out_tsc = sync_host_tsc();
	if (guest_set_state(g, G_DONE, "migrated out: drained") < 0)
		return;
	sess_msgs_summary(g);
	spool_save_state(g);
	spool_save_migration(g);
	for (i = 0; i < g->nr_streams; i++)
		log_info("%s: %llu pages to the switchover, the last stamped %llu", g->streams[i].label,
			 (unsigned long long)g->streams[i].pages,
			 (unsigned long long)g->streams[i].last_ts);
	log_info("guest %s: migrated out; its files end at the switchover (join them with the "
		 "destination's recording: virtio-trace-collect join)", g->name);
	sess_changed(g);
}

/* Nothing more came for MIGRATED_QUIET_NS: every byte the ports still had is in. */
void sess_migrated_check(struct guest *g)
{
	uint64_t now = engine_now_ns(), n = streams_bytes(g);

	if (n != g->mig.quiet_bytes) {
		g->mig.quiet_bytes = n;
		g->mig.quiet_since = now;
		return;
	}
	if (now - g->mig.quiet_since >= MIGRATED_QUIET_NS)
		sess_migrated_done(g);
}

/*
 * QEMU says the migration completed: the guest runs on another host now. Its
 * agent's session goes on there (record --incoming takes it over); here the
 * ports are drained of what they still deliver, and nothing more is asked of
 * an agent that is gone.
 */
static void migrated_out(struct guest *g)
{
	struct engine *e = sess_eng(g);
	unsigned int i;

	if (g->mig.out || session_finished(g))
		return;
	g->mig.out = true;
	g->mig.migrating = false;
	if (!g->mig.seen.completed_tsc)
		g->mig.seen.completed_tsc = sync_host_tsc();
	if (g->state < G_RUNNING) {
		session_fail(g, "it migrated to another host before its recording started");
		return;
	}
	log_info("guest %s: it migrated to another host: draining what its ports still deliver",
		 g->name);
	engine_timer_cancel(e, &g->req.timer);
	engine_timer_cancel(e, &g->sync.kvm_timer);
	engine_timer_cancel(e, &g->sync.timer);
	sess_alive_end(g);
	engine_timer_cancel(e, &g->stop.timer);
	sess_burst_abort(g);
	g->req.active = false;
	sess_ctl_close(g);
	for (i = 0; i < g->nr_streams; i++)
		g->streams[i].eager = true;
	if (guest_set_state(g, G_DRAINING, "migrated out") < 0)	/* a stop that waited has no reason left */
		return;
	g->mig.quiet_bytes = streams_bytes(g);
	g->mig.quiet_since = engine_now_ns();
	engine_timer_arm(e, &g->stop.drain_timer, DRAIN_CHECK_NS, DRAIN_CHECK_NS);
	engine_timer_arm(e, &g->stop.timer, (uint64_t)(g->rec->o->stop_timeout * NSEC_PER_SEC), 0);
	qmp_query_migrate(g->qemu.qmp);	/* QEMU's downtime, for the manifest */
	spool_save_migration(g);
	sess_changed(g);
}

/* A MIGRATION status from QMP (QEMU's words). */
static void migration_status(struct guest *g, const char *status)
{
	snprintf(g->mig.seen.status, sizeof(g->mig.seen.status), "%s", status);
	sess_mig_clock(g);
	if (g->mig.incoming) {
		/* The destination's QEMU: the guest arrives here. */
		log_info("guest %s: incoming migration %s", g->name, status);
		if (g->spool[0])
			spool_save_migration(g);
		return;
	}
	if (!strcmp(status, "completed")) {
		migrated_out(g);
		return;
	}
	if (!strcmp(status, "failed") || !strcmp(status, "cancelled")) {
		if (g->mig.migrating) {
			g->mig.seen.failures++;
			log_warn("guest %s: its migration %s: it stays on this host, and its recording "
				 "goes on", g->name, status);
		}
		g->mig.migrating = false;
		g->mig.seen.stop_tsc = 0;
		if (g->spool[0])
			spool_save_migration(g);
		return;
	}
	if (!strcmp(status, "none") || g->mig.migrating || session_finished(g))
		return;
	g->mig.migrating = true;
	log_info("guest %s: QEMU migrates it (%s): recording on until it has left", g->name, status);
	if (g->spool[0])
		spool_save_migration(g);
}

/* What the guest's QMP socket said (qmp.c). */
void sess_qmp_event(void *guest, enum qmp_ev ev, const char *detail)
{
	struct guest *g = guest;

	switch (ev) {
	case QMP_EV_MIGRATION:
		migration_status(g, detail);
		break;
	case QMP_EV_MIGRATION_INFO:
		if (g->spool[0])
			spool_save_migration(g);
		break;
	case QMP_EV_CPUS:
		if (g->rec) {
			hostrec_vcpus(g->rec->host, g->link.vcpu_tids, g->link.nr_vcpu_tids);
			live_set_vcpus(g->rec->live, g->live_idx, g->link.vcpu_tids, g->link.nr_vcpu_tids);
		}
		if (g->spool[0])
			spool_save_state(g);
		break;
	case QMP_EV_RESUME:
		sess_resumed(g);
		break;
	case QMP_EV_PANIC:
		trig_guest_panic(g, detail);
		break;
	case QMP_EV_RESET:
		/*
		 * The guest reboots: its ring buffers and its agent's session are
		 * gone. Its recording ends RESET_GRACE_NS later, once QEMU wrote the
		 * vCPUs' TSCs (their epochs are listed, not applied) and what the
		 * ports still held came in.
		 */
		if (g->qemu.reset_why[0])
			break;
		sync_reset(g, g->qemu.reset_tsc);
		snprintf(g->qemu.reset_why, sizeof(g->qemu.reset_why), "%s",
			 detail[0] ? detail : "unknown");
		engine_timer_arm(sess_eng(g), &g->qemu.reset_timer, RESET_GRACE_NS, 0);
		break;
	}
}

/* QEMU ended END_GRACE_NS ago: the recording ends with what came. */
void sess_qemu_end_done(void *arg)
{
	struct guest *g = arg;

	if (g->state == G_FAILED || g->state == G_DONE || g->mig.out)
		return;
	session_fail(g, "its QEMU (pid %d) ended: its recording ends with what its ports held",
		     (int)g->link.qemu_pid);
}

/*
 * The kernel says QEMU ended. A socket port says so too (end of file), a FIFO
 * pair never: without this, a guest whose QEMU crashed was recorded on until
 * --duration, then its stop waited --stop-timeout for an agent long gone. A
 * migration's source QEMU ends after the migration, which ends the recording
 * its own way.
 */
static bool qemu_ended(void *arg, int revents)
{
	struct guest *g = arg;

	(void)revents;
	g->qemu.ended = true;
	g->qemu.pid_watch = NULL;	/* the engine drops it: false */
	if (g->state == G_FAILED || g->state == G_DONE || g->mig.out || g->mig.migrating)
		return false;
	log_info("guest %s: its QEMU (pid %d) ended: reading what its ports still hold", g->name,
		 (int)g->link.qemu_pid);
	engine_timer_arm(sess_eng(g), &g->qemu.end_timer, END_GRACE_NS, 0);
	return false;
}

/**
 * sess_watch_qemu() - follow the guest's QEMU process (its pid known) to its end
 * @g: the guest
 * @e: the engine
 *
 * A pidfd, the kernel's word, not a name: opened now, then checked to be a
 * QEMU still (the pid found by discovery, not reused since). Without pidfds
 * (Linux < 5.3) nothing is followed.
 */
void sess_watch_qemu(struct guest *g, struct engine *e)
{
	char why[400];
	uid_t uid;
	int fd;

	engine_timer_init(&g->qemu.end_timer, sess_qemu_end_done, g);
	if (g->link.qemu_pid <= 0 || g->qemu.pid_open)
		return;
	fd = (int)syscall(SYS_pidfd_open, g->link.qemu_pid, 0);
	if (fd < 0) {
		log_debug("guest %s: its QEMU's end is not followed: pidfd_open(%d): %s", g->name,
			  (int)g->link.qemu_pid, strerror(errno));
		return;
	}
	if (qemuproc_identify(g->link.qemu_pid, &uid, why, sizeof(why)) != 1) {
		log_debug("guest %s: its QEMU's end is not followed: pid %d: %s", g->name,
			  (int)g->link.qemu_pid, why);
		close(fd);
		return;
	}
	g->qemu.pidfd = fd;
	g->qemu.pid_open = true;	/* closed by session_release() */
	g->qemu.pid_watch = engine_add_fd(e, fd, POLLIN, qemu_ended, g);
}

/**
 * sess_unwatch_qemu() - stop following the guest's QEMU (its pidfd stays open
 * until session_release(): a poll may be in flight)
 * @g: the guest
 */
void sess_unwatch_qemu(struct guest *g)
{
	engine_fd_remove(g->qemu.pid_watch);
	g->qemu.pid_watch = NULL;
}
