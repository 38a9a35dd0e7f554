/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The report's analyses (report --iommu, --mmiotrace-log, --exits, --html,
 * --json): shared declarations. Every value read from a trace or a sysinfo
 * file came from a guest and is bounded and checked before use.
 */
#ifndef COLLECT_ANALYZE_H
#define COLLECT_ANALYZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "json.h"
#include "vt_meta.h"

struct tep_record;
struct tep_event;
struct tep_format_field;
struct tep_handle;

/* analyze.c: bounded field access on records of any origin. */
struct tep_format_field *an_field(struct tep_event *ev, const char *name);
bool an_u64(const struct tep_record *rec, const struct tep_format_field *f, uint64_t *v);
bool an_i64(const struct tep_record *rec, const struct tep_format_field *f, int64_t *v);
bool an_str(const struct tep_record *rec, const struct tep_format_field *f, char *buf, size_t size);
void an_sanitize(char *s);
const char *an_ts(char *buf, size_t size, uint64_t ns);
const char *an_func(struct tep_handle *tep, uint64_t addr, uint64_t *start);
FILE *an_open_out(const char *path, mode_t mode);

/* analyze-iommu.c: IOMMU groups, attachments and DMA mappings. */
#define IOMMU_HIST_4K		0
#define IOMMU_HIST_2M		1
#define IOMMU_HIST_1G		2
#define IOMMU_HIST_OTHER	3
#define IOMMU_HIST_NR		4

/* A ratio is flagged outside [1/IOMMU_RATIO_FAR, IOMMU_RATIO_FAR] given this many events. */
#define IOMMU_RATIO_FAR		2.0
#define IOMMU_RATIO_MIN_EVENTS	100
/* Single-page unmaps inside larger live mappings: flagged from this many, and a quarter. */
#define IOMMU_SPLIT_MIN		64

/**
 * struct iommu_counts - DMA mapping figures of a domain, a device, or the unattributed
 */
struct iommu_counts {
	uint64_t maps, unmaps;
	uint64_t map_bytes, unmap_bytes;
	uint64_t map_hist[IOMMU_HIST_NR], unmap_hist[IOMMU_HIST_NR];
	uint64_t split_unmaps;		/* one page, inside a larger live mapping */
};

struct iommu_an;

struct iommu_an *iommu_an_new(void);
void iommu_an_free(struct iommu_an *a);
int iommu_an_snapshot(struct iommu_an *a, const char *text, size_t len);
int iommu_an_group(struct iommu_an *a, uint64_t ts, bool add, int64_t group, const char *dev);
int iommu_an_attach(struct iommu_an *a, uint64_t ts, bool attach, const char *dev);
void iommu_an_map(struct iommu_an *a, uint64_t iova, uint64_t paddr, uint64_t size);
void iommu_an_unmap(struct iommu_an *a, uint64_t iova, uint64_t size, uint64_t unmapped);
int iommu_an_fault(struct iommu_an *a, uint64_t ts, const char *dev, const char *driver,
		   uint64_t iova, uint64_t flags);
int iommu_an_finish(struct iommu_an *a);
bool iommu_an_any(const struct iommu_an *a);
const struct iommu_counts *iommu_an_device(const struct iommu_an *a, const char *dev);
const struct iommu_counts *iommu_an_domain(const struct iommu_an *a, int64_t group);
const struct iommu_counts *iommu_an_unattributed(const struct iommu_an *a);
unsigned int iommu_an_nr_flags(const struct iommu_an *a, const char *kind);
void iommu_an_print(const struct iommu_an *a, FILE *f, bool brief);
void iommu_an_json(const struct iommu_an *a, struct jw *w);
int iommu_an_record(struct iommu_an *a, struct tep_handle *tep, struct tep_record *rec);


/* analyze-mmio.c: mmiotrace entries as the classic log, and per function and register. */
struct mmio_an;

struct mmio_an *mmio_an_new(FILE *log, const char *pci_devices, size_t len);
void mmio_an_free(struct mmio_an *a);
int mmio_an_record(struct mmio_an *a, struct tep_handle *tep, struct tep_record *rec);
int mmio_an_finish(struct mmio_an *a);
bool mmio_an_any(const struct mmio_an *a);
bool mmio_an_entries(const struct mmio_an *a);
void mmio_an_print(const struct mmio_an *a, FILE *f, bool brief);
void mmio_an_json(const struct mmio_an *a, struct jw *w);
int mmio_pcidev_line(char *buf, size_t size, const char *line);


