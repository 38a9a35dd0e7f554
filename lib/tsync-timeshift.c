// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * TIME_SHIFT tables: a vCPU's epochs encoded as the samples trace-cmd's
 * TIME_SHIFT option holds, and trace-cmd's own arithmetic to check them.
 *
 *
 * How trace-cmd 3.1.6 (and 3.4, same code) applies TIME_SHIFT to a guest
 * event of raw timestamp ts on CPU c (lib/trace-cmd/trace-input.c), which
 * every table built here is shaped for:
 *  - c >= the option's CPU count: ts is left alone.
 *  - one sample: ts + offset[0]; scaling and frac bits are ignored.
 *  - otherwise the samples are sorted by time (equal times: first kept) and
 *    a pair (k, k+1) is chosen by comparing the *raw guest* ts with times[]
 *    as unsigned numbers: k = 0 when ts <= times[0], k = n-2 when
 *    ts >= times[n-1], else the last k with times[k] <= ts. Without the
 *    interpolate flag sample k alone is used, so the last sample only ever
 *    serves as the end of the last interval, and with two samples the first
 *    one is used for every ts (before times[0] too).
 *  - host = ((ts * scaling[k]) mod 2^64 >> frac[k]) + corr, where corr is
 *    offset[k], or with the interpolate flag offset[k] + ((ts - times[k]) *
 *    (offset[k+1] - offset[k]) + d/2) / d, d = times[k+1] - times[k], in
 *    signed 64-bit arithmetic (C division truncates). Before times[0] and
 *    after times[n-1] the first and last pair are extrapolated.
 *  - then TSC2NSEC: (host * mult) >> shift; the TSC2NSEC offset is unused.
 * --raw-ts turns both off. vt_tsync_tshift_apply() is this, in code.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vt_tsync.h"
#include "tsync-int.h"

/* ---- TIME_SHIFT tables ---- */

#define TS_GAP_FILL	(1ull << 40)

struct ts_build {
	struct vt_tsync_tshift *ts;
	uint32_t cap;
};

static int ts_push(struct ts_build *b, vt_s128 t, vt_s128 off, int64_t scale, int64_t frac)
{
	struct vt_tsync_tshift *ts = b->ts;
	int64_t *p[4];
	uint32_t cap, i;

	if (t < 0 || t > INT64_MAX || off < INT64_MIN || off > INT64_MAX)
		return -ERANGE;
	if (ts->nr && t <= ts->times[ts->nr - 1])
		return -EINVAL;		/* a bug in the callers: times must increase */
	if (ts->nr >= VT_TSYNC_TSHIFT_MAX)
		return -E2BIG;
	if (ts->nr == b->cap) {
		cap = b->cap ? b->cap * 2 : 8;
		p[0] = realloc(ts->times, cap * sizeof(int64_t));
		if (p[0])
			ts->times = p[0];
		p[1] = realloc(ts->offsets, cap * sizeof(int64_t));
		if (p[1])
			ts->offsets = p[1];
		p[2] = realloc(ts->scalings, cap * sizeof(int64_t));
		if (p[2])
			ts->scalings = p[2];
		p[3] = realloc(ts->frac_bits, cap * sizeof(int64_t));
		if (p[3])
			ts->frac_bits = p[3];
		for (i = 0; i < 4; i++)
			if (!p[i])
				return -ENOMEM;
		b->cap = cap;
	}
	ts->times[ts->nr] = (int64_t)t;
	ts->offsets[ts->nr] = (int64_t)off;
	ts->scalings[ts->nr] = scale;
	ts->frac_bits[ts->nr] = frac;
	ts->nr++;
	return 0;
}

/* What trace-cmd's multiply-and-shift gives for ts (the product wraps). */
static uint64_t ts_scaled(uint64_t ts, uint64_t scale, uint32_t frac)
{
	return (ts * scale) >> frac;
}

/*
 * Pick (F, S = round(2^(F+frac) / ratio)) for a scaled epoch without
 * interpolation. ts * S wraps every 2^64 / S guest ticks, which a
 * per-segment offset absorbs as long as a segment stays inside one wrap
 * window; the error grows as |S / 2^F - 2^frac / ratio| * distance from the
 * segment's middle, which the segment length keeps under one tick. The F
 * giving the longest segments wins.
 */
