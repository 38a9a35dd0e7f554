// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * --sync-check (see sync.c's top comment): probe replies kept until the
 * epochs of their time are known, then each checked against the offsets the
 * kvm method found.
 */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collect.h"
#include "guest.h"
#include "hostclock.h"
#include "recording.h"
#include "stream.h"
#include "sync.h"
#include "sync-int.h"
#include "tscwatch.h"
#include "store/spool.h"
#include "vt_tsync.h"

struct sync_check_smp {
	struct vt_tsync_sample s;
	uint32_t burst;
};

/* A burst's replies wait for the epochs of their time. */
int sync_check_add(struct guest *g, unsigned int cpu, const struct vt_tsync_sample *smp,
		     unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (smp[i].cpu != smp[i].want_cpu || smp[i].want_cpu != (int32_t)cpu ||
		    smp[i].t2 < smp[i].t1)
			continue;
		if (g->sync.nr_pend == g->sync.cap_pend) {
			size_t cap = g->sync.cap_pend ? g->sync.cap_pend * 2 : 256;
			struct sync_check_smp *p = realloc(g->sync.pend, cap * sizeof(*p));

			if (!p)
				return -ENOMEM;
			g->sync.pend = p;
			g->sync.cap_pend = cap;
		}
		g->sync.pend[g->sync.nr_pend++] = (struct sync_check_smp){
			.s = smp[i], .burst = (uint32_t)(g->sync.check.bursts - 1),
		};
	}
	return 0;
}

/* The offsets @e allows for a guest TSC @gt read between host @t1 and @t2. */
static bool allowed(const struct vt_tsc_map *m, uint64_t t1, uint64_t t2, uint64_t gt, int64_t *lo,
		    int64_t *hi)
{
	uint64_t g1, g2;

	if (vt_tsc_host_to_guest(m, t1, &g1) < 0 || vt_tsc_host_to_guest(m, t2, &g2) < 0)
		return false;
	*lo = m->offset + (int64_t)(gt - g2);
	*hi = m->offset + (int64_t)(gt - g1);
	return g1 <= gt && gt <= g2;
}

static void check_iv(struct guest *g, const struct sync_check_smp *p, const struct vt_tsync_epoch *e,
		     int64_t lo, int64_t hi)
{
	struct spool_check *k = &g->sync.check;
	struct spool_check_iv *iv = k->nr_ivs ? &k->ivs[k->nr_ivs - 1] : NULL;

	if (iv && iv->cpu == (uint32_t)p->s.want_cpu && iv->burst == p->burst &&
	    iv->epoch_from == e->host_from) {
		iv->n++;
		if (lo > iv->lo)
			iv->lo = lo;
		if (hi < iv->hi)
			iv->hi = hi;
		iv->inside = iv->lo <= iv->offset && iv->offset <= iv->hi;
		return;
	}
	if (k->nr_ivs >= SPOOL_CHECK_IVS_MAX) {
		k->unlisted++;
		return;
	}
	if (!(k->nr_ivs & (k->nr_ivs - 1))) {
		iv = realloc(k->ivs, (k->nr_ivs ? 2 * k->nr_ivs : 1) * sizeof(*iv));
		if (!iv) {
			k->unlisted++;
			return;
		}
		k->ivs = iv;
	}
	k->ivs[k->nr_ivs++] = (struct spool_check_iv){
		.cpu = (uint32_t)p->s.want_cpu, .burst = p->burst, .n = 1, .t = p->s.t1,
		.epoch_from = e->host_from, .offset = e->map.offset, .lo = lo, .hi = hi,
		.inside = lo <= e->map.offset && e->map.offset <= hi,
	};
}

/*
 * One reply against the epochs in force during its round trip: within one
 * epoch, its interval of offsets joins that epoch's for the burst; across a
 * change, some epoch in force during it must explain it.
 */
static void check_one(struct guest *g, const struct sync_check_smp *p)
{
	struct spool_check *k = &g->sync.check;
	const struct vt_tsync_cpu *c = &g->sync.cpus[p->s.want_cpu];
	uint32_t i1, i2, j;
	int64_t lo, hi;
	bool ok = false;

	k->replies++;
	if (!c->nr) {
		k->no_epoch++;
		k->outside++;
		return;
	}
	i1 = sync_epoch_index(c, p->s.t1);
	i2 = sync_epoch_index(c, p->s.t2);
	if (i1 == i2) {
		ok = allowed(&c->epochs[i1].map, p->s.t1, p->s.t2, p->s.g, &lo, &hi);
		check_iv(g, p, &c->epochs[i1], lo, hi);
	} else {
		k->straddling++;
		for (j = i1; j <= i2 && !ok; j++) {
			uint64_t a = j == i1 ? p->s.t1 : c->epochs[j].host_from;
			uint64_t b = j == i2 ? p->s.t2 : c->epochs[j + 1].host_from - 1;

			ok = allowed(&c->epochs[j].map, a, b, p->s.g, &lo, &hi);
		}
	}
	if (!ok) {
		k->outside++;
		if (k->outside == 1)
			guest_log(g, GMSG_SYNC, L_WARN, "guest %s: --sync-check: vCPU %d read guest TSC %"
				  PRIu64 " between host TSC %" PRIu64 " and %" PRIu64 ", which KVM's "
				  "offsets do not give", g->name, p->s.want_cpu, p->s.g, p->s.t1, p->s.t2);
	}
}

/* Check the replies whose round trip ended before @upto (their epochs are known by then). */
void sync_check_eval(struct guest *g, uint64_t upto)
{
	size_t i;

	for (i = 0; i < g->sync.nr_pend && g->sync.pend[i].s.t2 < upto; i++)
		if (g->sync.pend[i].s.want_cpu >= 0 && g->sync.pend[i].s.want_cpu < COLLECT_MAX_CPUS)
			check_one(g, &g->sync.pend[i]);
	if (!i)
		return;
	memmove(g->sync.pend, g->sync.pend + i, (g->sync.nr_pend - i) * sizeof(*g->sync.pend));
	g->sync.nr_pend -= i;
	g->sync.kvm_dirty = true;
}
