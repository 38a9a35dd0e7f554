// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The KVM TSC formula and its exact inverse (struct vt_tsc_map), and the
 * per-vCPU list of epochs that says which mapping holds from which host
 * time (struct vt_tsync_cpu). See vt_tsync.h for the conventions.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vt_tsync.h"
#include "tsync-int.h"
#include "vt_grow.h"

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

/**
 * vt_tsc_inverse() - the exact inverse of a mapping, in 128 bits (lib-private)
 * @m: a valid mapping (not checked here)
 * @guest: the guest TSC, may lie outside 64 bits
 * @host: set to ceil((@guest - offset) * 2^frac / ratio)
 *
 * x < 2^65 and frac <= 63 keep the product below 2^128.
 *
 * Return: 0, -ERANGE when @guest lies below the offset.
 */
int vt_tsc_inverse(const struct vt_tsc_map *m, vt_s128 guest, vt_u128 *host)
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
	ret = vt_tsc_inverse(m, guest, &h);
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
	case VT_TSYNC_SRC_KVM_EVENT:
		return "kvm-event";
	default:
		return "none";
	}
}

/* Room for one more epoch. */
static int cpu_grow(struct vt_tsync_cpu *c)
{
	size_t cap = c->cap;
	int ret;

	if (c->nr >= VT_TSYNC_MAX_EPOCHS)
		return -ENOSPC;
	ret = vt_grow_max((void **)&c->epochs, &cap, c->nr + 1, sizeof(*c->epochs),
			  VT_TSYNC_MAX_EPOCHS);
	c->cap = cap;
	return ret;
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
	int ret;

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
	ret = cpu_grow(c);
	if (ret < 0)
		return ret;
	c->epochs[c->nr++] = *e;
	return 1;
}

/**
 * vt_tsync_cpu_insert() - put an epoch in its place by host time
 * @c: the vCPU's epochs
 * @e: the epoch; it may start before the last one (a change read late)
 *
 * For changes observed with their exact moment, which may reach the
 * collector out of order. An epoch starting at the same host time as one
 * already there replaces it; one whose mapping equals the epoch before it
 * adds nothing (a write of the value already in force) and is dropped.
 *
 * Return: the index of the epoch (where it went, or the one before it that
 * already said the same), -EINVAL for an invalid mapping, -ENOSPC past
 * VT_TSYNC_MAX_EPOCHS, -ENOMEM.
 */
int vt_tsync_cpu_insert(struct vt_tsync_cpu *c, const struct vt_tsync_epoch *e)
{
	uint32_t lo = 0, hi = c->nr, mid;
	int ret;

	if (!vt_tsc_map_valid(&e->map))
		return -EINVAL;
	/* lo: the first epoch starting after e */
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (c->epochs[mid].host_from <= e->host_from)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && c->epochs[lo - 1].host_from == e->host_from) {
		c->epochs[lo - 1] = *e;
		return (int)(lo - 1);
	}
	if (lo && vt_tsc_map_equal(&c->epochs[lo - 1].map, &e->map))
		return (int)(lo - 1);
	ret = cpu_grow(c);
	if (ret < 0)
		return ret;
	memmove(&c->epochs[lo + 1], &c->epochs[lo], (c->nr - lo) * sizeof(*e));
	c->epochs[lo] = *e;
	c->nr++;
	return (int)lo;
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
 * vt_tsync_cpu_until() - how many epochs a recording that ends at @host_end uses
 * @c: the vCPU's epochs
 * @host_end: the last host time the trace covers
 *
 * Epochs that start after it (a guest reset while the recording ended)
 * map no event of the trace, and their guest times may overlap the earlier
 * ones': they are left out of the trace's mapping.
 *
 * Return: the epochs starting at or before @host_end, and at least the
 * first when there is one (it answers for earlier times).
 */
uint32_t vt_tsync_cpu_until(const struct vt_tsync_cpu *c, uint64_t host_end)
{
	uint32_t lo = 0, hi = c->nr, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (c->epochs[mid].host_from <= host_end)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo : (c->nr ? 1 : 0);
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
