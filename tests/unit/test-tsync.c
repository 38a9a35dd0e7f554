// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Clock models: the KVM formula against hand-computed values, the probe
 * estimator against a deterministic clock simulator (known offset, drift,
 * asymmetric delays, heavy-tailed outliers, a jump), TIME_SHIFT tables
 * against the exact formula, the KVM debugfs reader on fixture trees, and
 * the host TSC rate.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "hostclock.h"
#include "vt_tsync.h"

#define R48	335089257988876ull	/* round(2.5 / 2.1 * 2^48), the fixture's */
#define R32	0xCCCCCCCDull		/* ~0.8 with 32 fraction bits */

/* ---- the KVM formula ---- */

static uint64_t t_h2g(uint64_t ratio, uint32_t frac, int64_t off, uint64_t h)
{
	struct vt_tsc_map m = { off, ratio, frac };
	uint64_t g = 0;

	assert_int_equal(vt_tsc_host_to_guest(&m, h, &g), 0);
	return g;
}

static uint64_t t_g2h(uint64_t ratio, uint32_t frac, int64_t off, uint64_t g)
{
	struct vt_tsc_map m = { off, ratio, frac };
	uint64_t h = 0;

	assert_int_equal(vt_tsc_guest_to_host(&m, g, &h), 0);
	return h;
}

/* Values worked out by hand (and with bignum arithmetic), not by this code. */
static void test_kvm_formula(void **state)
{
	struct vt_tsc_map m = { -1234567890123, R48, 48 };
	uint64_t v;

	/* 48 bits, ratio 1.5 exactly, negative offset */
	assert_int_equal(t_h2g(3ull << 47, 48, -1000000, 1000000000000ull), 1499999000000ull);
	/* 48 bits, ratio 1 + 2^-48: floor(1e15 / 2^48) = 3 */
	assert_int_equal(t_h2g((1ull << 48) + 1, 48, 0, 1000000000000000ull),
			 1000000000000003ull);
	/* the intel48 fixture: 2.5/2.1 */
	assert_int_equal(t_h2g(R48, 48, -1234567890123, 123456789012345ull), 145737799981716ull);
	assert_int_equal(t_g2h(R48, 48, -1234567890123, 1000000000000ull), 1877037027704ull);
	/* 32 bits (AMD), ratio ~0.8, negative offset */
	assert_int_equal(t_h2g(R32, 32, -987654321, 10000000000ull), 7012345679ull);
	assert_int_equal(t_h2g(R32, 32, -987654321, 5000000007ull), 3012345684ull);
	assert_int_equal(t_g2h(R32, 32, -987654321, 7000000000ull), 9984567901ull);
	/* no scaling: ratio == 1 << frac, any frac */
	assert_int_equal(t_h2g(1ull << 48, 48, -5, 100), 95);
	assert_int_equal(t_h2g(1ull << 32, 32, 7, 100), 107);
	assert_int_equal(t_h2g(1, 0, INT64_MIN + 1, UINT64_MAX), (uint64_t)INT64_MAX + 1);
	assert_int_equal(t_g2h(1, 0, -5, 95), 100);
	/* out of range: before guest 0, before host 0, invalid maps */
	assert_int_equal(vt_tsc_host_to_guest(&m, 1000000000000ull, &v), -ERANGE);
	assert_int_equal(vt_tsc_guest_to_host(&(struct vt_tsc_map){ 1000, 1, 0 }, 999, &v),
			 -ERANGE);
	assert_int_equal(vt_tsc_host_to_guest(&(struct vt_tsc_map){ 0, 0, 48 }, 1, &v), -EINVAL);
	assert_int_equal(vt_tsc_host_to_guest(&(struct vt_tsc_map){ 0, 1, 64 }, 1, &v), -EINVAL);
	assert_false(vt_tsc_map_scaled(&(struct vt_tsc_map){ 0, 1ull << 48, 48 }));
	assert_true(vt_tsc_map_scaled(&m));
	assert_true(vt_tsc_map_equal(&(struct vt_tsc_map){ 3, 1, 0 },
				     &(struct vt_tsc_map){ 3, 1ull << 48, 48 }));
}

static uint64_t t_rng_state;

