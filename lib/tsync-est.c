// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The probe estimator: from in-band probes (host t1 <= guest g <= host t2)
 * the interval of offsets (and, when no constant offset fits, drifts) the
 * probes allow, the estimate inside it, and the epoch it becomes.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vt_tsync.h"
#include "tsync-int.h"

/* ---- the probe estimator ---- */

/*
 * Probe i says the guest read g_i at some host time h in [t1_i, t2_i]. With
 * guest = host + o + d * (host - T0), o the offset at T0 and d the drift
 * (1 + d > 0), g - h - d (h - T0) falls as h grows, so
 *
 *	L_i(d) = (g_i - t2_i) - d (t2_i - T0) <= o <= (g_i - t1_i) - d (t1_i - T0) = U_i(d)
 *
 * F(d) = max L_i is convex, G(d) = min U_i concave; the feasible drifts are
 * the interval where F <= G, found by ternary search and bisection on the
 * concave G - F (a two-variable LP over the hulls of the constraints). With
 * d = 0 the interval [F(0), G(0)] is computed exactly in integers: it is the
 * plain intersection, and a drift is fitted exactly when it is empty. Values
 * are relative to T0 and to a base offset, so long double keeps them to
 * ~1e-12 ticks; every reported bound is then widened by one tick.
 */
struct est_pt {
	long double a, b;	/* t1 - T0, t2 - T0 */
	long double lo, hi;	/* g - t2 - base, g - t1 - base */
};

struct est_set {
	struct est_pt *p;
	size_t n;
};

static long double est_f(const struct est_set *s, long double d)
{
	long double m = -INFINITY, v;
	size_t i;

	for (i = 0; i < s->n; i++) {
		v = s->p[i].lo - d * s->p[i].b;
		if (v > m)
			m = v;
	}
	return m;
}

static long double est_g(const struct est_set *s, long double d)
{
	long double m = INFINITY, v;
	size_t i;

	for (i = 0; i < s->n; i++) {
		v = s->p[i].hi - d * s->p[i].a;
		if (v < m)
			m = v;
	}
	return m;
}

enum est_fn { EST_GAP, EST_NEG_F, EST_G };

static long double est_eval(const struct est_set *s, enum est_fn fn, long double d)
{
	switch (fn) {
	case EST_GAP:
		return est_g(s, d) - est_f(s, d);
	case EST_NEG_F:
		return -est_f(s, d);
	default:
		return est_g(s, d);
	}
}

/* Argmax of a concave function on [lo, hi]. */
static long double est_argmax(const struct est_set *s, enum est_fn fn, long double lo,
			      long double hi)
{
	long double m1, m2;
	int i;

	for (i = 0; i < 200 && hi > lo; i++) {
		m1 = lo + (hi - lo) / 3;
		m2 = hi - (hi - lo) / 3;
		if (est_eval(s, fn, m1) < est_eval(s, fn, m2))
			lo = m1;
		else
			hi = m2;
	}
	return (lo + hi) / 2;
}

/* The edge of {G - F >= 0} between @in (inside) and @out (outside). */
static long double est_edge(const struct est_set *s, long double in, long double out)
{
	long double mid;
	int i;

	if (est_eval(s, EST_GAP, out) >= 0)
		return out;
	for (i = 0; i < 200; i++) {
		mid = (in + out) / 2;
		if (mid == in || mid == out)
			break;
		if (est_eval(s, EST_GAP, mid) >= 0)
			in = mid;
		else
			out = mid;
	}
	return out;	/* outward: the feasible interval is never cut short */
}

/* Usable: the right vCPU, t1 <= t2, and guest - host fits in 64 bits. */
static bool est_usable(const struct vt_tsync_sample *s)
{
	return s->t2 >= s->t1 && s->cpu == s->want_cpu &&
	       (vt_s128)s->g - s->t2 >= INT64_MIN && (vt_s128)s->g - s->t1 <= INT64_MAX;
}

static int est_clamp(vt_s128 v, int64_t *out)
{
	if (v < INT64_MIN || v > INT64_MAX)
		return -ERANGE;
	*out = (int64_t)v;
	return 0;
}

/**
 * vt_tsync_estimate() - bound the guest/host offset from a set of probes
 * @s: probes, in any order
 * @n: how many
 * @o: knobs, NULL for the defaults
 * @e: the result; filled in also on -ERANGE (with @e->consistent false)
 *
 * Probes from the wrong vCPU, with t2 < t1 or with a guest - host that does
 * not fit in 64 bits are rejected; every other probe
 * is a constraint, and a delayed one (an outlier) is merely a loose one. The
 * offsets are given at the middle of the probes' span. When a constant
 * offset fits every probe, the estimate is the middle of the intersection
 * and no drift is fitted; the reported bounds still allow any drift within
 * the limit the probes cannot rule out, so they hold at @e->ref_host even
 * for an undetected drift. When no constant offset fits, a drift is fitted
 * (the middle of the feasible drift interval, and the middle of the offset
 * interval at that drift).
 *
 * Return: 0; -ENODATA when no probe is usable; -ERANGE when the probes are
 * inconsistent even with the largest allowed drift (a clock jump: split them
 * with vt_tsync_estimate_split()); -ENOMEM; -EINVAL.
 */
