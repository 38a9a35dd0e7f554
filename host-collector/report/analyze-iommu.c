// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * report --iommu: the guest's IOMMU group topology and its DMA mappings.
 *
 * Topology: the guest's /sys/kernel/iommu_groups as the agent saw it when the
 * recording stopped (sysinfo.c), and the group events of the recording
 * (add_device_to_group, remove_device_from_group, attach/detach), from which
 * the topology at the start is worked out backwards.
 *
 * Mappings: iommu:map and iommu:unmap carry an iova and a size but neither a
 * device nor a domain. They are counted per "epoch" (the stretch between two
 * topology changes) and credited, once the topology of every epoch is known,
 * to the one domain (group) that could have made them: the only group with a
 * device in it whose type is not identity or blocked. When more than one
 * could have, they stay "unattributed". A device is credited when it was the
 * only one in that group.
 *
 * Everything comes from the guest: counts are bounded (devices, groups,
 * epochs, live mappings, listed faults), names are sanitized, and arithmetic
 * on guest sizes saturates.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <event-parse.h>

#include "analyze.h"

#define MAX_DEVS	4096u
#define MAX_GROUPS	4096u
#define MAX_CHANGES	65536u
#define MAX_FAULTS	10000u
#define MAX_LIVE	(1u << 20)
#define NAME_MAX_	64

enum change_kind { CH_ADD, CH_REMOVE, CH_ATTACH, CH_DETACH };

struct dev {
	char name[NAME_MAX_];
	int64_t group;			/* while walking the changes; -1 none */
	int64_t group_end;		/* at the end of the recording */
	uint64_t attaches, detaches;
	struct iommu_counts c;
	bool credited;
};

struct group {
	int64_t id;
	char type[24];			/* "-" when unknown */
	bool in_snapshot;
	unsigned int nr_present;	/* while walking */
	struct iommu_counts c;
	bool credited;
};

struct change {
	uint64_t ts;
	enum change_kind kind;
	int64_t group;
	uint32_t dev;
};

struct fault {
	uint64_t ts, iova, flags;
	char dev[NAME_MAX_], driver[NAME_MAX_];
};

struct live {
	uint64_t start, end;
};

struct iommu_ids {
	struct tep_handle *tep;
	int add, remove, attach, detach, map, unmap, fault;
	struct tep_format_field *g_gid, *g_dev, *r_gid, *r_dev, *a_dev, *d_dev;
	struct tep_format_field *m_iova, *m_paddr, *m_size, *u_iova, *u_size, *u_unmapped;
	struct tep_format_field *f_dev, *f_drv, *f_iova, *f_flags;
};

struct iommu_an {
	struct dev *devs;
	unsigned int nr_devs;
	struct group *groups;
	unsigned int nr_groups;
	struct change *changes;
	unsigned int nr_changes;
	struct iommu_counts *epochs;	/* nr_changes + 1 */
	struct iommu_counts unattr, total;
	struct fault *faults;
	unsigned int nr_faults;
	uint64_t faults_total;
	struct live *live;
	size_t nr_live, cap_live;
	bool live_full, snapshot, finished;
	uint64_t dropped;		/* changes, devices or groups past a bound */
	uint64_t bad_records;
	struct iommu_ids ids;
};

/**
 * iommu_an_new() - an empty IOMMU analysis
 *
 * Return: the analysis, or NULL (errno set).
 */
struct iommu_an *iommu_an_new(void)
{
	struct iommu_an *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->epochs = calloc(1, sizeof(*a->epochs));
	if (!a->epochs) {
		free(a);
		return NULL;
	}
	return a;
}

/**
 * iommu_an_free() - free an analysis
 * @a: the analysis (NULL is fine)
 */
void iommu_an_free(struct iommu_an *a)
{
	if (!a)
		return;
	free(a->devs);
	free(a->groups);
	free(a->changes);
	free(a->epochs);
	free(a->faults);
	free(a->live);
	free(a);
}

static int grow(void **v, unsigned int nr, size_t elem)
{
	void *p;

	if (nr & (nr - 1) && nr)	/* grow at powers of two */
		return 0;
	p = realloc(*v, (nr ? nr * 2 : 16) * elem);
	if (!p)
		return -ENOMEM;
	*v = p;
	return 0;
}

