// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * `record`: its options, its guests, the command run beside it, and the
 * timers and signals that end it. Everything else it does is the engine's,
 * the sessions' and the store's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>


#include "attach.h"
#include "compress.h"
#include "engine.h"
#include "hostrec.h"
#include "kcache.h"
#include "qmp.h"
#include "record.h"
#include "session.h"
#include "stream.h"
#include "sync.h"
#include "setup/libvirt.h"
#include "store/output.h"
#include "store/spool.h"
#include "text.h"

static bool status_line;

/**
 * record_usage() - the help of `record` (and of the program)
 * @f: where to print it
 */
void record_usage(FILE *f)
{
	fprintf(f,
"Usage: virtio-trace-collect record GUEST... [OPTION]... [-- COMMAND [ARG]...]\n"
"       virtio-trace-collect report DIR\n"
"       virtio-trace-collect recover DIR\n"
"       virtio-trace-collect join SRC DST -o OUT\n"
"       virtio-trace-collect setup --vcpus N [--backend pipe|unix|unix-connect]\n"
"                                  [--dir DIR]\n"
"                                  [--format qemu|libvirt] [--create]\n"
"       virtio-trace-collect setup --domain NAME [--connect URI] --apply|--remove\n"
"                                  [--backend pipe|unix] [--dir DIR]\n"
"\n"
"Record the ftrace events of one or more guests, streamed by trace-agent(8)\n"
"over virtio-serial ports, and optionally host events, into trace.dat files\n"
"that `trace-cmd report -i DIR/host.dat -i DIR/guest-NAME.dat` merges.\n"
"\n"
"A GUEST is one of (each starts a new guest; --name and --cpu apply to it):\n"
"  --chardev-dir DIR      the guest's ports in DIR: QEMU pipe chardevs\n"
"                         (NAME.in/NAME.out) or unix sockets QEMU listens on\n"
"  --listen               with --chardev-dir: listen on DIR/NAME instead, for\n"
"                         QEMU socket chardevs with server=off\n"
"  --ctl PATH --cpu PATH [--cpu PATH]...\n"
"                         the control port and each vCPU's data port by path\n"
"  --domain NAME [--connect URI]\n"
"                         a running libvirt domain: its channels, QEMU pid and\n"
"                         vCPU threads come from libvirt (URI default: libvirt's\n"
"                         default, qemu:///system for root); add the channels\n"
"                         with `setup --domain NAME --apply`\n"
"  --name NAME            the guest's name (default: the directory's or the\n"
"                         domain's name)\n"
"  --qemu-pid PID         the guest's QEMU process: vCPU thread ids for the\n"
"                         host file's GUEST option, and KVM's TSC offsets\n"
"  --qmp PATH             the guest's QMP socket: after a `cont` (RESUME) the\n"
"                         clock is synced again at once (a stop moves a TCG\n"
"                         guest's TSC offset); a live migration (MIGRATION\n"
"                         completed) ends the guest's recording here, drained\n"
"                         to the switchover, with no stop sent to its agent\n"
"  --incoming             the guest migrates in: wait for it on these ports (600 s\n"
"                         at most) and take its agent's running session over;\n"
"                         `join` makes one trace of the two recordings\n"
"\n"
"Recording:\n"
"  -e, --event SYS[:EV]   a guest event, system or glob (repeatable)\n"
"  -f, --filter EXPR      a filter for the -e before it\n"
"      --tracer NAME      a guest tracer (mmiotrace: uses the top-level buffer)\n"
"      --top-level        trace the guest's top-level buffer, not an instance\n"
"      --buffer-size KB   per-CPU ring buffer size in the guest (and host)\n"
"      --last-boot NAME   first write the guest's previous boot's trace, kept in the\n"
"                         boot-mapped instance NAME (Linux >= 6.12, see setup\n"
"                         --last-boot), to guest-GUEST.lastboot.dat\n"
"      --subbuf-size KB   the guest's sub-buffer size (Linux >= 6.8): fewer page\n"
"                         headers, events larger than 4 KiB\n"
"      --clock NAME       guest trace clock (default x86-tsc where it exists)\n"
"      --host-events LIST host events to record, SYS[:EV],... (private\n"
"                         tracefs instance, x86-tsc clock)\n"
"      --kvm-exits        add kvm:kvm_exit and kvm:kvm_entry to the host events\n"
"                         (what `report --exits` reads)\n"
"      --host-pid PID     host events of this process only, its threads and\n"
"                         what it forks (repeatable; e.g. the QEMU pid)\n"
"  -o, --output DIR       output directory (default virtio-trace-out); a DIR\n"
"                         that holds a recording is refused\n"
"      --force            replace the recording in DIR (its manifest.json,\n"
"                         *.dat, *.sysinfo/ and bad-pages/ files)\n"
"  -d, --duration SEC     stop after SEC seconds (default: at SIGINT/SIGTERM,\n"
"                         or when COMMAND exits)\n"
"      --max-size SIZE    keep at most SIZE bytes per guest (K, M, G suffixes): pages,\n"
"                         malformed pages, fragments and metadata all count;\n"
"                         the guest is stopped when it is reached\n"
"      --file-version 6|7 trace.dat version (default 7)\n"
"      --no-compress      version 7 without zstd\n"
"      --compress-at-end  zstd: compress only when the recording ends, not also\n"
"                         while it runs (on a core nothing else wants)\n"
"      --keep-spool       keep DIR/.spool after writing the files\n"
"      --fsync            flush the trace files to the disk before exiting, so\n"
"                         that they survive a crash of the machine (slower)\n"
"      --stop-timeout SEC how long a guest may take to confirm a stop and\n"
"                         deliver its last pages (default 60)\n"
"      --kallsyms-cache DIR  keep each guest's kallsyms in DIR between\n"
"                         recordings of one boot, so that the guest need not\n"
"                         read it again (made 0700 if missing; default:\n"
"                         " KCACHEDIR " if it exists)\n"
"      --no-kallsyms-cache  neither read nor write a kallsyms cache\n"
"\n"
"Time synchronisation:\n"
"      --sync METHOD      auto (default: kvm, else probe), kvm, probe, offset\n"
"                         or none\n"
"      --debugfs DIR      where debugfs is (default /sys/kernel/debug); KVM's\n"
"                         per-vCPU TSC offsets are read from DIR/kvm/PID-*/\n"
"      --tsc-offset N     guest TSC = host TSC + N (with --sync offset)\n"
"      --sync-probes N    at most N probes per vCPU and burst (default 100;\n"
"                         fewer once 16 in a row narrowed nothing)\n"
"      --sync-interval S  probe again every S seconds while recording (0: only\n"
"                         at start and stop; default 0)\n"
"\n"
"  -q, --quiet            no progress or status line\n"
"  -v, --verbose          more messages\n"
"  -V, --version          print the version and exit\n"
"  -h, --help             print this help and exit\n"
"\n"
"Exit status: 0 every guest recorded cleanly; 1 nothing usable was written;\n"
"2 usage error; 3 files were written but a guest was dropped or had problems\n"
"(see manifest.json). See virtio-trace-collect(1).\n");
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || v <= 0)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': v *= 1024; end++; break;
	case 'm': case 'M': v *= 1024 * 1024; end++; break;
	case 'g': case 'G': v *= 1024.0 * 1024 * 1024; end++; break;
	case 0: break;
	default: return -EINVAL;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