static void ts_pick_scale(const struct vt_tsc_map *m, uint32_t *best_f, uint64_t *best_s,
			  long double *best_len, long double *best_delta)
{
	long double len, wrap, delta;
	vt_u128 num, s, sm;
	uint32_t f;

	*best_len = 0;
	*best_f = 0;
	*best_s = 1;
	*best_delta = 0;
	for (f = 1; f <= 62; f++) {
		if (f + m->frac_bits > 126)
			break;
		num = (vt_u128)1 << (f + m->frac_bits);
		s = (num + m->ratio / 2) / m->ratio;
		if (!s || s >= ((vt_u128)1 << 63))
			continue;
		/* delta = (S * ratio - 2^(F+frac)) / (ratio * 2^F), exactly signed */
		sm = s * m->ratio;
		delta = (long double)(sm >= num ? sm - num : num - sm) /
			((long double)m->ratio * ldexpl(1, f));
		if (sm < num)
			delta = -delta;
		wrap = ldexpl(1, 64) / (long double)s;
		len = delta != 0 ? 1.9L / fabsl(delta) : wrap;	/* |err| <= 0.95 + 2 */
		if (len > wrap)
			len = wrap;
		if (len >= *best_len) {
			*best_len = len;
			*best_f = f;
			*best_s = (uint64_t)s;
			*best_delta = delta;
		}
	}
}

/* Exact host time for guest @g, as a 128-bit value. */
static int ts_host(const struct vt_tsc_map *m, vt_s128 g, vt_s128 *h)
{
	vt_u128 u;
	int ret = vt_tsc_inverse(m, g, &u);

	if (ret < 0)
		return ret;
	if (u > UINT64_MAX)
		return -ERANGE;
	*h = (vt_s128)u;
	return 0;
}

/* Non-interpolated pieces for one epoch over guest [gs, ge]. */
static int ts_epoch_steps(struct ts_build *b, const struct vt_tsc_map *m, uint64_t gs,
			  uint64_t ge)
{
	long double len, delta, err;
	uint64_t a, end, wend, mid, s, maxlen;
	vt_s128 h;
	vt_u128 q;
	uint32_t f;
	int ret;

	if (!vt_tsc_map_scaled(m)) {
		if (m->offset == INT64_MIN)
			return -ERANGE;
		return ts_push(b, gs, -(vt_s128)m->offset, 1, 0);
	}
	ts_pick_scale(m, &f, &s, &len, &delta);
	if (len < 2)
		return -ERANGE;
	maxlen = len >= ldexpl(1, 63) ? (uint64_t)INT64_MAX : (uint64_t)len;
	for (a = gs; ; a = end + 1) {
		q = ((vt_u128)a * s) >> 64;
		/* last ts with the same wrap count: ceil((q+1) 2^64 / S) - 1 */
		wend = (uint64_t)((((q + 1) << 64) + s - 1) / s - 1);
		end = ge;
		if (end > wend)
			end = wend;
		if (end - a >= maxlen)
			end = a + maxlen - 1;
		mid = a + (end - a) / 2;
		ret = ts_host(m, mid, &h);
		if (ret < 0)
			return ret;
		ret = ts_push(b, a, h - ts_scaled(mid, s, f), s, f);
		if (ret < 0)
			return ret;
		/* |err| < |delta| * half length + 2 (one ceil, two floors) */
		err = fabsl(delta) * (long double)(end - mid + 1) + 2;
		if ((uint64_t)ceill(err) > b->ts->max_error)
			b->ts->max_error = (uint64_t)ceill(err);
		if (end >= ge)
			return 0;
	}
}

/* Interpolated pieces (scaling 1) for one epoch over guest [gs, ge]. */
static int ts_epoch_lines(struct ts_build *b, const struct vt_tsc_map *m, uint64_t gs,
			  uint64_t ge)
{
	long double slope, lmax;
	uint64_t a, end, step;
	vt_s128 ha, he;
	int ret;

	if (!vt_tsc_map_scaled(m)) {
		if (m->offset == INT64_MIN)
			return -ERANGE;
		ret = ts_push(b, gs, -(vt_s128)m->offset, 1, 0);
		if (ret == 0 && ge > gs)
			ret = ts_push(b, ge, -(vt_s128)m->offset, 1, 0);
		return ret;
	}
	/* (ts - t_k) * (o_k+1 - o_k) must stay below 2^62: step^2 |slope| */
	slope = fabsl(ldexpl(1, m->frac_bits) / (long double)m->ratio - 1);
	lmax = slope > 0 ? sqrtl(ldexpl(1, 62) / slope) : ldexpl(1, 62);
	if (lmax > ldexpl(1, 62))
		lmax = ldexpl(1, 62);
	step = lmax < 2 ? 1 : (uint64_t)lmax - 1;
	if (b->ts->max_error < 2)
		b->ts->max_error = 2;
	for (a = gs; ; a = end + 1) {
		end = ge - a > step ? a + step : ge;
		ret = ts_host(m, a, &ha);
		if (ret == 0)
			ret = ts_push(b, a, ha - a, 1, 0);
		if (ret == 0 && end > a) {
			ret = ts_host(m, end, &he);
			if (ret == 0)
				ret = ts_push(b, end, he - end, 1, 0);
		}
		if (ret < 0 || end >= ge)
			return ret;
	}
}

