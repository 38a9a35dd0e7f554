/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A guest's QMP socket, followed for stops, resumes, resets and vCPU threads (qmp.c). */
#ifndef RECORD_QMP_H
#define RECORD_QMP_H

#include <stdint.h>

struct engine;
struct guest;
struct qmp;

/* What QMP tells the guest's owner: vCPU threads known (in g), a resume, a reset (@detail: why). */
enum qmp_ev { QMP_EV_CPUS, QMP_EV_RESUME, QMP_EV_RESET };
int qmp_attach(struct guest *g, struct engine *e, uint64_t tsc_khz,
	       void (*event)(struct guest *g, enum qmp_ev ev, const char *detail));
void qmp_detach(struct guest *g);

#endif
