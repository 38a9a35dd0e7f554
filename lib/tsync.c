// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Guest/host clock models. See vt_tsync.h for the conventions.
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
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "vt_tsync.h"

typedef unsigned __int128 vt_u128;
typedef __int128 vt_s128;

#define U64_LIMIT	((vt_s128)UINT64_MAX)

/* ---- the KVM formula ---- */

/**
 * vt_tsc_map_valid() - is a mapping usable
 * @m: the mapping
 *
 * Return: true when @m->ratio is non-zero and @m->frac_bits at most
 * VT_TSC_FRAC_MAX.
 */
bool vt_tsc_map_valid(const struct vt_tsc_map *m)
{
	return m && m->ratio && m->frac_bits <= VT_TSC_FRAC_MAX;
}

/**
 * vt_tsc_map_scaled() - does a mapping scale the TSC
 * @m: a valid mapping
 *
 * Return: false when @m->ratio is exactly 1 << @m->frac_bits.
 */
bool vt_tsc_map_scaled(const struct vt_tsc_map *m)
{
	return m->ratio != (1ull << m->frac_bits);
}

/**
 * vt_tsc_map_equal() - do two mappings compute the same function
 * @a: a valid mapping
 * @b: another
 *
 * Unscaled mappings compare equal whatever their frac bits.
 *
 * Return: true when they are the same.
 */
bool vt_tsc_map_equal(const struct vt_tsc_map *a, const struct vt_tsc_map *b)
{
	if (a->offset != b->offset)
		return false;
	if (!vt_tsc_map_scaled(a) && !vt_tsc_map_scaled(b))
		return true;
	return a->ratio == b->ratio && a->frac_bits == b->frac_bits;
}

/**
 * vt_tsc_host_to_guest() - KVM's formula
 * @m: the mapping
 * @host: host TSC
 * @guest: set to ((@host * ratio) >> frac_bits) + offset
 *
 * The product is exact (128 bits) and the shift rounds down, as KVM's
 * kvm_scale_tsc() does.
 *
 * Return: 0, -EINVAL for an invalid mapping, -ERANGE when the result is
 * outside [0, 2^64) (KVM would wrap; a guest never traces such a value).
 */
int vt_tsc_host_to_guest(const struct vt_tsc_map *m, uint64_t host, uint64_t *guest)
{
	vt_u128 p;
	vt_s128 g;

	if (!vt_tsc_map_valid(m))
		return -EINVAL;
	p = ((vt_u128)host * m->ratio) >> m->frac_bits;
	if (p > UINT64_MAX)
		return -ERANGE;
	g = (vt_s128)p + m->offset;
	if (g < 0 || g > U64_LIMIT)
		return -ERANGE;
	*guest = (uint64_t)g;
	return 0;
}

/*
 * ceil((guest - offset) * 2^frac / ratio) in 128 bits: x < 2^65 and
 * frac <= 63 keep the product below 2^128.
 */
static int tsc_inverse(const struct vt_tsc_map *m, vt_s128 guest, vt_u128 *host)
{
	vt_s128 x = guest - m->offset;
	vt_u128 num, q;

	if (x < 0)
		return -ERANGE;
	num = (vt_u128)x << m->frac_bits;
	q = num / m->ratio;
	if (num % m->ratio)
		q++;
	*host = q;
	return 0;
}

/**
 * vt_tsc_guest_to_host() - the exact inverse of vt_tsc_host_to_guest()
 * @m: the mapping
 * @guest: guest TSC
 * @host: set to the smallest host TSC whose guest TSC is >= @guest, that is
 *	ceil((@guest - offset) * 2^frac_bits / ratio)
 *
 * Rounding: host_to_guest(guest_to_host(g)) == g for every g the guest can
 * read; when the guest clock runs slower than the host's (ratio below
 * 1 << frac_bits) several host ticks share one guest tick and the first one
 * is returned, so guest_to_host(host_to_guest(h)) <= h and the difference
 * is below 2^frac_bits / ratio.
 *
 * Return: 0, -EINVAL for an invalid mapping, -ERANGE when the host time
 * would be negative or above 2^64 - 1.
 */
