/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The guests that have trace ports on this host (list.c): libvirt domains
 * (through the libvirt module) and QEMU processes (from /proc), whether their
 * ports are there, and whether an agent answers on them. `list` prints them;
 * `record --all` records them.
 */
#ifndef SETUP_LIST_H
#define SETUP_LIST_H

#include <stdbool.h>
#include <sys/types.h>

#include "collect.h"

/* What a quick HELLO on a guest's control port found. */
enum list_agent {
	LIST_AGENT_UNKNOWN,	/* not asked (--no-probe, or ports not there) */
	LIST_AGENT_ANSWERS,	/* HELLO_REPLY came */
	LIST_AGENT_SILENT,	/* no answer within the wait */
	LIST_AGENT_BUSY,	/* another process has the port open: a recording */
	LIST_AGENT_ERROR,	/* the port could not be opened or spoke nonsense */
};

/**
 * struct list_guest - one guest with trace ports
 * @name: a name that can name files (record --all uses it: --name)
 * @libvirt: a libvirt domain (else a QEMU process found in /proc)
 * @domain: the domain's name, as libvirt has it
 * @uri: the libvirt URI it was found at ("" the default)
 * @running: the domain or process runs
 * @qemu_pid: its QEMU process, 0 if unknown
 * @owner_known: @owner is known (the QEMU was identified: qemuproc.h)
 * @owner: the QEMU's user: its ports must be this user's or root's
 * @vcpus: its vCPUs (0: unknown)
 * @data_ports: trace-path-cpuN ports the running guest has
 * @ctl_port: it has agent-ctl-path
 * @defined_ports: ports in the domain's persistent definition (libvirt)
 * @listen: the ports are sockets QEMU connects to (record --listen)
 * @ctl_path: the control port's base path (PATH.in/.out FIFOs, or a socket)
 * @chardev_dir: the directory every port is in by its own name ("" if not)
 * @qmp_path: QEMU's QMP socket from its command line ("" if none)
 * @incoming_opt: -incoming on its command line (a migration's destination)
 * @incoming: and its guest has not arrived: for -incoming unix:PATH, QEMU listens
 *	on PATH (it starts to after opening its ports; it stops once the migration's
 *	connection came)
 * @agent: what the HELLO found
 * @busy_pid: with LIST_AGENT_BUSY, the process holding the port (0 unknown)
 * @software: the agent's name and version (HELLO_REPLY)
 * @kernel: the guest's kernel release, from @software ("" if it did not say)
 * @agent_cpus: the CPUs the agent serves
 * @why: a few words on a problem ("" if none)
 */
struct list_guest {
	char name[COLLECT_NAME_MAX];
	bool libvirt;
	char domain[256];
	char uri[1024];
	bool running;
	pid_t qemu_pid;
	bool owner_known;
	uid_t owner;
	unsigned int vcpus;
	unsigned int data_ports;
	bool ctl_port;
	unsigned int defined_ports;
	bool listen;
	char ctl_path[4096];
	char chardev_dir[4096];
	char qmp_path[4096];
	bool incoming_opt;
	bool incoming;
	enum list_agent agent;
	pid_t busy_pid;
	char software[128];
	char kernel[128];
	unsigned int agent_cpus;
	char why[600];
};

/**
 * struct list_skipped - a process with trace ports that is not probed
 * @pid: the process
 * @name: the name record would give it (its -name, else qemu-PID)
 * @why: why, in words (sanitised)
 */
struct list_skipped {
	pid_t pid;
	char name[COLLECT_NAME_MAX];
	char why[400];
};

/**
 * struct list_found - what list_find() found
 * @g: the guests, libvirt domains first, then QEMU processes, each by name
 * @nr: how many
 * @skipped: processes with trace ports left out: not a QEMU by /proc/PID/exe,
 *	or another user's QEMU without --any-user
 * @nr_skipped: how many
 * @libvirt_note: why libvirt's domains are missing ("" if they are not)
 */
struct list_found {
	struct list_guest *g;
	unsigned int nr;
	struct list_skipped *skipped;
	unsigned int nr_skipped;
	char libvirt_note[512];
};

int list_find(const char *uri, bool no_libvirt, bool any_user, struct list_found *f);
void list_probe(struct list_found *f, unsigned int timeout_ms);
bool list_ports_ready(const struct list_guest *g);
void list_keep(struct list_found *f, char **names, int n);
void list_free(struct list_found *f);
int list_main(int argc, char **argv);

/* libvirt.c, through the module: the domains with trace channels. */
int libvirt_list(const char *uri, struct list_guest **g, unsigned int *nr, char *note, size_t len);

#endif
