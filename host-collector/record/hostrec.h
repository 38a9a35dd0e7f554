/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Host events in a private tracefs instance, through the guests' page path (hostrec.c). */
#ifndef RECORD_HOSTREC_H
#define RECORD_HOSTREC_H

#include <stdbool.h>

struct engine;
struct hostrec;
struct live;
struct record_opts;

int hostrec_check(const struct record_opts *o);
struct hostrec *hostrec_start(const struct record_opts *o, struct engine *e, int spool_fd,
			      struct live *live);
int hostrec_spool(const struct hostrec *h);
int hostrec_marker(struct hostrec *h, const char *text);
int hostrec_vcpus(struct hostrec *h, const uint32_t *tids, unsigned int nr);
bool hostrec_lists_sched(const char *list);
int hostrec_stop(struct hostrec *h);
void hostrec_respool_begin(struct hostrec *h);
void hostrec_release(struct hostrec *h);
void hostrec_free(struct hostrec *h);
void hostrec_save_stats(struct hostrec *h);
bool hostrec_drained(const struct hostrec *h);

#endif