/* analyze-exits.c: VM exits from the host's kvm:kvm_exit and kvm:kvm_entry. */
struct exits_an;

struct exits_an *exits_an_new(void);
void exits_an_free(struct exits_an *a);
int exits_an_add_guest(struct exits_an *a, const char *name, int nr_vcpus, const int *tids,
		       struct tep_handle *tep);
int exits_an_record(struct exits_an *a, struct tep_handle *tep, struct tep_record *rec);
void exits_an_finish(struct exits_an *a);
bool exits_an_any(const struct exits_an *a);
void exits_an_print(const struct exits_an *a, FILE *f);
void exits_an_json(const struct exits_an *a, struct jw *w);


/* analyze-vcpus.c: report --vcpus, each vCPU's wall time split into states. */
struct vcpus_an;

struct vcpus_an *vcpus_an_new(void);
void vcpus_an_free(struct vcpus_an *a);
int vcpus_an_add_guest(struct vcpus_an *a, const char *name, int nr_vcpus, const int *tids);
int vcpus_an_guest_steal(struct vcpus_an *a, int guest, int vcpu, uint64_t steal_ns,
			 uint64_t tick_ns);
void vcpus_an_host(struct vcpus_an *a, struct tep_handle *tep, struct tep_record *rec, int cpu);
void vcpus_an_guest(struct vcpus_an *a, int guest, struct tep_handle *tep, struct tep_record *rec,
		    int cpu);
void vcpus_an_finish(struct vcpus_an *a);
void vcpus_an_print(const struct vcpus_an *a, FILE *f, const char *only);
void vcpus_an_json(const struct vcpus_an *a, struct jw *w, const char *only);
int vcpus_an_latency(struct vcpus_an *a, uint64_t threshold_ns);
void vcpus_an_print_latency(const struct vcpus_an *a, FILE *f, const char *only);
void vcpus_an_json_latency(const struct vcpus_an *a, struct jw *w, const char *only);
bool vcpus_interval_ok(const char *spec);
int vcpus_an_interval(struct vcpus_an *a, const char *spec, uint64_t threshold_ns);
void vcpus_an_print_intervals(const struct vcpus_an *a, FILE *f, const char *only);
void vcpus_an_json_intervals(const struct vcpus_an *a, struct jw *w, const char *only);
typedef int (*vcpus_strip_fn)(void *ctx, const char *guest, int vcpu, uint64_t start, uint64_t end,
			      const char *kind, const char *name, unsigned int merged);
void vcpus_an_strips(struct vcpus_an *a);
unsigned int vcpus_an_nr_vcpus(const struct vcpus_an *a);
int vcpus_an_each_strip(const struct vcpus_an *a, vcpus_strip_fn fn, void *ctx);
/* A vCPU's states so far (record --live-stat takes the difference each second). */
#define VCPUS_AN_MAX_REASONS	256u
struct vcpus_an_sum {
	const char *guest;
	int vcpu, tid;
	uint64_t guest_ns;		/* in the guest (KVM), or running (without KVM's events) */
	uint64_t halted_ns, preempted_ns, exits_ns, unknown_ns;
};
void vcpus_an_charge_to(struct vcpus_an *a, uint64_t to);
bool vcpus_an_saw_kvm(const struct vcpus_an *a);
int vcpus_an_sum(const struct vcpus_an *a, unsigned int i, struct vcpus_an_sum *s,
		 uint64_t reasons[VCPUS_AN_MAX_REASONS]);
const char *vcpus_an_reason_name(const struct vcpus_an *a, unsigned int r);


/* timeline.c: report --html, one self-contained timeline page. */
struct timeline;

struct timeline *tl_new(void);
void tl_free(struct timeline *tl);
int tl_add_trace(struct timeline *tl, const char *label, const char *path, unsigned int nr_cpus);
int tl_add_epoch(struct timeline *tl, const char *label, uint64_t ns, double bound_ns,
		 const char *method);
int tl_write_html(struct timeline *tl, FILE *f, const char *title);
uint64_t tl_nr_items(const struct timeline *tl);
int tl_add_vstate(struct timeline *tl, const char *guest, int vcpu, uint64_t start, uint64_t end,
		  const char *kind, const char *name, unsigned int merged);

#endif