static uint64_t random_id(void)
{
	uint64_t id = 0;

	while (!id && getrandom(&id, sizeof(id), 0) != sizeof(id))
		;
	return id ? id : 1;
}

static struct guest *new_guest(struct guest **gs, unsigned int *nr)
{
	struct guest *g;

	if (*nr >= COLLECT_MAX_GUESTS)
		return NULL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->ctl_rfd = g->ctl_wfd = g->ctl_lfd = -1;
	g->spool_fd = -1;
	gs[(*nr)++] = g;
	return g;
}

static int parse_record(int argc, char **argv, struct record_opts *o, struct guest **gs,
			unsigned int *nr)
{
	enum { OPT_CHARDEV = 256, OPT_LISTEN, OPT_CTL, OPT_CPU, OPT_NAME, OPT_QEMU_PID, OPT_TRACER, OPT_TOP,
	       OPT_BUFSZ, OPT_SUBBUF, OPT_LASTBOOT, OPT_CLOCK, OPT_HOST, OPT_MAXSZ, OPT_FV, OPT_NOCOMP, OPT_ZEND, OPT_KCACHE, OPT_NOKCACHE, OPT_KEEP, OPT_FORCE, OPT_FSYNC, OPT_SYNC, OPT_TSCOFF,
	       OPT_PROBES, OPT_SINTV, OPT_DEBUGFS, OPT_STOPTO, OPT_QMP, OPT_DOMAIN, OPT_CONNECT,
	       OPT_HOST_PID, OPT_KVM_EXITS, OPT_INCOMING };
	static const struct option longopts[] = {
		{ "chardev-dir", required_argument, NULL, OPT_CHARDEV },
		{ "domain", required_argument, NULL, OPT_DOMAIN },
		{ "connect", required_argument, NULL, OPT_CONNECT },
		{ "listen", no_argument, NULL, OPT_LISTEN },
		{ "incoming", no_argument, NULL, OPT_INCOMING },
		{ "ctl", required_argument, NULL, OPT_CTL },
		{ "cpu", required_argument, NULL, OPT_CPU },
		{ "name", required_argument, NULL, OPT_NAME },
		{ "qemu-pid", required_argument, NULL, OPT_QEMU_PID },
		{ "qmp", required_argument, NULL, OPT_QMP },
		{ "event", required_argument, NULL, 'e' },
		{ "filter", required_argument, NULL, 'f' },
		{ "tracer", required_argument, NULL, OPT_TRACER },
		{ "top-level", no_argument, NULL, OPT_TOP },
		{ "buffer-size", required_argument, NULL, OPT_BUFSZ },
		{ "subbuf-size", required_argument, NULL, OPT_SUBBUF },
		{ "last-boot", required_argument, NULL, OPT_LASTBOOT },
		{ "clock", required_argument, NULL, OPT_CLOCK },
		{ "host-events", required_argument, NULL, OPT_HOST },
		{ "host-pid", required_argument, NULL, OPT_HOST_PID },
		{ "kvm-exits", no_argument, NULL, OPT_KVM_EXITS },
		{ "output", required_argument, NULL, 'o' },
		{ "duration", required_argument, NULL, 'd' },
		{ "max-size", required_argument, NULL, OPT_MAXSZ },
		{ "file-version", required_argument, NULL, OPT_FV },
		{ "no-compress", no_argument, NULL, OPT_NOCOMP },
		{ "compress-at-end", no_argument, NULL, OPT_ZEND },
		{ "kallsyms-cache", required_argument, NULL, OPT_KCACHE },
		{ "no-kallsyms-cache", no_argument, NULL, OPT_NOKCACHE },
		{ "keep-spool", no_argument, NULL, OPT_KEEP },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "fsync", no_argument, NULL, OPT_FSYNC },
		{ "sync", required_argument, NULL, OPT_SYNC },
		{ "tsc-offset", required_argument, NULL, OPT_TSCOFF },
		{ "sync-probes", required_argument, NULL, OPT_PROBES },
		{ "sync-interval", required_argument, NULL, OPT_SINTV },
		{ "debugfs", required_argument, NULL, OPT_DEBUGFS },
		{ "stop-timeout", required_argument, NULL, OPT_STOPTO },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct guest *g = NULL;
	bool kvm_exits = false;
	char *end;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+e:f:o:d:qvh", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_CHARDEV:
		case OPT_CTL:
		case OPT_DOMAIN:
			g = new_guest(gs, nr);
			if (!g) {
				fprintf(stderr, "virtio-trace-collect: at most %d guests\n", COLLECT_MAX_GUESTS);
				return -EINVAL;
			}
			if (c == OPT_CHARDEV) {
				snprintf(g->link.chardev_dir, sizeof(g->link.chardev_dir), "%s", optarg);
			} else if (c == OPT_CTL) {
				snprintf(g->link.ctl_path, sizeof(g->link.ctl_path), "%s", optarg);
			} else {
				if (!*optarg || strlen(optarg) >= sizeof(g->link.domain)) {
					fprintf(stderr, "virtio-trace-collect: bad --domain '%s'\n", optarg);
					return -EINVAL;
				}
				snprintf(g->link.domain, sizeof(g->link.domain), "%s", optarg);
			}
			break;
		case OPT_CONNECT:
			if (!g || !g->link.domain[0]) {
				fprintf(stderr, "virtio-trace-collect: --connect must follow --domain\n");
				return -EINVAL;
			}
			if (strlen(optarg) >= sizeof(g->link.connect_uri)) {
				fprintf(stderr, "virtio-trace-collect: --connect URI is too long\n");
				return -EINVAL;
			}
			snprintf(g->link.connect_uri, sizeof(g->link.connect_uri), "%s", optarg);
			break;
		case OPT_LISTEN:
		case OPT_INCOMING:
		case OPT_CPU:
		case OPT_NAME:
		case OPT_QEMU_PID:
		case OPT_QMP:
			if (!g) {
				fprintf(stderr, "virtio-trace-collect: %s must follow --chardev-dir, --ctl or --domain\n",
					argv[optind - 1]);
				return -EINVAL;
			}
			if (g->link.domain[0] && (c == OPT_LISTEN || c == OPT_CPU)) {
				fprintf(stderr, "virtio-trace-collect: %s does not apply to --domain (its ports "
					"come from the domain's XML)\n", c == OPT_LISTEN ? "--listen" : "--cpu");
				return -EINVAL;
			}
			if (c == OPT_LISTEN) {
				g->link.listen = true;
			} else if (c == OPT_INCOMING) {
				g->mig.incoming = true;
			} else if (c == OPT_CPU) {
				if (g->link.nr_cpu_paths >= COLLECT_MAX_CPUS)
					return -EINVAL;
				g->link.cpu_paths[g->link.nr_cpu_paths++] = strdup(optarg);
			} else if (c == OPT_QMP) {
				snprintf(g->link.qmp_path, sizeof(g->link.qmp_path), "%s", optarg);
			} else if (c == OPT_NAME) {
				if (!collect_name_ok(optarg)) {
					fprintf(stderr, "virtio-trace-collect: --name '%s': use letters, digits, "
						"'_', '-' and '.' (it becomes a file name)\n", optarg);
					return -EINVAL;
				}
				snprintf(g->name, sizeof(g->name), "%s", optarg);
			} else {
				g->link.qemu_pid = strtol(optarg, &end, 10);
				if (*end || g->link.qemu_pid <= 0)
					return -EINVAL;
			}
			break;
		case 'e':
			if (o->nr_events >= COLLECT_MAX_EVENTS)
				return -EINVAL;
			o->events[o->nr_events++] = optarg;
			break;
		case 'f':
			if (!o->nr_events) {
				fprintf(stderr, "virtio-trace-collect: -f applies to the -e before it\n");
				return -EINVAL;
			}
			o->filters[o->nr_events - 1] = optarg;
			break;
		case OPT_TRACER: o->tracer = optarg; break;
		case OPT_TOP: o->top_level = true; break;
		case OPT_BUFSZ:
			o->buffer_kb = strtoul(optarg, &end, 10);
			if (*end || !o->buffer_kb)
				return -EINVAL;
			break;
		case OPT_LASTBOOT:
			if (!collect_name_ok(optarg) || strchr(optarg, '.')) {
				fprintf(stderr, "virtio-trace-collect: --last-boot: an instance name, [A-Za-z0-9_-]\n");
				return -EINVAL;
			}
			o->last_boot = optarg;
			break;
		case OPT_SUBBUF:
			/* The kernel takes 1 KiB steps up to its largest order; the page checks stop at 1 MiB. */
			o->subbuf_kb = strtoul(optarg, &end, 10);
			if (*end || !o->subbuf_kb || o->subbuf_kb > VT_SUBBUF_MAX / 1024) {
				fprintf(stderr, "virtio-trace-collect: --subbuf-size: 1 to %u KiB\n",
					VT_SUBBUF_MAX / 1024);
				return -EINVAL;
			}
			break;
		case OPT_CLOCK: o->clock = optarg; break;
		case OPT_HOST: o->host_events = optarg; break;
		case OPT_KVM_EXITS: kvm_exits = true; break;
		case OPT_HOST_PID: {
			long v = strtol(optarg, &end, 10);

			if (*end || v <= 0 || v > INT32_MAX || o->nr_host_pids >= COLLECT_MAX_HOST_PIDS) {
				fprintf(stderr, "virtio-trace-collect: --host-pid takes a pid (at most %d)\n",
					COLLECT_MAX_HOST_PIDS);
				return -EINVAL;
			}
			o->host_pids[o->nr_host_pids++] = (pid_t)v;
			break;
		}
		case 'o': o->out_dir = optarg; break;
		case 'd':
			o->duration = strtod(optarg, &end);
			if (*end || o->duration <= 0)
				return -EINVAL;
			break;
		case OPT_MAXSZ:
			if (parse_size(optarg, &o->max_size) < 0)
				return -EINVAL;
			break;
		case OPT_FV:
			o->file_version = strtoul(optarg, &end, 10);
			if (*end || (o->file_version != 6 && o->file_version != 7)) {
				fprintf(stderr, "virtio-trace-collect: --file-version is 6 or 7\n");
				return -EINVAL;
			}
			break;
		case OPT_NOCOMP: o->compress = false; break;
		case OPT_ZEND: o->compress_at_end = true; break;
		case OPT_KCACHE: o->kcache_dir = optarg; o->no_kcache = false; break;
		case OPT_NOKCACHE: o->no_kcache = true; break;
		case OPT_KEEP: o->keep_spool = true; break;
		case OPT_FORCE: o->force = true; break;
		case OPT_FSYNC: o->fsync = true; break;
		case OPT_SYNC:
			if (strcmp(optarg, "auto") && strcmp(optarg, "probe") && strcmp(optarg, "offset") &&
			    strcmp(optarg, "none") && strcmp(optarg, "kvm")) {
				fprintf(stderr, "virtio-trace-collect: --sync is auto, kvm, probe, offset or none\n");
				return -EINVAL;
			}
			o->sync = optarg;
			break;
		case OPT_TSCOFF:
			o->tsc_offset = strtoll(optarg, &end, 0);
			if (*end)
				return -EINVAL;
			o->have_tsc_offset = true;
			break;
		case OPT_PROBES:
			o->sync_probes = strtoul(optarg, &end, 10);
			if (*end || !o->sync_probes || o->sync_probes > 65536)
				return -EINVAL;
			break;
		case OPT_SINTV:
			o->sync_interval = strtod(optarg, &end);
			if (*end || o->sync_interval < 0)
				return -EINVAL;
			break;
		case OPT_DEBUGFS: o->debugfs = optarg; break;
		case OPT_STOPTO:
			o->stop_timeout = strtod(optarg, &end);
			if (*end || o->stop_timeout <= 0)
				return -EINVAL;
			break;
		case 'q': collect_quiet = 1; break;
		case 'v': collect_verbose = 1; break;
		case 'h': record_usage(stdout); exit(EXIT_OK);
		default: return -EINVAL;
		}
	}
	if (optind < argc) {
		if (strcmp(argv[optind - 1], "--") != 0) {
			fprintf(stderr, "virtio-trace-collect: unexpected argument '%s'\n", argv[optind]);
			return -EINVAL;
		}
		o->command = argv + optind;
	}
	if (kvm_exits) {
		/* What `report --exits` reads, added to --host-events. */
		static char list[4096];

		if ((size_t)snprintf(list, sizeof(list), "kvm:kvm_exit,kvm:kvm_entry%s%s",
				     o->host_events ? "," : "",
				     o->host_events ? o->host_events : "") >= sizeof(list))
			return -EINVAL;
		o->host_events = list;
	}
	if (!*nr && !o->host_events) {
		fprintf(stderr, "virtio-trace-collect: no guest given (--chardev-dir DIR, --ctl PATH --cpu PATH, "
			"or --domain NAME)\n");
		return -EINVAL;
	}
	if (o->nr_host_pids && !o->host_events) {
		fprintf(stderr, "virtio-trace-collect: --host-pid needs --host-events\n");
		return -EINVAL;
	}
	if (o->have_tsc_offset && !o->sync)
		o->sync = "offset";
	if (o->sync && !strcmp(o->sync, "offset") && !o->have_tsc_offset) {
		fprintf(stderr, "virtio-trace-collect: --sync offset needs --tsc-offset N\n");
		return -EINVAL;
	}
	if (o->duration && o->command) {
		fprintf(stderr, "virtio-trace-collect: give --duration or a command, not both\n");
		return -EINVAL;
	}
	for (unsigned int i = 0; i < *nr; i++) {
		struct guest *x = gs[i];

		if (x->link.ctl_path[0] && !x->link.nr_cpu_paths) {
			fprintf(stderr, "virtio-trace-collect: --ctl %s needs at least one --cpu PATH\n",
				x->link.ctl_path);
			return -EINVAL;
		}
		if (!x->name[0] && x->link.domain[0]) {
			/* The domain's name names the files; a name that cannot needs --name. */
			if (!collect_name_ok(x->link.domain)) {
				fprintf(stderr, "virtio-trace-collect: domain '%s' cannot name a file: add "
					"--name NAME after --domain (letters, digits, '_', '-', '.')\n",
					x->link.domain);
				return -EINVAL;
			}
			snprintf(x->name, sizeof(x->name), "%s", x->link.domain);
		}
		if (!x->name[0]) {
			const char *base = strrchr(x->link.chardev_dir, '/');

			snprintf(x->name, sizeof(x->name), "%s", x->link.chardev_dir[0] ?
				 (base && base[1] ? base + 1 : x->link.chardev_dir) : "guest");
			if (!collect_name_ok(x->name))
				snprintf(x->name, sizeof(x->name), "guest%u", i);
		}
		if (collect_name_reserved(x->name)) {
			fprintf(stderr, "virtio-trace-collect: a guest may not be named '%s': it is the "
				"host trace's name. Use --name\n", x->name);
			return -EINVAL;
		}
		for (unsigned int j = 0; j < i; j++)
			if (!strcmp(gs[j]->name, x->name)) {
				fprintf(stderr, "virtio-trace-collect: two guests are named '%s': use --name\n",
					x->name);
				return -EINVAL;
			}
	}
	return 0;
}