static int dev_index(struct iommu_an *a, const char *name)
{
	unsigned int i;

	for (i = 0; i < a->nr_devs; i++)
		if (!strcmp(a->devs[i].name, name))
			return i;
	if (a->nr_devs >= MAX_DEVS) {
		a->dropped++;
		return -ENOSPC;
	}
	if (grow((void **)&a->devs, a->nr_devs, sizeof(*a->devs)) < 0)
		return -ENOMEM;
	memset(&a->devs[i], 0, sizeof(a->devs[i]));
	snprintf(a->devs[i].name, sizeof(a->devs[i].name), "%s", name);
	an_sanitize(a->devs[i].name);
	a->devs[i].group = -1;
	a->devs[i].group_end = -1;
	a->nr_devs++;
	return i;
}

static struct group *group_get(struct iommu_an *a, int64_t id, bool create)
{
	unsigned int i;

	for (i = 0; i < a->nr_groups; i++)
		if (a->groups[i].id == id)
			return &a->groups[i];
	if (!create || id < 0)
		return NULL;
	if (a->nr_groups >= MAX_GROUPS || grow((void **)&a->groups, a->nr_groups, sizeof(*a->groups)) < 0) {
		a->dropped++;
		return NULL;
	}
	memset(&a->groups[i], 0, sizeof(a->groups[i]));
	a->groups[i].id = id;
	strcpy(a->groups[i].type, "-");
	a->nr_groups++;
	return &a->groups[i];
}

/**
 * iommu_an_snapshot() - the guest's groups at the end of the recording
 * @a: the analysis
 * @text: sysinfo's iommu_groups, "GROUP TYPE DEVICE..." per line (guest data)
 * @len: its length
 *
 * Malformed lines are skipped.
 *
 * Return: 0 or -ENOMEM.
 */
int iommu_an_snapshot(struct iommu_an *a, const char *text, size_t len)
{
	const char *p = text, *end = text + len;

	a->snapshot = true;
	while (p < end) {
		const char *nl = memchr(p, '\n', end - p);
		size_t n = (nl ? nl : end) - p;
		char line[4096], *save = NULL, *tok, *e;
		struct group *g;
		long long id;

		if (n < sizeof(line)) {
			memcpy(line, p, n);
			line[n] = '\0';
			tok = strtok_r(line, " \t", &save);
			id = tok ? strtoll(tok, &e, 10) : -1;
			g = tok && !*e && id >= 0 && id < INT32_MAX ? group_get(a, id, true) : NULL;
			tok = g ? strtok_r(NULL, " \t", &save) : NULL;
			if (tok) {
				g->in_snapshot = true;
				snprintf(g->type, sizeof(g->type), "%s", tok);
				an_sanitize(g->type);
				while ((tok = strtok_r(NULL, " \t", &save))) {
					int d = dev_index(a, tok);

					if (d == -ENOMEM)
						return d;
					if (d >= 0)
						a->devs[d].group_end = id;
				}
			}
		}
		p += n + 1;
	}
	return 0;
}

static int add_change(struct iommu_an *a, uint64_t ts, enum change_kind k, int64_t group,
		      const char *dev)
{
	struct iommu_counts *ep;
	int d;

	if (a->nr_changes >= MAX_CHANGES) {
		a->dropped++;
		return 0;
	}
	d = dev_index(a, dev && dev[0] ? dev : "?");
	if (d < 0)
		return d == -ENOMEM ? d : 0;
	if (group >= 0 && !group_get(a, group, true))
		return 0;
	if (grow((void **)&a->changes, a->nr_changes, sizeof(*a->changes)) < 0)
		return -ENOMEM;
	ep = realloc(a->epochs, (a->nr_changes + 2) * sizeof(*ep));
	if (!ep)
		return -ENOMEM;
	a->epochs = ep;
	memset(&a->epochs[a->nr_changes + 1], 0, sizeof(*ep));
	a->changes[a->nr_changes++] = (struct change){ .ts = ts, .kind = k, .group = group, .dev = d };
	if (k == CH_ATTACH)
		a->devs[d].attaches++;
	else if (k == CH_DETACH)
		a->devs[d].detaches++;
	return 0;
}

/**
 * iommu_an_group() - add_device_to_group or remove_device_from_group
 * @a: the analysis
 * @ts: its timestamp
 * @add: add (true) or remove
 * @group: the group id (negative ids are ignored)
 * @dev: the device name
 *
 * Return: 0 or -ENOMEM.
 */