/* splitmix64: small, seedable, good enough for a simulator */
static uint64_t t_rand(void)
{
	uint64_t z = (t_rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double t_unif(void)
{
	return (double)(t_rand() >> 11) / 9007199254740992.0;
}

/* Round trips over random values for the four kinds of ratio. */
static void test_kvm_round_trip(void **state)
{
	static const struct vt_tsc_map maps[] = {
		{ -1234567890123, R48, 48 },			/* guest faster, Intel */
		{ -987654321, R32, 32 },			/* guest slower, AMD */
		{ 4242, 1ull << 48, 48 },			/* no scaling */
		{ -77, (1ull << 32) + 12345, 32 },		/* barely faster */
	};
	uint64_t h, g, h2, g2;
	size_t i;
	int k;

	t_rng_state = 1;
	for (i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
		for (k = 0; k < 20000; k++) {
			h = (uint64_t)2e12 + (t_rand() >> 14);
			assert_int_equal(vt_tsc_host_to_guest(&maps[i], h, &g), 0);
			/* guest -> host -> guest is the identity on the guest's values */
			assert_int_equal(vt_tsc_guest_to_host(&maps[i], g, &h2), 0);
			assert_int_equal(vt_tsc_host_to_guest(&maps[i], h2, &g2), 0);
			assert_int_equal(g2, g);
			/* the first host tick of that guest tick */
			assert_true(h2 <= h);
			if (h2) {
				assert_int_equal(vt_tsc_host_to_guest(&maps[i], h2 - 1, &g2), 0);
				assert_true(g2 < g);
			}
			/* any guest value: the smallest host whose guest is >= it */
			g = g + (t_rand() % 3) - 1;
			assert_int_equal(vt_tsc_guest_to_host(&maps[i], g, &h2), 0);
			assert_int_equal(vt_tsc_host_to_guest(&maps[i], h2, &g2), 0);
			assert_true(g2 >= g);
			assert_int_equal(vt_tsc_host_to_guest(&maps[i], h2 - 1, &g2), 0);
			assert_true(g2 < g);
		}
	}
}

/* ---- the clock simulator ---- */

/*
 * Host time is the host TSC. The guest TSC is host + offset + drift * (host
 * - start), plus a jump from some host time on. A probe leaves at t1, waits
 * the forward delay, reads the guest TSC, and arrives back after the return
 * delay: each delay is a fixed minimum (asymmetric), exponential jitter and
 * now and then a heavy-tailed (Pareto) outlier. Some replies come from the
 * wrong vCPU.
 */
struct t_sim {
	uint64_t start;
	int64_t offset;
	double drift_ppm;
	uint64_t jump_at;
	int64_t jump;
	double fwd_min, back_min, jitter;	/* ticks */
	double outlier_p;			/* probability per delay */
	double wrong_cpu_p;
};

static double t_delay(const struct t_sim *s, double min)
{
	double d = min - s->jitter * log(1 - t_unif());

	if (t_unif() < s->outlier_p)
		d += min * 20 / pow(1 - t_unif(), 1 / 1.2);	/* Pareto, alpha 1.2 */
	return d;
}

/* The true guest - host at host time @h, as a real number. */
static long double t_true_offset(const struct t_sim *s, long double h)
{
	long double o = s->offset + s->drift_ppm * 1e-6L * (h - (long double)s->start);

	if (s->jump_at && h >= s->jump_at)
		o += s->jump;
	return o;
}

static uint64_t t_guest(const struct t_sim *s, uint64_t h)
{
	return (uint64_t)((long double)h + floorl(t_true_offset(s, h)));
}

static void t_probe(const struct t_sim *s, uint64_t t1, struct vt_tsync_sample *p)
{
	uint64_t h = t1 + (uint64_t)t_delay(s, s->fwd_min);

	p->t1 = t1;
	p->g = t_guest(s, h);
	p->t2 = h + (uint64_t)t_delay(s, s->back_min);
	p->want_cpu = 1;
	p->cpu = t_unif() < s->wrong_cpu_p ? 0 : 1;
}

/* @n probes spread over @span ticks from s->start. */
static void t_run(const struct t_sim *s, struct vt_tsync_sample *p, size_t n, uint64_t span)
{
	size_t i;

	for (i = 0; i < n; i++)
		t_probe(s, s->start + span / n * i + t_rand() % 1000, &p[i]);
}

static void t_sim_default(struct t_sim *s, uint64_t seed)
{
	t_rng_state = seed * 7919 + 13;
	memset(s, 0, sizeof(*s));
	s->start = 5000000000000ull + (t_rand() >> 30);
	s->offset = -(int64_t)(t_rand() >> 22) + (int64_t)(t_rand() >> 23);
	s->fwd_min = 3000;	/* ~1 us at 3 GHz: asymmetric, 3x the way back */
	s->back_min = 1000;
	s->jitter = 2000;
	s->outlier_p = 0.05;
	s->wrong_cpu_p = 0.02;
}

static unsigned long inside_checks;

#define NPROBES 300
#define NSEEDS 400

/*
 * The guest TSC is an integer, floor(host + true offset): the offset a
 * guest read shows at ref_host must lie inside the reported bounds.
 */
static void t_check_inside(const struct t_sim *s, const struct vt_tsync_estimate *e)
{
	long double truth = floorl(t_true_offset(s, e->ref_host));

	if (truth < (long double)e->offset_lo || truth > (long double)e->offset_hi) {
		fprintf(stderr, "truth %.1Lf outside [%lld, %lld] (drift %.3f ppm)\n", truth,
			(long long)e->offset_lo, (long long)e->offset_hi, s->drift_ppm);
		fail();
	}
	assert_true(e->offset_lo <= e->offset && e->offset <= e->offset_hi);
	inside_checks++;
}

/* No drift: the truth is always inside, nothing is fitted. */
static void test_sim_constant(void **state)
{
	struct vt_tsync_sample p[NPROBES];
	struct vt_tsync_estimate e;
	struct t_sim s;
	uint64_t seed, sum_bound = 0, max_bound = 0, rejected = 0;

	for (seed = 1; seed <= NSEEDS; seed++) {
		t_sim_default(&s, seed);
		t_run(&s, p, NPROBES, 3000000000ull);
		assert_int_equal(vt_tsync_estimate(p, NPROBES, NULL, &e), 0);
		t_check_inside(&s, &e);
		assert_false(e.drift_fitted);
		assert_int_equal(e.used + e.rejected, NPROBES);
		rejected += e.rejected;
		assert_true(e.bound <= e.min_rtt);
		/* the exact intersection holds the true constant offset too */
		sum_bound += e.bound;
		if (e.bound > max_bound)
			max_bound = e.bound;
	}
	print_message("constant: mean bound %.0f ticks, max %llu (min delays 3000+1000)\n",
		      (double)sum_bound / NSEEDS, (unsigned long long)max_bound);
	assert_true(rejected > NSEEDS * NPROBES / 100);	/* ~2% come from the wrong vCPU */
}

/* Drift of a few ppm over a second: fitted, the truth inside, drift found. */
static void test_sim_drift(void **state)
{
	static const double drifts[] = { 50, -120, 7.5, 390 };
	struct vt_tsync_sample p[NPROBES];
	struct vt_tsync_estimate e;
	struct t_sim s;
	uint64_t seed;
	size_t i;
	double worst = 0, width = 0;
	int nfit = 0;

	for (i = 0; i < sizeof(drifts) / sizeof(drifts[0]); i++) {
		for (seed = 1; seed <= NSEEDS / 4; seed++) {
			t_sim_default(&s, seed + 1000 * i);
			s.drift_ppm = drifts[i];
			t_run(&s, p, NPROBES, 3000000000ull);
			assert_int_equal(vt_tsync_estimate(p, NPROBES, NULL, &e), 0);
			t_check_inside(&s, &e);
			assert_true(e.drift_fitted);
			assert_true(e.drift_lo_ppm <= drifts[i] && drifts[i] <= e.drift_hi_ppm);
			assert_true(e.drift_hi_ppm - e.drift_lo_ppm < 5);
			if (fabs(e.drift_ppm - drifts[i]) > worst)
				worst = fabs(e.drift_ppm - drifts[i]);
			width += e.drift_hi_ppm - e.drift_lo_ppm;
			nfit++;
		}
	}
	print_message("drift: worst |fitted - true| %.4f ppm, mean drift interval %.4f ppm "
		      "over 3e9 ticks\n", worst, width / nfit);
	/* tiny drift over a short span cannot be seen: not fitted, truth still inside */
	for (seed = 1; seed <= NSEEDS / 4; seed++) {
		t_sim_default(&s, seed + 9000);
		s.drift_ppm = 0.05;
		t_run(&s, p, NPROBES, 30000000ull);
		assert_int_equal(vt_tsync_estimate(p, NPROBES, NULL, &e), 0);
		t_check_inside(&s, &e);
		assert_false(e.drift_fitted);
	}
}

/* Shrink every delay: the bound follows the minimum RTT down. */
static void test_sim_bound_vs_rtt(void **state)
{
	static const double scale[] = { 64, 16, 4, 1, 0.25 };
	struct vt_tsync_sample p[NPROBES];
	struct vt_tsync_estimate e;
	struct t_sim s;
	double prev = INFINITY, bound, rtt;
	uint64_t seed;
	size_t i;

	for (i = 0; i < sizeof(scale) / sizeof(scale[0]); i++) {
		bound = rtt = 0;
		for (seed = 1; seed <= 100; seed++) {
			t_sim_default(&s, seed);
			s.fwd_min *= scale[i];
			s.back_min *= scale[i];
			s.jitter *= scale[i];
			t_run(&s, p, NPROBES, 3000000000ull);
			assert_int_equal(vt_tsync_estimate(p, NPROBES, NULL, &e), 0);
			t_check_inside(&s, &e);
			bound += e.bound;
			rtt += e.min_rtt;
		}
		bound /= 100;
		rtt /= 100;
		print_message("min delays x%-5g mean min RTT %9.0f ticks, mean bound %8.0f ticks\n",
			      scale[i], rtt, bound);
		assert_true(bound < prev);
		assert_true(bound <= rtt / 2 + 2);
		prev = bound;
	}
}

/* A jump mid-run: inconsistent as a whole, two epochs when split. */
static void test_sim_jump(void **state)
{
	struct vt_tsync_sample p[NPROBES];
	struct vt_tsync_estimate e[8];
	struct vt_tsync_epoch ep;
	struct t_sim s;
	uint64_t seed;
	size_t nr;

	for (seed = 1; seed <= NSEEDS / 4; seed++) {
		t_sim_default(&s, seed + 5000);
		s.drift_ppm = seed % 2 ? 0 : 30;
		s.jump_at = s.start + 1500000000ull;
		s.jump = seed % 3 ? 250000 : -4000000;
		t_run(&s, p, NPROBES, 3000000000ull);
		assert_int_equal(vt_tsync_estimate(p, NPROBES, NULL, &e[0]), -ERANGE);
		assert_false(e[0].consistent);
		assert_int_equal(vt_tsync_estimate_split(p, NPROBES, NULL, e, 8, &nr), 0);
		assert_int_equal(nr, 2);
		assert_true(e[0].host_to < s.jump_at + 20000);
		assert_true(e[1].host_from >= s.jump_at - 20000);
		t_check_inside(&s, &e[0]);
		t_check_inside(&s, &e[1]);
		assert_int_equal(vt_tsync_estimate_epoch(&e[1], &ep), 0);
		assert_int_equal(ep.host_from, e[1].host_from);
		assert_int_equal(ep.source, VT_TSYNC_SRC_PROBE);
	}
	/* without drift fitting the same set is rejected as well */
	assert_int_equal(vt_tsync_estimate(p, NPROBES, &(struct vt_tsync_est_opts){
		.no_drift = true }, &e[0]), -ERANGE);
}

/* Rejections, and an epoch from a drift fit that reproduces the probes. */
static void test_estimate_edges(void **state)
{
	struct vt_tsync_sample p[NPROBES];
	struct vt_tsync_estimate e;
	struct vt_tsync_epoch ep;
	struct t_sim s;
	int64_t worst = INT64_MIN;
	uint64_t g;
	size_t i;

	assert_int_equal(vt_tsync_estimate(NULL, 0, NULL, &e), -ENODATA);
	p[0] = (struct vt_tsync_sample){ .t1 = 10, .t2 = 5, .g = 100 };
	p[1] = (struct vt_tsync_sample){ .t1 = 10, .t2 = 20, .g = 100, .cpu = 1 };
	assert_int_equal(vt_tsync_estimate(p, 2, NULL, &e), -ENODATA);
	assert_int_equal(e.rejected, 2);
	p[2] = (struct vt_tsync_sample){ .t1 = 10, .t2 = 20, .g = 100 };
	assert_int_equal(vt_tsync_estimate(p, 3, NULL, &e), 0);
	assert_int_equal(e.offset_lo, 80);
	assert_int_equal(e.offset_hi, 90);
	assert_int_equal(e.offset, 85);
	assert_int_equal(e.bound, 5);
	assert_int_equal(e.min_rtt, 10);

	t_sim_default(&s, 77);
	s.drift_ppm = 200;
	t_run(&s, p, NPROBES, 3000000000ull);
	assert_int_equal(vt_tsync_estimate(p, NPROBES, NULL, &e), 0);
	assert_int_equal(vt_tsync_estimate_epoch(&e, &ep), 0);
	assert_int_equal(ep.flags, VT_TSYNC_EPOCH_DRIFT);
	assert_int_equal(ep.map.frac_bits, 48);
	for (i = 0; i < NPROBES; i++) {
		if (p[i].cpu != p[i].want_cpu)
			continue;
		/* the fitted map puts each probe's guest time inside [map(t1), map(t2)] */
		assert_int_equal(vt_tsc_host_to_guest(&ep.map, p[i].t1, &g), 0);
		if ((int64_t)(g - p[i].g) > worst)
			worst = (int64_t)(g - p[i].g);
		assert_int_equal(vt_tsc_host_to_guest(&ep.map, p[i].t2, &g), 0);
		if ((int64_t)(p[i].g - g) > worst)
			worst = (int64_t)(p[i].g - g);
	}
	print_message("drift epoch: probes outside the mapped [t1, t2] by at most %lld ticks "
		      "(bound %llu)\n", (long long)worst, (unsigned long long)e.bound);
	assert_true(worst <= (int64_t)e.bound + 2);
}

/* Every estimate above was checked: say how many. */
static void test_inside_count(void **state)
{
	print_message("true offset inside the reported bounds: %lu of %lu estimates\n",
		      inside_checks, inside_checks);
	assert_true(inside_checks >= NSEEDS * 2);
}

/* ---- epochs ---- */

static void test_epochs(void **state)
{
	struct vt_tsync_cpu c = { 0 };
	struct vt_tsync_epoch e = { .host_from = 100, .map = { -5, 1, 0 },
				    .source = VT_TSYNC_SRC_KVM };

	assert_int_equal(vt_tsync_cpu_update(&c, &e), 1);
	e.host_from = 200;
	assert_int_equal(vt_tsync_cpu_update(&c, &e), 0);	/* same value: same epoch */
	e.map.offset = -7;
	assert_int_equal(vt_tsync_cpu_update(&c, &e), 1);
	e.host_from = 150;
	assert_int_equal(vt_tsync_cpu_update(&c, &e), -EINVAL);
	e.host_from = 300;
	e.map = (struct vt_tsc_map){ -7, R48, 48 };
	assert_int_equal(vt_tsync_cpu_update(&c, &e), 1);
	assert_int_equal(c.nr, 3);
	assert_int_equal(vt_tsync_cpu_at(&c, 50)->map.offset, -5);
	assert_int_equal(vt_tsync_cpu_at(&c, 199)->map.offset, -5);
	assert_int_equal(vt_tsync_cpu_at(&c, 200)->map.offset, -7);
	assert_int_equal(vt_tsync_cpu_at(&c, 1000)->map.ratio, R48);
	e.map.ratio = 0;
	assert_int_equal(vt_tsync_cpu_update(&c, &e), -EINVAL);
	vt_tsync_cpu_free(&c);
	assert_null(vt_tsync_cpu_at(&c, 1));
}

/* ---- TIME_SHIFT tables ---- */

/* Exact host time by epoch, the guest-time rule trace-cmd follows. */
static uint64_t t_exact(const struct vt_tsync_epoch *ep, uint32_t nr, uint64_t g)
{
	uint64_t gs, h;
	uint32_t k, use = 0;

	for (k = 0; k < nr; k++) {
		assert_int_equal(vt_tsc_host_to_guest(&ep[k].map, ep[k].host_from, &gs), 0);
		if (gs <= g)
			use = k;
	}
	assert_int_equal(vt_tsc_guest_to_host(&ep[use].map, g, &h), 0);
	return h;
}

/* Every guest time in the range maps within max_error of the exact value. */
static uint64_t t_check_table(const struct vt_tsync_epoch *ep, uint32_t nr, uint64_t host_end,
			      bool interp, uint32_t *nsamples)
{
	struct vt_tsync_tshift ts;
	uint64_t g0, g1, g, h, x, err, worst = 0;
	uint32_t i;
	int k;

	assert_int_equal(vt_tsync_tshift_build(ep, nr, host_end, interp, &ts), 0);
	*nsamples = ts.nr;
	assert_true(ts.nr >= 2);
	for (i = 1; i < ts.nr; i++)
		assert_true(ts.times[i] > ts.times[i - 1] && ts.times[i - 1] >= 0);
	assert_int_equal(vt_tsc_host_to_guest(&ep[0].map, ep[0].host_from, &g0), 0);
	assert_int_equal(vt_tsc_host_to_guest(&ep[nr - 1].map, host_end, &g1), 0);
	for (k = 0; k < 200000; k++) {
		/* random points, and every sample time and its neighbours */
		if (k < 3 * (int)ts.nr)
			g = (uint64_t)ts.times[k / 3] + (k % 3) - 1;
		else
			g = g0 + t_rand() % (g1 - g0 + 1);
		if (g < g0 || g > g1)
			continue;
		x = t_exact(ep, nr, g);
		assert_int_equal(vt_tsync_tshift_apply(&ts, interp, g, &h), 0);
		err = h > x ? h - x : x - h;
		if (err > worst)
			worst = err;
		if (err > ts.max_error) {
			fprintf(stderr, "guest %llu: table %llu exact %llu (max_error %llu)\n",
				(unsigned long long)g, (unsigned long long)h,
				(unsigned long long)x, (unsigned long long)ts.max_error);
			fail();
		}
	}
	assert_true(ts.max_error <= 3);
	vt_tsync_tshift_free(&ts);
	return worst;
}

static void test_tshift(void **state)
{
	struct vt_tsync_epoch ep[3] = {
		{ .host_from = 2000000000000ull, .map = { -1234567890123, R48, 48 } },
		{ .host_from = 2003000000000ull, .map = { -1234567790123, R48, 48 } },
		{ .host_from = 2006000000000ull, .map = { -987654321, R32, 32 } },
	};
	struct vt_tsync_epoch plain[2] = {
		{ .host_from = 1000, .map = { -500, 1, 0 } },
		{ .host_from = 1000000, .map = { 700, 1ull << 48, 48 } },
	};
	struct vt_tsync_tshift ts;
	uint64_t worst, h;
	uint32_t n;

	t_rng_state = 99;
	/* unscaled epochs: exact, one sample each plus the closing one */
	worst = t_check_table(plain, 2, 2000000, false, &n);
	assert_int_equal(worst, 0);
	assert_int_equal(n, 3);
	worst = t_check_table(plain, 2, 2000000, true, &n);
	assert_int_equal(worst, 0);
	/* scaled 48-bit epoch, then a jump, then a 32-bit one */
	worst = t_check_table(ep, 1, 2009000000000ull, false, &n);
	print_message("48-bit scaled, 9e9 host ticks, steps: %u samples, worst error %llu\n", n,
		      (unsigned long long)worst);
	worst = t_check_table(ep, 3, 2009000000000ull, false, &n);
	print_message("3 epochs (48, jump, 32), steps: %u samples, worst error %llu\n", n,
		      (unsigned long long)worst);
	worst = t_check_table(ep, 3, 2009000000000ull, true, &n);
	print_message("3 epochs (48, jump, 32), interpolated: %u samples, worst error %llu\n",
		      n, (unsigned long long)worst);
	/* no epochs: the identity */
	assert_int_equal(vt_tsync_tshift_build(NULL, 0, 0, false, &ts), 0);
	assert_int_equal(vt_tsync_tshift_apply(&ts, false, 12345, &h), 0);
	assert_int_equal(h, 12345);
	vt_tsync_tshift_free(&ts);
	/* epochs out of order */
	ep[1].host_from = ep[0].host_from;
	assert_int_equal(vt_tsync_tshift_build(ep, 2, 2009000000000ull, false, &ts), -EINVAL);
}

/* trace-cmd's selection rule, on a hand-made table. */
static void test_tshift_apply_model(void **state)
{
	int64_t t[3] = { 100, 200, 300 }, o[3] = { 10, 20, 40 }, s[3] = { 1, 1, 1 },
		f[3] = { 0, 0, 0 };
	struct vt_tsync_tshift ts = { 3, t, o, s, f, 0 };
	uint64_t h;

	vt_tsync_tshift_apply(&ts, false, 50, &h);
	assert_int_equal(h, 60);	/* before the first: sample 0 */
	vt_tsync_tshift_apply(&ts, false, 199, &h);
	assert_int_equal(h, 209);
	vt_tsync_tshift_apply(&ts, false, 200, &h);
	assert_int_equal(h, 220);
	vt_tsync_tshift_apply(&ts, false, 1000, &h);
	assert_int_equal(h, 1020);	/* past the last: sample n-2 */
	vt_tsync_tshift_apply(&ts, true, 250, &h);
	assert_int_equal(h, 280);	/* 20 + (50 * 20 + 50) / 100 = 30 */
	vt_tsync_tshift_apply(&ts, true, 400, &h);
	assert_int_equal(h, 460);	/* extrapolated */
	ts.nr = 2;
	vt_tsync_tshift_apply(&ts, false, 1000, &h);
	assert_int_equal(h, 1010);	/* two samples: always the first */
	ts.nr = 1;
	s[0] = 2;
	vt_tsync_tshift_apply(&ts, false, 1000, &h);
	assert_int_equal(h, 1010);	/* one sample: scaling ignored */
}

/* ---- KVM debugfs ---- */

static char t_fixture[PATH_MAX];

static const char *t_data(const char *rel)
{
	const char *src = getenv("VT_SRCDIR");

	snprintf(t_fixture, sizeof(t_fixture), "%s/tests/data/kvm-debugfs/%s",
		 src ? src : "..", rel);
	return t_fixture;
}

static void test_debugfs_intel(void **state)
{
	struct vt_kvm_vcpu v[8];
	char dir[PATH_MAX];
	uint32_t nr;

	assert_int_equal(vt_kvm_find_vm(t_data("intel48"), 4242, dir, sizeof(dir)), 0);
	assert_non_null(strstr(dir, "/kvm/4242-11"));
	assert_int_equal(vt_kvm_read_vm(dir, v, 8, &nr), 0);
	assert_int_equal(nr, 3);
	assert_int_equal(v[0].id, 0);
	assert_int_equal(v[1].id, 1);
	assert_int_equal(v[2].id, 3);
	assert_true(v[0].has_scaling);
	assert_int_equal(v[0].map.offset, -1234567890123);
	assert_int_equal(v[1].map.offset, -1234567990123);
	assert_int_equal(v[2].map.ratio, R48);
	assert_int_equal(v[2].map.frac_bits, 48);
	assert_int_equal(vt_kvm_read_vcpu(dir, 2, &v[0]), -ENOENT);
	assert_int_equal(vt_kvm_read_vm(dir, v, 2, &nr), -ENOSPC);
	assert_int_equal(vt_kvm_find_vm(t_data("intel48"), 4243, dir, sizeof(dir)), 0);
	assert_int_equal(vt_kvm_read_vcpu(dir, 0, &v[0]), 0);
	assert_false(v[0].has_scaling);
	assert_int_equal(v[0].map.offset, 77);
	assert_int_equal(v[0].map.ratio, 1);
	assert_int_equal(vt_kvm_find_vm(t_data("intel48"), 424, dir, sizeof(dir)), -ENOENT);
	assert_int_equal(vt_kvm_find_vm(t_data("nothing"), 424, dir, sizeof(dir)), -ENOENT);
}

static void test_debugfs_amd(void **state)
{
	struct vt_kvm_vcpu v[8];
	char dir[PATH_MAX];
	uint32_t nr;

	assert_int_equal(vt_kvm_find_vm(t_data("amd32"), 777, dir, sizeof(dir)), 0);
	assert_int_equal(vt_kvm_read_vm(dir, v, 8, &nr), 0);
	assert_int_equal(nr, 2);
	assert_int_equal(v[1].id, 2);
	assert_int_equal(v[1].map.ratio, R32);
	assert_int_equal(v[1].map.frac_bits, 32);
	assert_int_equal(v[1].map.offset, -987654321);
}

static void t_write(const char *dir, const char *file, const char *s)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, s, strlen(s)), (ssize_t)strlen(s));
	close(fd);
}