/* vCPU threads of a QEMU process: /proc/PID/task/TID/comm is "CPU n/KVM" (or /TCG). */
static void find_vcpu_threads(struct guest *g)
{
	char dir[64], path[320], comm[64];
	struct dirent *de;
	unsigned int cpu;
	DIR *d;
	FILE *f;

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)g->link.qemu_pid);
	d = opendir(dir);
	if (!d) {
		log_warn("guest %s: cannot read %s: %m (no vCPU thread map)", g->name, dir);
		return;
	}
	while ((de = readdir(d))) {
		snprintf(path, sizeof(path), "%s/%s/comm", dir, de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && sscanf(comm, "CPU %u/", &cpu) == 1 &&
		    cpu < COLLECT_MAX_CPUS) {
			g->link.vcpu_tids[cpu] = strtoul(de->d_name, NULL, 10);
			if (cpu + 1 > g->link.nr_vcpu_tids)
				g->link.nr_vcpu_tids = cpu + 1;
		}
		fclose(f);
	}
	closedir(d);
}

static void show_status(struct guest **gs, unsigned int nr, double elapsed, uint64_t *last_bytes,
			double dt)
{
	char line[1024];
	size_t n = 0;
	unsigned int i, j;

	for (i = 0; i < nr && n < sizeof(line) - 128; i++) {
		struct guest *g = gs[i];
		uint64_t bytes = 0, pages = 0, lost = 0, missed = 0;

		for (j = 0; j < g->nr_streams; j++) {
			bytes += g->streams[j].bytes;
			pages += g->streams[j].pages;
			lost += g->streams[j].lost_events;
			missed += g->streams[j].missed_pages;
		}
		n += snprintf(line + n, sizeof(line) - n, "%s%s: ", i ? " | " : "", g->name);
		if (g->state < G_RUNNING)
			n += snprintf(line + n, sizeof(line) - n, "%s", session_state_name(g->state));
		else
			n += snprintf(line + n, sizeof(line) - n, "%.1f MB/s %" PRIu64 " pages lost %"
				      PRIu64 "%s%s", dt > 0 ? (bytes - last_bytes[i]) / dt / 1e6 : 0.0,
				      pages, lost, missed && !lost ? "+" : "",
				      g->state == G_FAILED ? " FAILED" : "");
		last_bytes[i] = bytes;
	}
	collect_status("[%6.1fs] %s", elapsed, line);
}