int iommu_an_group(struct iommu_an *a, uint64_t ts, bool add, int64_t group, const char *dev)
{
	if (group < 0 || group > INT32_MAX)
		return 0;
	return add_change(a, ts, add ? CH_ADD : CH_REMOVE, group, dev);
}

/**
 * iommu_an_attach() - attach_device_to_domain or detach_device_from_domain
 * @a: the analysis
 * @ts: timestamp
 * @attach: attach (true) or detach
 * @dev: the device
 *
 * Return: 0 or -ENOMEM.
 */
int iommu_an_attach(struct iommu_an *a, uint64_t ts, bool attach, const char *dev)
{
	return add_change(a, ts, attach ? CH_ATTACH : CH_DETACH, -1, dev);
}

static int hist_bin(uint64_t size)
{
	if (size == 4096)
		return IOMMU_HIST_4K;
	if (size == 2ull << 20)
		return IOMMU_HIST_2M;
	if (size == 1ull << 30)
		return IOMMU_HIST_1G;
	return IOMMU_HIST_OTHER;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

/* The live mapping with the greatest start <= @iova, or nr_live. */
static size_t live_find(const struct iommu_an *a, uint64_t iova)
{
	size_t lo = 0, hi = a->nr_live;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a->live[mid].start <= iova)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo - 1 : a->nr_live;
}

static void live_insert(struct iommu_an *a, uint64_t start, uint64_t end)
{
	size_t i = live_find(a, start);

	if (i < a->nr_live && a->live[i].start == start) {
		/* Two domains can hand out the same iova: keep the larger extent. */
		if (end > a->live[i].end)
			a->live[i].end = end;
		return;
	}
	i = i == a->nr_live ? 0 : i + 1;
	if (a->nr_live == a->cap_live) {
		size_t cap = a->cap_live ? a->cap_live * 2 : 1024;
		struct live *l;

		if (cap > MAX_LIVE || !(l = realloc(a->live, cap * sizeof(*l)))) {
			a->live_full = true;
			return;
		}
		a->live = l;
		a->cap_live = cap;
	}
	memmove(&a->live[i + 1], &a->live[i], (a->nr_live - i) * sizeof(*a->live));
	a->live[i] = (struct live){ start, end };
	a->nr_live++;
}

static void live_remove(struct iommu_an *a, size_t i)
{
	memmove(&a->live[i], &a->live[i + 1], (a->nr_live - i - 1) * sizeof(*a->live));
	a->nr_live--;
}

/**
 * iommu_an_map() - an iommu:map event
 * @a: the analysis
 * @iova: its iova
 * @paddr: its physical address
 * @size: its size
 */
void iommu_an_map(struct iommu_an *a, uint64_t iova, uint64_t paddr, uint64_t size)
{
	struct iommu_counts *c = &a->epochs[a->nr_changes];
	uint64_t end = iova + size < iova ? UINT64_MAX : iova + size;

	(void)paddr;
	c->maps++;
	c->map_bytes = sat_add(c->map_bytes, size);
	c->map_hist[hist_bin(size)]++;
	if (size)
		live_insert(a, iova, end);
}

/**
 * iommu_an_unmap() - an iommu:unmap event
 * @a: the analysis
 * @iova: its iova
 * @size: the size asked for
 * @unmapped: the size unmapped
 */
void iommu_an_unmap(struct iommu_an *a, uint64_t iova, uint64_t size, uint64_t unmapped)
{
	struct iommu_counts *c = &a->epochs[a->nr_changes];
	uint64_t end = iova + unmapped < iova ? UINT64_MAX : iova + unmapped;
	size_t i = live_find(a, iova);

	c->unmaps++;
	c->unmap_bytes = sat_add(c->unmap_bytes, unmapped);
	c->unmap_hist[hist_bin(size)]++;
	if (i == a->nr_live || iova >= a->live[i].end || !unmapped)
		return;
	if (size == 4096 && a->live[i].end - a->live[i].start > 4096)
		c->split_unmaps++;
	if (iova == a->live[i].start && end >= a->live[i].end) {
		live_remove(a, i);
	} else if (iova == a->live[i].start) {
		a->live[i].start = end;
	} else if (end >= a->live[i].end) {
		a->live[i].end = iova;
	} else {
		uint64_t tail = a->live[i].end;

		a->live[i].end = iova;
		live_insert(a, end, tail);
	}
}