int vt_tsc_guest_to_host(const struct vt_tsc_map *m, uint64_t guest, uint64_t *host)
{
	vt_u128 h;
	int ret;

	if (!vt_tsc_map_valid(m))
		return -EINVAL;
	ret = tsc_inverse(m, guest, &h);
	if (ret < 0)
		return ret;
	if (h > UINT64_MAX)
		return -ERANGE;
	*host = (uint64_t)h;
	return 0;
}

/* ---- epochs ---- */

/**
 * vt_tsync_source_name() - a word for a source, for manifests and logs
 * @s: the source
 *
 * Return: a static string.
 */
const char *vt_tsync_source_name(enum vt_tsync_source s)
{
	switch (s) {
	case VT_TSYNC_SRC_KVM:
		return "kvm-debugfs";
	case VT_TSYNC_SRC_PROBE:
		return "probes";
	case VT_TSYNC_SRC_USER:
		return "user";
	default:
		return "none";
	}
}

/**
 * vt_tsync_cpu_update() - record what a vCPU's mapping is from some host time
 * @c: the vCPU's epochs
 * @e: the mapping read or estimated, with @e->host_from set to when it was
 *	seen (for KVM debugfs: the host TSC just before the read)
 *
 * A new epoch is opened only when the mapping, source or flags differ from
 * the last epoch's; an epoch starting at the same host time replaces it.
 *
 * Return: 1 when a new epoch was opened, 0 when the last one still holds,
 * -EINVAL for an invalid mapping or a time before the last epoch, -ENOSPC
 * past VT_TSYNC_MAX_EPOCHS, -ENOMEM.
 */
int vt_tsync_cpu_update(struct vt_tsync_cpu *c, const struct vt_tsync_epoch *e)
{
	struct vt_tsync_epoch *last = c->nr ? &c->epochs[c->nr - 1] : NULL;
	struct vt_tsync_epoch *p;
	uint32_t cap;

	if (!vt_tsc_map_valid(&e->map))
		return -EINVAL;
	if (last) {
		if (e->host_from < last->host_from)
			return -EINVAL;
		if (vt_tsc_map_equal(&last->map, &e->map) && last->source == e->source &&
		    last->flags == e->flags) {
			if (e->error < last->error)
				last->error = e->error;
			return 0;
		}
		if (e->host_from == last->host_from) {
			*last = *e;
			return 1;
		}
	}
	if (c->nr >= VT_TSYNC_MAX_EPOCHS)
		return -ENOSPC;
	if (c->nr == c->cap) {
		cap = c->cap ? c->cap * 2 : 4;
		p = realloc(c->epochs, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		c->epochs = p;
		c->cap = cap;
	}
	c->epochs[c->nr++] = *e;
	return 1;
}

/**
 * vt_tsync_cpu_at() - the epoch that holds at a host time
 * @c: the vCPU's epochs
 * @host: host TSC
 *
 * The first epoch also answers for times before it.
 *
 * Return: the epoch, NULL when there is none.
 */
const struct vt_tsync_epoch *vt_tsync_cpu_at(const struct vt_tsync_cpu *c, uint64_t host)
{
	uint32_t lo = 0, hi, mid;

	if (!c->nr)
		return NULL;
	hi = c->nr;
	while (hi - lo > 1) {
		mid = lo + (hi - lo) / 2;
		if (c->epochs[mid].host_from <= host)
			lo = mid;
		else
			hi = mid;
	}
	return &c->epochs[lo];
}

/**
 * vt_tsync_cpu_free() - release a vCPU's epochs
 * @c: the epochs; left empty and reusable
 */
void vt_tsync_cpu_free(struct vt_tsync_cpu *c)
{
	free(c->epochs);
	c->epochs = NULL;
	c->nr = c->cap = 0;
}

/* ---- KVM debugfs ---- */

/* A decimal number with no sign, no leading zeros, nothing after but "\n". */
static int parse_dec(const char *s, bool neg_ok, bool *neg, uint64_t *v)
{
	uint64_t x = 0;
	const char *p = s;

	*neg = false;
	if (*p == '-' && neg_ok) {
		*neg = true;
		p++;
	}
	if (*p < '0' || *p > '9' || (p[0] == '0' && p[1] >= '0' && p[1] <= '9'))
		return -EBADMSG;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (x > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return -EBADMSG;
		x = x * 10 + (uint64_t)(*p - '0');
	}
	if (*p == '\n')
		p++;
	if (*p)
		return -EBADMSG;
	*v = x;
	return 0;
}

/* Read a small debugfs value file: at most 31 bytes, then parse. */
static int read_value(const char *dir, const char *name, bool neg_ok, bool *neg,
		      uint64_t *v)
{
	char path[PATH_MAX], buf[32];
	size_t have = 0;
	ssize_t n;
	int fd, ret = 0;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	while (have < sizeof(buf)) {
		n = read(fd, buf + have, sizeof(buf) - have);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			goto err_close_fd;
		}
		if (!n)
			break;
		have += n;
	}
	if (have == sizeof(buf) || !have) {
		ret = -EBADMSG;
		goto err_close_fd;
	}
	buf[have] = '\0';
	if (memchr(buf, '\0', have)) {
		ret = -EBADMSG;
		goto err_close_fd;
	}
	ret = parse_dec(buf, neg_ok, neg, v);
err_close_fd:
	close(fd);
	return ret;
}

