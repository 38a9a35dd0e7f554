// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * report --vcpus: where each vCPU's wall time went, in host nanoseconds.
 *
 * Each vCPU thread (from the host file's GUEST options) is a small state
 * machine with two dimensions: the host scheduler's (running on a CPU,
 * sleeping, runnable but switched out, unknown) from sched_switch and
 * sched_wakeup, and KVM's (in the guest, in an exit of some reason, unknown)
 * from kvm_entry, kvm_exit and kvm_userspace_exit. The thread's timeline is
 * cut at every event that concerns it, and each interval is charged to
 * exactly one state, so the states add up to the wall time by construction:
 * the charges of a vCPU go from the first record of the merged files to the
 * last, each starting where the previous one ended.
 *
 * Preempted time is charged to whoever runs on the CPU the vCPU waits for
 * (the next task of the last sched_switch seen there), one slice per switch.
 * Guest sched_switch events (the guest files, whose timestamps libtracecmd
 * maps onto the host's) say which guest task each vCPU runs, and every charge
 * goes to that (vCPU, task) pair too.
 *
 * Everything the files say is bounded: threads, reasons, tasks, pairs and
 * CPUs have fixed maxima, their accumulators are allocated when they are
 * first seen (never per event), and time never runs backwards (a record older
 * than one already seen is taken at the time already reached).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event-parse.h>
#include <trace-cmd.h>

#include "analyze.h"
#include "vt_grow.h"

#define VC_MAX_GUESTS	64u
#define VC_MAX_VCPUS	1024u
#define VC_MAX_REASONS	VCPUS_AN_MAX_REASONS
#define VC_MAX_HTASKS	512u		/* host tasks that preempt a vCPU, two reserved */
#define VC_MAX_GTASKS	4096u		/* guest tasks, all guests */
#define VC_MAX_PAIRS	2048u		/* (vCPU, guest task) accumulators */
#define VC_MAX_CPUS	4096u
#define VC_NAME_LEN	64
/* report --latency: wakeups waiting at once, causes kept per wakeup, the worst listed. */
#define VC_MAX_OPEN	1024u
#define VC_LAT_CAUSES	16u
#define VC_LAT_WORST	10u
/* Guest task switches of one vCPU between two host records that are cut exactly. */
#define VC_TENT		16u
/*
 * State intervals kept per vCPU for a drawing (report --html, --perfetto):
 * past this many, the shortest are merged into the interval before them,
 * with a threshold that doubles from VC_STRIP_MIN_NS until a quarter is free.
 */
#define VC_STRIP_MAX	65536u
#define VC_STRIP_MIN_NS	1000u

/* Reserved host task indices: the CPU's current task is not known; past VC_MAX_HTASKS. */
#define HT_UNKNOWN	0
#define HT_OTHER	1

/* Scalar states; the reasons and the preempting tasks have arrays of their own. */
enum { K_GUEST, K_HALTED, K_UNKNOWN, K_RUN_UNK, K_SLEEP_UNK, K_NR };
enum { C_SCALAR, C_REASON, C_PRE, C_GTASK };

enum { S_UNKNOWN, S_ON, S_SLEEP, S_WAIT };	/* the host scheduler's view */
enum { V_UNKNOWN, V_GUEST, V_EXIT };		/* KVM's */

struct acc {
	uint64_t s[K_NR];
	uint64_t reason[VC_MAX_REASONS];
	uint64_t pre[VC_MAX_HTASKS];
};

struct vc_reason {
	bool user, hlt;
	uint32_t isa, code;
	char name[VC_NAME_LEN];
};

/* One guest wakeup being timed: its time so far per cause (class, index), as the vCPU is charged. */
struct vc_open {
	int guest, pid, gtask, vcpu;	/* vcpu: the index of the vCPU it waits on */
	bool iv;			/* an --interval's, keyed by key; else a wakeup */
	uint64_t key;
	uint64_t start, at, ns;		/* ns: the latency, once closed; at: host time of the wakeup */
	int next, prev;			/* in the vCPU's list, or the free list */
	unsigned int nr;
	struct { uint8_t cls; uint32_t idx; uint64_t ns; } c[VC_LAT_CAUSES];
	uint64_t other_ns;		/* causes past VC_LAT_CAUSES */
};

/* A guest's wakeups: their count, the time per cause over those past the threshold, the worst. */
struct vc_lat {
	uint64_t wakeups, over, total_ns, other_ns;
	struct acc acc;
	uint64_t gt[VC_MAX_GTASKS];
	struct vc_open worst[VC_LAT_WORST];
	unsigned int nr_worst;
};

struct vc_vcpu {
	int tid, guest, vcpu;
	int open_head;			/* the wakeups waiting on this vCPU */
	uint8_t sched, kvm;
	unsigned int reason;
	int cpu;			/* last host CPU: running, preempted from, woken onto */
	uint64_t since;
	int pair;			/* -1: the guest task is not known */
	int wait_next, wait_prev;	/* in the list of vCPUs waiting for cpu */
	bool waiting;
	struct acc *acc;
	bool have_steal;		/* the guest's agent sent its steal time */
	uint64_t steal_ns, tick_ns;	/* over the recording; its resolution */
	/*
	 * Charges a guest record made past the last host record: undone at the
	 * end if no host record follows (the span is the host file's).
	 */
	uint64_t tent_seq;		/* the host record count they were made at */
	unsigned int nr_tent;
	struct { int pair; uint64_t ns; } tent[VC_TENT];
	struct vc_strip *strip;		/* the state intervals, if kept */
	unsigned int nr_strip;
	size_t strip_cap;
	uint64_t strip_min;		/* intervals shorter than this were merged */
	uint8_t tail_cls;		/* the state of the last interval (a merged one's too) */
	uint32_t tail_idx;
};

/* One interval of a vCPU's states; @merged shorter ones that followed it were folded into it. */
struct vc_strip {
	uint64_t start, end;
	uint32_t idx, merged;
	uint8_t cls;
};

struct vc_hcpu {
	int cur;			/* host task index */
	uint64_t last_ts;
	int wait_head;
};

struct vc_gtask {
	int guest, pid;
	char comm[20];
};

struct vc_pair {
	int vcpu, gtask;
	struct acc *acc;
};

struct vc_guest {
	char name[64];
	int first, nr_vcpus;
	struct tep_handle *tep;
	int switch_id, waking_id, istart_id, iend_id;
	struct tep_format_field *f_istart, *f_iend;
	struct tep_format_field *f_next_pid, *f_next_comm, *f_wk_pid, *f_wk_comm, *f_wk_cpu;
};

/* Open addressing, linear probing; a value is stored plus one so that 0 is empty. */
struct vc_ht {
	uint64_t *key;
	int *val;
	unsigned int mask;
};

struct vcpus_an {
	struct vc_guest guests[VC_MAX_GUESTS];
	unsigned int nr_guests;
	struct vc_vcpu vcpus[VC_MAX_VCPUS];
	unsigned int nr_vcpus;
	struct vc_reason reasons[VC_MAX_REASONS];
	unsigned int nr_reasons;
	char htasks[VC_MAX_HTASKS][VC_NAME_LEN];
	unsigned int nr_htasks;
	struct vc_gtask *gtasks;
	unsigned int nr_gtasks;
	struct vc_pair *pairs;
	unsigned int nr_pairs;
	struct vc_hcpu *cpus;
	unsigned int nr_cpus;
	struct vc_ht ht_vcpu, ht_htask, ht_gtask, ht_pair;
	/* --latency */
	bool latency;
	uint64_t threshold;
	struct vc_open *opens;
	int open_free;
	int *gt_open;			/* per guest task: its open wakeup, or -1 */
	struct vc_lat *lat[VC_MAX_GUESTS];
	/* --interval START,END[,FIELD] */
	bool intervals;
	char iv_sys[2][64], iv_ev[2][64], iv_field[64];
	struct vc_lat *ilat[VC_MAX_GUESTS];
	struct vc_ht *iv_ht[VC_MAX_GUESTS];	/* per guest: key -> open interval */
	bool started, saw_kvm, saw_sched;
	bool strips;			/* keep each vCPU's state intervals */
	uint64_t t0, now;		/* the first host record; the last record of any file */
	uint64_t host_ts, host_seq;	/* the last host record's time; how many so far */
	uint64_t lost_markers, bad, dropped;
	/* The host file's events. */
	struct tep_handle *tep;
	int switch_id, wakeup_id, entry_id, exit_id, uexit_id, vwake_id;
	struct tep_format_field *f_prev_pid, *f_prev_state, *f_next_pid, *f_next_comm;
	struct tep_format_field *f_wpid, *f_wcpu, *f_reason, *f_isa, *f_ureason, *f_errno;
};

static int ht_init(struct vc_ht *h, unsigned int slots)
{
	h->key = calloc(slots, sizeof(*h->key));
	h->val = calloc(slots, sizeof(*h->val));
	h->mask = slots - 1;
	return h->key && h->val ? 0 : -ENOMEM;
}

static void ht_free(struct vc_ht *h)
{
	free(h->key);
	free(h->val);
}

static unsigned int ht_slot(const struct vc_ht *h, uint64_t key)
{
	unsigned int i = (unsigned int)((key * 0x9e3779b97f4a7c15ull) >> 40) & h->mask;

	while (h->val[i] && h->key[i] != key)
		i = (i + 1) & h->mask;
	return i;
}

static int ht_get(const struct vc_ht *h, uint64_t key)
{
	return h->val[ht_slot(h, key)] - 1;
}

/* The callers bound the number of keys to half the slots. */
static void ht_put(struct vc_ht *h, uint64_t key, int val)
{
	unsigned int i = ht_slot(h, key);

	h->key[i] = key;
	h->val[i] = val + 1;
}

/* Linear probing's deletion: the entries after the hole that may move into it do. */
static void ht_del(struct vc_ht *h, uint64_t key)
{
	unsigned int i = ht_slot(h, key), j = i, home;

	if (!h->val[i])
		return;
	h->val[i] = 0;
	for (;;) {
		j = (j + 1) & h->mask;
		if (!h->val[j])
			return;
		home = (unsigned int)((h->key[j] * 0x9e3779b97f4a7c15ull) >> 40) & h->mask;
		/* The entry at j stays when its home lies cyclically in (i, j]. */
		if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
			continue;
		h->key[i] = h->key[j];
		h->val[i] = h->val[j];
		h->val[j] = 0;
		i = j;
	}
}

/**
 * vcpus_an_new() - an empty vCPU-time analysis
 *
 * Return: the analysis, or NULL.
 */
struct vcpus_an *vcpus_an_new(void)
{
	struct vcpus_an *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	if (ht_init(&a->ht_vcpu, 2 * VC_MAX_VCPUS) < 0 || ht_init(&a->ht_htask, 2 * VC_MAX_HTASKS) < 0 ||
	    ht_init(&a->ht_gtask, 2 * VC_MAX_GTASKS) < 0 || ht_init(&a->ht_pair, 2 * VC_MAX_PAIRS) < 0 ||
	    !(a->gtasks = calloc(VC_MAX_GTASKS, sizeof(*a->gtasks))) ||
	    !(a->pairs = calloc(VC_MAX_PAIRS, sizeof(*a->pairs)))) {
		vcpus_an_free(a);
		return NULL;
	}
	snprintf(a->htasks[HT_UNKNOWN], VC_NAME_LEN, "(unknown task)");
	snprintf(a->htasks[HT_OTHER], VC_NAME_LEN, "(more tasks)");
	a->nr_htasks = 2;
	return a;
}

/**
 * vcpus_an_free() - free an analysis
 * @a: the analysis, or NULL
 */
void vcpus_an_free(struct vcpus_an *a)
{
	unsigned int i;

	if (!a)
		return;
	for (i = 0; i < a->nr_vcpus; i++) {
		free(a->vcpus[i].acc);
		free(a->vcpus[i].strip);
	}
	for (i = 0; i < a->nr_pairs; i++)
		free(a->pairs[i].acc);
	ht_free(&a->ht_vcpu);
	ht_free(&a->ht_htask);
	ht_free(&a->ht_gtask);
	ht_free(&a->ht_pair);
	free(a->gtasks);
	free(a->pairs);
	free(a->cpus);
	free(a->opens);
	free(a->gt_open);
	for (i = 0; i < VC_MAX_GUESTS; i++) {
		free(a->lat[i]);
		free(a->ilat[i]);
		if (a->iv_ht[i])
			ht_free(a->iv_ht[i]);
		free(a->iv_ht[i]);
	}
	free(a);
}

static int opens_init(struct vcpus_an *a)
{
	unsigned int i;

	if (a->opens)
		return 0;
	a->opens = calloc(VC_MAX_OPEN, sizeof(*a->opens));
	a->gt_open = malloc(VC_MAX_GTASKS * sizeof(*a->gt_open));
	if (!a->opens || !a->gt_open)
		return -ENOMEM;
	for (i = 0; i < VC_MAX_GTASKS; i++)
		a->gt_open[i] = -1;
	for (i = 0; i < VC_MAX_OPEN; i++)
		a->opens[i].next = i + 1 < VC_MAX_OPEN ? (int)i + 1 : -1;
	a->open_free = 0;
	return 0;
}

/**
 * vcpus_an_latency() - also time each guest wakeup (report --latency)
 * @a: the analysis, before any record
 * @threshold_ns: the wakeups counted and split per cause take at least this
 *
 * Return: 0 or -ENOMEM.
 */
int vcpus_an_latency(struct vcpus_an *a, uint64_t threshold_ns)
{
	if (opens_init(a) < 0)
		return -ENOMEM;
	a->latency = true;
	a->threshold = threshold_ns;
	return 0;
}

static int split_event(const char *s, size_t len, char *sys, char *ev)
{
	const char *c = memchr(s, ':', len);

	if (!c || c == s || c - s >= 64 || len - (c - s) - 1 == 0 || len - (c - s) - 1 >= 64)
		return -EINVAL;
	snprintf(sys, 64, "%.*s", (int)(c - s), s);
	snprintf(ev, 64, "%.*s", (int)(len - (c - s) - 1), c + 1);
	return 0;
}

/* "SYS:START,SYS:END[,FIELD]" into its parts (64 bytes each). */
static int iv_parse(const char *spec, char sys[2][64], char ev[2][64], char *field)
{
	const char *c1 = strchr(spec, ','), *c2 = c1 ? strchr(c1 + 1, ',') : NULL;

	if (!c1 || split_event(spec, c1 - spec, sys[0], ev[0]) < 0 ||
	    split_event(c1 + 1, c2 ? (size_t)(c2 - c1 - 1) : strlen(c1 + 1), sys[1], ev[1]) < 0 ||
	    (c2 && (!c2[1] || strlen(c2 + 1) >= 64 || strchr(c2 + 1, ','))) ||
	    (!strcmp(sys[0], sys[1]) && !strcmp(ev[0], ev[1])))
		return -EINVAL;
	snprintf(field, 64, "%s", c2 ? c2 + 1 : "");
	return 0;
}

/**
 * vcpus_interval_ok() - whether an --interval argument is well formed
 * @spec: "SYS:START,SYS:END[,FIELD]", START and END different events
 *
 * Return: true when vcpus_an_interval() takes it.
 */
bool vcpus_interval_ok(const char *spec)
{
	char sys[2][64], ev[2][64], field[64];

	return iv_parse(spec, sys, ev, field) == 0;
}

/**
 * vcpus_an_interval() - also time the guest intervals between two events (report --interval)
 * @a: the analysis, before any record
 * @spec: "SYS:START,SYS:END[,FIELD]": an interval opens at a START event of a
 *	  guest and closes at the END event with the same FIELD value (without
 *	  FIELD: of the same task); it is split by what the vCPU START ran on did
 * @threshold_ns: the intervals counted and split per cause take at least this
 *
 * Return: 0, -EINVAL for a malformed @spec, or -ENOMEM.
 */
int vcpus_an_interval(struct vcpus_an *a, const char *spec, uint64_t threshold_ns)
{
	if (iv_parse(spec, a->iv_sys, a->iv_ev, a->iv_field) < 0)
		return -EINVAL;
	if (opens_init(a) < 0)
		return -ENOMEM;
	a->intervals = true;
	a->threshold = threshold_ns;
	return 0;
}

/**
 * vcpus_an_add_guest() - a guest of the host file's GUEST option
 * @a: the analysis
 * @name: its name
 * @nr_vcpus: vCPUs in @tids (bounded by the caller)
 * @tids: the host thread of each vCPU
 *
 * A thread named twice keeps its first vCPU.
 *
 * Return: the guest's index, -ENOSPC past a bound, or -ENOMEM.
 */
int vcpus_an_add_guest(struct vcpus_an *a, const char *name, int nr_vcpus, const int *tids)
{
	struct vc_guest *g;
	int i;

	if (a->nr_guests >= VC_MAX_GUESTS || nr_vcpus < 0 ||
	    (unsigned int)nr_vcpus > VC_MAX_VCPUS - a->nr_vcpus)
		return -ENOSPC;
	g = &a->guests[a->nr_guests];
	snprintf(g->name, sizeof(g->name), "%s", name);
	an_sanitize(g->name);
	g->first = a->nr_vcpus;
	g->nr_vcpus = nr_vcpus;
	g->switch_id = -1;
	for (i = 0; i < nr_vcpus; i++) {
		struct vc_vcpu *v = &a->vcpus[a->nr_vcpus];

		memset(v, 0, sizeof(*v));
		v->tid = tids[i];
		v->guest = a->nr_guests;
		v->vcpu = i;
		v->cpu = -1;
		v->pair = -1;
		v->open_head = -1;
		v->since = a->now;	/* a guest added while records flow starts now */
		v->acc = calloc(1, sizeof(*v->acc));
		if (!v->acc)
			return -ENOMEM;
		if (ht_get(&a->ht_vcpu, (uint32_t)v->tid) < 0)
			ht_put(&a->ht_vcpu, (uint32_t)v->tid, a->nr_vcpus);
		a->nr_vcpus++;
	}
	return a->nr_guests++;
}

/**
 * vcpus_an_guest_steal() - a guest vCPU's steal time as its kernel counted it
 * @a: the analysis
 * @guest: what vcpus_an_add_guest() returned
 * @vcpu: the vCPU (the guest's CPU number)
 * @steal_ns: its steal time over the recording (/proc/stat, STOP minus START)
 * @tick_ns: the resolution of @steal_ns (one USER_HZ tick)
 *
 * Return: 0, or -EINVAL for a guest or vCPU that is not known.
 */
int vcpus_an_guest_steal(struct vcpus_an *a, int guest, int vcpu, uint64_t steal_ns,
			 uint64_t tick_ns)
{
	struct vc_vcpu *v;

	if (guest < 0 || (unsigned int)guest >= a->nr_guests || vcpu < 0 ||
	    vcpu >= a->guests[guest].nr_vcpus)
		return -EINVAL;
	v = &a->vcpus[a->guests[guest].first + vcpu];
	v->have_steal = true;
	v->steal_ns = steal_ns;
	v->tick_ns = tick_ns;
	return 0;
}

static struct vc_vcpu *vcpu_of(struct vcpus_an *a, int tid)
{
	int i;

	if (tid <= 0)
		return NULL;
	i = ht_get(&a->ht_vcpu, (uint32_t)tid);
	return i < 0 ? NULL : &a->vcpus[i];
}

static struct vc_hcpu *hcpu(struct vcpus_an *a, int cpu)
{
	unsigned int n, i;

	if (cpu < 0 || (unsigned int)cpu >= VC_MAX_CPUS)
		return NULL;
	if ((unsigned int)cpu >= a->nr_cpus) {
		/* Grown once per new highest CPU: at most VC_MAX_CPUS times in all. */
		struct vc_hcpu *c;

		n = (unsigned int)cpu + 1 > 2 * a->nr_cpus ? (unsigned int)cpu + 1 : 2 * a->nr_cpus;
		if (n > VC_MAX_CPUS)
			n = VC_MAX_CPUS;
		c = realloc(a->cpus, n * sizeof(*c));
		if (!c)
			return NULL;
		for (i = a->nr_cpus; i < n; i++) {
			c[i].cur = HT_UNKNOWN;
			c[i].last_ts = a->now;
			c[i].wait_head = -1;
		}
		a->cpus = c;
		a->nr_cpus = n;
	}
	return &a->cpus[cpu];
}

/*
 * Names are keys of one JSON object: a name already in @names (@nr of them,
 * @stride bytes apart) gets "#N" appended, N from @seed up until it is new
 * (truncated names, idle tasks of one name on several CPUs, or names a file
 * chose to collide). At most @nr tries, each O(@nr): only when an entry is
 * made, never per event.
 */
static void unique_name(char *name, const char *names, size_t stride, unsigned int nr,
			unsigned int seed)
{
	char base[VC_NAME_LEN];
	unsigned int i, k = 0;
	size_t l;

	snprintf(base, sizeof(base), "%s", name);
	l = strlen(base);
	if (l > VC_NAME_LEN - 12)
		l = VC_NAME_LEN - 12;
	for (i = 0; i < nr; i++) {
		if (strcmp(names + i * stride, name))
			continue;
		snprintf(name, VC_NAME_LEN, "%.*s#%u", (int)l, base, seed + k++);
		i = (unsigned int)-1;		/* check the new name against all */
	}
}

/*
 * Whether @comm differs from the comm that @name ("COMM[PID]" or a plain
 * COMM) was made of: cheap, for every switch. A comm that an_sanitize()
 * changes compares unequal each time and is only renamed to itself.
 */
static bool comm_changed(const char *name, const char *comm)
{
	size_t l = strnlen(comm, 16);

	return strncmp(name, comm, l) || (name[l] != '[' && name[l] != '\0');
}

/* The task a preempted vCPU's time goes to: a vCPU thread is named as its guest and vCPU. */
static int htask(struct vcpus_an *a, int pid, const char *comm, int cpu)
{
	/* Each CPU has its own idle task, all of them pid 0. */
	uint64_t key = pid ? (uint32_t)pid : 1ull << 32 | (uint32_t)cpu;
	char *name, buf[VC_NAME_LEN];
	struct vc_vcpu *v;
	int i;

	v = vcpu_of(a, pid);
	i = ht_get(&a->ht_htask, key);
	/*
	 * A task is named by its last comm: one that renames itself (exec,
	 * prctl, /proc/PID/comm) after it first took a vCPU's CPU is known
	 * by the name it ended with, not by its parent's (sh).
	 */
	if (i >= 0 && (v || !pid || !comm_changed(a->htasks[i], comm)))
		return i;
	if (i < 0 && a->nr_htasks >= VC_MAX_HTASKS)
		return HT_OTHER;
	name = a->htasks[i >= 0 ? i : (int)a->nr_htasks];
	if (v)
		snprintf(buf, sizeof(buf), "guest %s vCPU %d", a->guests[v->guest].name, v->vcpu);
	else
		snprintf(buf, sizeof(buf), "%.16s[%d]", comm, pid);
	an_sanitize(buf);
	if (i >= 0) {
		name[0] = '\0';	/* not a clash with itself */
		unique_name(buf, a->htasks[0], VC_NAME_LEN, a->nr_htasks, a->nr_htasks);
		memcpy(name, buf, VC_NAME_LEN);
		return i;
	}
	memcpy(name, buf, VC_NAME_LEN);
	unique_name(name, a->htasks[0], VC_NAME_LEN, a->nr_htasks, a->nr_htasks);
	ht_put(&a->ht_htask, key, a->nr_htasks);
	return a->nr_htasks++;
}

/* The state @v is in now, as (class, index). */
static void state_of(const struct vcpus_an *a, const struct vc_vcpu *v, int *cls, unsigned int *idx)
{
	*cls = C_SCALAR;
	switch (v->sched) {
	case S_ON:
		if (v->kvm == V_GUEST)
			*idx = K_GUEST;
		else if (v->kvm == V_EXIT)
			*cls = C_REASON, *idx = v->reason;
		else
			*idx = K_RUN_UNK;
		return;
	case S_SLEEP:
		if (v->kvm == V_EXIT && a->reasons[v->reason].hlt)
			*idx = K_HALTED;
		else if (v->kvm == V_EXIT)
			*cls = C_REASON, *idx = v->reason;
		else if (v->kvm == V_UNKNOWN)
			*idx = K_SLEEP_UNK;
		else
			*idx = K_UNKNOWN;	/* asleep in guest mode: something was not recorded */
		return;
	case S_WAIT:
		*cls = C_PRE;
		*idx = v->cpu >= 0 && (unsigned int)v->cpu < a->nr_cpus ? a->cpus[v->cpu].cur : HT_UNKNOWN;
		return;
	default:
		*idx = K_UNKNOWN;
	}
}

static void acc_add(struct acc *c, int cls, unsigned int idx, uint64_t ns)
{
	if (cls == C_REASON)
		c->reason[idx] += ns;
	else if (cls == C_PRE)
		c->pre[idx] += ns;
	else
		c->s[idx] += ns;
}

/* Time of a vCPU some guest wakeups wait on: in the guest it is the guest task that ran. */
static void open_add(struct vcpus_an *a, struct vc_vcpu *v, int cls, unsigned int idx, uint64_t ns)
{
	unsigned int k;
	int i;

	if (cls == C_SCALAR && (idx == K_GUEST || idx == K_RUN_UNK) && v->pair >= 0) {
		cls = C_GTASK;
		idx = a->pairs[v->pair].gtask;
	}
	for (i = v->open_head; i >= 0; i = a->opens[i].next) {
		struct vc_open *o = &a->opens[i];

		for (k = 0; k < o->nr && (o->c[k].cls != cls || o->c[k].idx != idx); k++)
			;
		if (k == o->nr && o->nr < VC_LAT_CAUSES) {
			o->c[k].cls = cls;
			o->c[k].idx = idx;
			o->c[k].ns = 0;
			o->nr++;
		}
		if (k < o->nr)
			o->c[k].ns += ns;
		else
			o->other_ns += ns;
	}
}

/* Fold the intervals shorter than @v's threshold into the one before them. */
static void strip_compact(struct vc_vcpu *v)
{
	unsigned int i, n = 0;

	for (i = 0; i < v->nr_strip; i++) {
		struct vc_strip *c = &v->strip[i];

		if (n && c->end - c->start < v->strip_min) {
			v->strip[n - 1].end = c->end;
			v->strip[n - 1].merged += 1 + c->merged;
		} else {
			v->strip[n++] = *c;
		}
	}
	v->nr_strip = n;
}

/* The interval [@from, @to) of @v in state (@cls, @idx), for the drawings. */
static void strip_add(struct vcpus_an *a, struct vc_vcpu *v, int cls, unsigned int idx, uint64_t from,
		      uint64_t to)
{
	struct vc_strip *last = v->nr_strip ? &v->strip[v->nr_strip - 1] : NULL;
	bool same = v->tail_cls == cls && v->tail_idx == idx;
	int ret;

	/* The same state goes on (a guest task changed), or one too short to keep is folded in. */
	if (last && last->end == from && (same || to - from < v->strip_min)) {
		last->merged += !same;
		last->end = to;
		v->tail_cls = cls;
		v->tail_idx = idx;
		return;
	}
	ret = vt_grow_max((void **)&v->strip, &v->strip_cap, (size_t)v->nr_strip + 1,
			  sizeof(*v->strip), VC_STRIP_MAX);
	if (ret == -E2BIG) {
		/* Full: coarser until a quarter is free (a pixel of a long recording is wider). */
		while (v->nr_strip > VC_STRIP_MAX / 4 * 3) {
			v->strip_min = v->strip_min ? v->strip_min * 2 : VC_STRIP_MIN_NS;
			strip_compact(v);
		}
		strip_add(a, v, cls, idx, from, to);
		return;
	}
	if (ret < 0) {
		a->dropped++;
		return;
	}
	v->strip[v->nr_strip++] = (struct vc_strip){ .start = from, .end = to, .idx = idx, .cls = cls };
	v->tail_cls = cls;
	v->tail_idx = idx;
}

/* The end of @v's intervals moves back to @to (charges undone by vcpus_an_finish()). */
static void strip_cut(struct vc_vcpu *v, uint64_t to)
{
	while (v->nr_strip && v->strip[v->nr_strip - 1].start >= to)
		v->nr_strip--;
	if (v->nr_strip && v->strip[v->nr_strip - 1].end > to)
		v->strip[v->nr_strip - 1].end = to;
}

static void charge_as(struct vcpus_an *a, struct vc_vcpu *v, int cls, unsigned int idx, uint64_t to)
{
	uint64_t ns = to > v->since ? to - v->since : 0;

	if (!ns)
		return;
	if (a->strips)
		strip_add(a, v, cls, idx, v->since, to);
	acc_add(v->acc, cls, idx, ns);
	if (v->pair >= 0)
		acc_add(a->pairs[v->pair].acc, cls, idx, ns);
	v->since = to;
	if (v->open_head >= 0)
		open_add(a, v, cls, idx, ns);
}

/* Close @v's current interval at @to, charged to the state it is in. */
static void charge(struct vcpus_an *a, struct vc_vcpu *v, uint64_t to)
{
	unsigned int idx;
	int cls;

	state_of(a, v, &cls, &idx);
	charge_as(a, v, cls, idx, to);
}

static void wait_del(struct vcpus_an *a, struct vc_vcpu *v)
{
	if (!v->waiting)
		return;
	if (v->wait_prev >= 0)
		a->vcpus[v->wait_prev].wait_next = v->wait_next;
	else
		a->cpus[v->cpu].wait_head = v->wait_next;
	if (v->wait_next >= 0)
		a->vcpus[v->wait_next].wait_prev = v->wait_prev;
	v->waiting = false;
}

/* @v waits for @cpu: its time goes to whoever runs there. */
static void wait_add(struct vcpus_an *a, struct vc_vcpu *v, int cpu)
{
	struct vc_hcpu *c = hcpu(a, cpu);
	int i = (int)(v - a->vcpus);

	wait_del(a, v);
	v->sched = S_WAIT;
	v->cpu = c ? cpu : -1;
	if (!c)
		return;
	v->wait_prev = -1;
	v->wait_next = c->wait_head;
	if (c->wait_head >= 0)
		a->vcpus[c->wait_head].wait_prev = i;
	c->wait_head = i;
	v->waiting = true;
}

/* A record of @v's own thread: it runs on @cpu. */
static void run_on(struct vcpus_an *a, struct vc_vcpu *v, int cpu)
{
	wait_del(a, v);
	v->sched = S_ON;
	v->cpu = cpu;
}

/*
 * Every host record moves the clock; one older than the clock is taken at the
 * clock. The span is the host file's: it starts at its first record.
 */
static uint64_t advance(struct vcpus_an *a, uint64_t ts)
{
	unsigned int i;

	if (!a->started) {
		a->started = true;
		a->t0 = a->now = ts;
		for (i = 0; i < a->nr_vcpus; i++)
			a->vcpus[i].since = ts;
	}
	if (ts > a->now)
		a->now = ts;
	a->host_ts = a->now;
	a->host_seq++;
	return a->now;
}

/*
 * Events were lost on host CPU @cpu between its previous record and now. A
 * vCPU that was last there, or that was switched out (it may have been woken
 * or switched in there), has an unknown state from that previous record on.
 */
static void host_lost(struct vcpus_an *a, int cpu, uint64_t now)
{
	struct vc_hcpu *c = hcpu(a, cpu);
	uint64_t from = c ? c->last_ts : now;
	unsigned int i;

	a->lost_markers++;
	for (i = 0; i < a->nr_vcpus; i++) {
		struct vc_vcpu *v = &a->vcpus[i];

		if (v->cpu != cpu && v->sched != S_SLEEP && v->sched != S_WAIT)
			continue;
		if (from < now)
			charge(a, v, from > v->since ? from : v->since);
		charge_as(a, v, C_SCALAR, K_UNKNOWN, now);
		wait_del(a, v);
		v->sched = S_UNKNOWN;
		v->kvm = V_UNKNOWN;
	}
	if (c)
		c->cur = HT_UNKNOWN;
}

static void ids_init(struct vcpus_an *a, struct tep_handle *tep)
{
	struct tep_event *ev;

	a->tep = tep;
	ev = tep_find_event_by_name(tep, "sched", "sched_switch");
	a->switch_id = ev ? ev->id : -1;
	a->f_prev_pid = an_field(ev, "prev_pid");
	a->f_prev_state = an_field(ev, "prev_state");
	a->f_next_pid = an_field(ev, "next_pid");
	a->f_next_comm = an_field(ev, "next_comm");
	ev = tep_find_event_by_name(tep, "sched", "sched_wakeup");
	a->wakeup_id = ev ? ev->id : -1;
	a->f_wpid = an_field(ev, "pid");
	a->f_wcpu = an_field(ev, "target_cpu");
	ev = tep_find_event_by_name(tep, "kvm", "kvm_exit");
	a->exit_id = ev ? ev->id : -1;
	a->f_reason = an_field(ev, "exit_reason");
	a->f_isa = an_field(ev, "isa");
	ev = tep_find_event_by_name(tep, "kvm", "kvm_entry");
	a->entry_id = ev ? ev->id : -1;
	ev = tep_find_event_by_name(tep, "kvm", "kvm_userspace_exit");
	a->uexit_id = ev ? ev->id : -1;
	a->f_ureason = an_field(ev, "reason");
	a->f_errno = an_field(ev, "errno");
	ev = tep_find_event_by_name(tep, "kvm", "kvm_vcpu_wakeup");
	a->vwake_id = ev ? ev->id : -1;
}

/* The reason's name as the event's own print format gives it: "... reason NAME ...". */
static void reason_name(struct tep_handle *tep, struct tep_record *rec, char *buf, size_t size)
{
	struct trace_seq s;
	const char *p;
	size_t n;

	buf[0] = '\0';
	trace_seq_init(&s);
	tep_print_event(tep, &s, rec, "%s", TEP_PRINT_INFO);
	trace_seq_terminate(&s);
	p = s.buffer ? strstr(s.buffer, "reason ") : NULL;
	if (p) {
		p += 7;
		n = strcspn(p, " ");
		if (n && n < size) {
			memcpy(buf, p, n);
			buf[n] = '\0';
		}
	}
	trace_seq_destroy(&s);
	an_sanitize(buf);
}

/* The index of an exit reason (@user: to userspace), named on first sight; -1 past the bound. */
static int reason_index(struct vcpus_an *a, struct tep_record *rec, bool user, uint32_t isa,
			uint32_t code)
{
	struct vc_reason *r;
	unsigned int i;

	for (i = 0; i < a->nr_reasons; i++)
		if (a->reasons[i].user == user && a->reasons[i].isa == isa && a->reasons[i].code == code)
			return i;
	if (a->nr_reasons >= VC_MAX_REASONS)
		return -1;
	r = &a->reasons[a->nr_reasons];
	r->user = user;
	r->isa = isa;
	r->code = code;
	/*
	 * kvm_userspace_exit prints "restart" for -EINTR and "error" for another
	 * negative errno; libtraceevent evaluates that condition unsigned and
	 * prints a reason instead, so those two take the format's words here.
	 */
	if (user && isa)
		snprintf(r->name, sizeof(r->name), "%s", isa == 1 ? "restart" : "error");
	else
		reason_name(a->tep, rec, r->name, sizeof(r->name));
	if (!r->name[0])
		snprintf(r->name, sizeof(r->name), "%u", code);
	/* Checked against both kinds, though each kind is its own JSON object. */
	unique_name(r->name, a->reasons[0].name, sizeof(a->reasons[0]), a->nr_reasons, a->nr_reasons);
	r->hlt = !user && !strcasecmp(r->name, "hlt");
	return a->nr_reasons++;
}

static void host_switch(struct vcpus_an *a, struct tep_record *rec, int cpu, uint64_t now)
{
	uint64_t prev = 0, next = 0, state = 0;
	struct vc_hcpu *c = hcpu(a, cpu);
	struct vc_vcpu *v;
	char comm[20];
	int i;

	if (!an_u64(rec, a->f_prev_pid, &prev) || !an_u64(rec, a->f_next_pid, &next) ||
	    !an_u64(rec, a->f_prev_state, &state) || !an_str(rec, a->f_next_comm, comm, 17)) {
		a->bad++;
		return;
	}
	/* The vCPUs waiting for this CPU: the slice of the task that leaves it ends. */
	for (i = c ? c->wait_head : -1; i >= 0; i = a->vcpus[i].wait_next)
		charge(a, &a->vcpus[i], now);
	v = vcpu_of(a, (int)prev);
	if (v) {
		a->saw_sched = true;
		charge(a, v, now);
		/* TASK_REPORT's states in the low byte; none set is R (the preempt bit above). */
		if (state & 0xff) {
			wait_del(a, v);
			v->sched = S_SLEEP;
			v->cpu = cpu;
		} else {
			wait_add(a, v, cpu);
		}
	}
	if (c)
		c->cur = htask(a, (int)next, comm, cpu);
	v = vcpu_of(a, (int)next);
	if (v) {
		a->saw_sched = true;
		charge(a, v, now);
		run_on(a, v, cpu);
	}
}

/**
 * vcpus_an_host() - feed one record of the host file (in timestamp order)
 * @a: the analysis
 * @tep: the host file's event handle
 * @rec: the record
 * @cpu: the host CPU it was recorded on
 */
void vcpus_an_host(struct vcpus_an *a, struct tep_handle *tep, struct tep_record *rec, int cpu)
{
	uint64_t now = advance(a, rec->ts), x, isa = 0, err;
	struct vc_hcpu *c;
	struct vc_vcpu *v;
	int id, r;

	if (a->tep != tep)
		ids_init(a, tep);
	if (rec->missed_events)
		host_lost(a, cpu, now);
	id = tep_data_type(tep, rec);
	if (id >= 0 && id == a->switch_id) {
		host_switch(a, rec, cpu, now);
		goto out;
	}
	if (id >= 0 && id == a->wakeup_id) {
		uint64_t pid, target;

		if (!an_u64(rec, a->f_wpid, &pid)) {
			a->bad++;
		} else if ((v = vcpu_of(a, (int)pid)) && v->sched != S_ON && v->sched != S_WAIT) {
			a->saw_sched = true;
			charge(a, v, now);
			/* Runnable from now on: preempted by whoever has the CPU it is woken onto. */
			wait_add(a, v, an_u64(rec, a->f_wcpu, &target) && target < VC_MAX_CPUS ?
				 (int)target : cpu);
		}
	}
	v = vcpu_of(a, tep_data_pid(tep, rec));
	if (!v)
		goto out;
	if (id >= 0 && id == a->entry_id) {
		a->saw_kvm = true;
		charge(a, v, now);
		run_on(a, v, cpu);
		v->kvm = V_GUEST;
	} else if (id >= 0 && (id == a->exit_id || id == a->uexit_id)) {
		bool user = id == a->uexit_id;

		if (user ? !an_u64(rec, a->f_ureason, &x) || !an_u64(rec, a->f_errno, &err) :
			   !an_u64(rec, a->f_reason, &x)) {
			a->bad++;
			goto out;
		}
		if (user) {
			/* As the format prints it: a negative errno is a restart or an error. */
			isa = (int32_t)err >= 0 ? 0 : (int32_t)err == -4 ? 1 : 2;
			if (isa)
				x = 0;
		} else {
			an_u64(rec, a->f_isa, &isa);
			if (isa == 1)		/* VMX keeps flags in the upper half */
				x &= 0xffff;
		}
		a->saw_kvm = true;
		charge(a, v, now);
		run_on(a, v, cpu);
		r = reason_index(a, rec, user, (uint32_t)isa, (uint32_t)x);
		if (r < 0) {
			a->dropped++;
			v->kvm = V_UNKNOWN;
		} else {
			v->kvm = V_EXIT;
			v->reason = r;
		}
	} else if (v->sched != S_ON || v->cpu != cpu) {
		/* kvm_vcpu_wakeup or any other record of the thread: it runs here. */
		charge(a, v, now);
		run_on(a, v, cpu);
	}
out:
	c = hcpu(a, cpu);
	if (c)
		c->last_ts = now;
}

/*
 * A guest record changes @v's task at @now. Before the first host record
 * nothing is charged; past the last host record the charge is noted, to be
 * undone by vcpus_an_finish() when no host record follows. Past VC_TENT such
 * cuts between two host records the task changes where the last cut was.
 */
static void guest_cut(struct vcpus_an *a, struct vc_vcpu *v, uint64_t now)
{
	uint64_t from;

	if (!a->started)
		return;
	if (now <= a->host_ts) {
		charge(a, v, now);
		return;
	}
	if (v->tent_seq != a->host_seq) {
		v->tent_seq = a->host_seq;
		v->nr_tent = 0;
	}
	if (v->nr_tent >= VC_TENT) {
		a->dropped++;
		return;
	}
	charge(a, v, a->host_ts);
	from = v->since;
	charge(a, v, now);
	if (v->since > from) {
		v->tent[v->nr_tent].pair = v->pair;
		v->tent[v->nr_tent++].ns = v->since - from;
	}
	a->now = now;
}

static int gtask(struct vcpus_an *a, int guest, int pid, const char *comm)
{
	uint64_t key = (uint64_t)guest << 32 | (uint32_t)pid;
	struct vc_gtask *t;
	int i = ht_get(&a->ht_gtask, key);

	if (i >= 0) {
		/* By its last name, as a host task (htask()). */
		t = &a->gtasks[i];
		if (pid && comm_changed(t->comm, comm)) {
			snprintf(t->comm, sizeof(t->comm), "%.16s", comm);
			an_sanitize(t->comm);
		}
		return i;
	}
	if (a->nr_gtasks >= VC_MAX_GTASKS)
		return -1;
	t = &a->gtasks[a->nr_gtasks];
	t->guest = guest;
	t->pid = pid;
	snprintf(t->comm, sizeof(t->comm), "%.16s", comm);
	an_sanitize(t->comm);
	ht_put(&a->ht_gtask, key, a->nr_gtasks);
	return a->nr_gtasks++;
}

static int pair(struct vcpus_an *a, int vcpu, int task)
{
	uint64_t key = (uint64_t)vcpu << 32 | (uint32_t)task;
	struct vc_pair *p;
	int i;

	if (task < 0)
		return -1;
	i = ht_get(&a->ht_pair, key);
	if (i >= 0)
		return i;
	if (a->nr_pairs >= VC_MAX_PAIRS)
		return -1;
	p = &a->pairs[a->nr_pairs];
	p->acc = calloc(1, sizeof(*p->acc));
	if (!p->acc)
		return -1;
	p->vcpu = vcpu;
	p->gtask = task;
	ht_put(&a->ht_pair, key, a->nr_pairs);
	return a->nr_pairs++;
}

static void open_release(struct vcpus_an *a, int i)
{
	struct vc_open *o = &a->opens[i];
	struct vc_vcpu *v = &a->vcpus[o->vcpu];

	if (o->prev >= 0)
		a->opens[o->prev].next = o->next;
	else
		v->open_head = o->next;
	if (o->next >= 0)
		a->opens[o->next].prev = o->prev;
	if (o->iv)
		ht_del(a->iv_ht[o->guest], o->key);
	else
		a->gt_open[o->gtask] = -1;
	o->next = a->open_free;
	a->open_free = i;
}

/*
 * An entry off the free list (the caller checked there is one), timed on
 * vCPU @v from now and first on its list: open_release()'s inverse. The
 * caller says what it times (a wakeup's task, or an interval's key).
 */
static int open_take(struct vcpus_an *a, struct vc_vcpu *v, int guest, uint64_t now)
{
	int i = a->open_free;
	struct vc_open *o = &a->opens[i];

	a->open_free = o->next;
	o->guest = guest;
	o->vcpu = (int)(v - a->vcpus);
	o->start = v->since;
	o->at = now;
	o->nr = 0;
	o->other_ns = 0;
	o->prev = -1;
	o->next = v->open_head;
	if (v->open_head >= 0)
		a->opens[v->open_head].prev = i;
	v->open_head = i;
	return i;
}

/* A guest task is woken: its wakeup is timed on the vCPU it is woken onto from now. */
static void lat_open(struct vcpus_an *a, int guest, struct tep_record *rec, uint64_t now)
{
	const struct vc_guest *g = &a->guests[guest];
	uint64_t pid, cpu;
	struct vc_vcpu *v;
	struct vc_open *o;
	char comm[20];
	int t, i;

	if (!an_u64(rec, g->f_wk_pid, &pid) || !an_u64(rec, g->f_wk_cpu, &cpu) ||
	    !an_str(rec, g->f_wk_comm, comm, 17)) {
		a->bad++;
		return;
	}
	if (!a->started || cpu >= (uint64_t)g->nr_vcpus)
		return;
	t = gtask(a, guest, (int)pid, comm);
	if (t >= 0 && a->gt_open[t] >= 0)
		open_release(a, a->gt_open[t]);		/* its switch in was not seen */
	if (t < 0 || a->open_free < 0) {
		a->dropped++;
		return;
	}
	v = &a->vcpus[g->first + cpu];
	guest_cut(a, v, now);
	i = open_take(a, v, guest, now);
	o = &a->opens[i];
	o->iv = false;
	o->pid = (int)pid;
	o->gtask = t;
	a->gt_open[t] = i;
}

static void lat_close(struct vcpus_an *a, int guest, int i, uint64_t now);

/*
 * --interval: a START event opens an interval of its key (the field's value,
 * or the task) on the vCPU it ran on; the END event of the same key closes
 * it. A START whose key is open already starts it again.
 */
static void iv_event(struct vcpus_an *a, int guest, struct tep_handle *tep, struct tep_record *rec,
		     bool start, int vi, uint64_t now)
{
	const struct vc_guest *g = &a->guests[guest];
	struct vc_vcpu *v = &a->vcpus[vi];
	struct vc_ht *h = a->iv_ht[guest];
	uint64_t key;
	struct vc_open *o;
	int i;

	if (a->iv_field[0] ? !an_u64(rec, start ? g->f_istart : g->f_iend, &key) : false) {
		a->bad++;
		return;
	}
	if (!a->iv_field[0])
		key = (uint32_t)tep_data_pid(tep, rec);
	if (!a->started)
		return;
	if (!h) {
		h = a->iv_ht[guest] = calloc(1, sizeof(*h));
		if (!h || ht_init(h, 2 * VC_MAX_OPEN) < 0) {
			if (h)
				ht_free(h);
			free(h);
			a->iv_ht[guest] = NULL;
			a->dropped++;
			return;
		}
	}
	i = ht_get(h, key);
	if (!start) {
		if (i >= 0)
			lat_close(a, guest, i, now);
		return;
	}
	if (i >= 0)
		open_release(a, i);
	if (a->open_free < 0) {
		a->dropped++;
		return;
	}
	guest_cut(a, v, now);
	i = open_take(a, v, guest, now);
	o = &a->opens[i];
	o->iv = true;
	o->key = key;
	o->pid = -1;
	o->gtask = -1;
	ht_put(h, key, i);
}

/* The woken task runs: its latency and what the vCPU did meanwhile go to the guest's totals. */
static void lat_close(struct vcpus_an *a, int guest, int i, uint64_t now)
{
	struct vc_open *o = &a->opens[i];
	struct vc_vcpu *v = &a->vcpus[o->vcpu];
	struct vc_lat **lp = o->iv ? &a->ilat[guest] : &a->lat[guest], *l = *lp;
	unsigned int k;

	guest_cut(a, v, now);
	if (!l && !(l = *lp = calloc(1, sizeof(*l)))) {
		a->dropped++;
		open_release(a, i);
		return;
	}
	o->ns = v->since - o->start;
	l->wakeups++;
	if (o->ns >= a->threshold) {
		l->over++;
		l->total_ns += o->ns;
		l->other_ns += o->other_ns;
		for (k = 0; k < o->nr; k++) {
			if (o->c[k].cls == C_GTASK)
				l->gt[o->c[k].idx] += o->c[k].ns;
			else
				acc_add(&l->acc, o->c[k].cls, o->c[k].idx, o->c[k].ns);
		}
		if (l->nr_worst < VC_LAT_WORST || o->ns > l->worst[VC_LAT_WORST - 1].ns) {
			k = l->nr_worst < VC_LAT_WORST ? l->nr_worst++ : VC_LAT_WORST - 1;
			for (; k > 0 && l->worst[k - 1].ns < o->ns; k--)
				l->worst[k] = l->worst[k - 1];
			l->worst[k] = *o;
		}
	}
	open_release(a, i);
}

/**
 * vcpus_an_guest() - feed one record of a guest file (merged with the host's, in host time)
 * @a: the analysis
 * @guest: the guest's index (vcpus_an_add_guest())
 * @tep: the guest file's event handle
 * @rec: the record, its timestamp mapped onto the host's clock by libtracecmd
 * @cpu: the guest CPU, that is the vCPU
 */
void vcpus_an_guest(struct vcpus_an *a, int guest, struct tep_handle *tep, struct tep_record *rec,
		    int cpu)
{
	uint64_t now, pid;
	struct vc_guest *g;
	struct vc_vcpu *v;
	char comm[20];
	int i, t, id;

	if (guest < 0 || (unsigned int)guest >= a->nr_guests)
		return;
	g = &a->guests[guest];
	if (g->tep != tep) {
		struct tep_event *ev = tep_find_event_by_name(tep, "sched", "sched_switch");

		g->tep = tep;
		g->switch_id = ev ? ev->id : -1;
		g->f_next_pid = an_field(ev, "next_pid");
		g->f_next_comm = an_field(ev, "next_comm");
		/* A wakeup starts at sched_waking; a guest that recorded only sched_wakeup, there. */
		ev = tep_find_event_by_name(tep, "sched", "sched_waking");
		if (!ev)
			ev = tep_find_event_by_name(tep, "sched", "sched_wakeup");
		g->waking_id = ev ? ev->id : -1;
		g->f_wk_pid = an_field(ev, "pid");
		g->f_wk_comm = an_field(ev, "comm");
		g->f_wk_cpu = an_field(ev, "target_cpu");
		ev = a->intervals ? tep_find_event_by_name(tep, a->iv_sys[0], a->iv_ev[0]) : NULL;
		g->istart_id = ev ? ev->id : -1;
		g->f_istart = a->iv_field[0] ? an_field(ev, a->iv_field) : NULL;
		ev = a->intervals ? tep_find_event_by_name(tep, a->iv_sys[1], a->iv_ev[1]) : NULL;
		g->iend_id = ev ? ev->id : -1;
		g->f_iend = a->iv_field[0] ? an_field(ev, a->iv_field) : NULL;
	}
	if (cpu < 0 || cpu >= g->nr_vcpus)
		return;
	i = g->first + cpu;
	v = &a->vcpus[i];
	now = rec->ts > a->now ? rec->ts : a->now;
	if (rec->missed_events) {
		guest_cut(a, v, now);
		v->pair = -1;
		/* Their sched_switch may be among the lost events: they are not timed. */
		while (v->open_head >= 0)
			open_release(a, v->open_head);
	}
	id = tep_data_type(tep, rec);
	if (a->intervals && id >= 0 && (id == g->istart_id || id == g->iend_id))
		iv_event(a, guest, tep, rec, id == g->istart_id, i, now);
	if (a->latency && id >= 0 && id == g->waking_id) {
		lat_open(a, guest, rec, now);
		return;
	}
	if (id != g->switch_id || g->switch_id < 0)
		return;
	if (!an_u64(rec, g->f_next_pid, &pid) || !an_str(rec, g->f_next_comm, comm, 17)) {
		a->bad++;
		return;
	}
	guest_cut(a, v, now);
	t = gtask(a, guest, (int)pid, comm);
	v->pair = pair(a, i, t);
	if (v->pair < 0)
		a->dropped++;
	if (a->latency && t >= 0 && a->gt_open[t] >= 0)
		lat_close(a, guest, a->gt_open[t], now);
}

/**
 * vcpus_an_finish() - close every vCPU's timeline at the last record
 * @a: the analysis
 */
void vcpus_an_finish(struct vcpus_an *a)
{
	unsigned int i, k;

	/* The span ends at the last host record: what guest records charged past it is undone. */
	for (i = 0; i < a->nr_vcpus; i++) {
		struct vc_vcpu *v = &a->vcpus[i];
		unsigned int idx;
		int cls;

		if (v->tent_seq != a->host_seq || !v->nr_tent)
			continue;
		/* No host record since: the host state is the one they were charged to. */
		state_of(a, v, &cls, &idx);
		for (k = 0; k < v->nr_tent; k++) {
			acc_add(v->acc, cls, idx, -v->tent[k].ns);
			if (v->tent[k].pair >= 0)
				acc_add(a->pairs[v->tent[k].pair].acc, cls, idx, -v->tent[k].ns);
			v->since -= v->tent[k].ns;
		}
		strip_cut(v, v->since);
	}
	a->now = a->host_ts;
	for (i = 0; i < a->nr_vcpus; i++)
		charge(a, &a->vcpus[i], a->now);
}

/* --- Output --------------------------------------------------------------- */

/* One state of the report: a name, its nanoseconds, and the leaves under it. */
struct vc_leaf {
	const char *name;
	uint64_t ns;
};

static int by_ns(const void *x, const void *y)
{
	const struct vc_leaf *a = x, *b = y;

	if (a->ns != b->ns)
		return a->ns < b->ns ? 1 : -1;
	return strcmp(a->name, b->name);
}

/* The leaves of one class (@user reasons, kernel reasons, or preempting tasks), most first. */
static unsigned int leaves(const struct vcpus_an *a, const struct acc *c, int cls, bool user,
			   struct vc_leaf *out, uint64_t *sum)
{
	unsigned int i, n = 0;

	*sum = 0;
	if (cls == C_REASON) {
		for (i = 0; i < a->nr_reasons; i++)
			if (a->reasons[i].user == user && c->reason[i]) {
				out[n].name = a->reasons[i].name;
				out[n++].ns = c->reason[i];
				*sum += c->reason[i];
			}
	} else {
		for (i = 0; i < a->nr_htasks; i++)
			if (c->pre[i]) {
				out[n].name = a->htasks[i];
				out[n++].ns = c->pre[i];
				*sum += c->pre[i];
			}
	}
	qsort(out, n, sizeof(*out), by_ns);
	return n;
}

/* Whether the recording had KVM's events: without them on-CPU time is "running" (TCG). */
static bool kvm_mode(const struct vcpus_an *a)
{
	return a->saw_kvm;
}

static uint64_t acc_total(const struct vcpus_an *a, const struct acc *c)
{
	uint64_t t = 0;
	unsigned int i;

	for (i = 0; i < K_NR; i++)
		t += c->s[i];
	for (i = 0; i < a->nr_reasons; i++)
		t += c->reason[i];
	for (i = 0; i < a->nr_htasks; i++)
		t += c->pre[i];
	return t;
}

/* The scalar states as reported: what is unresolved while walking is resolved here. */
static void scalars(const struct vcpus_an *a, const struct acc *c, uint64_t *running, uint64_t *halted,
		    uint64_t *unknown)
{
	*running = kvm_mode(a) ? 0 : c->s[K_RUN_UNK];
	*halted = c->s[K_HALTED] + (kvm_mode(a) ? 0 : c->s[K_SLEEP_UNK]);
	*unknown = c->s[K_UNKNOWN] + (kvm_mode(a) ? c->s[K_RUN_UNK] + c->s[K_SLEEP_UNK] : 0);
}

static void pline(FILE *f, const char *indent, const char *name, uint64_t ns, uint64_t wall)
{
	int w = 40 - (int)strlen(indent);

	fprintf(f, "%s%-*s %14" PRIu64 " %7.2f%%\n", indent, w > 0 ? w : 0, name, ns,
		wall ? 100.0 * ns / wall : 0.0);
}

static void print_group(const struct vcpus_an *a, FILE *f, const char *indent, const char *sub,
			const char *name, const struct acc *c, int cls, bool user, uint64_t wall,
			struct vc_leaf *buf)
{
	uint64_t sum;
	unsigned int n = leaves(a, c, cls, user, buf, &sum), i;

	pline(f, indent, name, sum, wall);
	for (i = 0; i < n; i++)
		pline(f, sub, buf[i].name, buf[i].ns, wall);
}

static void print_acc(const struct vcpus_an *a, FILE *f, const char *indent, const char *sub,
		      const struct acc *c, uint64_t wall, struct vc_leaf *buf)
{
	uint64_t running, halted, unknown;

	scalars(a, c, &running, &halted, &unknown);
	if (kvm_mode(a)) {
		pline(f, indent, "in the guest", c->s[K_GUEST], wall);
		print_group(a, f, indent, sub, "in exits handled by the kernel", c, C_REASON, false, wall,
			    buf);
		print_group(a, f, indent, sub, "in exits to QEMU", c, C_REASON, true, wall, buf);
	} else {
		pline(f, indent, "running", running, wall);
	}
	pline(f, indent, "halted", halted, wall);
	print_group(a, f, indent, sub, "preempted", c, C_PRE, false, wall, buf);
	pline(f, indent, "unknown", unknown, wall);
}

/*
 * The guest's steal time beside the preempted time we measured. They count
 * the same thing (KVM's steal is the vCPU thread's run_delay: runnable, not
 * running), so they should agree up to the bound: 5% of the larger, but no
 * less than two USER_HZ ticks. /proc/stat truncates a cumulative count to
 * whole ticks at each of the two reads, and the agent reads at its START and
 * STOP, not at the host file's first and last records.
 */
struct vc_steal {
	uint64_t steal, pre, bound;
	int64_t diff;			/* steal - preempted */
	bool agree;
};

static void steal_check(const struct vcpus_an *a, const struct vc_vcpu *v, struct vc_steal *st)
{
	uint64_t big;
	unsigned int i;

	st->steal = v->steal_ns;
	st->pre = 0;
	for (i = 0; i < a->nr_htasks; i++)
		st->pre += v->acc->pre[i];
	big = st->steal > st->pre ? st->steal : st->pre;
	st->bound = big / 20;
	if (st->bound < 2 * v->tick_ns)
		st->bound = 2 * v->tick_ns;
	st->diff = (int64_t)st->steal - (int64_t)st->pre;
	st->agree = (uint64_t)(st->diff < 0 ? -st->diff : st->diff) <= st->bound;
}

static void print_steal(const struct vcpus_an *a, FILE *f, const struct vc_vcpu *v)
{
	struct vc_steal st;

	if (!v->have_steal)
		return;
	steal_check(a, v, &st);
	fprintf(f, "    steal (the guest's /proc/stat)  %14" PRIu64 " ns, preempted %" PRIu64
		" ns: %s (differ by %" PRId64 " ns, bound %" PRIu64 " ns: 5%% or 2 ticks)\n",
		st.steal, st.pre, st.agree ? "agree" : "DISAGREE", st.diff, st.bound);
}

static bool guest_wanted(const struct vcpus_an *a, unsigned int g, const char *only)
{
	return !only || !strcmp(a->guests[g].name, only);
}

/**
 * vcpus_an_print() - the text report
 * @a: the analysis
 * @f: where it goes
 * @only: one guest's name, or NULL for all
 */
void vcpus_an_print(const struct vcpus_an *a, FILE *f, const char *only)
{
	struct vc_leaf *buf = malloc((VC_MAX_REASONS + VC_MAX_HTASKS) * sizeof(*buf));
	uint64_t wall = a->now - a->t0;
	unsigned int g, i, p;
	char ts[2][32];

	if (!buf)
		return;
	fprintf(f, "\nvCPU time (host nanoseconds, %s to %s: %" PRIu64 " ns; every vCPU's states add "
		"up to it)\n", an_ts(ts[0], sizeof(ts[0]), a->t0), an_ts(ts[1], sizeof(ts[1]), a->now),
		wall);
	if (!kvm_mode(a))
		fprintf(f, "  no kvm_entry/kvm_exit events (TCG, or recorded without --kvm-exits): "
			"\"in the guest\" and the exits by reason need `record --kvm-exits` on a KVM host\n");
	if (!a->saw_sched)
		fprintf(f, "  no host sched_switch of a vCPU thread: halted and preempted need "
			"`record --kvm-exits`\n");
	if (!a->nr_vcpus)
		fprintf(f, "  no vCPU threads: host.dat has no GUEST option naming them (QMP's "
			"query-cpus-fast, or record --qemu-pid)\n");
	for (g = 0; g < a->nr_guests; g++) {
		const struct vc_guest *gu = &a->guests[g];

		if (!guest_wanted(a, g, only))
			continue;
		for (i = gu->first; i < (unsigned int)(gu->first + gu->nr_vcpus); i++) {
			const struct vc_vcpu *v = &a->vcpus[i];

			fprintf(f, "  guest %s vCPU %d (host thread %d): %" PRIu64 " ns\n", gu->name,
				v->vcpu, v->tid, wall);
			print_acc(a, f, "    ", "      ", v->acc, wall, buf);
			print_steal(a, f, v);
			for (p = 0; p < a->nr_pairs; p++) {
				const struct vc_pair *pr = &a->pairs[p];
				const struct vc_gtask *t = &a->gtasks[pr->gtask];
				uint64_t tw = acc_total(a, pr->acc);

				if (pr->vcpu != (int)i || !tw)
					continue;
				fprintf(f, "    guest task %s[%d] on vCPU %d: %" PRIu64 " ns\n", t->comm,
					t->pid, v->vcpu, tw);
				print_acc(a, f, "      ", "        ", pr->acc, tw, buf);
			}
		}
	}
	if (a->lost_markers || a->bad || a->dropped)
		fprintf(f, "  note: %" PRIu64 " lost-event markers in the host file, %" PRIu64
			" undecodable records, %" PRIu64 " past a bound\n", a->lost_markers, a->bad,
			a->dropped);
	free(buf);
}

/* --- report --latency ------------------------------------------------------ */

struct vc_cause {
	char name[96];
	uint64_t ns;
};

static void cause_name(const struct vcpus_an *a, int cls, unsigned int idx, char *buf, size_t size)
{
	static const char *const scalar[K_NR][2] = {
		[K_GUEST] = { "in the guest (task unknown)", "in the guest (task unknown)" },
		[K_HALTED] = { "halted", "halted" },
		[K_UNKNOWN] = { "unknown", "unknown" },
		[K_RUN_UNK] = { "running (task unknown)", "unknown" },
		[K_SLEEP_UNK] = { "halted", "unknown" },
	};

	if (cls == C_GTASK)
		snprintf(buf, size, "guest task %s[%d]", a->gtasks[idx].comm, a->gtasks[idx].pid);
	else if (cls == C_REASON)
		snprintf(buf, size, "%s %s", a->reasons[idx].user ? "exit to QEMU" : "exit",
			 a->reasons[idx].name);
	else if (cls == C_PRE)
		snprintf(buf, size, "preempted by %s", a->htasks[idx]);
	else
		snprintf(buf, size, "%s", scalar[idx][kvm_mode(a)]);
}

/**
 * vcpus_an_nr_vcpus() - how many vCPU threads the host file maps
 * @a: the analysis
 *
 * Return: the count.
 */
unsigned int vcpus_an_nr_vcpus(const struct vcpus_an *a)
{
	return a->nr_vcpus;
}

/**
 * vcpus_an_strips() - also keep each vCPU's state intervals, for vcpus_an_each_strip()
 * @a: the analysis, before any record
 *
 * At most VC_STRIP_MAX intervals are kept per vCPU: past that, intervals
 * shorter than a threshold (1 us, doubled as needed) are folded into the
 * one before them, and the interval says how many it holds.
 */
void vcpus_an_strips(struct vcpus_an *a)
{
	a->strips = true;
}

/* A strip interval's state: its kind (guest, running, exit, qemu, halted, preempted, unknown) and name. */
static const char *strip_state(const struct vcpus_an *a, const struct vc_strip *s, char *name, size_t size)
{
	const char *kind;

	if (s->cls == C_REASON) {
		kind = a->reasons[s->idx].user ? "qemu" : "exit";
	} else if (s->cls == C_PRE) {
		kind = "preempted";
	} else if (s->idx == K_GUEST) {
		kind = "guest";
	} else if (s->idx == K_HALTED || (s->idx == K_SLEEP_UNK && !kvm_mode(a))) {
		kind = "halted";
	} else if (s->idx == K_RUN_UNK && !kvm_mode(a)) {
		kind = "running";
	} else {
		kind = "unknown";
	}
	if (s->cls == C_SCALAR && s->idx == K_GUEST)
		snprintf(name, size, "in the guest");
	else if (s->cls == C_SCALAR)
		snprintf(name, size, "%s", kind);
	else
		cause_name(a, s->cls, s->idx, name, size);
	return kind;
}

/**
 * vcpus_an_each_strip() - walk the state intervals kept since vcpus_an_strips()
 * @a: the analysis, finished
 * @fn: called per interval, in time order per vCPU: the guest's name, the
 *	vCPU's number, host ns [start, end), the state's kind (guest, running,
 *	exit, qemu, halted, preempted, unknown), its name ("exit npf",
 *	"preempted by stress-ng"), and how many shorter intervals (of any
 *	state) that followed it were folded into it
 * @ctx: passed to @fn
 *
 * Return: 0, or the first non-zero value @fn returned.
 */
int vcpus_an_each_strip(const struct vcpus_an *a, vcpus_strip_fn fn, void *ctx)
{
	char name[2 * VC_NAME_LEN], next[2 * VC_NAME_LEN];
	unsigned int i, k;
	int ret;

	for (i = 0; i < a->nr_vcpus; i++) {
		const struct vc_vcpu *v = &a->vcpus[i];

		for (k = 0; k < v->nr_strip; k++) {
			const struct vc_strip *s = &v->strip[k];
			const char *kind = strip_state(a, s, name, sizeof(name));
			uint64_t end = s->end;
			unsigned int merged = s->merged;

			/* States told apart only while walking (unknown, halted under TCG) are one here. */
			while (!merged && k + 1 < v->nr_strip && v->strip[k + 1].start == end &&
			       strip_state(a, &v->strip[k + 1], next, sizeof(next)) == kind &&
			       !strcmp(next, name)) {
				k++;
				end = v->strip[k].end;
				merged += v->strip[k].merged;
			}
			ret = fn(ctx, a->guests[v->guest].name, v->vcpu, s->start, end, kind, name, merged);
			if (ret)
				return ret;
		}
	}
	return 0;
}

static int by_cause_name(const void *x, const void *y)
{
	return strcmp(((const struct vc_cause *)x)->name, ((const struct vc_cause *)y)->name);
}

static int by_cause_ns(const void *x, const void *y)
{
	const struct vc_cause *a = x, *b = y;

	if (a->ns != b->ns)
		return a->ns < b->ns ? 1 : -1;
	return strcmp(a->name, b->name);
}

static void cause_push(const struct vcpus_an *a, struct vc_cause *v, unsigned int *n, int cls,
		       unsigned int idx, uint64_t ns)
{
	if (!ns)
		return;
	cause_name(a, cls, idx, v[*n].name, sizeof(v[*n].name));
	v[(*n)++].ns = ns;
}

/* The causes named, one entry per name (several states can share one), most first. */
static unsigned int causes_sort(struct vc_cause *v, unsigned int n)
{
	unsigned int i, m = 0;

	qsort(v, n, sizeof(*v), by_cause_name);
	for (i = 0; i < n; i++) {
		if (m && !strcmp(v[m - 1].name, v[i].name))
			v[m - 1].ns += v[i].ns;
		else
			v[m++] = v[i];
	}
	qsort(v, m, sizeof(*v), by_cause_ns);
	return m;
}

#define VC_NR_CAUSES	(K_NR + VC_MAX_REASONS + VC_MAX_HTASKS + VC_MAX_GTASKS + 1)

static unsigned int lat_totals(const struct vcpus_an *a, const struct vc_lat *l, struct vc_cause *v)
{
	unsigned int i, n = 0;

	for (i = 0; i < K_NR; i++)
		cause_push(a, v, &n, C_SCALAR, i, l->acc.s[i]);
	for (i = 0; i < a->nr_reasons; i++)
		cause_push(a, v, &n, C_REASON, i, l->acc.reason[i]);
	for (i = 0; i < a->nr_htasks; i++)
		cause_push(a, v, &n, C_PRE, i, l->acc.pre[i]);
	for (i = 0; i < a->nr_gtasks; i++)
		cause_push(a, v, &n, C_GTASK, i, l->gt[i]);
	if (l->other_ns) {
		snprintf(v[n].name, sizeof(v[n].name), "(more causes)");
		v[n++].ns = l->other_ns;
	}
	return causes_sort(v, n);
}

static unsigned int lat_one(const struct vcpus_an *a, const struct vc_open *o, struct vc_cause *v)
{
	unsigned int k, n = 0;

	for (k = 0; k < o->nr; k++)
		cause_push(a, v, &n, o->c[k].cls, o->c[k].idx, o->c[k].ns);
	if (o->other_ns) {
		snprintf(v[n].name, sizeof(v[n].name), "(more causes)");
		v[n++].ns = o->other_ns;
	}
	return causes_sort(v, n);
}

/* --latency's wakeups (@iv false) or --interval's intervals, per guest. */
static void print_lat(const struct vcpus_an *a, FILE *f, const char *only, bool iv)
{
	struct vc_cause *v = malloc(VC_NR_CAUSES * sizeof(*v));
	const char *what = iv ? "intervals" : "wakeups";
	unsigned int g, i, k, n;
	char ts[32];

	if (!v)
		return;
	if (iv)
		fprintf(f, "\nGuest intervals (%s:%s to %s:%s of the same %s%s, host nanoseconds; at least "
			"%" PRIu64 " ns), and what the vCPU of the first did meanwhile\n", a->iv_sys[0],
			a->iv_ev[0], a->iv_sys[1], a->iv_ev[1], a->iv_field[0] ? a->iv_field : "task",
			a->iv_field[0] ? " value" : "", a->threshold);
	else
		fprintf(f, "\nGuest wakeup latency (sched_waking to the sched_switch that runs the task, "
			"host nanoseconds; at least %" PRIu64 " ns), and what the vCPU did meanwhile\n",
			a->threshold);
	for (g = 0; g < a->nr_guests; g++) {
		const struct vc_lat *l = iv ? a->ilat[g] : a->lat[g];

		if (!guest_wanted(a, g, only))
			continue;
		if (!l) {
			fprintf(f, "  guest %s: no %s timed\n", a->guests[g].name, what);
			continue;
		}
		fprintf(f, "  guest %s: %" PRIu64 " %s, %" PRIu64 " of at least %" PRIu64 " ns: %"
			PRIu64 " ns in all, per cause:\n", a->guests[g].name, l->wakeups, what, l->over,
			a->threshold, l->total_ns);
		n = lat_totals(a, l, v);
		for (i = 0; i < n; i++)
			pline(f, "    ", v[i].name, v[i].ns, l->total_ns);
		if (l->nr_worst)
			fprintf(f, "  guest %s: the %u longest:\n", a->guests[g].name, l->nr_worst);
		for (k = 0; k < l->nr_worst; k++) {
			const struct vc_open *o = &l->worst[k];

			if (o->iv)
				fprintf(f, "    %s %" PRIu64 " on vCPU %d, from %s: %" PRIu64 " ns\n",
					a->iv_field[0] ? a->iv_field : "task", o->key,
					a->vcpus[o->vcpu].vcpu, an_ts(ts, sizeof(ts), o->at), o->ns);
			else
				fprintf(f, "    %s[%d] on vCPU %d, woken at %s: %" PRIu64 " ns\n",
					a->gtasks[o->gtask].comm, o->pid, a->vcpus[o->vcpu].vcpu,
					an_ts(ts, sizeof(ts), o->at), o->ns);
			n = lat_one(a, o, v);
			for (i = 0; i < n; i++)
				pline(f, "      ", v[i].name, v[i].ns, o->ns);
		}
	}
	free(v);
}

/**
 * vcpus_an_print_latency() - the text report of --latency
 * @a: the analysis
 * @f: where it goes
 * @only: one guest's name, or NULL for all
 */
void vcpus_an_print_latency(const struct vcpus_an *a, FILE *f, const char *only)
{
	print_lat(a, f, only, false);
}

/**
 * vcpus_an_print_intervals() - the text report of --interval
 * @a: the analysis
 * @f: where it goes
 * @only: one guest's name, or NULL for all
 */
void vcpus_an_print_intervals(const struct vcpus_an *a, FILE *f, const char *only)
{
	print_lat(a, f, only, true);
}

static void json_causes(struct jw *w, const struct vc_cause *v, unsigned int n)
{
	unsigned int i;

	jw_obj(w, "causes");
	for (i = 0; i < n; i++)
		jw_u64(w, v[i].name, v[i].ns);
	jw_end(w, '}');
}

static void json_lat(const struct vcpus_an *a, struct jw *w, const char *only, bool iv)
{
	struct vc_cause *v = malloc(VC_NR_CAUSES * sizeof(*v));
	char name[140];
	unsigned int g, k;

	if (!v)
		return;
	jw_obj(w, iv ? "intervals" : "latency");
	if (iv) {
		snprintf(name, sizeof(name), "%s:%s", a->iv_sys[0], a->iv_ev[0]);
		jw_str(w, "start", name);
		snprintf(name, sizeof(name), "%s:%s", a->iv_sys[1], a->iv_ev[1]);
		jw_str(w, "end", name);
		if (a->iv_field[0])
			jw_str(w, "field", a->iv_field);
		else
			jw_null(w, "field");
	}
	jw_u64(w, "threshold_ns", a->threshold);
	jw_arr(w, "guests");
	for (g = 0; g < a->nr_guests; g++) {
		const struct vc_lat *l = iv ? a->ilat[g] : a->lat[g];

		if (!guest_wanted(a, g, only))
			continue;
		jw_obj(w, NULL);
		jw_str(w, "name", a->guests[g].name);
		jw_u64(w, "wakeups", l ? l->wakeups : 0);
		jw_u64(w, "over", l ? l->over : 0);
		jw_u64(w, "total_ns", l ? l->total_ns : 0);
		if (l)
			json_causes(w, v, lat_totals(a, l, v));
		else
			json_causes(w, v, 0);
		jw_arr(w, "worst");
		for (k = 0; l && k < l->nr_worst; k++) {
			const struct vc_open *o = &l->worst[k];

			jw_obj(w, NULL);
			if (o->iv) {
				jw_u64(w, "key", o->key);
				jw_u64(w, "vcpu", a->vcpus[o->vcpu].vcpu);
				jw_u64(w, "start_ns", o->at);
				jw_u64(w, "duration_ns", o->ns);
			} else {
				jw_i64(w, "pid", o->pid);
				jw_str(w, "comm", a->gtasks[o->gtask].comm);
				jw_u64(w, "vcpu", a->vcpus[o->vcpu].vcpu);
				jw_u64(w, "woken_ns", o->at);
				jw_u64(w, "latency_ns", o->ns);
			}
			json_causes(w, v, lat_one(a, o, v));
			jw_end(w, '}');
		}
		jw_end(w, ']');
		jw_end(w, '}');
	}
	jw_end(w, ']');
	jw_end(w, '}');
	free(v);
}

/**
 * vcpus_an_json_latency() - --latency as the member "latency"
 * @a: the analysis
 * @w: the writer, inside an object
 * @only: one guest's name, or NULL for all
 */
void vcpus_an_json_latency(const struct vcpus_an *a, struct jw *w, const char *only)
{
	json_lat(a, w, only, false);
}

/**
 * vcpus_an_json_intervals() - --interval as the member "intervals"
 * @a: the analysis
 * @w: the writer, inside an object
 * @only: one guest's name, or NULL for all
 */
void vcpus_an_json_intervals(const struct vcpus_an *a, struct jw *w, const char *only)
{
	json_lat(a, w, only, true);
}

static void json_group(const struct vcpus_an *a, struct jw *w, const char *key, const struct acc *c,
		       int cls, bool user, struct vc_leaf *buf)
{
	uint64_t sum;
	unsigned int n = leaves(a, c, cls, user, buf, &sum), i;

	jw_obj(w, key);
	for (i = 0; i < n; i++)
		jw_u64(w, buf[i].name, buf[i].ns);
	jw_end(w, '}');
}

static void json_states(const struct vcpus_an *a, struct jw *w, const struct acc *c,
			struct vc_leaf *buf)
{
	uint64_t running, halted, unknown;

	scalars(a, c, &running, &halted, &unknown);
	jw_obj(w, "states");
	if (kvm_mode(a)) {
		jw_u64(w, "guest", c->s[K_GUEST]);
		json_group(a, w, "exit_kernel", c, C_REASON, false, buf);
		json_group(a, w, "exit_userspace", c, C_REASON, true, buf);
	} else {
		jw_u64(w, "running", running);
	}
	jw_u64(w, "halted", halted);
	json_group(a, w, "preempted", c, C_PRE, false, buf);
	jw_u64(w, "unknown", unknown);
	jw_end(w, '}');
}

/**
 * vcpus_an_json() - the analysis as the member "vcpus"
 * @a: the analysis
 * @w: the writer, inside an object
 * @only: one guest's name, or NULL for all
 */
void vcpus_an_json(const struct vcpus_an *a, struct jw *w, const char *only)
{
	struct vc_leaf *buf = malloc((VC_MAX_REASONS + VC_MAX_HTASKS) * sizeof(*buf));
	uint64_t wall = a->now - a->t0;
	unsigned int g, i, p;

	if (!buf)
		return;
	jw_obj(w, "vcpus");
	jw_u64(w, "start_ns", a->t0);
	jw_u64(w, "end_ns", a->now);
	jw_u64(w, "wall_ns", wall);
	jw_bool(w, "kvm_events", a->saw_kvm);
	jw_bool(w, "sched_events", a->saw_sched);
	jw_u64(w, "lost_markers", a->lost_markers);
	jw_u64(w, "undecodable", a->bad);
	jw_u64(w, "past_bound", a->dropped);
	jw_arr(w, "guests");
	for (g = 0; g < a->nr_guests; g++) {
		const struct vc_guest *gu = &a->guests[g];

		if (!guest_wanted(a, g, only))
			continue;
		jw_obj(w, NULL);
		jw_str(w, "name", gu->name);
		jw_arr(w, "vcpus");
		for (i = gu->first; i < (unsigned int)(gu->first + gu->nr_vcpus); i++) {
			const struct vc_vcpu *v = &a->vcpus[i];

			jw_obj(w, NULL);
			jw_u64(w, "vcpu", v->vcpu);
			jw_i64(w, "tid", v->tid);
			jw_u64(w, "wall_ns", wall);
			json_states(a, w, v->acc, buf);
			if (v->have_steal) {
				struct vc_steal st;

				steal_check(a, v, &st);
				jw_obj(w, "steal");
				jw_u64(w, "guest_ns", st.steal);
				jw_u64(w, "preempted_ns", st.pre);
				jw_i64(w, "diff_ns", st.diff);
				jw_u64(w, "bound_ns", st.bound);
				jw_bool(w, "agree", st.agree);
				jw_end(w, '}');
			}
			jw_arr(w, "tasks");
			for (p = 0; p < a->nr_pairs; p++) {
				const struct vc_pair *pr = &a->pairs[p];
				const struct vc_gtask *t = &a->gtasks[pr->gtask];
				uint64_t tw = acc_total(a, pr->acc);

				if (pr->vcpu != (int)i || !tw)
					continue;
				jw_obj(w, NULL);
				jw_i64(w, "pid", t->pid);
				jw_str(w, "comm", t->comm);
				jw_u64(w, "wall_ns", tw);
				json_states(a, w, pr->acc, buf);
				jw_end(w, '}');
			}
			jw_end(w, ']');
			jw_end(w, '}');
		}
		jw_end(w, ']');
		jw_end(w, '}');
	}
	jw_end(w, ']');
	jw_end(w, '}');
	free(buf);
}

/**
 * vcpus_an_charge_to() - charge every vCPU's current state up to @to, as a
 * record at @to would (record --live-stat cuts its seconds there)
 * @a: the analysis
 * @to: host time; a record older than it is later taken at it
 */
void vcpus_an_charge_to(struct vcpus_an *a, uint64_t to)
{
	unsigned int i;

	if (!a->started)
		return;
	for (i = 0; i < a->nr_vcpus; i++)
		charge(a, &a->vcpus[i], to);
	if (to > a->now)
		a->now = to;
}

/**
 * vcpus_an_saw_kvm() - whether any kvm_entry or kvm_exit was seen
 * @a: the analysis
 *
 * Return: true once one was (the states then split running into the guest and exits).
 */
bool vcpus_an_saw_kvm(const struct vcpus_an *a)
{
	return kvm_mode(a);
}

/**
 * vcpus_an_sum() - a vCPU's states so far, as report --vcpus groups them
 * @a: the analysis
 * @i: the vCPU, 0 to vcpus_an_nr_vcpus() - 1 in the order the guests were added
 * @s: its guest's name, vCPU and thread, and its time per state; they add up to
 *	the time charged so far
 * @reasons: its time per exit reason (vcpus_an_reason_name()), their sum the
 *	exits' time (halts where the thread slept are halted, not here)
 *
 * Return: 0, or -EINVAL for a vCPU that is not known.
 */
int vcpus_an_sum(const struct vcpus_an *a, unsigned int i, struct vcpus_an_sum *s,
		 uint64_t reasons[VCPUS_AN_MAX_REASONS])
{
	const struct vc_vcpu *v;
	uint64_t running, halted, unknown;
	const struct acc *c;
	unsigned int r;

	if (i >= a->nr_vcpus)
		return -EINVAL;
	v = &a->vcpus[i];
	c = v->acc;
	scalars(a, c, &running, &halted, &unknown);
	memset(s, 0, sizeof(*s));
	s->guest = a->guests[v->guest].name;
	s->vcpu = v->vcpu;
	s->tid = v->tid;
	s->guest_ns = kvm_mode(a) ? c->s[K_GUEST] : running;
	s->halted_ns = halted;
	s->unknown_ns = unknown;
	for (r = 0; r < a->nr_htasks; r++)
		s->preempted_ns += c->pre[r];
	for (r = 0; r < VCPUS_AN_MAX_REASONS; r++) {
		reasons[r] = r < a->nr_reasons ? c->reason[r] : 0;
		s->exits_ns += reasons[r];
	}
	return 0;
}

/**
 * vcpus_an_reason_name() - an exit reason's name, as report --vcpus prints it
 * @a: the analysis
 * @r: its index in vcpus_an_sum()'s @reasons
 *
 * Return: the name; "?" for an index not known.
 */
const char *vcpus_an_reason_name(const struct vcpus_an *a, unsigned int r)
{
	return r < a->nr_reasons ? a->reasons[r].name : "?";
}