/**
 * iommu_an_fault() - an iommu:io_page_fault event
 * @a: the analysis
 * @ts: timestamp
 * @dev: device
 * @driver: its driver
 * @iova: the faulting iova
 * @flags: the fault flags
 *
 * Return: 0 or -ENOMEM.
 */
int iommu_an_fault(struct iommu_an *a, uint64_t ts, const char *dev, const char *driver,
		   uint64_t iova, uint64_t flags)
{
	struct fault *f;

	a->faults_total++;
	if (a->nr_faults >= MAX_FAULTS)
		return 0;
	if (grow((void **)&a->faults, a->nr_faults, sizeof(*a->faults)) < 0)
		return -ENOMEM;
	f = &a->faults[a->nr_faults++];
	f->ts = ts;
	f->iova = iova;
	f->flags = flags;
	snprintf(f->dev, sizeof(f->dev), "%s", dev ? dev : "?");
	snprintf(f->driver, sizeof(f->driver), "%s", driver ? driver : "?");
	an_sanitize(f->dev);
	an_sanitize(f->driver);
	return 0;
}

static void counts_add(struct iommu_counts *to, const struct iommu_counts *c)
{
	int i;

	to->maps += c->maps;
	to->unmaps += c->unmaps;
	to->map_bytes = sat_add(to->map_bytes, c->map_bytes);
	to->unmap_bytes = sat_add(to->unmap_bytes, c->unmap_bytes);
	for (i = 0; i < IOMMU_HIST_NR; i++) {
		to->map_hist[i] += c->map_hist[i];
		to->unmap_hist[i] += c->unmap_hist[i];
	}
	to->split_unmaps += c->split_unmaps;
}

static bool dma_type(const struct group *g)
{
	return strcmp(g->type, "identity") && strcmp(g->type, "blocked");
}

static void set_group(struct iommu_an *a, struct dev *d, int64_t id)
{
	struct group *g;

	if (d->group >= 0 && (g = group_get(a, d->group, false)) && g->nr_present)
		g->nr_present--;
	d->group = id;
	if (id >= 0 && (g = group_get(a, id, false)))
		g->nr_present++;
}

/* Credit one epoch: to the only domain that could have mapped, else unattributed. */
static void credit(struct iommu_an *a, const struct iommu_counts *c)
{
	struct group *only = NULL;
	unsigned int i, n = 0;

	counts_add(&a->total, c);
	if (!c->maps && !c->unmaps)
		return;
	for (i = 0; i < a->nr_groups; i++) {
		if (a->groups[i].nr_present && dma_type(&a->groups[i])) {
			only = &a->groups[i];
			n++;
		}
	}
	if (n != 1) {
		counts_add(&a->unattr, c);
		return;
	}
	counts_add(&only->c, c);
	only->credited = true;
	if (only->nr_present == 1) {
		for (i = 0; i < a->nr_devs; i++) {
			if (a->devs[i].group == only->id) {
				counts_add(&a->devs[i].c, c);
				a->devs[i].credited = true;
				break;
			}
		}
	}
}

/**
 * iommu_an_finish() - work out the topology over time and credit the mappings
 * @a: the analysis, after every event
 *
 * Without a snapshot, the topology at the start holds the devices whose first
 * group event is a removal; with one, it is the snapshot with every change
 * undone backwards.
 *
 * Return: 0.
 */
int iommu_an_finish(struct iommu_an *a)
{
	unsigned int i, k;

	if (a->finished)
		return 0;
	a->finished = true;
	for (i = 0; i < a->nr_devs; i++)
		a->devs[i].group = a->snapshot ? a->devs[i].group_end : -1;
	/* Undo every change backwards: with no snapshot, from "nowhere". */
	for (k = a->nr_changes; k-- > 0;) {
		struct change *c = &a->changes[k];

		if (c->kind == CH_ADD)
			a->devs[c->dev].group = -1;
		else if (c->kind == CH_REMOVE)
			a->devs[c->dev].group = c->group;
	}
	for (i = 0; i < a->nr_groups; i++)
		a->groups[i].nr_present = 0;
	for (i = 0; i < a->nr_devs; i++) {
		int64_t g = a->devs[i].group;

		a->devs[i].group = -1;
		set_group(a, &a->devs[i], g);
	}
	for (k = 0; k <= a->nr_changes; k++) {
		credit(a, &a->epochs[k]);
		if (k == a->nr_changes)
			break;
		if (a->changes[k].kind == CH_ADD)
			set_group(a, &a->devs[a->changes[k].dev], a->changes[k].group);
		else if (a->changes[k].kind == CH_REMOVE)
			set_group(a, &a->devs[a->changes[k].dev], -1);
	}
	if (!a->snapshot)
		for (i = 0; i < a->nr_devs; i++)
			a->devs[i].group_end = a->devs[i].group;
	return 0;
}

