/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A guest's QMP socket, followed for stops, resumes, resets and vCPU threads (qmp.c). */
#ifndef RECORD_QMP_H
#define RECORD_QMP_H

#include <stdint.h>

struct engine;
struct guest;
struct qmp;

/*
 * What QMP tells the guest's owner: vCPU threads known (in g->link, for the
 * owner to hand on to the host recorder and the live view), a resume, a
 * reset (@detail: why), a migration's status (@detail: QEMU's word, e.g.
 * "active", "completed", "failed"; QMP_EV_MIGRATION_INFO when query-migrate
 * answered, its figures in g->mig).
 */
enum qmp_ev { QMP_EV_CPUS, QMP_EV_RESUME, QMP_EV_RESET, QMP_EV_MIGRATION, QMP_EV_MIGRATION_INFO };
int qmp_attach(struct guest *g, struct engine *e, uint64_t tsc_khz,
	       void (*event)(struct guest *g, enum qmp_ev ev, const char *detail));
void qmp_detach(struct guest *g);
int qmp_query_migrate(struct guest *g);

#endif
