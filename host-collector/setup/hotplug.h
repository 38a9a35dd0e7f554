/* SPDX-License-Identifier: GPL-2.0-or-later */
/* `setup --qmp SOCKET --hotplug|--remove`: a running QEMU's ports over QMP (hotplug.c). */
#ifndef SETUP_HOTPLUG_H
#define SETUP_HOTPLUG_H

#include <stdbool.h>

/**
 * struct hotplug_opts - what `setup --qmp` does
 * @qmp: QEMU's QMP socket (-qmp unix:PATH,server=on,wait=off)
 * @remove: unplug what an earlier --hotplug added, instead of plugging
 * @unix_backend: sockets QEMU listens on instead of pipe FIFOs
 * @name: the guest's name, only shown ("" : QEMU's -name, else "guest")
 * @dir: where the chardevs live ("" : /run/virtio-trace/qemu-PID-START, of
 *       the process that serves @qmp; never named by @name)
 * @vcpus: data ports to plug (0: one per vCPU QEMU reports)
 */
struct hotplug_opts {
	const char *qmp;
	bool remove;
	bool unix_backend;
	char name[64];
	char dir[4096];
	unsigned int vcpus;
};

int hotplug_run(struct hotplug_opts *o);

#endif