int vt_tsync_estimate(const struct vt_tsync_sample *s, size_t n,
		      const struct vt_tsync_est_opts *o, struct vt_tsync_estimate *e)
{
	static const struct vt_tsync_est_opts defaults;
	vt_s128 lo0 = 0, hi0 = 0, v, base;
	long double dmax, dlo, dhi, dbest, flo, ghi, span;
	struct est_set set = { 0 };
	uint64_t t0;
	size_t i;
	int ret = 0;

	if (!e || (n && !s))
		return -EINVAL;
	if (!o)
		o = &defaults;
	memset(e, 0, sizeof(*e));
	e->min_rtt = UINT64_MAX;
	e->host_from = UINT64_MAX;
	e->first_reply = UINT64_MAX;
	for (i = 0; i < n; i++) {
		if (!est_usable(&s[i])) {
			e->rejected++;
			continue;
		}
		if (!e->used || (vt_s128)s[i].g - s[i].t2 > lo0)
			lo0 = (vt_s128)s[i].g - s[i].t2;
		if (!e->used || (vt_s128)s[i].g - s[i].t1 < hi0)
			hi0 = (vt_s128)s[i].g - s[i].t1;
		if (s[i].t1 < e->host_from)
			e->host_from = s[i].t1;
		if (s[i].t2 > e->host_to)
			e->host_to = s[i].t2;
		if (s[i].t2 < e->first_reply)
			e->first_reply = s[i].t2;
		if (s[i].t2 - s[i].t1 < e->min_rtt)
			e->min_rtt = s[i].t2 - s[i].t1;
		e->used++;
	}
	if (!e->used) {
		e->host_from = 0;
		e->first_reply = 0;
		e->min_rtt = 0;
		return -ENODATA;
	}
	t0 = e->host_from + (e->host_to - e->host_from) / 2;
	e->ref_host = t0;
	e->consistent = lo0 <= hi0;
	if (o->no_drift || e->used == 1) {
		if (!e->consistent)
			return -ERANGE;
		if (est_clamp(lo0, &e->offset_lo) < 0 || est_clamp(hi0, &e->offset_hi) < 0)
			return -ERANGE;
		e->offset = (int64_t)(lo0 + (hi0 - lo0) / 2);
		e->bound = (uint64_t)(hi0 - e->offset) > (uint64_t)(e->offset - lo0) ?
			   (uint64_t)(hi0 - e->offset) : (uint64_t)(e->offset - lo0);
		return 0;
	}

	set.p = calloc(e->used, sizeof(*set.p));
	if (!set.p)
		return -ENOMEM;
	base = lo0;
	for (i = 0; i < n; i++) {
		if (!est_usable(&s[i]))
			continue;
		set.p[set.n].a = (long double)((vt_s128)s[i].t1 - t0);
		set.p[set.n].b = (long double)((vt_s128)s[i].t2 - t0);
		set.p[set.n].lo = (long double)((vt_s128)s[i].g - s[i].t2 - base);
		set.p[set.n].hi = (long double)((vt_s128)s[i].g - s[i].t1 - base);
		set.n++;
	}
	dmax = (o->max_drift_ppm > 0 ? o->max_drift_ppm : VT_TSYNC_MAX_DRIFT_PPM) * 1e-6L;
	span = (long double)(e->host_to - e->host_from);
	if (e->consistent) {
		dbest = 0;
	} else {
		dbest = est_argmax(&set, EST_GAP, -dmax, dmax);
		if (est_eval(&set, EST_GAP, dbest) < -1e-6L) {
			ret = -ERANGE;
			goto out_free;
		}
		e->consistent = true;
	}
	dlo = est_edge(&set, dbest, -dmax);
	dhi = est_edge(&set, dbest, dmax);
	/* Sound outer bounds at T0 over every feasible drift. */
	flo = est_f(&set, est_argmax(&set, EST_NEG_F, dlo, dhi));
	ghi = est_g(&set, est_argmax(&set, EST_G, dlo, dhi));
	/* The ternary search lands within ~1e-20 of the optimum; slope <= span. */
	flo -= 1 + span * 1e-15L;
	ghi += 1 + span * 1e-15L;
	if (lo0 <= hi0) {
		/* d = 0 is feasible: never report less than the exact intersection */
		if (flo > 0)
			flo = 0;
		if (ghi < (long double)(hi0 - base))
			ghi = (long double)(hi0 - base);
	}
	if (est_clamp(base + (vt_s128)floorl(flo), &e->offset_lo) < 0 ||
	    est_clamp(base + (vt_s128)ceill(ghi), &e->offset_hi) < 0) {
		ret = -ERANGE;
		goto out_free;
	}
	e->drift_lo_ppm = (double)(dlo * 1e6L);
	e->drift_hi_ppm = (double)(dhi * 1e6L);
	if (lo0 <= hi0) {
		e->offset = (int64_t)(lo0 + (hi0 - lo0) / 2);
	} else {
		long double dm = (dlo + dhi) / 2;
		long double om = (est_f(&set, dm) + est_g(&set, dm)) / 2;

		e->drift_fitted = true;
		e->drift_ppm = (double)(dm * 1e6L);
		v = base + (vt_s128)llroundl(om);
		if (est_clamp(v, &e->offset) < 0) {
			ret = -ERANGE;
			goto out_free;
		}
	}
	if (e->offset < e->offset_lo)
		e->offset_lo = e->offset;
	if (e->offset > e->offset_hi)
		e->offset_hi = e->offset;
	e->bound = (uint64_t)e->offset_hi - (uint64_t)e->offset;
	if ((uint64_t)e->offset - (uint64_t)e->offset_lo > e->bound)
		e->bound = (uint64_t)e->offset - (uint64_t)e->offset_lo;
out_free:
	free(set.p);
	return ret;
}

