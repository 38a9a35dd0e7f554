/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * How to reach a guest: its ports, its libvirt domain, its QEMU process and
 * vCPU threads. record fills it from its options or from libvirt (libvirt.h).
 */
#ifndef SETUP_LINK_H
#define SETUP_LINK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "collect.h"
#include "qemuproc.h"

/**
 * struct guest_link - where a guest's ports and processes are
 * @chardev_dir: --chardev-dir: the ports as NAME.in/NAME.out FIFOs or sockets
 * @ctl_path: --ctl: the control port
 * @cpu_paths: --cpu: each vCPU's data port
 * @listen: --listen: listen on the ports for QEMU to connect
 * @domain: --domain: a libvirt domain
 * @connect_uri: --connect: the libvirt URI of @domain ("" default)
 * @qemu_pid: the guest's QEMU process, 0 if unknown
 * @owner: whose the ports and QMP socket must be (record --all: the QEMU
 *	`list` identified); not known: any owner, as the operator named them.
 *	Either way a port is never opened through a link (qemuproc.h)
 * @uuid: the libvirt domain's UUID, "" if none (it names the VM's kallsyms
 *	cache entry: record/kcache.c)
 * @qmp_path: --qmp: follow STOP/RESUME
 * @vcpu_tids: the host thread of each vCPU
 * @wait: record --wait: a domain that is not running, or has not all its
 *	channels yet, is no error: libvirt_guest_resolve() returns -EAGAIN
 *	without a message
 */
struct guest_link {
	char chardev_dir[4096];
	char ctl_path[4096];
	char *cpu_paths[COLLECT_MAX_CPUS];
	unsigned int nr_cpu_paths;
	unsigned int dir_next;		/* the next trace-path-cpuN of chardev_dir to look for */
	bool listen;
	char domain[256];
	char connect_uri[1024];
	pid_t qemu_pid;
	struct qemuproc_owner owner;
	char uuid[40];
	char qmp_path[4096];
	uint32_t vcpu_tids[COLLECT_MAX_CPUS];
	unsigned int nr_vcpu_tids;
	bool wait;
};

#endif