/**
 * iommu_an_any() - whether the trace had any IOMMU event or a topology
 * @a: the analysis
 *
 * Return: true when there is something to report.
 */
bool iommu_an_any(const struct iommu_an *a)
{
	return a->nr_changes || a->total.maps || a->total.unmaps || a->faults_total ||
	       a->epochs[a->nr_changes].maps || a->epochs[a->nr_changes].unmaps;
}

/**
 * iommu_an_device() - a device's credited figures
 * @a: a finished analysis
 * @dev: the device
 *
 * Return: its counts, or NULL when nothing was credited to it.
 */
const struct iommu_counts *iommu_an_device(const struct iommu_an *a, const char *dev)
{
	unsigned int i;

	for (i = 0; i < a->nr_devs; i++)
		if (!strcmp(a->devs[i].name, dev))
			return a->devs[i].credited ? &a->devs[i].c : NULL;
	return NULL;
}

/**
 * iommu_an_domain() - a group's (its default domain's) credited figures
 * @a: a finished analysis
 * @group: the group id
 *
 * Return: its counts, or NULL when nothing was credited to it.
 */
const struct iommu_counts *iommu_an_domain(const struct iommu_an *a, int64_t group)
{
	unsigned int i;

	for (i = 0; i < a->nr_groups; i++)
		if (a->groups[i].id == group)
			return a->groups[i].credited ? &a->groups[i].c : NULL;
	return NULL;
}

/**
 * iommu_an_unattributed() - the figures no single domain could be credited with
 * @a: a finished analysis
 *
 * Return: the counts.
 */
const struct iommu_counts *iommu_an_unattributed(const struct iommu_an *a)
{
	return &a->unattr;
}

static double ratio(const struct iommu_counts *c)
{
	return c->maps ? (double)c->unmaps / c->maps : (c->unmaps ? 1.0 / 0.0 : 0);
}

static bool ratio_flag(const struct iommu_counts *c)
{
	double r = ratio(c);

	return c->maps + c->unmaps >= IOMMU_RATIO_MIN_EVENTS &&
	       (r > IOMMU_RATIO_FAR || r < 1.0 / IOMMU_RATIO_FAR);
}

static bool split_flag(const struct iommu_counts *c)
{
	return c->split_unmaps >= IOMMU_SPLIT_MIN && c->split_unmaps * 4 >= c->unmaps;
}

/**
 * iommu_an_nr_flags() - how many buckets carry a flag
 * @a: a finished analysis
 * @kind: "ratio", "split" or "fault"
 *
 * Return: the number of domains and devices (and the unattributed) flagged;
 * for "fault", the io_page_fault events.
 */
unsigned int iommu_an_nr_flags(const struct iommu_an *a, const char *kind)
{
	bool (*fn)(const struct iommu_counts *) = !strcmp(kind, "ratio") ? ratio_flag : split_flag;
	unsigned int i, n = 0;

	if (!strcmp(kind, "fault"))
		return a->faults_total > UINT32_MAX ? UINT32_MAX : (unsigned int)a->faults_total;
	for (i = 0; i < a->nr_groups; i++)
		n += a->groups[i].credited && fn(&a->groups[i].c);
	for (i = 0; i < a->nr_devs; i++)
		n += a->devs[i].credited && fn(&a->devs[i].c);
	return n + fn(&a->unattr);
}

static void put_ts(FILE *f, uint64_t ts)
{
	char buf[32];

	fputs(an_ts(buf, sizeof(buf), ts), f);
}

static void group_devs(const struct iommu_an *a, int64_t id, FILE *f)
{
	unsigned int i, n = 0;

	for (i = 0; i < a->nr_devs; i++) {
		if (a->devs[i].group_end == id) {
			fprintf(f, " %s", a->devs[i].name);
			n++;
		}
	}
	if (!n)
		fprintf(f, " (no devices)");
}