/* A copy of the fixture, rewritten between reads: epochs follow the values. */
static void test_debugfs_change(void **state)
{
	char tmp[] = "/tmp/vt-tsync-XXXXXX", cmd[PATH_MAX * 2], dir[PATH_MAX], vc[PATH_MAX];
	struct vt_tsync_cpu cpus[4] = { 0 };
	struct vt_kvm_vcpu v[8];
	struct vt_tsync_epoch e;
	uint64_t host;
	uint32_t nr, i, round, opened[3] = { 0 };
	int ret;

	assert_non_null(mkdtemp(tmp));
	snprintf(cmd, sizeof(cmd), "cp -r '%s/kvm' '%s/'", t_data("intel48"), tmp);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(vt_kvm_find_vm(tmp, 4242, dir, sizeof(dir)), 0);
	snprintf(vc, sizeof(vc), "%s/vcpu1", dir);
	host = 3000000000000ull;
	for (round = 0; round < 3; round++, host += 1000000000) {
		if (round == 1)	/* a guest TSC write on vCPU 1 */
			t_write(vc, "tsc-offset", "-1234000000000\n");
		assert_int_equal(vt_kvm_read_vm(dir, v, 8, &nr), 0);
		assert_int_equal(nr, 3);
		for (i = 0; i < nr; i++) {
			e = (struct vt_tsync_epoch){ .host_from = host, .map = v[i].map,
						     .source = VT_TSYNC_SRC_KVM };
			ret = vt_tsync_cpu_update(&cpus[v[i].id], &e);
			assert_true(ret >= 0);
			opened[round] += ret;
		}
	}
	assert_int_equal(opened[0], 3);
	assert_int_equal(opened[1], 1);
	assert_int_equal(opened[2], 0);
	assert_int_equal(cpus[1].nr, 2);
	assert_int_equal(cpus[1].epochs[1].host_from, 3001000000000ull);
	assert_int_equal(cpus[1].epochs[1].map.offset, -1234000000000);
	assert_int_equal(cpus[0].nr, 1);
	assert_int_equal(cpus[2].nr, 0);
	assert_int_equal(cpus[3].nr, 1);

	/* hostile values are refused, the vCPU is not misread */
	static const char *const bad[] = { "", "12abc\n", "--5\n", "007\n",
		"99999999999999999999\n", "9223372036854775808\n", "1\n2\n",
		"123456789012345678901234567890123\n" };
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		t_write(vc, "tsc-offset", bad[i]);
		assert_int_equal(vt_kvm_read_vcpu(dir, 1, &v[0]), -EBADMSG);
	}
	t_write(vc, "tsc-offset", "-9223372036854775808\n");
	assert_int_equal(vt_kvm_read_vcpu(dir, 1, &v[0]), 0);
	assert_int_equal(v[0].map.offset, INT64_MIN);
	t_write(vc, "tsc-scaling-ratio-frac-bits", "64\n");
	assert_int_equal(vt_kvm_read_vcpu(dir, 1, &v[0]), -EBADMSG);
	t_write(vc, "tsc-scaling-ratio-frac-bits", "48\n");
	t_write(vc, "tsc-scaling-ratio", "0\n");
	assert_int_equal(vt_kvm_read_vcpu(dir, 1, &v[0]), -EBADMSG);
	snprintf(cmd, sizeof(cmd), "%s/tsc-scaling-ratio-frac-bits", vc);
	unlink(cmd);
	t_write(vc, "tsc-scaling-ratio", "281474976710656\n");
	assert_int_equal(vt_kvm_read_vcpu(dir, 1, &v[0]), -EBADMSG);

	for (i = 0; i < 4; i++)
		vt_tsync_cpu_free(&cpus[i]);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	assert_int_equal(system(cmd), 0);
}