/**
 * vt_tsync_needs_interpolate() - does any vCPU carry a fitted drift
 * @cpus: the vCPUs' epochs
 * @nr_cpus: how many
 *
 * The TIME_SHIFT interpolate flag covers the whole option, so one drift
 * epoch anywhere means every table must be built with @interpolate.
 *
 * Return: true when some epoch has VT_TSYNC_EPOCH_DRIFT.
 */
bool vt_tsync_needs_interpolate(const struct vt_tsync_cpu *cpus, uint32_t nr_cpus)
{
	uint32_t c, i;

	for (c = 0; c < nr_cpus; c++)
		for (i = 0; i < cpus[c].nr; i++)
			if (cpus[c].epochs[i].flags & VT_TSYNC_EPOCH_DRIFT)
				return true;
	return false;
}

/**
 * vt_tsync_tshift_build() - one guest CPU's TIME_SHIFT table from its epochs
 * @epochs: the epochs, by increasing host_from
 * @nr: how many; 0 gives the identity (one sample, offset 0)
 * @host_end: the last host TSC the trace covers (the stop time)
 * @interpolate: build for the interpolate flag (vt_tsync_needs_interpolate())
 * @ts: the table, to release with vt_tsync_tshift_free()
 *
 * Epoch k covers guest times from host_to_guest(host_from_k); a later epoch
 * whose guest start is not after an earlier one's (the guest clock jumped
 * back) wins from its start, since trace-cmd picks samples by guest time
 * alone: events from before such a jump that carry the repeated guest times
 * are then placed with the later epoch. Guest times before the first epoch
 * use the first epoch's mapping; guest times a forward jump skipped use the
 * earlier epoch's (for up to 2^40 ticks).
 *
 * Without @interpolate: unscaled epochs are one sample each, exact. Scaled
 * epochs become segments (S, F, per-segment offset) short enough that the
 * error stays small and that ts * S does not wrap inside a segment; a last
 * sample closes the table (trace-cmd never applies the last sample on its
 * own); the error is at most 3 ticks. With @interpolate: scaling is 1,
 * offsets are the exact host - guest at both ends of each segment (error at
 * most 2 ticks); unscaled
 * epochs are two samples with equal offsets, and a jump between epochs takes
 * one tick. Outside [first epoch's start, @host_end] in guest time the
 * error of scaled epochs is not bounded.
 *
 * Return: 0, -EINVAL, -ERANGE (a guest or host time outside [0, 2^63)),
 * -E2BIG past VT_TSYNC_TSHIFT_MAX samples, -ENOMEM.
 */
int vt_tsync_tshift_build(const struct vt_tsync_epoch *epochs, uint32_t nr, uint64_t host_end,
			  bool interpolate, struct vt_tsync_tshift *ts)
{
	struct ts_build b = { .ts = ts };
	uint64_t *gs, *ge, h_end;
	uint32_t *idx, k, n = 0;
	int ret = 0;

	memset(ts, 0, sizeof(*ts));
	if (!nr)
		return ts_push(&b, 0, 0, 1, 0);
	if (!epochs)
		return -EINVAL;
	gs = calloc(nr, sizeof(*gs));
	ge = calloc(nr, sizeof(*ge));
	idx = calloc(nr, sizeof(*idx));
	if (!gs || !ge || !idx) {
		ret = -ENOMEM;
		goto out_free;
	}
	for (k = 0; k < nr; k++) {
		if (!vt_tsc_map_valid(&epochs[k].map) ||
		    (k && epochs[k].host_from <= epochs[k - 1].host_from)) {
			ret = -EINVAL;
			goto out_free;
		}
		h_end = k + 1 < nr ? epochs[k + 1].host_from - 1 : host_end;
		if (h_end < epochs[k].host_from) {
			ret = -EINVAL;
			goto out_free;
		}
		ret = vt_tsc_host_to_guest(&epochs[k].map, epochs[k].host_from, &gs[n]);
		if (ret == 0)
			ret = vt_tsc_host_to_guest(&epochs[k].map, h_end, &ge[n]);
		if (ret < 0)
			goto out_free;
		if (gs[n] > INT64_MAX || ge[n] > INT64_MAX) {
			ret = -ERANGE;
			goto out_free;
		}
		while (n && gs[n - 1] >= gs[n]) {
			gs[n - 1] = gs[n];
			ge[n - 1] = ge[n];
			n--;
		}
		if (n && ge[n - 1] >= gs[n])
			ge[n - 1] = gs[n] - 1;
		idx[n++] = k;
	}
	/*
	 * A forward jump leaves guest times no event carries; the earlier
	 * epoch covers them (up to TS_GAP_FILL), so that both table shapes
	 * agree there with the rule "the last epoch started by then".
	 */
	for (k = 0; k + 1 < n; k++)
		ge[k] = gs[k + 1] - ge[k] > TS_GAP_FILL ? ge[k] + TS_GAP_FILL : gs[k + 1] - 1;
	for (k = 0; k < n && ret == 0; k++) {
		const struct vt_tsc_map *m = &epochs[idx[k]].map;

		if (interpolate)
			ret = ts_epoch_lines(&b, m, gs[k], ge[k]);
		else
			ret = ts_epoch_steps(&b, m, gs[k], ge[k]);
	}
	/* The closing sample: trace-cmd uses pair (n-2, n-1) past the end. */
	if (ret == 0 && !interpolate)
		ret = ts_push(&b, (vt_s128)ts->times[ts->nr - 1] +
			      (ge[n - 1] > (uint64_t)ts->times[ts->nr - 1] ?
			       ge[n - 1] - ts->times[ts->nr - 1] + 1 : 1),
			      ts->offsets[ts->nr - 1], ts->scalings[ts->nr - 1],
			      ts->frac_bits[ts->nr - 1]);
	if (ret == 0 && ts->nr == 1)
		ret = ts_push(&b, (vt_s128)ts->times[0] + 1, ts->offsets[0], 1, 0);
out_free:
	free(idx);
	free(ge);
	free(gs);
	if (ret < 0)
		vt_tsync_tshift_free(ts);
	return ret;
}