static int write_options(int spool, const struct record_opts *o, uint64_t host_id,
			 const struct sync_tsc *tsc)
{
	struct spool_options so = {
		.version = o->file_version, .compress = o->compress && o->file_version >= 7,
		.host_trace_id = host_id, .tsc_khz = tsc->khz, .tsc_mult = tsc->mult,
		.tsc_shift = tsc->shift,
	};

	snprintf(so.tsc_method, sizeof(so.tsc_method), "%s", tsc->method);
	snprintf(so.cmdline, sizeof(so.cmdline), "%s", o->cmdline);
	return spool_save_options(spool, &so);
}

/* Open (make) the output directory; refuse a link, a spool left behind, or a recording. */
static int open_output(const struct record_opts *o, bool *created)
{
	struct stat st;
	int fd, ret;

	fd = output_open_dir(o->out_dir, true, created);
	if (fd < 0) {
		log_err("%s: %s", o->out_dir, fd == -ELOOP ? "a symbolic link: refused (give the "
			"directory it points to)" : strerror(-fd));
		return fd;
	}
	if (fstatat(fd, ".spool", &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISLNK(st.st_mode))
			log_err("%s/.spool is a symbolic link: refused", o->out_dir);
		else
			log_err("%s/.spool already exists: an earlier run did not finish. Run "
				"`virtio-trace-collect recover %s` to turn it into files, or remove "
				"it", o->out_dir, o->out_dir);
		close(fd);
		return -EEXIST;
	}
	ret = output_previous(fd, o->out_dir, o->force);
	if (ret < 0) {
		close(fd);
		return ret;
	}
	return fd;
}

