// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Each CPU's ring buffer grows with the burst it must hold, within a budget.
 *
 * While a recording streams, the control loop looks at every CPU each
 * RING_TICK_MS (RING_BUSY_TICK_MS while one holds a quarter of its ring
 * unread): the bytes its port took since the last look (the drain), the
 * bytes its ring holds unread and the events it overwrote (per_cpu/cpuN/
 * stats: bytes, overrun), and from these the bytes the kernel wrote (the
 * fill: the drain plus the change in what is unread). ring_size_kb() says
 * how big the ring should be; a larger size is written to per_cpu/cpuN/
 * buffer_size_kb, which the kernel applies to the live buffer by adding
 * pages, without dropping what it holds. But it stops the whole buffer
 * while it does (every CPU's writers are refused, uncounted), so the
 * growths are few and large (twice the backlog, at least twice the size),
 * and their time is reported (buffer_paused_us). Every
 * CPU's buffer together stays within the budget (--buffer-budget, or the
 * host's BUFFER_BUDGET; 0, the default: each stays at its START size), and none shrinks
 * while recording; the sizes are put back with the rest of tracefs.
 *
 * Every growth is logged, and the CPU's STATS text says its size, how often
 * and why it grew, and whether the budget stopped it (ring_text()).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent.h"
#include "vt_stats.h"

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* per_cpu/cpuN/buffer_size_kb: "1408", or "7 (expanded: 1408)" for one not expanded yet. */
static unsigned int read_kb(const struct tracing *t, unsigned int cpu)
{
	char file[64], val[64], *e;

	snprintf(file, sizeof(file), "per_cpu/cpu%u/buffer_size_kb", cpu);
	if (tracing_read(t, file, val, sizeof(val)) <= 0)
		return 0;
	e = strstr(val, "expanded: ");
	return (unsigned int)strtoul(e ? e + 10 : val, NULL, 10);
}

static void read_stats(const struct tracing *t, unsigned int cpu, uint64_t *unread, uint64_t *overrun)
{
	char text[1024];

	if (tracing_cpu_stats(t, cpu, text, sizeof(text)) <= 0)
		text[0] = '\0';
	*unread = vt_stats_u64(text, "bytes");
	*overrun = vt_stats_u64(text, "overrun");
}

/**
 * ring_begin() - note each CPU's buffer as START leaves it
 * @t: the recorded buffer
 * @cpus: the streams
 * @nr: how many
 * @budget_kb: the session's budget (only said in the log)
 */
void ring_begin(struct tracing *t, struct cpu_stream *cpus, unsigned int nr, unsigned int budget_kb)
{
	unsigned int i, total = 0;
	long long now = now_ns();

	for (i = 0; i < nr; i++) {
		struct ring_cpu *r = &cpus[i].ring;

		memset(r, 0, sizeof(*r));
		r->start_kb = r->kb = read_kb(t, cpus[i].cpu);
		r->last_ns = r->drained_ns = now;
		r->last_sent = atomic_load(&cpus[i].bytes);
		read_stats(t, cpus[i].cpu, &r->last_unread, &r->last_overrun);
		total += r->kb;
	}
	if (budget_kb > total)
		log_info("ring buffers: %u KiB on %u CPUs, growing with the drain up to %u KiB",
			 total, nr, budget_kb);
	else
		log_info("ring buffers: %u KiB on %u CPUs, fixed (budget %u KiB)", total, nr, budget_kb);
}

/* Write the CPU's new size; the kernel rounds it to pages, so read back what it took. */
static void grow(struct tracing *t, struct cpu_stream *s, unsigned int kb, const struct ring_in *in,
		 enum ring_why why)
{
	struct ring_cpu *r = &s->ring;
	char file[64], val[32];
	unsigned int old = r->kb;
	long long t0;
	int ret;

	snprintf(file, sizeof(file), "per_cpu/cpu%u/buffer_size_kb", s->cpu);
	snprintf(val, sizeof(val), "%u", kb);
	t0 = now_ns();
	ret = tracing_write(t, file, val);
	r->paused_us += (uint64_t)(now_ns() - t0) / 1000;
	if (ret < 0) {
		log_warn("cpu%u: cannot grow the ring buffer to %u KiB: %s", s->cpu, kb, strerror(-ret));
		r->capped = true;
		return;
	}
	r->kb = read_kb(t, s->cpu);
	if (!r->kb)
		r->kb = kb;
	r->grows++;
	snprintf(r->why, sizeof(r->why), "%s: fill %llu KB/s, drain %llu KB/s, %llu KiB unread of %u",
		 why == RING_OVERRUN ? "overrun" : why == RING_CAPPED ? "burst, at the budget" : "burst",
		 (unsigned long long)(in->fill_bps / 1000), (unsigned long long)(in->drain_bps / 1000),
		 (unsigned long long)(in->unread / 1024), old);
	log_info("cpu%u: ring buffer %u -> %u KiB (%s; the buffer paused %llu us)", s->cpu, old, r->kb,
		 r->why, (unsigned long long)(now_ns() - t0) / 1000);
}

/* One look at one CPU; true when it holds a quarter of its ring unread. */
static bool look(struct tracing *t, struct cpu_stream *s, unsigned int room_kb, long long now)
{
	struct ring_cpu *r = &s->ring;
	uint64_t sent = atomic_load(&s->bytes), unread, overrun, drained, filled;
	long long dt = now - r->last_ns;
	struct ring_in in = { .cur_kb = r->kb, .room_kb = room_kb,
			      .page_bytes = t->subbuf_size > 16 ? t->subbuf_size - 16 : 0 };
	uint64_t w = RING_AVG_MS * 1000000ull;
	enum ring_why why;
	unsigned int kb;

	read_stats(t, s->cpu, &unread, &overrun);
	drained = sent - r->last_sent;
	if (drained)
		r->drained_ns = now;
	filled = drained + unread > r->last_unread ? drained + unread - r->last_unread : 0;
	in.unread = unread;
	/* Each look weighs in by its length against the RING_AVG_MS before it. */
	r->fill_bps = (r->fill_bps * w + filled * 1000000000ull) / (w + (uint64_t)dt);
	r->drain_bps = (r->drain_bps * w + drained * 1000000000ull) / (w + (uint64_t)dt);
	in.fill_bps = r->fill_bps;
	in.drain_bps = r->drain_bps;
	in.lost = overrun > r->last_overrun;
	in.port_idle = now - r->drained_ns >= RING_IDLE_PORT_MS * 1000000LL;
	kb = ring_size_kb(&in, &why);
	if (kb > r->kb)
		grow(t, s, kb, &in, why);
	if (why == RING_CAPPED && !r->capped) {
		r->capped = true;
		log_warn("cpu%u: the ring buffer stops at %u KiB: the buffer budget is spent "
			 "(--buffer-budget); events may be lost, and are counted", s->cpu, r->kb);
	}
	if (why == RING_PORT_IDLE && !r->idle_said) {
		r->idle_said = true;
		log_info("cpu%u: the port took nothing for %u ms: the ring buffer stays at %u KiB",
			 s->cpu, RING_IDLE_PORT_MS, r->kb);
	}
	r->last_ns = now;
	r->last_sent = sent;
	r->last_unread = unread;
	r->last_overrun = overrun;
	return unread * 4 > (uint64_t)r->kb * 1024;
}

/**
 * ring_tick() - look at every CPU, and grow those that need it
 * @t: the recorded buffer
 * @cpus: the streams
 * @nr: how many
 * @budget_kb: every CPU's buffer together may hold this much
 *
 * Return: ms until the next look.
 */
int ring_tick(struct tracing *t, struct cpu_stream *cpus, unsigned int nr, unsigned int budget_kb)
{
	long long now = now_ns();
	uint64_t total = 0;
	unsigned int i;
	bool busy = false;

	for (i = 0; i < nr; i++)
		total += cpus[i].ring.kb;
	for (i = 0; i < nr; i++) {
		struct ring_cpu *r = &cpus[i].ring;
		uint64_t others = total - r->kb, room;

		if (now - r->last_ns < 1000000LL)
			continue;
		room = budget_kb > others ? budget_kb - others : 0;
		total -= r->kb;
		busy |= look(t, &cpus[i], room > r->kb ? (unsigned int)room : r->kb, now);
		total += r->kb;
	}
	return busy ? RING_BUSY_TICK_MS : RING_TICK_MS;
}

/**
 * ring_text() - the buffer lines of a CPU's STATS text
 * @s: the stream
 * @budget_kb: the session's budget
 * @text: the text so far, appended to
 * @size: size of @text
 */
void ring_text(const struct cpu_stream *s, unsigned int budget_kb, char *text, size_t size)
{
	const struct ring_cpu *r = &s->ring;
	size_t len = strlen(text);

	if (!r->kb || len >= size)
		return;
	len += snprintf(text + len, size - len,
			"buffer_kb: %u\nbuffer_start_kb: %u\nbuffer_budget_kb: %u\nbuffer_grows: %u\n"
			"buffer_capped: %u\nbuffer_paused_us: %llu\n", r->kb, r->start_kb, budget_kb,
			r->grows, r->capped, (unsigned long long)r->paused_us);
	if (r->grows && len < size)
		snprintf(text + len, size - len, "buffer_why: %s\n", r->why);
}
