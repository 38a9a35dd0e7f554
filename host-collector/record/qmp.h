/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A guest's QMP socket, followed for stops, resumes, resets and vCPU threads (qmp.c). */
#ifndef RECORD_QMP_H
#define RECORD_QMP_H

#include <stdbool.h>
#include <stdint.h>

#include "engine.h"

struct guest_link;
struct qmp;
struct spool_mig_seen;

/**
 * struct guest_qemu - what a guest's QEMU said of it over QMP (qmp.c)
 * @qmp: the QMP connection, NULL if none
 * @uuid: the VM's UUID, "" if none
 * @stop_tsc: host TSC when QEMU stopped it (QMP STOP)
 * @resume_tsc: host TSC when QEMU resumed it (QMP RESUME)
 * @reset_tsc: host TSC when QEMU reset it (QMP RESET)
 * @resync: RESUME seen: sync again as soon as it can
 * @reset_timer: QMP RESET: QEMU's TSC writes, then the end
 * @reset_why: the RESET's reason
 * @pidfd: the QEMU process's pidfd (session-migrate.c, sess_watch_qemu()), valid
 *	with @pid_open
 * @pid_open: @pidfd is open
 * @pid_watch: the engine's watch on it, NULL if none
 * @end_timer: QEMU ended: what its ports still held comes in, then the end
 * @ended: QEMU ended (the kernel said so on @pidfd)
 */
struct guest_qemu {
	struct qmp *qmp;
	char uuid[40];
	uint64_t stop_tsc;
	uint64_t resume_tsc;
	uint64_t reset_tsc;
	bool resync;
	struct engine_timer reset_timer;
	char reset_why[64];
	int pidfd;
	bool pid_open;
	struct engine_fd *pid_watch;
	struct engine_timer end_timer;
	bool ended;
};

/*
 * What QMP tells the guest's owner: vCPU threads known (in its link, for the
 * owner to hand on to the host recorder and the live view), a resume, a
 * reset (@detail: why), a migration's status (@detail: QEMU's word, e.g.
 * "active", "completed", "failed"; QMP_EV_MIGRATION_INFO when query-migrate
 * answered, its figures in the migration's seen), a guest panic
 * (GUEST_PANICKED; @detail: QEMU's action, "pause", "poweroff", "run" or
 * "unknown", never another word).
 */
enum qmp_ev { QMP_EV_CPUS, QMP_EV_RESUME, QMP_EV_RESET, QMP_EV_MIGRATION, QMP_EV_MIGRATION_INFO,
	      QMP_EV_PANIC };

/**
 * struct qmp_guest - the part of a guest QMP follows for its owner (the
 *	session): QMP knows no struct guest
 * @name: the guest's name, for messages
 * @link: its qmp_path and owner are read, the vCPU threads written
 * @qemu: what QEMU said is written there, the connection in @qemu->qmp
 * @seen: the migration's times and QEMU's figures are written there
 * @incoming: --incoming: a RESUME is the guest's arrival
 * @migrating: the owner's word that a migration is under way
 * @event: told of what QMP said, with @owner
 * @owner: handed to @event
 */
struct qmp_guest {
	const char *name;
	struct guest_link *link;
	struct guest_qemu *qemu;
	struct spool_mig_seen *seen;
	const bool *incoming;
	const bool *migrating;
	void (*event)(void *owner, enum qmp_ev ev, const char *detail);
	void *owner;
};

int qmp_attach(const struct qmp_guest *v, struct engine *e, uint64_t tsc_khz);
void qmp_detach(struct guest_qemu *qemu);
int qmp_query_migrate(struct qmp *q);

#endif