/* A run that wrote nothing leaves nothing: its spool, and the directory if it made it. */
static void abandon_output(int out_fd, int spool_fd, const char *out_dir, bool created)
{
	char path[4096];
	size_t len = strlen(out_dir);

	if (spool_fd >= 0)
		close(spool_fd);
	if (spool_remove(out_fd, out_dir) < 0 && spool_fd >= 0)
		log_warn("%s/.spool is not removed entirely", out_dir);
	close(out_fd);
	while (len > 1 && out_dir[len - 1] == '/')
		len--;
	if (created && len < sizeof(path)) {
		memcpy(path, out_dir, len);
		path[len] = '\0';
		rmdir(path);
	}
}

/* The command after `--` starts once every guest records (or failed), or this long after the first did. */
#define COMMAND_GRACE_NS	(5 * NSEC_PER_SEC)
#define END_CHECK_NS		(20 * NSEC_PER_MSEC)


static void start_command(struct recording *r)
{
	if (!r->command || r->command_started || r->stopping)
		return;
	r->command_started = true;
	engine_timer_cancel(r->e, &r->command_grace);
	r->child = fork();
	if (r->child == 0) {
		sigprocmask(SIG_UNBLOCK, &r->mask, NULL);
		execvp(r->command[0], r->command);
		fprintf(stderr, "virtio-trace-collect: cannot run %s: %s\n", r->command[0],
			strerror(errno));
		_exit(127);
	}
	if (r->child < 0)
		log_err("cannot start %s: %m", r->command[0]);
}

