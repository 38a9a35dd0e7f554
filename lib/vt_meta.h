/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The metadata bundle: everything a trace.dat reader needs besides the pages.
 * It is built from a tracefs directory (host side, or the agent in the guest)
 * and travels over the control port encoded with vt_meta_encode(); a bundle
 * that arrives from a guest is decoded with vt_meta_decode(), which checks every
 * length, count and string.
 */
#ifndef VT_META_H
#define VT_META_H

#include <stddef.h>
#include <stdint.h>

/* Hard bounds on what a peer may send us. */
#define VT_META_MAX_BLOB	(64u << 20)	/* kallsyms can be large */
#define VT_COMM_MAX		15		/* a task name's bytes, as the kernel keeps it (TASK_COMM_LEN - 1) */
#define VT_META_MAX_FORMAT	(64u << 10)	/* one format file */
#define VT_META_MAX_NAME	256u		/* system or event name */
#define VT_META_MAX_SYSTEMS	4096u
#define VT_META_MAX_EVENTS	65536u		/* in all systems together */
#define VT_META_MAX_CPUS	4096u
#define VT_META_MAX_TOTAL	(256u << 20)	/* a whole encoded bundle */

/**
 * struct vt_blob - a byte string we own; @data is NUL-terminated for convenience
 */
struct vt_blob {
	char *data;
	size_t len;
};

/**
 * struct vt_meta_event - one event format file
 * @name: event name (the directory name under events/SYSTEM/)
 * @format: the contents of its format file
 */
struct vt_meta_event {
	char *name;
	struct vt_blob format;
};

/**
 * struct vt_meta_system - the formats of one event system
 */
struct vt_meta_system {
	char *name;
	struct vt_meta_event *events;
	uint32_t nr_events;
};

/**
 * struct vt_meta - a metadata bundle
 * @header_page: events/header_page
 * @header_event: events/header_event
 * @ftrace: formats of events/ftrace/<name>, the ftrace "system"
 * @systems: formats of the other systems, enabled events only
 * @kallsyms: /proc/kallsyms
 * @printk_formats: printk_formats
 * @saved_cmdlines: saved_cmdlines
 * @saved_tgids: saved_tgids
 * @trace_clock: the trace_clock file ("[local] global ...")
 * @uname: "sysname release version machine"
 * @iommu_groups: /sys/kernel/iommu_groups as text, one line per group:
 *	"GROUP TYPE DEVICE..." (TYPE "-" when unreadable); optional
 * @pci_devices: /proc/bus/pci/devices; optional
 * @nr_cpus: CPUs the trace covers (possible CPUs with a per_cpu directory)
 * @subbuf_size: sub-buffer size in bytes, from header_page
 * @kallsyms_key: which kallsyms the guest has now (a hash of its boot_id and
 *	/proc/modules), whether or not the bundle carries it; 0: unknown. A host
 *	that kept kallsyms under this key may ask for a bundle without it.
 */
struct vt_meta {
	struct vt_blob header_page;
	struct vt_blob header_event;
	struct vt_meta_system ftrace;
	struct vt_meta_system *systems;
	uint32_t nr_systems;
	struct vt_blob kallsyms;
	struct vt_blob printk_formats;
	struct vt_blob saved_cmdlines;
	struct vt_blob saved_tgids;
	struct vt_blob trace_clock;
	struct vt_blob uname;
	struct vt_blob iommu_groups;
	struct vt_blob pci_devices;
	uint32_t nr_cpus;
	uint32_t subbuf_size;
	uint64_t kallsyms_key;	/* what the guest's kallsyms is now (boot, modules); 0: unknown */
};

/* vt_meta_load() flags */
#define VT_META_ALL_EVENTS	(1u << 0)	/* every system's formats, not only enabled ones */
#define VT_META_NO_KALLSYMS	(1u << 1)	/* skip /proc/kallsyms (large, slow in TCG) */
#define VT_META_NO_SYSINFO	(1u << 2)	/* skip iommu_groups and pci_devices */
#define VT_META_MAX_SYSINFO	(1u << 20)	/* iommu_groups, pci_devices */

int vt_meta_load(struct vt_meta *m, const char *tracefs, const char *instance, unsigned int flags);
int vt_meta_add_event(struct vt_meta *m, const char *system, const char *name,
		      const char *format, size_t len);
void vt_meta_free(struct vt_meta *m);
const char *vt_meta_clock(const struct vt_meta *m, char *buf, size_t size);
int vt_meta_merge_cmdlines(struct vt_meta *m, const char *text, size_t len);
int vt_meta_scan_comms(const char *proc, struct vt_blob *out);
int vt_meta_encode(const struct vt_meta *m, void **buf, size_t *len);
int vt_meta_encode_to(const struct vt_meta *m, int (*emit)(void *ctx, const void *data, size_t len),
		      void *ctx, size_t *len);
int vt_meta_encode_fd(const struct vt_meta *m, int kfd,
		      int (*emit)(void *ctx, const void *data, size_t len), void *ctx, size_t *len);
int vt_meta_decode(struct vt_meta *m, const void *buf, size_t len);

/**
 * struct vt_meta_clean - what vt_meta_sanitize() did
 * @replaced: characters replaced in the bundle's texts
 * @formats_dropped: event formats left out (control characters or invalid UTF-8)
 * @first_dropped: "system:event" of the first of them
 * @formats_out_of_bounds: event formats left out because a field lies past
 *	the largest event (or its offset or size is not a plain number)
 * @out_of_bounds: their "system:event" names, ", "-separated, as many as fit
 *	(then "...")
 */
struct vt_meta_clean {
	uint64_t replaced;
	uint32_t formats_dropped;
	char first_dropped[2 * VT_META_MAX_NAME + 2];
	uint32_t formats_out_of_bounds;
	char out_of_bounds[4 * VT_META_MAX_NAME];
};

size_t vt_text_clean(char *s, size_t len, const char *keep, uint64_t *replaced);
void vt_meta_sanitize(struct vt_meta *m, struct vt_meta_clean *c);
void vt_meta_sanitize_own(struct vt_meta *m, struct vt_meta_clean *c);
int vt_meta_format_check(const char *format, size_t len, uint32_t max_event);
uint32_t vt_meta_max_event(const struct vt_meta *m);

/* The bundle as a directory of plain files (capture tool, test fixtures). */
int vt_meta_save_dir(const struct vt_meta *m, const char *dir);
int vt_meta_load_dir(struct vt_meta *m, const char *dir);

#endif
