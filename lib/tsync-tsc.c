// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The host TSC in lib/: reading it (with the CPU it was read on), and the
 * TSC2NSEC arithmetic trace-cmd applies. Finding the host's rate (perf,
 * calibration) is host-only I/O and lives in host-collector/tscrate.c.
 */
#include <errno.h>
#include <sched.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "vt_tsync.h"
#include "tsync-int.h"

/* ---- TSC2NSEC ---- */

/**
 * vt_tsc2nsec_fit() - TSC2NSEC numbers from a multiplier and a shift
 * @t: filled in (method left as it was)
 * @mult: ns = (tsc * @mult) >> @shift, any size
 * @shift: any
 *
 * trace-cmd reads mult as an int and needs shift <= 32: halves @mult and
 * lowers @shift until both fit.
 *
 * Return: 0, -ERANGE when they cannot be made to fit.
 */
int vt_tsc2nsec_fit(struct vt_tsc2nsec *t, uint64_t mult, uint32_t shift)
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
	return vt_tsc2nsec_fit(t, (uint64_t)mult, 32);
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
