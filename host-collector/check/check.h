/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The `check` subcommand: what a recording needs on this host, one verdict
 * per line, and whether the guest's clock would be exact (check.c prints and
 * decides; probes.c looks at the host; trial.c runs the short recording).
 */
#ifndef CHECK_CHECK_H
#define CHECK_CHECK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "collect.h"
#include "setup/list.h"

enum check_verdict { CV_YES, CV_NO, CV_WARN, CV_SKIPPED };

/* The lines, in the order they are printed. */
enum check_item {
	CK_TRACEFS, CK_KVMDEV, CK_DEBUGFS, CK_TSC, CK_EVENTS, CK_THREADS, CK_AGENT, CK_RECORD, CK_NR
};

/**
 * struct check_line - one verdict
 * @v: yes, no, warn or skipped
 * @detail: what was found, and where, for the user
 */
struct check_line {
	enum check_verdict v;
	char detail[1024];
};

#define CHECK_MAX_VCPUS		COLLECT_MAX_CPUS

/**
 * struct check_vcpu - one vCPU's KVM offset as debugfs gave it
 */
struct check_vcpu {
	uint32_t id;
	int64_t offset;
	uint64_t ratio;
	uint32_t frac_bits;
	bool has_scaling;
};

/**
 * struct check_thread - one QEMU thread named "CPU n/ACCEL"
 */
struct check_thread {
	unsigned int cpu;
	pid_t tid;
	char accel[16];
};

/**
 * struct check_trial - what the short recording found (trial.c)
 * @ran: record was run
 * @rc: its exit status (-1: it did not end normally)
 * @clock: the guest's trace clock, from the manifest
 * @method: sync.method
 * @changes_from: sync.kvm.changes_from ("" when null)
 * @replies: sync.check.replies
 * @outside: sync.check.outside
 * @bursts: sync.check.bursts
 * @cpus: vCPUs with a probe interval
 * @min_width: the narrowest probe interval (hi - lo), in ticks
 * @not_seen: sync.kvm.changes_not_seen + debugfs_disagreed
 */
struct check_trial {
	bool ran;
	int rc;
	char clock[64];
	char method[32];
	char changes_from[64];
	uint64_t replies, outside, bursts, cpus, not_seen;
	uint64_t min_width;
};

/**
 * struct check - one run of `check`: options, target, findings
 */
struct check {
	/* options */
	const char *domain, *uri, *chardev_dir_opt;
	const char *debugfs, *tracefs, *sysfs, *procfs;
	double duration;
	unsigned int timeout_ms;
	bool json;
	/* the guest */
	pid_t qemu_pid;
	char chardev_dir[4096];
	struct list_guest guest;
	bool have_ports;
	char missing[1024];	/* the guest as named is not there: why */
	/* findings */
	struct check_line lines[CK_NR];
	char kvm_module[16];
	bool kvm_usable;
	char vm_dir[4096];
	struct check_vcpu vcpus[CHECK_MAX_VCPUS];
	unsigned int nr_vcpus;
	bool constant_tsc, nonstop_tsc, tsc_available;
	char clocksource[64];
	bool ev_exit, ev_entry, ev_write_tsc;
	struct check_thread threads[CHECK_MAX_VCPUS];
	unsigned int nr_threads;
	bool tcg;
	struct check_trial trial;
	bool exact;
	char because[1024];
};

void check_tracefs(struct check *c);
void check_kvm_device(struct check *c);
void check_debugfs(struct check *c);
void check_host_tsc(struct check *c);
void check_kvm_events(struct check *c);
void check_threads(struct check *c);
void check_agent(struct check *c);
void check_trial(struct check *c);
void check_set(struct check *c, enum check_item i, enum check_verdict v, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int check_main(int argc, char **argv);

#endif