static void counts_line(FILE *f, const char *label, const struct iommu_counts *c)
{
	int64_t still = (int64_t)(c->map_bytes - c->unmap_bytes);

	fprintf(f, "    %-28s %9" PRIu64 " %9" PRIu64 " %13" PRIu64 " %13" PRIu64 " %14" PRId64
		"  %8.3f  %" PRIu64 "/%" PRIu64 "/%" PRIu64 "/%" PRIu64 "  %" PRIu64 "\n", label,
		c->maps, c->unmaps, c->map_bytes, c->unmap_bytes, still, ratio(c),
		c->map_hist[0], c->map_hist[1], c->map_hist[2], c->map_hist[3], c->split_unmaps);
}

static void flag_lines(FILE *f, const char *label, const struct iommu_counts *c)
{
	if (ratio_flag(c))
		fprintf(f, "    FLAG %s: unmap:map ratio %.3f is far from 1 (%" PRIu64 " unmaps, %"
			PRIu64 " maps)\n", label, ratio(c), c->unmaps, c->maps);
	if (split_flag(c))
		fprintf(f, "    FLAG %s: %" PRIu64 " single-page unmaps inside larger mappings (of %"
			PRIu64 " unmaps)\n", label, c->split_unmaps, c->unmaps);
}

/**
 * iommu_an_print() - the text report
 * @a: a finished analysis
 * @f: where it goes
 * @brief: the short form of the default report
 */
void iommu_an_print(const struct iommu_an *a, FILE *f, bool brief)
{
	unsigned int i, k;
	char label[160];

	fprintf(f, "  IOMMU:\n");
	if (a->snapshot) {
		fprintf(f, "    groups at the end of the recording (guest sysfs):");
		for (i = 0, k = 0; i < a->nr_groups; i++)
			k += a->groups[i].in_snapshot;
		fprintf(f, " %u\n", k);
	} else {
		fprintf(f, "    groups (from events only: the guest sent no sysfs listing):\n");
	}
	for (i = 0; !brief && i < a->nr_groups; i++) {
		if (a->snapshot && !a->groups[i].in_snapshot)
			continue;
		fprintf(f, "      group %" PRId64 " %s:", a->groups[i].id, a->groups[i].type);
		group_devs(a, a->groups[i].id, f);
		fprintf(f, "\n");
	}
	fprintf(f, "    topology changes during the recording: %u%s\n", a->nr_changes,
		a->dropped ? " (some left out: too many)" : "");
	for (k = 0; !brief && k < a->nr_changes; k++) {
		const struct change *c = &a->changes[k];
		static const char *const kinds[] = { "add_device_to_group", "remove_device_from_group",
						     "attach_device_to_domain", "detach_device_from_domain" };

		fprintf(f, "      ");
		put_ts(f, c->ts);
		fprintf(f, " %-26s %s", kinds[c->kind], a->devs[c->dev].name);
		if (c->group >= 0)
			fprintf(f, " group %" PRId64, c->group);
		fprintf(f, "\n");
	}
	fprintf(f, "    DMA mappings (maps, unmaps, bytes mapped and unmapped, still mapped, "
		"unmap:map, map sizes 4K/2M/1G/other, split unmaps):\n");
	for (i = 0; i < a->nr_groups; i++) {
		if (!a->groups[i].credited)
			continue;
		snprintf(label, sizeof(label), "domain of group %" PRId64, a->groups[i].id);
		counts_line(f, label, &a->groups[i].c);
	}
	for (i = 0; i < a->nr_devs; i++)
		if (a->devs[i].credited)
			counts_line(f, a->devs[i].name, &a->devs[i].c);
	counts_line(f, "unattributed", &a->unattr);
	counts_line(f, "total", &a->total);
	if (!brief && a->total.unmaps && a->total.map_hist[IOMMU_HIST_OTHER] + a->total.maps)
		fprintf(f, "    unmap sizes 4K/2M/1G/other: %" PRIu64 "/%" PRIu64 "/%" PRIu64 "/%" PRIu64
			"\n", a->total.unmap_hist[0], a->total.unmap_hist[1], a->total.unmap_hist[2],
			a->total.unmap_hist[3]);
	for (i = 0; i < a->nr_groups; i++) {
		snprintf(label, sizeof(label), "domain of group %" PRId64, a->groups[i].id);
		if (a->groups[i].credited)
			flag_lines(f, label, &a->groups[i].c);
	}
	flag_lines(f, "unattributed", &a->unattr);
	if (a->live_full)
		fprintf(f, "    note: too many live mappings to follow; split unmaps undercounted\n");
	fprintf(f, "    io_page_fault: %" PRIu64 "\n", a->faults_total);
	for (k = 0; k < a->nr_faults && (!brief || k < 10); k++) {
		fprintf(f, "    FLAG io_page_fault ");
		put_ts(f, a->faults[k].ts);
		fprintf(f, " device %s driver %s iova 0x%" PRIx64 " flags 0x%" PRIx64 "\n",
			a->faults[k].dev, a->faults[k].driver, a->faults[k].iova, a->faults[k].flags);
	}
	if (a->faults_total > k)
		fprintf(f, "    (%" PRIu64 " more io_page_fault not listed)\n", a->faults_total - k);
}

