/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The last-boot bundle: what a guest's persistent, boot-mapped ftrace instance
 * kept from the boot before this one (Linux 6.12+: reserve_mem= and
 * trace_instance=NAME^traceoff@NAME), as the agent sends it in answer to
 * LASTBOOT_REQ: the instance's name and last_boot_info text, its metadata
 * bundle (vt_meta_encode()) and each CPU's whole pages. Decoding treats the
 * bytes as hostile.
 *
 * Layout, little-endian: "VTLB" u32 version(1) u32 nr_cpus
 *   u32 name_len, name; u32 info_len, info; u64 meta_len, meta;
 *   nr_cpus x { u32 cpu, u64 len, len bytes of pages }
 */
#ifndef VT_LASTBOOT_H
#define VT_LASTBOOT_H

#include <stddef.h>
#include <stdint.h>

#define VT_LASTBOOT_MAX_CPUS	1024

/**
 * struct vt_lastboot_cpu - one CPU's pages
 * @cpu: CPU number
 * @data: whole pages (pointing into the decoded blob)
 * @len: their length, a multiple of the sub-buffer size
 */
struct vt_lastboot_cpu {
	uint32_t cpu;
	const uint8_t *data;
	uint64_t len;
};

/**
 * struct vt_lastboot - a decoded (or to-be-encoded) bundle; pointers into the blob
 * @name: instance name (not NUL-terminated: @name_len)
 * @info: the instance's last_boot_info text (@info_len)
 * @meta: vt_meta_encode() blob of the instance (@meta_len)
 * @nr_cpus: entries in @cpus
 */
struct vt_lastboot {
	const char *name;
	uint32_t name_len;
	const char *info;
	uint32_t info_len;
	const uint8_t *meta;
	uint64_t meta_len;
	uint32_t nr_cpus;
	struct vt_lastboot_cpu cpus[VT_LASTBOOT_MAX_CPUS];
};

int vt_lastboot_encode(const struct vt_lastboot *lb, void **blob, size_t *len);
int vt_lastboot_decode(struct vt_lastboot *lb, const void *blob, size_t len);

#endif