static void command_grace(void *arg)
{
	start_command(arg);
}

static void begin_stop(struct recording *r);

static void check_end(struct recording *r)
{
	unsigned int i, settled = 0, finished = 0, recording = 0;

	for (i = 0; i < r->nr; i++) {
		finished += session_finished(r->gs[i]);
		/*
		 * Settled: recording with its clock synced (a workload would disturb
		 * the burst); or, --incoming, still waiting for its guest, which the
		 * command may be what migrates.
		 */
		recording += (r->gs[i]->state == G_RUNNING && r->gs[i]->synced) ||
			     (r->gs[i]->mig.incoming && !r->gs[i]->mig.resumed &&
			      !session_finished(r->gs[i]));
	}
	settled = finished + recording;
	if (!r->stopping) {
		if (recording && !r->command_started && !r->command_grace.armed)
			engine_timer_arm(r->e, &r->command_grace, COMMAND_GRACE_NS, 0);
		if (settled == r->nr && r->nr)
			start_command(r);
		if (r->nr && finished == r->nr) {
			/* The host recorder is stopped and drained as at any stop. */
			log_info("no guest is recording any more");
			begin_stop(r);
		}
		return;
	}
	if (finished == r->nr && (!r->host || hostrec_drained(r->host)))
		engine_quit(r->e);
}

static void rec_changed(struct recording *r)
{
	check_end(r);
}

static void end_check(void *arg)
{
	check_end(arg);
}

static void deadline(void *arg)
{
	struct recording *r = arg;
	unsigned int i;

	for (i = 0; i < r->nr; i++)
		if (!session_finished(r->gs[i]))
			session_fail(r->gs[i], "not finished within --stop-timeout (%g s)",
				     r->o->stop_timeout);
	if (r->host && !hostrec_drained(r->host))
		log_warn("the host events did not drain within --stop-timeout: keeping what arrived");
	engine_quit(r->e);
}

