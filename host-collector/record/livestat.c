// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * record --live-stat: a table per second of host time, a row per guest and
 * vCPU, like kvm_stat and `perf kvm stat live`: the percent of that second
 * the vCPU spent in the guest (running, without KVM's events), halted,
 * preempted and in exits, with the three exit reasons that took most.
 *
 * The states are report --vcpus' (analyze-vcpus.c), fed the host's events in
 * the order the live view merges them: the analysis keeps each vCPU's
 * accumulated time per state, and a second's row is the difference between
 * two cuts, each charging every vCPU up to the second's boundary. The rows'
 * states add up to the second, as report --vcpus' add up to the wall time.
 *
 * Bounded: the analysis bounds guests, vCPUs and reasons (report --vcpus'
 * maxima); the previous cut is a fixed array per vCPU, made when the vCPU is
 * added, never per event. A second without any host event is cut when the
 * next event comes, as one longer row.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <event-parse.h>

#include "livestat.h"
#include "report/analyze.h"

#define LS_TOP	3	/* exit reasons per row */

struct ls_prev {
	struct vcpus_an_sum s;
	uint64_t reasons[VCPUS_AN_MAX_REASONS];
};

struct livestat {
	FILE *out;
	uint64_t per_sec, per_us;	/* timestamp units in a second, a microsecond */
	struct vcpus_an *a;
	struct ls_prev *prev;		/* per vCPU: the last cut */
	unsigned int nr_prev;
	uint64_t cut, next;		/* the last cut, the next boundary */
	bool started, kvm_said;
	uint64_t cur[VCPUS_AN_MAX_REASONS];
};

/**
 * livestat_new() - an empty per-second table
 * @out: where its lines go
 * @per_sec: timestamp units in a second (1e9 for nanoseconds, else TSC ticks)
 * @per_us: in a microsecond, for the times the lines show
 *
 * Return: the table, or NULL with errno set.
 */
struct livestat *livestat_new(FILE *out, uint64_t per_sec, uint64_t per_us)
{
	struct livestat *ls = calloc(1, sizeof(*ls));

	if (!ls)
		return NULL;
	ls->a = vcpus_an_new();
	if (!ls->a) {
		free(ls);
		errno = ENOMEM;
		return NULL;
	}
	ls->out = out;
	ls->per_sec = per_sec ? per_sec : 1000000000ull;
	ls->per_us = per_us ? per_us : 1000ull;
	return ls;
}

/**
 * livestat_free() - free the table
 * @ls: the table, or NULL
 */
void livestat_free(struct livestat *ls)
{
	if (!ls)
		return;
	vcpus_an_free(ls->a);
	free(ls->prev);
	free(ls);
}

/**
 * livestat_add_guest() - a guest's vCPU threads, in vCPU order
 * @ls: the table
 * @name: the guest's name, as the rows show it
 * @tids: its vCPU threads' ids
 * @nr: how many
 *
 * Return: 0, or -ENOSPC past report --vcpus' bounds, -ENOMEM.
 */
int livestat_add_guest(struct livestat *ls, const char *name, const uint32_t *tids, unsigned int nr)
{
	unsigned int total = vcpus_an_nr_vcpus(ls->a) + nr, i;
	struct ls_prev *p;
	int *t, ret;

	if (!nr)
		return 0;
	t = calloc(nr, sizeof(*t));
	p = realloc(ls->prev, total * sizeof(*p));
	if (p)
		ls->prev = p;
	if (!t || !p) {
		free(t);
		return -ENOMEM;
	}
	for (i = 0; i < nr; i++)
		t[i] = (int)tids[i];
	ret = vcpus_an_add_guest(ls->a, name, (int)nr, t);
	free(t);
	if (ret < 0)
		return ret;
	/* Its time so far is charged from its first event on: the first cut is empty. */
	for (i = ls->nr_prev; i < vcpus_an_nr_vcpus(ls->a); i++)
		vcpus_an_sum(ls->a, i, &ls->prev[i].s, ls->prev[i].reasons);
	ls->nr_prev = vcpus_an_nr_vcpus(ls->a);
	return 0;
}

static double pct(uint64_t ns, uint64_t wall)
{
	return wall ? 100.0 * (double)ns / (double)wall : 0.0;
}

/* One row: @p is the previous cut, made the current one. */
static void row(struct livestat *ls, unsigned int i, uint64_t wall, bool kvm)
{
	struct ls_prev *p = &ls->prev[i];
	struct vcpus_an_sum s;
	unsigned int top[LS_TOP], nr_top = 0, r, k;
	uint64_t d[VCPUS_AN_MAX_REASONS];

	if (vcpus_an_sum(ls->a, i, &s, ls->cur) < 0)
		return;
	for (r = 0; r < VCPUS_AN_MAX_REASONS; r++) {
		d[r] = ls->cur[r] - p->reasons[r];
		if (!d[r])
			continue;
		/* Insert into the top LS_TOP, most first; equal times by the reason's order of appearance. */
		for (k = nr_top; k > 0 && d[top[k - 1]] < d[r]; k--)
			if (k < LS_TOP)
				top[k] = top[k - 1];
		if (k < LS_TOP) {
			top[k] = r;
			if (nr_top < LS_TOP)
				nr_top++;
		}
	}
	fprintf(ls->out, "# %-16.16s %4d %7d %7.1f%% %7.1f%% %7.1f%% %7.1f%% %7.1f%%", s.guest, s.vcpu,
		s.tid, pct(s.guest_ns - p->s.guest_ns, wall), pct(s.halted_ns - p->s.halted_ns, wall),
		pct(s.preempted_ns - p->s.preempted_ns, wall), pct(s.exits_ns - p->s.exits_ns, wall),
		pct(s.unknown_ns - p->s.unknown_ns, wall));
	if (!kvm)
		fprintf(ls->out, "  -");
	for (k = 0; k < nr_top; k++)
		fprintf(ls->out, "%s%s %.1f%%", k ? " " : "  ", vcpus_an_reason_name(ls->a, top[k]),
			pct(d[top[k]], wall));
	fputc('\n', ls->out);
	p->s = s;
	memcpy(p->reasons, ls->cur, sizeof(p->reasons));
}

/* The rows of the time from the last cut to @to. */
static void cut(struct livestat *ls, uint64_t to)
{
	uint64_t wall = to - ls->cut;
	bool kvm = vcpus_an_saw_kvm(ls->a);
	unsigned int i;

	vcpus_an_charge_to(ls->a, to);
	if (!kvm && !ls->kvm_said) {
		ls->kvm_said = true;
		fprintf(ls->out, "# vcpu-stat: no kvm_entry/kvm_exit events (TCG, or no --kvm-exits): "
			"GUEST%% is the time the vCPU thread ran; the time in the guest and in exits "
			"need `record --kvm-exits` on a KVM host\n");
	}
	fprintf(ls->out, "# vcpu-stat %" PRIu64 ".%06" PRIu64 " +%" PRIu64 ".%06" PRIu64 " s\n",
		ls->cut / ls->per_sec, ls->cut % ls->per_sec / ls->per_us,
		wall / ls->per_sec, wall % ls->per_sec / ls->per_us);
	fprintf(ls->out, "# %-16s %4s %7s %8s %8s %8s %8s %8s  %s\n", "GUEST", "VCPU", "TID",
		kvm ? "GUEST" : "RUNNING", "HALTED", "PREEMPT", "EXITS", "UNKNOWN", "TOP EXITS");
	for (i = 0; i < ls->nr_prev; i++)
		row(ls, i, wall, kvm);
	ls->cut = to;
}

/**
 * livestat_host() - one host event, in the live view's time order
 * @ls: the table, or NULL
 * @tep: the host trace's event handle
 * @rec: the event; its time in the units of livestat_new()
 * @cpu: the host CPU it was recorded on
 *
 * At the first event past a second's boundary the rows of the time since the
 * last cut are printed first (a longer time when seconds had no host event).
 */
void livestat_host(struct livestat *ls, struct tep_handle *tep, struct tep_record *rec, int cpu)
{
	uint64_t ts = rec->ts;

	if (!ls || !ls->nr_prev)
		return;
	if (!ls->started) {
		ls->started = true;
		ls->cut = ts;
		ls->next = ts + ls->per_sec;
	} else if (ts >= ls->next) {
		uint64_t to = ls->next + (ts - ls->next) / ls->per_sec * ls->per_sec;

		cut(ls, to);
		ls->next = to + ls->per_sec;
	}
	vcpus_an_host(ls->a, tep, rec, cpu);
}

/**
 * livestat_vcpus() - how many vCPUs the table has rows for
 * @ls: the table, or NULL
 *
 * Return: their count (0: no guest's vCPU threads were known).
 */
unsigned int livestat_vcpus(const struct livestat *ls)
{
	return ls ? ls->nr_prev : 0;
}

/* The table's functions for the live view (live_set_stat()). */
const struct livestat_ops livestat_ops = {
	.new = livestat_new,
	.free = livestat_free,
	.add_guest = livestat_add_guest,
	.host = livestat_host,
	.vcpus = livestat_vcpus,
};