static void counts_json(struct jw *w, const char *key, const struct iommu_counts *c)
{
	static const char *const bins[] = { "4K", "2M", "1G", "other" };
	int i;

	jw_obj(w, key);
	jw_u64(w, "maps", c->maps);
	jw_u64(w, "unmaps", c->unmaps);
	jw_u64(w, "bytes_mapped", c->map_bytes);
	jw_u64(w, "bytes_unmapped", c->unmap_bytes);
	jw_i64(w, "still_mapped_bytes", (int64_t)(c->map_bytes - c->unmap_bytes));
	jw_dbl(w, "unmap_map_ratio", ratio(c));
	jw_obj(w, "map_sizes");
	for (i = 0; i < IOMMU_HIST_NR; i++)
		jw_u64(w, bins[i], c->map_hist[i]);
	jw_end(w, '}');
	jw_obj(w, "unmap_sizes");
	for (i = 0; i < IOMMU_HIST_NR; i++)
		jw_u64(w, bins[i], c->unmap_hist[i]);
	jw_end(w, '}');
	jw_u64(w, "split_unmaps", c->split_unmaps);
	jw_bool(w, "flag_ratio", ratio_flag(c));
	jw_bool(w, "flag_split", split_flag(c));
	jw_end(w, '}');
}

/**
 * iommu_an_json() - the analysis as one JSON object member "iommu"
 * @a: a finished analysis
 * @w: the writer, inside an object
 */
void iommu_an_json(const struct iommu_an *a, struct jw *w)
{
	static const char *const kinds[] = { "add", "remove", "attach", "detach" };
	unsigned int i;

	jw_obj(w, "iommu");
	jw_bool(w, "sysfs_snapshot", a->snapshot);
	jw_arr(w, "groups");
	for (i = 0; i < a->nr_groups; i++) {
		unsigned int d;

		if (a->snapshot && !a->groups[i].in_snapshot)
			continue;
		jw_obj(w, NULL);
		jw_i64(w, "group", a->groups[i].id);
		jw_str(w, "type", a->groups[i].type);
		jw_arr(w, "devices");
		for (d = 0; d < a->nr_devs; d++)
			if (a->devs[d].group_end == a->groups[i].id)
				jw_str(w, NULL, a->devs[d].name);
		jw_end(w, ']');
		if (a->groups[i].credited)
			counts_json(w, "dma", &a->groups[i].c);
		jw_end(w, '}');
	}
	jw_end(w, ']');
	jw_arr(w, "changes");
	for (i = 0; i < a->nr_changes; i++) {
		jw_obj(w, NULL);
		jw_u64(w, "ts", a->changes[i].ts);
		jw_str(w, "event", kinds[a->changes[i].kind]);
		jw_str(w, "device", a->devs[a->changes[i].dev].name);
		if (a->changes[i].group >= 0)
			jw_i64(w, "group", a->changes[i].group);
		jw_end(w, '}');
	}
	jw_end(w, ']');
	jw_arr(w, "devices");
	for (i = 0; i < a->nr_devs; i++) {
		if (!a->devs[i].credited)
			continue;
		jw_obj(w, NULL);
		jw_str(w, "device", a->devs[i].name);
		counts_json(w, "dma", &a->devs[i].c);
		jw_end(w, '}');
	}
	jw_end(w, ']');
	counts_json(w, "unattributed", &a->unattr);
	counts_json(w, "total", &a->total);
	jw_u64(w, "io_page_faults", a->faults_total);
	jw_arr(w, "faults");
	for (i = 0; i < a->nr_faults; i++) {
		jw_obj(w, NULL);
		jw_u64(w, "ts", a->faults[i].ts);
		jw_str(w, "device", a->faults[i].dev);
		jw_str(w, "driver", a->faults[i].driver);
		jw_u64(w, "iova", a->faults[i].iova);
		jw_u64(w, "flags", a->faults[i].flags);
		jw_end(w, '}');
	}
	jw_end(w, ']');
	jw_end(w, '}');
}