/* ---- host TSC rate ---- */

static void test_tsc_rate(void **state)
{
	struct vt_tsc2nsec t = { 0 }, c = { 0 }, p = { 0 };
	uint64_t a, b;
	uint32_t cpu;
	int ret;

	assert_int_equal(vt_tsc2nsec_from_hz(&t, 3000000000ull), 0);
	assert_true(t.mult < (1u << 31) && t.shift <= 32);
	assert_true(vt_tsc2nsec_apply(&t, 3000000000ull) - 999999999 <= 2);
	assert_int_equal(vt_tsc2nsec_from_hz(&t, 1000000000ull), 0);
	assert_int_equal(t.shift, 30);	/* mult 2^31 and up would not fit an int */
	assert_int_equal(vt_tsc2nsec_apply(&t, 123456789), 123456789);
	assert_int_equal(vt_tsc2nsec_from_hz(&t, 10), -ERANGE);

	a = vt_tsc_read();
	b = vt_tsc_read();
	if (!a) {
		print_message("no TSC on this architecture\n");
		return;
	}
	assert_true(b > a);
	ret = vt_tsc_read_cpu(&a, &cpu);
	assert_true(ret == 0 || ret == -EAGAIN);

	assert_int_equal(vt_tsc2nsec_calibrate(&c, 100), 0);
	assert_int_equal(c.method, VT_TSC_RATE_CALIBRATED);
	ret = vt_tsc2nsec_from_perf(&p);
	print_message("calibrated %llu Hz (mult %u shift %u); perf: %s%s%llu Hz\n",
		      (unsigned long long)c.hz, c.mult, c.shift, ret ? strerror(-ret) : "",
		      ret ? ", " : "", (unsigned long long)p.hz);
	if (ret == 0) {
		assert_int_equal(p.method, VT_TSC_RATE_PERF);
		assert_true(fabs((double)p.hz / (double)c.hz - 1) < 1e-3);
	}
	assert_int_equal(vt_tsc2nsec_get(&t, 50), 0);
	assert_true(t.method == VT_TSC_RATE_PERF || t.method == VT_TSC_RATE_CALIBRATED ||
		    t.method == VT_TSC_RATE_BOOT);
	print_message("host TSC rate method: %s\n", vt_tsc_rate_method_name(t.method));
}