/**
 * vt_kvm_find_vm() - find a QEMU process's KVM debugfs directory
 * @debugfs: debugfs root (normally /sys/kernel/debug; tests pass a fixture)
 * @pid: the QEMU process
 * @dir: set to "<debugfs>/kvm/<pid>-<fd>"
 * @len: size of @dir
 *
 * Return: 0, -ENOENT when there is none, -EEXIST when the process has more
 * than one VM, -ENAMETOOLONG, or -errno from opendir().
 */
int vt_kvm_find_vm(const char *debugfs, pid_t pid, char *dir, size_t len)
{
	char kvm[PATH_MAX], prefix[32], found[NAME_MAX + 1] = "";
	struct dirent *d;
	size_t plen;
	DIR *dp;
	int ret = 0;

	if (pid <= 0 || !debugfs || !dir)
		return -EINVAL;
	if ((size_t)snprintf(kvm, sizeof(kvm), "%s/kvm", debugfs) >= sizeof(kvm))
		return -ENAMETOOLONG;
	plen = snprintf(prefix, sizeof(prefix), "%d-", (int)pid);
	dp = opendir(kvm);
	if (!dp)
		return -errno;
	while ((d = readdir(dp))) {
		const char *p = d->d_name + plen;

		if (strncmp(d->d_name, prefix, plen) || !*p)
			continue;
		while (*p >= '0' && *p <= '9')
			p++;
		if (*p)
			continue;
		if (found[0]) {
			ret = -EEXIST;
			goto err_closedir;
		}
		snprintf(found, sizeof(found), "%s", d->d_name);
	}
	if (!found[0]) {
		ret = -ENOENT;
		goto err_closedir;
	}
	if ((size_t)snprintf(dir, len, "%s/%s", kvm, found) >= len)
		ret = -ENAMETOOLONG;
err_closedir:
	closedir(dp);
	return ret;
}

/**
 * vt_kvm_read_vcpu() - read one vCPU's TSC mapping
 * @vmdir: the directory vt_kvm_find_vm() found
 * @id: the vCPU
 * @v: filled in; without scaling files the ratio is 1 and frac bits 0
 *
 * tsc-offset is signed; tsc-scaling-ratio must be non-zero and
 * tsc-scaling-ratio-frac-bits at most 63, and one without the other is an
 * error.
 *
 * Return: 0, -ENOENT when the vCPU does not exist, -EBADMSG for a value that
 * does not parse or is out of range, or -errno.
 */