/**
 * vt_tsync_estimate_split() - estimate epochs from probes that may span jumps
 * @s: probes sorted by t1
 * @n: how many
 * @o: knobs, NULL for the defaults
 * @e: filled in with one estimate per epoch, in time order
 * @max: entries in @e
 * @nr: set to the number of epochs
 *
 * Greedy: each epoch takes the longest run of probes that
 * vt_tsync_estimate() finds consistent (found by bisection: a longer run
 * only adds constraints). A run the estimator rejects as a whole cannot
 * occur, since one probe is always consistent.
 *
 * Return: 0, -EINVAL (unsorted), -ENOSPC when more than @max epochs are
 * needed, or as vt_tsync_estimate().
 */
int vt_tsync_estimate_split(const struct vt_tsync_sample *s, size_t n,
			    const struct vt_tsync_est_opts *o, struct vt_tsync_estimate *e,
			    size_t max, size_t *nr)
{
	size_t i = 0, lo, hi, mid;
	int ret;

	*nr = 0;
	for (lo = 1; lo < n; lo++)
		if (s[lo].t1 < s[lo - 1].t1)
			return -EINVAL;
	while (i < n) {
		if (*nr == max)
			return -ENOSPC;
		/* Largest hi such that s[i, hi) is consistent. */
		lo = i + 1;
		hi = n;
		ret = vt_tsync_estimate(s + i, n - i, o, &e[*nr]);
		if (ret == -ERANGE) {
			while (hi - lo > 0) {
				mid = lo + (hi - lo + 1) / 2;
				ret = vt_tsync_estimate(s + i, mid - i, o, &e[*nr]);
				if (ret == -ERANGE)
					hi = mid - 1;
				else if (ret < 0 && ret != -ENODATA)
					return ret;
				else
					lo = mid;
			}
			ret = vt_tsync_estimate(s + i, lo - i, o, &e[*nr]);
		} else {
			lo = n;
		}
		if (ret == 0)
			(*nr)++;
		else if (ret != -ENODATA)
			return ret;
		i = lo;
	}
	return 0;
}

/**
 * vt_tsync_estimate_epoch() - turn an estimate into an epoch
 * @e: the estimate
 * @ep: filled in: source PROBE, from @e->host_from, error @e->bound
 *
 * Without drift the mapping is guest = host + offset. With drift it is
 * written in KVM's form with 48 fraction bits: ratio = round((1 + d) 2^48)
 * and an offset that makes the mapping exact at @e->ref_host; the ratio's
 * rounding (2^-49) adds below one tick within 2^49 ticks of it.
 *
 * Return: 0, -EINVAL, -ERANGE.
 */
int vt_tsync_estimate_epoch(const struct vt_tsync_estimate *e, struct vt_tsync_epoch *ep)
{
	vt_s128 gref, scaled;
	long double r;

	if (!e || !ep || !e->used)
		return -EINVAL;
	memset(ep, 0, sizeof(*ep));
	ep->host_from = e->host_from;
	ep->source = VT_TSYNC_SRC_PROBE;
	ep->error = e->bound;
	ep->min_rtt = e->min_rtt;
	ep->first_reply = e->first_reply;
	ep->map.ratio = 1;
	ep->map.offset = e->offset;
	if (!e->drift_fitted)
		return 0;
	r = (1.0L + (long double)e->drift_ppm * 1e-6L) * (long double)(1ull << 48);
	if (!(r >= 1 && r < 18446744073709551615.0L))
		return -ERANGE;
	ep->map.ratio = (uint64_t)llroundl(r);
	ep->map.frac_bits = 48;
	ep->flags = VT_TSYNC_EPOCH_DRIFT;
	gref = (vt_s128)e->ref_host + e->offset;
	scaled = (vt_s128)(((vt_u128)e->ref_host * ep->map.ratio) >> 48);
	return est_clamp(gref - scaled, &ep->map.offset);
}