static void put_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void get_file(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
}

/*
 * Two recordings on one boot convert the TSC alike: the first measures and
 * keeps the rate, the next takes it (a migration's source and destination
 * on one host disagreed by 60 ppb of the uptime, 0.4 ms, before). A link,
 * another boot's rate, junk or a directory others may write are not used.
 */
static void test_tsc_rate_boot(void **state)
{
	char dir[] = "/tmp/vt-tscrate.XXXXXX", file[96], victim[96], text[160], boot[64], want[160];
	struct vt_tsc2nsec a, b, c;
	struct stat st;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/tsc-rate", dir);
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	f = fopen("/proc/sys/kernel/random/boot_id", "r");
	assert_non_null(f);
	assert_non_null(fgets(boot, sizeof(boot), f));
	fclose(f);
	boot[strcspn(boot, "\n")] = '\0';

	/* The first measures and keeps; the second takes the very same numbers. */
	assert_int_equal(vt_tsc2nsec_boot(&a, 20, dir), 0);
	assert_int_equal(a.method, VT_TSC_RATE_BOOT);
	snprintf(want, sizeof(want), "vt-tsc-rate 1 %s %u %u\n", boot, a.mult, a.shift);
	get_file(file, text, sizeof(text));
	assert_string_equal(text, want);
	assert_int_equal(lstat(file, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	assert_int_equal(vt_tsc2nsec_boot(&b, 5, dir), 0);
	assert_int_equal(b.method, VT_TSC_RATE_BOOT);
	assert_int_equal(b.hz, a.hz);
	assert_int_equal(b.mult, a.mult);
	assert_int_equal(b.shift, a.shift);

	/* Another boot's rate is measured again and replaced. */
	put_file(file, "vt-tsc-rate 1 another-boot 2147483648 31\n");
	assert_int_equal(vt_tsc2nsec_boot(&c, 20, dir), 0);
	assert_int_equal(c.method, VT_TSC_RATE_BOOT);
	assert_true(c.hz != 1000000000ull);
	snprintf(want, sizeof(want), "vt-tsc-rate 1 %s %u %u\n", boot, c.mult, c.shift);
	get_file(file, text, sizeof(text));
	assert_string_equal(text, want);

	/* Junk, and an absurd rate: replaced. */
	put_file(file, "vt-tsc-rate 1 x\n");
	assert_int_equal(vt_tsc2nsec_boot(&c, 20, dir), 0);
	assert_int_equal(c.method, VT_TSC_RATE_BOOT);
	snprintf(text, sizeof(text), "vt-tsc-rate 1 %s 7 63\n", boot);
	put_file(file, text);
	assert_int_equal(vt_tsc2nsec_boot(&c, 20, dir), 0);
	assert_int_equal(c.method, VT_TSC_RATE_BOOT);
	assert_true(c.hz > 1000000);

	/* A link is neither read nor written through: this run measures, keeps nothing. */
	snprintf(want, sizeof(want), "vt-tsc-rate 1 %s 2147483648 31\n", boot);
	put_file(victim, want);
	assert_int_equal(unlink(file), 0);
	assert_int_equal(symlink("victim", file), 0);
	assert_int_equal(vt_tsc2nsec_boot(&c, 20, dir), 0);
	assert_int_equal(c.method, VT_TSC_RATE_CALIBRATED);
	assert_true(c.hz != 1000000000ull);
	get_file(victim, text, sizeof(text));
	assert_string_equal(text, want);
	assert_int_equal(lstat(file, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(unlink(file), 0);

	/* A directory others may write: not trusted. */
	put_file(file, want);
	assert_int_equal(chmod(dir, 0777), 0);
	assert_int_equal(vt_tsc2nsec_boot(&c, 20, dir), 0);
	assert_int_equal(c.method, VT_TSC_RATE_CALIBRATED);
	assert_true(c.hz != 1000000000ull);

	assert_int_equal(unlink(file), 0);
	assert_int_equal(unlink(victim), 0);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kvm_formula),
		cmocka_unit_test(test_kvm_round_trip),
		cmocka_unit_test(test_sim_constant),
		cmocka_unit_test(test_sim_drift),
		cmocka_unit_test(test_sim_bound_vs_rtt),
		cmocka_unit_test(test_sim_jump),
		cmocka_unit_test(test_estimate_edges),
		cmocka_unit_test(test_inside_count),
		cmocka_unit_test(test_epochs),
		cmocka_unit_test(test_tshift),
		cmocka_unit_test(test_tshift_apply_model),
		cmocka_unit_test(test_debugfs_intel),
		cmocka_unit_test(test_debugfs_amd),
		cmocka_unit_test(test_debugfs_change),
		cmocka_unit_test(test_tsc_rate),
		cmocka_unit_test(test_tsc_rate_boot),
	};

	printf("tsync: KVM formula and inverse, probe estimator bounds hold on a clock "
	       "simulator, TIME_SHIFT tables, KVM debugfs fixtures, TSC rate\n");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