int vt_kvm_read_vcpu(const char *vmdir, uint32_t id, struct vt_kvm_vcpu *v)
{
	char dir[PATH_MAX];
	uint64_t off, ratio, frac;
	bool neg;
	int ret, ret2;

	if (id >= VT_KVM_MAX_VCPUS)
		return -EINVAL;
	if ((size_t)snprintf(dir, sizeof(dir), "%s/vcpu%u", vmdir, id) >= sizeof(dir))
		return -ENAMETOOLONG;
	ret = read_value(dir, "tsc-offset", true, &neg, &off);
	if (ret < 0)
		return ret;
	if ((!neg && off > INT64_MAX) || (neg && off > (uint64_t)INT64_MAX + 1))
		return -EBADMSG;
	memset(v, 0, sizeof(*v));
	v->id = id;
	v->map.offset = neg ? (int64_t)(0 - off) : (int64_t)off;
	v->map.ratio = 1;
	ret = read_value(dir, "tsc-scaling-ratio", false, &neg, &ratio);
	ret2 = read_value(dir, "tsc-scaling-ratio-frac-bits", false, &neg, &frac);
	if (ret == -ENOENT && ret2 == -ENOENT)
		return 0;
	if (ret < 0 || ret2 < 0)
		return ret == -ENOENT || ret2 == -ENOENT ? -EBADMSG : (ret < 0 ? ret : ret2);
	if (!ratio || frac > VT_TSC_FRAC_MAX)
		return -EBADMSG;
	v->map.ratio = ratio;
	v->map.frac_bits = frac;
	v->has_scaling = true;
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* "vcpuN" with N decimal, no leading zeros, below VT_KVM_MAX_VCPUS. */
static bool vcpu_name(const char *name, uint32_t *id)
{
	uint64_t v;
	bool neg;

	if (strncmp(name, "vcpu", 4) || parse_dec(name + 4, false, &neg, &v) < 0 ||
	    strchr(name, '\n') || v >= VT_KVM_MAX_VCPUS)
		return false;
	*id = v;
	return true;
}

/**
 * vt_kvm_read_vm() - read every vCPU of a VM
 * @vmdir: the directory vt_kvm_find_vm() found
 * @v: filled in, by increasing vCPU id (ids may have gaps)
 * @max: entries in @v
 * @nr: set to the number filled in
 *
 * A vCPU directory that disappears between the listing and the read is
 * skipped (hot unplug).
 *
 * Return: 0, -ENOSPC when more than @max vCPUs exist, or as
 * vt_kvm_read_vcpu().
 */
int vt_kvm_read_vm(const char *vmdir, struct vt_kvm_vcpu *v, uint32_t max, uint32_t *nr)
{
	uint32_t *ids, n = 0, i, id;
	struct dirent *d;
	DIR *dp;
	int ret = 0;

	*nr = 0;
	ids = malloc(VT_KVM_MAX_VCPUS * sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	dp = opendir(vmdir);
	if (!dp) {
		ret = -errno;
		goto err_free_ids;
	}
	while ((d = readdir(dp))) {
		if (!vcpu_name(d->d_name, &id))
			continue;
		if (n == VT_KVM_MAX_VCPUS || n == max) {
			ret = -ENOSPC;
			goto err_closedir;
		}
		ids[n++] = id;
	}
	qsort(ids, n, sizeof(*ids), cmp_u32);
	for (i = 0; i < n; i++) {
		ret = vt_kvm_read_vcpu(vmdir, ids[i], &v[*nr]);
		if (ret == -ENOENT) {
			ret = 0;
			continue;
		}
		if (ret < 0)
			break;
		(*nr)++;
	}
err_closedir:
	closedir(dp);
err_free_ids:
	free(ids);
	return ret;
}

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
	int ret = tsc_inverse(m, g, &u);

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

/* ---- host TSC rate ---- */

/**
 * vt_tsc_rate_method_name() - a word for the manifest
 * @m: the method
 *
 * Return: "perf", "calibrated" or "none".
 */
const char *vt_tsc_rate_method_name(enum vt_tsc_rate_method m)
{
	switch (m) {
	case VT_TSC_RATE_PERF:
		return "perf";
	case VT_TSC_RATE_CALIBRATED:
		return "calibrated";
	default:
		return "none";
	}
}

/* trace-cmd reads mult as an int and needs shift <= 32. */
static int tsc2nsec_fit(struct vt_tsc2nsec *t, uint64_t mult, uint32_t shift)
{
	while (shift > 32 || mult >= (1ull << 31)) {
		if (!shift)
			return -ERANGE;
		mult = (mult + 1) >> 1;
		shift--;
	}
	if (!mult)
		return -ERANGE;
	t->mult = (uint32_t)mult;
	t->shift = shift;
	t->offset = 0;
	t->hz = (uint64_t)(((vt_u128)1000000000 << shift) / mult);
	return 0;
}

/**
 * vt_tsc2nsec_from_hz() - TSC2NSEC numbers for a known rate
 * @t: filled in (method left as it was)
 * @hz: TSC ticks per second, 1 MHz to 100 GHz
 *
 * Picks the largest shift <= 32 that keeps mult below 2^31.
 *
 * Return: 0, -ERANGE.
 */
int vt_tsc2nsec_from_hz(struct vt_tsc2nsec *t, uint64_t hz)
{
	vt_u128 mult;

	if (hz < 1000000 || hz > 100000000000ull)
		return -ERANGE;
	mult = (((vt_u128)1000000000 << 32) + hz / 2) / hz;
	return tsc2nsec_fit(t, (uint64_t)mult, 32);
}

/**
 * vt_tsc2nsec_from_perf() - the kernel's TSC rate, from a perf mmap page
 * @t: filled in, method VT_TSC_RATE_PERF
 *
 * Opens a software event on this thread, maps its first page and reads
 * time_mult and time_shift under the page's seqlock; reduces them to what
 * trace-cmd can use (mult < 2^31, shift <= 32).
 *
 * Return: 0, -EOPNOTSUPP when the page does not offer cap_user_time, or
 * -errno from perf_event_open() (a locked-down kernel says EACCES/EPERM).
 */
int vt_tsc2nsec_from_perf(struct vt_tsc2nsec *t)
{
	struct perf_event_attr attr;
	volatile struct perf_event_mmap_page *pc;
	uint32_t seq, mult = 0, shift = 0;
	bool cap = false;
	long psz = sysconf(_SC_PAGESIZE);
	void *map;
	int fd, ret, tries;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.disabled = 1;
	attr.exclude_kernel = 1;
	attr.exclude_hv = 1;
	fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	map = mmap(NULL, psz, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		ret = -errno;
		goto err_close_fd;
	}
	pc = map;
	for (tries = 0; tries < 1000; tries++) {
		seq = pc->lock;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		cap = pc->cap_user_time;
		mult = pc->time_mult;
		shift = pc->time_shift;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (pc->lock == seq && !(seq & 1))
			break;
	}
	ret = tries == 1000 ? -EAGAIN : (cap && mult ? 0 : -EOPNOTSUPP);
	if (ret == 0)
		ret = tsc2nsec_fit(t, mult, shift);
	if (ret == 0)
		t->method = VT_TSC_RATE_PERF;
	munmap(map, psz);
err_close_fd:
	close(fd);
	return ret;
}

static uint64_t ts_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec;
}

/* A CLOCK_MONOTONIC_RAW reading and the TSC at it (best of a few brackets). */
static int tsc_pair(uint64_t *tsc, uint64_t *ns)
{
	uint64_t a, b, best = UINT64_MAX;
	struct timespec now;
	int i;

	for (i = 0; i < 16; i++) {
		a = vt_tsc_read();
		if (clock_gettime(CLOCK_MONOTONIC_RAW, &now) < 0)
			return -errno;
		b = vt_tsc_read();
		if (b - a < best) {
			best = b - a;
			*tsc = a + (b - a) / 2;
			*ns = ts_ns(&now);
		}
	}
	return best == UINT64_MAX || !*tsc ? -EOPNOTSUPP : 0;
}

/**
 * vt_tsc2nsec_calibrate() - measure the TSC rate against CLOCK_MONOTONIC_RAW
 * @t: filled in, method VT_TSC_RATE_CALIBRATED
 * @ms: how long to measure (100 gives about 1 ppm)
 *
 * Return: 0, -EINVAL for @ms 0, -EOPNOTSUPP without a TSC, -ERANGE for an
 * absurd rate, or -errno.
 */
int vt_tsc2nsec_calibrate(struct vt_tsc2nsec *t, unsigned int ms)
{
	struct timespec d = { ms / 1000, (long)(ms % 1000) * 1000000L };
	uint64_t t0, n0, t1, n1;
	vt_u128 hz;
	int ret;

	if (!ms)
		return -EINVAL;
	ret = tsc_pair(&t0, &n0);
	if (ret < 0)
		return ret;
	while (nanosleep(&d, &d) < 0)
		if (errno != EINTR)
			return -errno;
	ret = tsc_pair(&t1, &n1);
	if (ret < 0)
		return ret;
	if (n1 <= n0 || t1 <= t0)
		return -ERANGE;
	hz = ((vt_u128)(t1 - t0) * 1000000000u + (n1 - n0) / 2) / (n1 - n0);
	if (hz > UINT64_MAX)
		return -ERANGE;
	ret = vt_tsc2nsec_from_hz(t, (uint64_t)hz);
	if (ret == 0)
		t->method = VT_TSC_RATE_CALIBRATED;
	return ret;
}

/**
 * vt_tsc2nsec_get() - the host TSC rate, perf first, else calibrated
 * @t: filled in; @t->method says which
 * @calibrate_ms: measuring time if perf is refused
 *
 * Return: 0, or as vt_tsc2nsec_calibrate().
 */
int vt_tsc2nsec_get(struct vt_tsc2nsec *t, unsigned int calibrate_ms)
{
	memset(t, 0, sizeof(*t));
	if (vt_tsc2nsec_from_perf(t) == 0)
		return 0;
	return vt_tsc2nsec_calibrate(t, calibrate_ms);
}

/**
 * vt_tsc2nsec_apply() - nanoseconds for a TSC value, as trace-cmd computes them
 * @t: the conversion
 * @tsc: ticks
 *
 * Return: (@tsc * mult) >> shift, exact (trace-cmd's mul_u64_u32_shr() is
 * exact for shift <= 32), truncated to 64 bits.
 */
uint64_t vt_tsc2nsec_apply(const struct vt_tsc2nsec *t, uint64_t tsc)
{
	return (uint64_t)(((vt_u128)tsc * t->mult) >> t->shift);
}

/* ---- reading the TSC ---- */

#if defined(__x86_64__) || defined(__i386__)
static uint64_t arch_rdtsc(void)
{
	uint32_t lo, hi;

	/* lfence before: earlier loads done; after: later ones not started */
	__asm__ __volatile__("lfence; rdtsc; lfence" : "=a"(lo), "=d"(hi) : : "memory");
	return ((uint64_t)hi << 32) | lo;
}

static bool arch_has_rdtscp(void)
{
	unsigned int a, b, c, d;

	return __get_cpuid(0x80000001, &a, &b, &c, &d) && (d & (1u << 27));
}

static uint64_t arch_rdtscp(uint32_t *aux)
{
	uint32_t lo, hi, c;

	__asm__ __volatile__("rdtscp; lfence" : "=a"(lo), "=d"(hi), "=c"(c) : : "memory");
	*aux = c;
	return ((uint64_t)hi << 32) | lo;
}
#else
static uint64_t arch_rdtsc(void)
{
	return 0;
}

static bool arch_has_rdtscp(void)
{
	return false;
}

static uint64_t arch_rdtscp(uint32_t *aux)
{
	*aux = 0;
	return 0;
}
#endif

/**
 * vt_tsc_read() - read the TSC, ordered against the loads and stores around it
 *
 * lfence; rdtsc; lfence: the read happens after everything before it and
 * before everything after it, which the probe loop needs for t1 <= h <= t2.
 *
 * Return: the TSC, 0 on an architecture without one.
 */
uint64_t vt_tsc_read(void)
{
	return arch_rdtsc();
}

/**
 * vt_tsc_read_cpu() - read the TSC and the CPU it was read on
 * @tsc: set to the TSC (read as vt_tsc_read() does)
 * @cpu: set to the CPU
 *
 * With rdtscp the CPU comes from TSC_AUX (Linux stores the CPU number in its
 * low 12 bits); without it, sched_getcpu() before and after must agree.
 *
 * Return: 0, -EAGAIN when the thread moved during the read, -EOPNOTSUPP
 * without a TSC.
 */
int vt_tsc_read_cpu(uint64_t *tsc, uint32_t *cpu)
{
	int before, after;
	uint32_t aux;

	if (arch_has_rdtscp()) {
		*tsc = arch_rdtscp(&aux);
		*cpu = aux & 0xfff;
		return *tsc ? 0 : -EOPNOTSUPP;
	}
	before = sched_getcpu();
	*tsc = arch_rdtsc();
	after = sched_getcpu();
	if (before < 0 || before != after)
		return -EAGAIN;
	*cpu = (uint32_t)before;
	return *tsc ? 0 : -EOPNOTSUPP;
}