static int event_id(struct tep_handle *tep, const char *name, struct tep_event **ev)
{
	*ev = tep_find_event_by_name(tep, "iommu", name);
	return *ev ? (*ev)->id : -1;
}

static void ids_init(struct iommu_ids *ids, struct tep_handle *tep)
{
	struct tep_event *ev;

	memset(ids, 0, sizeof(*ids));
	ids->tep = tep;
	ids->add = event_id(tep, "add_device_to_group", &ev);
	ids->g_gid = an_field(ev, "gid");
	ids->g_dev = an_field(ev, "device");
	ids->remove = event_id(tep, "remove_device_from_group", &ev);
	ids->r_gid = an_field(ev, "gid");
	ids->r_dev = an_field(ev, "device");
	ids->attach = event_id(tep, "attach_device_to_domain", &ev);
	ids->a_dev = an_field(ev, "device");
	ids->detach = event_id(tep, "detach_device_from_domain", &ev);
	ids->d_dev = an_field(ev, "device");
	ids->map = event_id(tep, "map", &ev);
	ids->m_iova = an_field(ev, "iova");
	ids->m_paddr = an_field(ev, "paddr");
	ids->m_size = an_field(ev, "size");
	ids->unmap = event_id(tep, "unmap", &ev);
	ids->u_iova = an_field(ev, "iova");
	ids->u_size = an_field(ev, "size");
	ids->u_unmapped = an_field(ev, "unmapped_size");
	ids->fault = event_id(tep, "io_page_fault", &ev);
	ids->f_dev = an_field(ev, "device");
	ids->f_drv = an_field(ev, "driver");
	ids->f_iova = an_field(ev, "iova");
	ids->f_flags = an_field(ev, "flags");
}

/**
 * iommu_an_record() - feed one record of a trace (other events are ignored)
 * @a: the analysis
 * @tep: the trace's event handle
 * @rec: the record
 *
 * Return: 0, or -ENOMEM. A record whose fields cannot be read is counted and skipped.
 */
int iommu_an_record(struct iommu_an *a, struct tep_handle *tep, struct tep_record *rec)
{
	struct iommu_ids *ids = &a->ids;
	char dev[NAME_MAX_], drv[NAME_MAX_];
	uint64_t x, y, z;
	int64_t gid;
	int id;

	if (ids->tep != tep)
		ids_init(ids, tep);
	id = tep_data_type(tep, rec);
	if (id < 0)
		return 0;
	if (id == ids->map) {
		if (an_u64(rec, ids->m_iova, &x) && an_u64(rec, ids->m_paddr, &y) &&
		    an_u64(rec, ids->m_size, &z))
			iommu_an_map(a, x, y, z);
		else
			a->bad_records++;
	} else if (id == ids->unmap) {
		if (an_u64(rec, ids->u_iova, &x) && an_u64(rec, ids->u_size, &y) &&
		    an_u64(rec, ids->u_unmapped, &z))
			iommu_an_unmap(a, x, y, z);
		else
			a->bad_records++;
	} else if (id == ids->add || id == ids->remove) {
		bool add = id == ids->add;

		if (an_i64(rec, add ? ids->g_gid : ids->r_gid, &gid) &&
		    an_str(rec, add ? ids->g_dev : ids->r_dev, dev, sizeof(dev)))
			return iommu_an_group(a, rec->ts, add, gid, dev);
		a->bad_records++;
	} else if (id == ids->attach || id == ids->detach) {
		bool att = id == ids->attach;

		if (an_str(rec, att ? ids->a_dev : ids->d_dev, dev, sizeof(dev)))
			return iommu_an_attach(a, rec->ts, att, dev);
		a->bad_records++;
	} else if (id == ids->fault) {
		if (an_str(rec, ids->f_dev, dev, sizeof(dev)) && an_str(rec, ids->f_drv, drv, sizeof(drv)) &&
		    an_u64(rec, ids->f_iova, &x) && an_u64(rec, ids->f_flags, &y))
			return iommu_an_fault(a, rec->ts, dev, drv, x, y);
		a->bad_records++;
	}
	return 0;
}