static uint64_t ts_calc(const struct vt_tsync_tshift *ts, bool interpolate, uint64_t t,
			uint32_t k)
{
	int64_t corr = ts->offsets[k];

	if (interpolate) {
		int64_t d = (int64_t)((uint64_t)ts->times[k + 1] - (uint64_t)ts->times[k]);
		int64_t x = (int64_t)((uint64_t)(t - (uint64_t)ts->times[k]) *
				      (uint64_t)(ts->offsets[k + 1] - ts->offsets[k]));

		corr = ts->offsets[k] + (int64_t)((uint64_t)x + (uint64_t)(d / 2)) / d;
	}
	return ts_scaled(t, (uint64_t)ts->scalings[k], (uint32_t)ts->frac_bits[k] & 63) +
	       (uint64_t)corr;
}

/**
 * vt_tsync_tshift_apply() - what trace-cmd 3.1.6 prints for a guest time
 * @ts: a table as built by vt_tsync_tshift_build() (sorted, unique times)
 * @interpolate: the option's interpolate flag
 * @guest: raw guest timestamp
 * @host: set to the corrected time, before TSC2NSEC
 *
 * A model of trace-cmd's timestamp_host_sync(), see the top of this file.
 *
 * Return: 0, -EINVAL for an empty table.
 */
int vt_tsync_tshift_apply(const struct vt_tsync_tshift *ts, bool interpolate, uint64_t guest,
			  uint64_t *host)
{
	uint32_t lo, hi, mid, n = ts->nr;

	if (!n)
		return -EINVAL;
	if (n == 1) {
		*host = guest + (uint64_t)ts->offsets[0];
		return 0;
	}
	if (guest <= (uint64_t)ts->times[0]) {
		*host = ts_calc(ts, interpolate, guest, 0);
		return 0;
	}
	if (guest >= (uint64_t)ts->times[n - 1]) {
		*host = ts_calc(ts, interpolate, guest, n - 2);
		return 0;
	}
	lo = 0;
	hi = n - 1;	/* times[lo] < guest < times[hi] */
	while (hi - lo > 1) {
		mid = lo + (hi - lo) / 2;
		if ((uint64_t)ts->times[mid] <= guest)
			lo = mid;
		else
			hi = mid;
	}
	*host = ts_calc(ts, interpolate, guest, lo);
	return 0;
}

/**
 * vt_tsync_tshift_view() - the table as vt_tracedat_add_time_shift() wants it
 * @ts: the table (must outlive @v)
 * @v: filled in
 */
void vt_tsync_tshift_view(const struct vt_tsync_tshift *ts, struct vt_tracedat_tshift_cpu *v)
{
	v->nr = ts->nr;
	v->times = ts->times;
	v->offsets = ts->offsets;
	v->scalings = ts->scalings;
	v->frac_bits = ts->frac_bits;
}

/**
 * vt_tsync_tshift_free() - release a table
 * @ts: the table; left empty
 */
void vt_tsync_tshift_free(struct vt_tsync_tshift *ts)
{
	free(ts->times);
	free(ts->offsets);
	free(ts->scalings);
	free(ts->frac_bits);
	memset(ts, 0, sizeof(*ts));
}