/* Stop: every agent drains; a second signal keeps only what is on disk. */
static void begin_stop(struct recording *r)
{
	struct engine *e = r->e;
	unsigned int i;

	if (r->stopping)
		return;
	r->stopping = true;
	log_info("stopping%s", r->signals ? " (press Ctrl-C again to write what is on disk now)" : "");
	engine_timer_cancel(e, &r->duration);
	engine_timer_cancel(e, &r->command_grace);
	for (i = 0; i < r->nr; i++)
		session_stop(r->gs[i]);
	if (r->host)
		hostrec_stop(r->host);
	engine_timer_arm(e, &r->deadline,
			 (uint64_t)(r->o->stop_timeout * NSEC_PER_SEC) + NSEC_PER_SEC / 2, 0);
	engine_timer_arm(e, &r->end_check, END_CHECK_NS, END_CHECK_NS);
	check_end(r);
}

static void duration_over(void *arg)
{
	begin_stop(arg);
}

static void status_tick(void *arg)
{
	struct recording *r = arg;
	uint64_t now = engine_now_ns();

	show_status(r->gs, r->nr, (now - r->t0) / 1e9, r->last_bytes, (now - r->last_status) / 1e9);
	r->last_status = now;
}

static void on_signal(void *arg, int signo)
{
	struct recording *r = arg;
	unsigned int i;
	int st;

	if (signo == SIGCHLD) {
		if (r->child > 0 && waitpid(r->child, &st, WNOHANG) == r->child) {
			log_info("%s exited with status %d: stopping", r->command[0],
				 WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
			r->child = 0;
			begin_stop(r);
		}
		return;
	}
	if (++r->signals == 1) {
		begin_stop(r);
		return;
	}
	for (i = 0; i < r->nr; i++)
		if (!session_finished(r->gs[i]))
			session_fail(r->gs[i], "interrupted: keeping what is on disk");
	engine_quit(r->e);
}

/*
 * The kallsyms cache (kcache.c): --kallsyms-cache DIR, made when missing;
 * else the package's directory, only when it exists and is this user's (a
 * user who is not root has none, silently). A directory that others could
 * write is not used. -1: no cache.
 */
static int open_kcache(const struct record_opts *o)
{
	const char *dir = o->kcache_dir ? o->kcache_dir : KCACHEDIR;
	int fd;

	if (o->no_kcache)
		return -1;
	fd = kcache_open(dir, o->kcache_dir != NULL);
	/* The default one is only used when it is there for this user: no warning for another. */
	if (fd < 0 && !o->kcache_dir)
		log_debug("no kallsyms cache: %s: %s", dir,
			  fd == -EPERM ? "not this user's, or others may write it" : strerror(-fd));
	else if (fd == -EPERM)
		log_warn("the kallsyms cache %s is not used: it is not this user's, or others may "
			 "write it", dir);
	else if (fd < 0)
		log_warn("the kallsyms cache %s is not used: %s", dir, strerror(-fd));
	else
		log_debug("kallsyms cache: %s", dir);
	return fd < 0 ? -1 : fd;
}

/**
 * record_main() - the `record` subcommand
 * @argc: arguments from "record" on
 * @argv: their values
 *
 * Return: the exit status (collect.h).
 */
int record_main(int argc, char **argv)
{
	static struct guest *gs[COLLECT_MAX_GUESTS];
	static struct recording r;
	struct record_opts o = {
		.out_dir = "virtio-trace-out", .file_version = 7, .compress = true,
		.sync_probes = 100, .tracefs = "/sys/kernel/tracing", .stop_timeout = 60,
	};
	unsigned int nr = 0, i, recorded = 0, migrated = 0;
	int out_fd, spool_fd = -1;
	bool created;
	struct engine *e;
	size_t n = 0;
	int ret, status = EXIT_OK;

	for (i = 0; i < (unsigned int)argc && n < sizeof(o.cmdline) - 1; i++)
		n += snprintf(o.cmdline + n, sizeof(o.cmdline) - n, "%s%s", i ? " " : "", argv[i]);
	if (parse_record(argc, argv, &o, gs, &nr) < 0) {
		fprintf(stderr, "Try 'virtio-trace-collect record --help'.\n");
		return EXIT_USAGE;
	}
	status_line = !collect_quiet && isatty(STDERR_FILENO);
	/* Domains first: a wrong name or a domain without ports fails before anything is made. */
	for (i = 0; i < nr; i++)
		if (gs[i]->link.domain[0] && libvirt_guest_resolve(&gs[i]->link, gs[i]->name, gs[i]->link.connect_uri) < 0)
			return EXIT_FAIL;

	out_fd = open_output(&o, &created);
	if (out_fd < 0)
		return EXIT_FAIL;
	ret = spool_prepare(out_fd, &spool_fd);
	if (ret < 0) {
		log_err("cannot create %s/.spool: %s", o.out_dir, strerror(-ret));
		abandon_output(out_fd, -1, o.out_dir, created);
		return EXIT_FAIL;
	}
	sync_tsc_rate(&r.tsc);
	ret = write_options(spool_fd, &o, random_id(), &r.tsc);
	if (ret < 0) {
		log_err("cannot write the spool: %s", strerror(-ret));
		abandon_output(out_fd, spool_fd, o.out_dir, created);
		return EXIT_FAIL;
	}

	r.gs = gs;
	r.nr = nr;
	r.command = o.command;
	r.o = &o;
	r.changed = rec_changed;
		sigemptyset(&r.mask);
	sigaddset(&r.mask, SIGINT);
	sigaddset(&r.mask, SIGTERM);
	sigaddset(&r.mask, SIGCHLD);
	signal(SIGPIPE, SIG_IGN);
	e = engine_new(4 * COLLECT_MAX_CPUS);
	if (!e || engine_add_signals(e, &r.mask, on_signal, &r) < 0) {
		log_err("cannot set up io_uring: %m");
		abandon_output(out_fd, spool_fd, o.out_dir, created);
		return EXIT_FAIL;
	}
	r.e = e;
	r.kcache_fd = open_kcache(&o);
	/* zstd output: compress on an idle core while the pages stream in (compress.c). */
	if (o.compress && o.file_version != 6 && !o.compress_at_end && compress_start(0) < 0)
		log_debug("no compression while streaming: the finish compresses everything");
	engine_timer_init(&r.duration, duration_over, &r);
	engine_timer_init(&r.status, status_tick, &r);
	engine_timer_init(&r.deadline, deadline, &r);
	engine_timer_init(&r.end_check, end_check, &r);
	engine_timer_init(&r.command_grace, command_grace, &r);
	if (o.host_events) {
		r.host = hostrec_start(&o, e, spool_fd);
		if (!r.host) {
			status = EXIT_PARTIAL;
			log_err("host events are not recorded");
		}
	}
	/* Every guest sets itself up from here on, each at its own pace. */
	for (i = 0; i < nr; i++) {
		struct guest *g = gs[i];
		char dirname[COLLECT_NAME_MAX + 8];

		g->rec = &r;
		g->trace_id = random_id();
		g->budget.max = o.max_size;
		snprintf(dirname, sizeof(dirname), "guest-%s", g->name);
		ret = spool_guest_dir(spool_fd, dirname, &g->spool_fd);
		if (ret < 0) {
			session_fail(g, "cannot create .spool/%s: %s", dirname, strerror(-ret));
			continue;
		}
		snprintf(g->spool, sizeof(g->spool), "%s/.spool/%s", o.out_dir, dirname);
		if (g->link.qemu_pid && !g->link.nr_vcpu_tids)
			find_vcpu_threads(g);
		if (attach_guest(g, &o) < 0) {
			session_fail(g, "cannot attach");
			continue;
		}
		session_begin(g);
	}
	r.t0 = r.last_status = engine_now_ns();
	if (o.duration)
		engine_timer_arm(e, &r.duration, (uint64_t)(o.duration * NSEC_PER_SEC), 0);
	if (status_line)
		engine_timer_arm(e, &r.status, NSEC_PER_SEC, NSEC_PER_SEC);
	if (!nr)
		start_command(&r);
	check_end(&r);
	ret = engine_loop(e);
	if (ret < 0)
		log_err("the event loop failed: %s", strerror(-ret));

	collect_status_clear();
	if (r.child > 0) {
		kill(r.child, SIGTERM);
		waitpid(r.child, NULL, 0);
	}
	if (r.host)
		hostrec_save_stats(r.host);
	for (i = 0; i < nr; i++) {
		struct guest *g = gs[i];

		recorded += g->recorded;
		migrated += g->mig.out || g->mig.resumed;
		if (g->state == G_FAILED)
			status = EXIT_PARTIAL;
		for (unsigned int j = 0; j < g->nr_streams; j++)
			stream_finish(&g->streams[j]);
		if (g->spool[0]) {
			spool_save_state(g);
			spool_save_migration(g);
		}
	}
	engine_free(e);
	if (r.host) {
		hostrec_free(r.host);
		r.host = NULL;
	}
	for (i = 0; i < nr; i++) {
		struct guest *g = gs[i];

		for (unsigned int j = 0; j < g->nr_streams; j++) {
			close(g->streams[j].fd);
			stream_close(&g->streams[j]);
		}
		free(g->streams);
		session_release(g);
		qmp_detach(g);
		detach_guest(g);
		if (g->spool_fd >= 0)
			close(g->spool_fd);
		g->spool_fd = -1;
	}
	compress_stop();
	if (r.kcache_fd >= 0)
		close(r.kcache_fd);
	if (nr && !recorded) {
		/* Nothing to keep: no manifest, no spool to block DIR (host events included). */
		log_err("no guest could be set up: nothing is written in %s", o.out_dir);
		abandon_output(out_fd, spool_fd, o.out_dir, created);
		return EXIT_FAIL;
	}
	close(spool_fd);
	/* A guest that migrated out or in: `join` makes one trace of the two spools. */
	if (migrated && !o.keep_spool && !collect_quiet)
		log_info("%s/.spool is kept for `virtio-trace-collect join` (a guest migrated)",
			 o.out_dir);
	ret = output_finalise(out_fd, o.out_dir, o.keep_spool || migrated, o.fsync, false);
	close(out_fd);
	if (ret == EXIT_OK && status != EXIT_OK)
		ret = status;
	if (!collect_quiet)
		log_info("wrote %s (exit status %d)", o.out_dir, ret);
	return ret;
}
