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
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>


#include "attach.h"
#include "compress.h"
#include "engine.h"
#include "hold.h"
#include "hostrec.h"
#include "kcache.h"
#include "live.h"
#include "livestat.h"
#include "qmp.h"
#include "record.h"
#include "session.h"
#include "stream.h"
#include "sync.h"
#include "setup/libvirt.h"
#include "setup/list.h"
#include "store/output.h"
#include "store/spool.h"
#include "opts.h"
#include "text.h"

static bool status_line;

enum { OPT_CHARDEV = 256, OPT_LISTEN, OPT_CTL, OPT_CPU, OPT_NAME, OPT_QEMU_PID, OPT_VERBOSE,
       OPT_TOP, OPT_BUFSZ, OPT_SUBBUF, OPT_LASTBOOT, OPT_CLOCK, OPT_HOST, OPT_MAXSZ, OPT_FV,
       OPT_NOCOMP, OPT_ZEND, OPT_KCACHE, OPT_NOKCACHE, OPT_KEEP, OPT_FORCE, OPT_FSYNC, OPT_SYNC,
       OPT_TSCOFF, OPT_PROBES, OPT_SINTV, OPT_DEBUGFS, OPT_STOPTO, OPT_QMP, OPT_DOMAIN,
       OPT_CONNECT, OPT_KVM_EXITS, OPT_LISTEN_GROUP, OPT_LISTEN_UID, OPT_MODE, OPT_WAIT, OPT_ALL,
       OPT_ANY_USER, OPT_LIVE, OPT_LIVE_STAT, OPT_INCOMING, OPT_NO_KVM_EVENTS, OPT_SYNC_CHECK,
       OPT_HOLD };

static const char *const file_versions[] = { "6", "7", NULL };
static const char *const sync_methods[] = { "auto", "kvm", "probe", "offset", "none", NULL };

/*
 * record's command line: the one declaration its parsing and --help read
 * (opts.h). A GUEST's options keep their state in parse_record(): which guest
 * an option belongs to is its place on the line, not a value.
 */
static const struct opt_def record_opts_def[] = {
	{ "chardev-dir", OPT_CHARDEV, KIND_PATH, "DIR",
"the guest's ports in DIR: QEMU pipe chardevs\n"
"(NAME.in/NAME.out) or unix sockets QEMU listens on", .group =
"A GUEST is one of (each starts a new guest; --name and --cpu apply to it):\n",
	  .left = "  --chardev-dir DIR", .what = "the directory of the guest's ports" },
	{ "listen", OPT_LISTEN, KIND_FLAG, NULL,
"with --chardev-dir: listen on DIR/NAME instead, for\n"
"QEMU socket chardevs with server=off; the sockets\n"
"are mode 0600 whatever the umask, and only root or\n"
"this user may connect (once: later connections are\n"
"refused and logged); DIR must be writable by its\n"
"owner (this user or root) only", .left = "  --listen" },
	{ "listen-group", OPT_LISTEN_GROUP, KIND_STRING, "GROUP",
"the --listen sockets are mode 0660 in GROUP, and\n"
"its members may connect (a QEMU run as another user)" },
	{ "listen-uid", OPT_LISTEN_UID, KIND_STRING, "USER",
"the --listen sockets are USER's, and USER may connect" },
	{ "ctl", OPT_CTL, KIND_PATH, "PATH",
"the control port and each vCPU's data port by path",
	  .left = "  --ctl PATH --cpu PATH [--cpu PATH]...", .what = "the control port's path" },
	{ "domain", OPT_DOMAIN, KIND_STRING, "NAME",
"a running libvirt domain: its channels, QEMU pid and\n"
"vCPU threads come from libvirt (URI default: libvirt's\n"
"default, qemu:///system for root); add the channels\n"
"with `setup --domain NAME --apply`", .left = "  --domain NAME [--connect URI]" },
	{ "all", OPT_ALL, KIND_STRING, "NAME,...",
"every guest `virtio-trace-collect list` shows (of\n"
"these names) with its ports in place and a\n"
"trace-agent answering (with --wait: answering or\n"
"not); not those another process records. A QEMU\n"
"is what /proc/PID/exe says, and only root's and\n"
"this user's (SUDO_UID) are taken; --any-user takes\n"
"every user's (their ports must be that user's or\n"
"root's)", .left = "  --all[=NAME,...] [--connect URI] [--any-user]", .optional = true },
	{ "name", OPT_NAME, KIND_STRING, "NAME",
"the guest's name (default: the directory's or the\n"
"domain's name)", .left = "  --name NAME" },
	{ "qemu-pid", OPT_QEMU_PID, KIND_STRING, "PID",
"the guest's QEMU process: vCPU thread ids for the\n"
"host file's GUEST option, and KVM's TSC offsets", .left = "  --qemu-pid PID" },
	{ "qmp", OPT_QMP, KIND_PATH, "PATH",
"the guest's QMP socket: after a `cont` (RESUME) the\n"
"clock is synced again at once (a stop moves a TCG\n"
"guest's TSC offset); a live migration (MIGRATION\n"
"completed) ends the guest's recording here, drained\n"
"to the switchover, with no stop sent to its agent",
	  .left = "  --qmp PATH", .what = "the path of the guest's QMP socket" },
	{ "incoming", OPT_INCOMING, KIND_FLAG, NULL,
"the guest migrates in: wait for it on these ports (600 s\n"
"at most) and take its agent's running session over;\n"
"`join` makes one trace of the two recordings", .left = "  --incoming" },
	{ "event", 'e', KIND_STRING, "SYS[:EV]",
"a guest event, system or glob (repeatable)", .group =
"\n"
"Recording:\n" },
	{ "filter", 'f', KIND_STRING, "EXPR",
"a filter for the -e before it" },
	{ "tracer", 'p', KIND_STRING, "NAME",
"a guest tracer (mmiotrace: uses the top-level buffer)" },
	{ "top-level", OPT_TOP, KIND_FLAG, NULL,
"trace the guest's top-level buffer, not an instance" },
	{ "buffer-size", OPT_BUFSZ, KIND_UINT, "KB",
"per-CPU ring buffer size in the guest (and host)",
	  .min = 1, .max = UINT32_MAX, .what = "KiB per CPU" },
	{ "last-boot", OPT_LASTBOOT, KIND_STRING, "NAME",
"first write the guest's previous boot's trace, kept in the\n"
"boot-mapped instance NAME (Linux >= 6.12, see setup\n"
"--last-boot), to guest-GUEST.lastboot.dat" },
	/* The kernel takes 1 KiB steps up to its largest order; the page checks stop at 1 MiB. */
	{ "subbuf-size", OPT_SUBBUF, KIND_UINT, "KB",
"the guest's sub-buffer size (Linux >= 6.8): fewer page\n"
"headers, events larger than 4 KiB", .min = 1, .max = VT_SUBBUF_MAX / 1024, .what = "KiB" },
	{ "clock", OPT_CLOCK, KIND_STRING, "NAME",
"guest trace clock (default x86-tsc where it exists)" },
	{ "hold", OPT_HOLD, KIND_FLAG, NULL,
"flight recorder: each ring buffer (guest and host)\n"
"overwrites, nothing is sent until the stop, which\n"
"keeps the last buffer's worth of events per CPU" },
	{ "host-events", OPT_HOST, KIND_STRING, "LIST",
"host events to record, SYS[:EV],... (private\n"
"tracefs instance, x86-tsc clock)" },
	{ "kvm-exits", OPT_KVM_EXITS, KIND_FLAG, NULL,
"add kvm:kvm_exit, kvm_entry, kvm_userspace_exit and\n"
"kvm_vcpu_wakeup to the host events, and sched_switch\n"
"and sched_wakeup filtered to the vCPU threads (what\n"
"`report --exits` and `report --vcpus` read)" },
	{ "host-pid", 'P', KIND_STRING, "PID",
"host events of this process only, its threads and\n"
"what it forks (repeatable; e.g. the QEMU pid)" },
	{ "output", 'o', KIND_PATH, "DIR",
"output directory (default virtio-trace-out); a DIR\n"
"that holds a recording is refused", .what = "the output directory, where the recording goes" },
	{ "force", OPT_FORCE, KIND_FLAG, NULL,
"replace the recording in DIR (its manifest.json,\n"
"*.dat, *.sysinfo/ and bad-pages/ files)" },
	{ "mode", OPT_MODE, KIND_STRING, "MODE",
"the files' mode, in octal (default 0600: they hold\n"
"kernel addresses); directories get x where r is\n"
"(0640 makes them 0750); exactly that, whatever the\n"
"umask. Under sudo they belong to SUDO_UID/SUDO_GID" },
	{ "duration", 'd', KIND_SECONDS, "SEC",
"stop after SEC seconds (default: at SIGINT/SIGTERM,\n"
"or when COMMAND exits)", .min = 1 },
	{ "wait", OPT_WAIT, KIND_STRING, "SEC",
"wait up to SEC seconds (default: no limit) for each\n"
"guest's ports to appear and its trace-agent to\n"
"answer: a guest still booting, or ports about to be\n"
"hot-plugged; --duration then counts from the first\n"
"guest's start", .optional = true },
	{ "max-size", OPT_MAXSZ, KIND_SIZE, "SIZE",
"keep at most SIZE bytes per guest (K, M, G suffixes): pages,\n"
"malformed pages, fragments and metadata all count;\n"
"the guest is stopped when it is reached" },
	{ "file-version", OPT_FV, KIND_CHOICE, "6|7",
"trace.dat version (default 7)", .choices = file_versions },
	{ "no-compress", OPT_NOCOMP, KIND_FLAG, NULL,
"version 7 without zstd" },
	{ "compress-at-end", OPT_ZEND, KIND_FLAG, NULL,
"zstd: compress only when the recording ends, not also\n"
"while it runs (on a core nothing else wants)" },
	{ "keep-spool", OPT_KEEP, KIND_FLAG, NULL,
"keep DIR/.spool after writing the files" },
	{ "fsync", OPT_FSYNC, KIND_FLAG, NULL,
"flush the trace files to the disk before exiting, so\n"
"that they survive a crash of the machine (slower)" },
	{ "stop-timeout", OPT_STOPTO, KIND_SECONDS, "SEC",
"how long a guest may take to confirm a stop and\n"
"deliver its last pages (default 60)", .min = 1 },
	{ "kallsyms-cache", OPT_KCACHE, KIND_PATH, "DIR",
"keep each VM's kallsyms in DIR between\n"
"recordings of one boot, so that the guest need not\n"
"read it again (made 0700 if missing; default:\n"
"" KCACHEDIR " if it exists); a VM is known by\n"
"--domain, --qemu-pid or --qmp, else not cached", .what = "the kallsyms cache's directory" },
	{ "no-kallsyms-cache", OPT_NOKCACHE, KIND_FLAG, NULL,
"neither read nor write a kallsyms cache" },
	{ "sync", OPT_SYNC, KIND_CHOICE, "METHOD",
"auto (default: kvm, else probe), kvm, probe, offset\n"
"or none", .group =
"\n"
"Time synchronisation:\n", .choices = sync_methods },
	{ "debugfs", OPT_DEBUGFS, KIND_PATH, "DIR",
"where debugfs is (default /sys/kernel/debug); KVM's\n"
"per-vCPU TSC offsets are read from DIR/kvm/PID-*/", .what = "where debugfs is" },
	{ "no-kvm-events", OPT_NO_KVM_EVENTS, KIND_FLAG, NULL,
"kvm method: find offset changes by re-reading debugfs\n"
"every second (each change bounded in the manifest),\n"
"not from kvm:kvm_write_tsc_offset at its exact moment" },
	{ "sync-check", OPT_SYNC_CHECK, KIND_FLAG, NULL,
"kvm method: run probe bursts too (at start, stop and\n"
"every --sync-interval) and check each reply against\n"
"KVM's offsets (manifest: sync.check)" },
	{ "tsc-offset", OPT_TSCOFF, KIND_INT64, "N",
"guest TSC = host TSC + N (with --sync offset)" },
	{ "sync-probes", OPT_PROBES, KIND_UINT, "N",
"at most N probes per vCPU and burst (default 100;\n"
"fewer once 16 in a row narrowed nothing)",
	  .min = 1, .max = 65536, .what = "probes per vCPU and burst" },
	{ "sync-interval", OPT_SINTV, KIND_SECONDS, "S",
"probe again every S seconds while recording (0: only\n"
"at start and stop; default 0)", .min = 0 },
	{ "live", OPT_LIVE, KIND_STRING, "MS",
"also print the host's and guests' events as they arrive,\n"
"merged in time order through a reorder window of MS\n"
"milliseconds (default 500), in trace-cmd report's format\n"
"(on standard output; the files are written as usual)", .group =
"\n", .optional = true },
	{ "live-stat", OPT_LIVE_STAT, KIND_FLAG, NULL,
"once a second of host time, a table per guest and\n"
"vCPU: % in the guest, halted, preempted, in exits,\n"
"and the top 3 exit reasons (lines beginning with #;\n"
"with --live the event lines too). Needs host sched\n"
"events of the vCPU threads: --kvm-exits records them\n"
"(and the exits), for --qemu-pid and --domain guests" },
	{ "quiet", 'q', KIND_FLAG, NULL,
"no progress, status line or closing summary" },
	{ "verbose", OPT_VERBOSE, KIND_FLAG, NULL,
"more messages (-v is trace-cmd's \"leave out the next\n"
"-e\", refused here)" },
	{ "version", 'V', KIND_FLAG, NULL,
"print the version and exit", .help_only = true },
	{ "cpu", OPT_CPU, KIND_PATH, "PATH", NULL, .unlisted = true, .what = "a vCPU's data port's path" },
	{ "connect", OPT_CONNECT, KIND_STRING, "URI", NULL, .unlisted = true },
	{ "any-user", OPT_ANY_USER, KIND_FLAG, NULL, NULL, .unlisted = true },
	{ NULL },
};

/*
 * trace-cmd record's letters that mean something else here, refused rather
 * than taken quietly (its -p and -P are ours: --tracer and --host-pid; its
 * -m is KiB per CPU, where ours would be bytes per guest). -v once meant
 * --verbose: with trace-cmd's habit it would have recorded the event its
 * user meant to leave out.
 */
static const struct opt_habit record_habits[] = {
	{ 'v', "trace-cmd's \"leave out the next -e\" is not supported (record only the "
	       "events you want); more messages are --verbose" },
	{ 'b', "trace-cmd's buffer size is --buffer-size KB here (-b is setup's --backend)" },
	{ 'C', "trace-cmd's clock is --clock NAME here (-C is --connect in check, list and "
	       "setup)" },
	{ 'm', "trace-cmd's -m is KiB per CPU; the budget here is --max-size SIZE, bytes "
	       "per guest with a K, M or G suffix" },
	{ 0, NULL },
};

static const struct opt_cmd record_cmd = {
	.name = "record",
	.usage = "GUEST... [OPTION]... [-- COMMAND [ARG]...]",
	.about =
"Record the ftrace events of one or more guests, streamed by trace-agent(8)\n"
"over virtio-serial ports, and optionally host events, into trace.dat files\n"
"that `trace-cmd report -i DIR/host.dat -i DIR/guest-NAME.dat` merges.\n",
	.tail =
"Exit status: 0 every guest recorded cleanly; 1 nothing usable was written;\n"
"2 usage error; 3 files were written but a guest was dropped or had problems\n"
"(see manifest.json). See virtio-trace-collect(1).\n",
	.defs = record_opts_def,
	.habits = record_habits,
	.in_order = true,
};

/**
 * record_usage() - the help of `record`, from its table
 * @f: where to print it
 */
void record_usage(FILE *f)
{
	opt_help(&record_cmd, f);
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
	g->ctl.rfd = g->ctl.wfd = g->ctl.lfd = -1;
	g->spool_fd = -1;
	gs[(*nr)++] = g;
	return g;
}
/* An option's long name by its key. */
static const char *long_name(int c)
{
	const struct opt_def *d;

	for (d = record_opts_def; d->name; d++)
		if (d->key == c)
			return d->name;
	return "?";
}

static int parse_record(int argc, char **argv, struct record_opts *o, struct guest **gs,
			unsigned int *nr)
{
	struct guest *g = NULL;
	bool kvm_exits = false;
	struct opt_val val;
	char *end;
	int c;

	optind = 1;
	while ((c = opt_parse(&record_cmd, argc, argv, &val)) != -1) {
		switch (c) {
		case OPT_CHARDEV:
		case OPT_CTL:
		case OPT_DOMAIN:
			g = new_guest(gs, nr);
			if (!g) {
				collect_usage("at most %d guests", COLLECT_MAX_GUESTS);
				return -EINVAL;
			}
			if (c == OPT_CHARDEV) {
				snprintf(g->link.chardev_dir, sizeof(g->link.chardev_dir), "%s", optarg);
			} else if (c == OPT_CTL) {
				snprintf(g->link.ctl_path, sizeof(g->link.ctl_path), "%s", optarg);
			} else {
				if (!*optarg || strlen(optarg) >= sizeof(g->link.domain)) {
					collect_usage("bad --domain '%s'", optarg);
					return -EINVAL;
				}
				snprintf(g->link.domain, sizeof(g->link.domain), "%s", optarg);
			}
			break;
		case OPT_ALL:
			o->all = true;
			o->all_names = optarg;
			g = NULL;
			break;
		case OPT_ANY_USER:
			o->any_user = true;
			break;
		case OPT_CONNECT:
			if (o->all && !g) {
				o->all_uri = optarg;
				break;
			}
			if (!g || !g->link.domain[0]) {
				collect_usage("--connect must follow --domain or --all");
				return -EINVAL;
			}
			if (strlen(optarg) >= sizeof(g->link.connect_uri)) {
				collect_usage("--connect URI is too long");
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
				collect_usage("--%s must follow --chardev-dir, --ctl or --domain (it is "
					      "that guest's)", long_name(c));
				return -EINVAL;
			}
			if (g->link.domain[0] && (c == OPT_LISTEN || c == OPT_CPU)) {
				collect_usage("%s does not apply to --domain (its ports "
					"come from the domain's XML)", c == OPT_LISTEN ? "--listen" : "--cpu");
				return -EINVAL;
			}
			if (c == OPT_LISTEN) {
				g->link.listen = true;
			} else if (c == OPT_INCOMING) {
				g->mig.incoming = true;
			} else if (c == OPT_CPU) {
				if (g->link.nr_cpu_paths >= COLLECT_MAX_CPUS) {
					collect_usage("--cpu '%s': at most %d per guest", optarg,
						      COLLECT_MAX_CPUS);
					return -EINVAL;
				}
				g->link.cpu_paths[g->link.nr_cpu_paths++] = strdup(optarg);
			} else if (c == OPT_QMP) {
				snprintf(g->link.qmp_path, sizeof(g->link.qmp_path), "%s", optarg);
			} else if (c == OPT_NAME) {
				if (!collect_name_ok(optarg)) {
					collect_usage("--name '%s': use letters, digits, "
						"'_', '-' and '.' (it becomes a file name)", optarg);
					return -EINVAL;
				}
				snprintf(g->name, sizeof(g->name), "%s", optarg);
			} else {
				int pid;

				if (opt_pid("--qemu-pid", optarg, &pid) < 0)
					return -EINVAL;
				g->link.qemu_pid = pid;
			}
			break;
		case OPT_LISTEN_GROUP: {
			struct group *gr = getgrnam(optarg);
			unsigned long v = strtoul(optarg, &end, 10);

			if (!gr && (*end || end == optarg || v >= (gid_t)-1)) {
				collect_usage("--listen-group '%s': no such "
					"group", optarg);
				return -EINVAL;
			}
			o->listen_gid = gr ? gr->gr_gid : (gid_t)v;
			o->have_listen_gid = true;
			break;
		}
		case OPT_LISTEN_UID: {
			struct passwd *pw = getpwnam(optarg);
			unsigned long v = strtoul(optarg, &end, 10);

			if (!pw && (*end || end == optarg || v >= (uid_t)-1)) {
				collect_usage("--listen-uid '%s': no such "
					"user", optarg);
				return -EINVAL;
			}
			o->listen_uid = pw ? pw->pw_uid : (uid_t)v;
			o->have_listen_uid = true;
			break;
		}
		case 'e':
			if (o->nr_events >= COLLECT_MAX_EVENTS) {
				collect_usage("--event '%s': at most %d events", optarg, COLLECT_MAX_EVENTS);
				return -EINVAL;
			}
			o->events[o->nr_events++] = optarg;
			break;
		case 'f':
			if (!o->nr_events) {
				collect_usage("-f applies to the -e before it");
				return -EINVAL;
			}
			o->filters[o->nr_events - 1] = optarg;
			break;
		case 'p': o->tracer = optarg; break;
		case OPT_TOP: o->top_level = true; break;
		case OPT_BUFSZ: o->buffer_kb = (unsigned int)val.u; break;
		case OPT_LASTBOOT:
			if (!collect_name_ok(optarg) || strchr(optarg, '.')) {
				collect_usage("--last-boot '%s': an instance name, of [A-Za-z0-9_-]", optarg);
				return -EINVAL;
			}
			o->last_boot = optarg;
			break;
		case OPT_SUBBUF: o->subbuf_kb = (unsigned int)val.u; break;
		case OPT_CLOCK: o->clock = optarg; break;
		case OPT_HOST: o->host_events = optarg; break;
		case OPT_KVM_EXITS: kvm_exits = true; break;
		case 'P': {
			long v = strtol(optarg, &end, 10);

			if (*end || v <= 0 || v > INT32_MAX || o->nr_host_pids >= COLLECT_MAX_HOST_PIDS) {
				collect_usage("--host-pid '%s': a process id (at most %d of them)", optarg,
					      COLLECT_MAX_HOST_PIDS);
				return -EINVAL;
			}
			o->host_pids[o->nr_host_pids++] = (pid_t)v;
			break;
		}
		case 'o': o->out_dir = optarg; break;
		case 'd': o->duration = val.d; break;
		case OPT_WAIT:
			o->wait = true;
			o->wait_s = 0;
			if (!optarg)
				break;
			o->wait_s = strtod(optarg, &end);
			if (end == optarg || *end || !(o->wait_s > 0) || o->wait_s > 31 * 86400) {
				collect_usage("--wait '%s': seconds, more than 0 and at most %d (no value: "
					      "no limit)", optarg, 31 * 86400);
				return -EINVAL;
			}
			break;
		case OPT_MAXSZ: o->max_size = val.u64; break;
		case OPT_FV: o->file_version = 6 + val.i; break;
		case OPT_NOCOMP: o->compress = false; break;
		case OPT_ZEND: o->compress_at_end = true; break;
		case OPT_KCACHE: o->kcache_dir = optarg; o->no_kcache = false; break;
		case OPT_NOKCACHE: o->no_kcache = true; break;
		case OPT_KEEP: o->keep_spool = true; break;
		case OPT_FORCE: o->force = true; break;
		case OPT_MODE: {
			unsigned long v = strtoul(optarg, &end, 8);

			/* Read and write bits; the collector reads its own files back. */
			if (*end || end == optarg || optarg[0] == '-' || v & ~0666ul ||
			    (v & 0600) != 0600) {
				collect_usage("--mode '%s': the files' mode in octal, "
					"read and write bits only, the owner's included (e.g. 0640)", optarg);
				return -EINVAL;
			}
			o->file_mode = (mode_t)v;
			break;
		}
		case OPT_FSYNC: o->fsync = true; break;
		case OPT_SYNC: o->sync = val.s; break;
		case OPT_TSCOFF:
			o->tsc_offset = val.i64;
			o->have_tsc_offset = true;
			break;
		case OPT_PROBES: o->sync_probes = (unsigned int)val.u; break;
		case OPT_SINTV: o->sync_interval = val.d; break;
		case OPT_DEBUGFS: o->debugfs = optarg; break;
		case OPT_NO_KVM_EVENTS: o->no_kvm_events = true; break;
		case OPT_SYNC_CHECK: o->sync_check = true; break;
		case OPT_STOPTO: o->stop_timeout = val.d; break;
		case OPT_LIVE:
			o->live_ms = optarg ? strtoul(optarg, &end, 10) : LIVE_WINDOW_MS;
			if (optarg && (*end || !o->live_ms || o->live_ms > LIVE_WINDOW_MAX_MS)) {
				collect_usage("--live '%s': the window in milliseconds, a whole number from "
					      "1 to %u (no value: %u)", optarg, LIVE_WINDOW_MAX_MS,
					      LIVE_WINDOW_MS);
				return -EINVAL;
			}
			o->live_lines = true;
			break;
		case OPT_LIVE_STAT: o->live_stat = true; break;
		case OPT_HOLD: o->hold = true; break;
		case 'q': collect_quiet = 1; break;
		case OPT_VERBOSE: collect_verbose = 1; break;
		case OPT_HELP: exit(EXIT_OK);
		default:
			return -2;	/* opt_parse() said why, and where to look */
		}
	}
	if (optind < argc) {
		if (strcmp(argv[optind - 1], "--") != 0) {
			collect_usage("unexpected argument '%s'", argv[optind]);
			return -EINVAL;
		}
		o->command = argv + optind;
	}
	if (kvm_exits) {
		/*
		 * What `report --exits` and `--vcpus` read, added to --host-events;
		 * the sched events filtered to the vCPU threads (hostrec.c), unless
		 * --host-events asks for sched events of its own.
		 */
		static char list[4096];

		o->kvm_sched = !hostrec_lists_sched(o->host_events);
		if ((size_t)snprintf(list, sizeof(list), "kvm:kvm_exit,kvm:kvm_entry,"
				     "kvm:kvm_userspace_exit,kvm:kvm_vcpu_wakeup%s%s%s",
				     o->kvm_sched ? ",sched:sched_switch,sched:sched_wakeup" : "",
				     o->host_events ? "," : "",
				     o->host_events ? o->host_events : "") >= sizeof(list))
			return -EINVAL;
		o->host_events = list;
	}
	if (o->live_stat && !o->host_events) {
		collect_usage("--live-stat reads the host's events of the vCPU threads: give "
			      "--kvm-exits (or --host-events with sched_switch and sched_wakeup)");
		return -EINVAL;
	}
	if (o->live_stat && !o->live_ms)
		o->live_ms = LIVE_WINDOW_MS;
	if (hold_usage(o->hold, o->live_ms) < 0)
		return -EINVAL;
	if (o->all && *nr) {
		collect_usage("--all records every guest `list` finds: give no "
			"other guest with it");
		return -EINVAL;
	}
	if (o->any_user && !o->all) {
		collect_usage("--any-user says whose QEMUs --all takes: give it with --all");
		return -EINVAL;
	}
	if (!*nr && !o->host_events && !o->all) {
		collect_usage("no guest given (--chardev-dir DIR, --ctl PATH --cpu PATH, "
			"or --domain NAME)");
		return -EINVAL;
	}
	if (o->have_listen_gid || o->have_listen_uid) {
		unsigned int i;

		for (i = 0; i < *nr && !gs[i]->link.listen; i++)
			;
		if (i == *nr) {
			collect_usage("%s applies to the sockets of a --listen guest",
				o->have_listen_gid ? "--listen-group" : "--listen-uid");
			return -EINVAL;
		}
	}
	if (o->nr_host_pids && !o->host_events) {
		collect_usage("--host-pid needs --host-events");
		return -EINVAL;
	}
	if (o->have_tsc_offset && !o->sync)
		o->sync = "offset";
	if (o->sync && !strcmp(o->sync, "offset") && !o->have_tsc_offset) {
		collect_usage("--sync offset needs --tsc-offset N");
		return -EINVAL;
	}
	if (o->duration && o->command) {
		collect_usage("give --duration or a command, not both");
		return -EINVAL;
	}
	for (unsigned int i = 0; i < *nr; i++) {
		struct guest *x = gs[i];

		if (x->link.ctl_path[0] && !x->link.nr_cpu_paths) {
			collect_usage("--ctl %s needs at least one --cpu PATH",
				x->link.ctl_path);
			return -EINVAL;
		}
		if (!x->name[0] && x->link.domain[0]) {
			/* The domain's name names the files; a name that cannot needs --name. */
			if (!collect_name_ok(x->link.domain)) {
				collect_usage("domain '%s' cannot name a file: add "
					"--name NAME after --domain (letters, digits, '_', '-', '.')",
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
			collect_usage("a guest may not be named '%s': it is the "
				"host trace's name. Use --name", x->name);
			return -EINVAL;
		}
		for (unsigned int j = 0; j < i; j++)
			if (!strcmp(gs[j]->name, x->name)) {
				collect_usage("two guests are named '%s': use --name",
					x->name);
				return -EINVAL;
			}
	}
	return 0;
}

/* How long record --all waits for the agents' answers to its HELLO, all at once. */
#define ALL_PROBE_MS	2000

/*
 * --all: the guests `list` finds, with their ports in place and an agent
 * answering (with --wait, answering or not). Those another process records
 * are left out, and every guest left out is named with the reason.
 * Return: 0, or -errno after a message (nothing to record).
 */
static int add_all(const struct record_opts *o, struct guest **gs, unsigned int *nr)
{
	struct list_found f;
	unsigned int i, j;
	const char *why;
	char buf[200];

	if (list_find(o->all_uri, false, o->any_user, &f) < 0) {
		log_err("--all: out of memory");
		return -ENOMEM;
	}
	if (o->all_names) {
		char *copy = strdup(o->all_names), *names[COLLECT_MAX_GUESTS], *p, *save = NULL;
		int n = 0;

		for (p = copy ? strtok_r(copy, ",", &save) : NULL; p && n < COLLECT_MAX_GUESTS;
		     p = strtok_r(NULL, ",", &save))
			names[n++] = p;
		list_keep(&f, names, n);
		free(copy);
	}
	for (i = 0; i < f.nr_skipped; i++)
		log_info("--all: pid %d (%s) is left out: %s", (int)f.skipped[i].pid,
			 f.skipped[i].name, f.skipped[i].why);
	list_probe(&f, ALL_PROBE_MS);
	for (i = 0; i < f.nr; i++) {
		const struct list_guest *l = &f.g[i];
		const char *who = l->libvirt ? l->domain : l->name;
		struct guest *g;
		bool dup = false;

		why = NULL;
		for (j = 0; j < *nr; j++)
			dup = dup || !strcmp(gs[j]->name, l->name);
		if (!list_ports_ready(l)) {
			why = l->running ? "its ports are not all there" : "it is not running";
		} else if (l->agent == LIST_AGENT_BUSY) {
			if (l->busy_pid)
				snprintf(buf, sizeof(buf), "another process (pid %d) records it",
					 (int)l->busy_pid);
			else
				snprintf(buf, sizeof(buf), "another process (a connected client) records it");
			why = buf;
		} else if (l->listen) {
			why = "QEMU connects to its ports: record it with --chardev-dir DIR --listen";
		} else if (l->agent == LIST_AGENT_ERROR) {
			why = l->why[0] ? l->why : "its control port cannot be opened";
		} else if (l->agent != LIST_AGENT_ANSWERS && !o->wait) {
			snprintf(buf, sizeof(buf), "%s (with --wait it is waited for)",
				 l->why[0] ? l->why : "no trace-agent answered");
			why = buf;
		} else if (!l->name[0] || collect_name_reserved(l->name)) {
			why = "its name cannot name a file: record it with --domain NAME --name OTHER";
		} else if (!l->libvirt && !l->chardev_dir[0]) {
			why = "its ports are not in one directory: record it with --ctl PATH --cpu PATH...";
		} else if (dup) {
			why = "another guest has its name: record it with --name";
		}
		if (why) {
			log_info("--all: %s is left out: %s", who, why);
			continue;
		}
		g = new_guest(gs, nr);
		if (!g) {
			log_err("--all: at most %d guests: %s and the ones after it are left out",
				COLLECT_MAX_GUESTS, who);
			break;
		}
		snprintf(g->name, sizeof(g->name), "%s", l->name);
		if (l->libvirt) {
			snprintf(g->link.domain, sizeof(g->link.domain), "%s", l->domain);
			snprintf(g->link.connect_uri, sizeof(g->link.connect_uri), "%s", l->uri);
		} else {
			snprintf(g->link.chardev_dir, sizeof(g->link.chardev_dir), "%s", l->chardev_dir);
			snprintf(g->link.qmp_path, sizeof(g->link.qmp_path), "%s", l->qmp_path);
			g->link.qemu_pid = l->qemu_pid;
			/* The ports (and QMP) record opens must be that QEMU's, as list checked. */
			g->link.owner = (struct qemuproc_owner){ .known = l->owner_known,
								 .uid = l->owner, .pid = l->qemu_pid };
		}
		if (l->libvirt)
			snprintf(buf, sizeof(buf), "libvirt domain");
		else
			snprintf(buf, sizeof(buf), "QEMU pid %d", (int)l->qemu_pid);
		log_info("--all: %s (%s, %s)", g->name, buf, l->agent == LIST_AGENT_ANSWERS ?
			 "its agent answers" : "waiting for its agent");
	}
	if (!*nr)
		log_err("--all: no guest to record%s%s: `virtio-trace-collect list` shows the guests "
			"and their ports", f.libvirt_note[0] ? "; " : "", f.libvirt_note);
	list_free(&f);
	return *nr ? 0 : -ENOENT;
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

static void show_status(struct guest **gs, unsigned int nr, double elapsed, double dt)
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
		if (g->state < G_RUNNING || (g->state == G_FAILED && !g->setup.recorded))
			n += snprintf(line + n, sizeof(line) - n, "%s", session_doing(g));
		else
			n += snprintf(line + n, sizeof(line) - n, "%.1f MB/s %" PRIu64 " pages lost %"
				      PRIu64 "%s%s", dt > 0 ? (bytes - g->status_bytes) / dt / 1e6 : 0.0,
				      pages, lost, missed && !lost ? "+" : "",
				      g->state == G_FAILED ? " FAILED" : "");
		g->status_bytes = bytes;
	}
	collect_status("[%6.1fs] %s", elapsed, line);
}

static int write_options(int spool, const struct record_opts *o, uint64_t host_id,
			 const struct sync_tsc *tsc)
{
	struct spool_options so = {
		.version = o->file_version, .compress = o->compress && o->file_version >= 7,
		.host_trace_id = host_id, .tsc_khz = tsc->khz, .tsc_mult = tsc->mult,
		.tsc_shift = tsc->shift, .have_perm = true, .hold = o->hold,
	};

	spool_perm_get(&so.perm);	/* for recover */
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
		log_err("-o/--output '%s': the output directory: %s", o->out_dir, fd == -ELOOP ?
			"a symbolic link, refused (give the directory it points to)" : strerror(-fd));
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

/* --wait: a guest whose ports are not there yet is looked for again this often. */
#define WAIT_RETRY_NS		(500 * NSEC_PER_MSEC)

static bool port_exists(const char *base)
{
	char out[4200];
	struct stat st;

	snprintf(out, sizeof(out), "%s.out", base);
	return (stat(out, &st) == 0 && S_ISFIFO(st.st_mode)) ||
	       (stat(base, &st) == 0 && (S_ISSOCK(st.st_mode) || S_ISFIFO(st.st_mode)));
}

/*
 * --wait: are the guest's ports there to open? A chardev directory needs its
 * control port and its first data port (pipe FIFOs made ahead of a hot-plug
 * are there: the HELLO then waits in the FIFO for QEMU and the agent); a
 * domain needs its channels in the live XML. -EAGAIN: not yet; another
 * -errno: never (a message said why).
 */
static int ports_ready(struct guest *g)
{
	char base[4200];
	int ret;

	if (g->link.listen || g->wait.link_ready)
		return 0;
	if (g->link.domain[0]) {
		ret = libvirt_guest_resolve(&g->link, g->name, g->link.connect_uri);
		g->wait.link_ready = ret == 0;
		return ret;
	}
	if (g->link.chardev_dir[0]) {
		snprintf(base, sizeof(base), "%s/trace-path-cpu0", g->link.chardev_dir);
		if (!port_exists(base))
			return -EAGAIN;
		snprintf(base, sizeof(base), "%s/agent-ctl-path", g->link.chardev_dir);
		return port_exists(base) ? 0 : -EAGAIN;
	}
	return port_exists(g->link.ctl_path) ? 0 : -EAGAIN;
}

static void start_guest(struct guest *g);

static void wait_tick(void *arg)
{
	start_guest(arg);
}

/* Open the guest's ports and start its session; with --wait, ports not there yet are waited for. */
static void start_guest(struct guest *g)
{
	const struct record_opts *o = g->rec->o;
	int ret;

	if (g->state != G_NEW || g->rec->stopping)
		return;
	if (o->wait) {
		ret = ports_ready(g);
		if (ret == -EAGAIN && g->wait.until != UINT64_MAX && engine_now_ns() >= g->wait.until) {
			session_fail(g, "its trace ports did not appear within %g s (--wait): `virtio-trace-"
				     "collect list` shows the guests that have them; %s", o->wait_s,
				     g->link.domain[0] ? "`setup --domain NAME --apply --live` hot-plugs them" :
				     "`setup --qmp SOCKET --hotplug` hot-plugs them into a running QEMU");
			return;
		}
		if (ret == -EAGAIN) {
			if (!g->wait.said) {
				g->wait.said = true;
				log_info("guest %s: waiting for its trace ports to appear%s", g->name,
					 o->wait_s ? "" : " (no time limit: Ctrl-C ends)");
			}
			engine_timer_arm(g->rec->e, &g->wait.timer, WAIT_RETRY_NS, 0);
			return;
		}
		if (ret < 0) {
			session_fail(g, "cannot find its ports");
			return;
		}
	}
	if (g->link.qemu_pid && !g->link.nr_vcpu_tids)
		find_vcpu_threads(g);
	hostrec_vcpus(g->rec->host, g->link.vcpu_tids, g->link.nr_vcpu_tids);
	if (live_set_vcpus(g->rec->live, g->live_idx, g->link.vcpu_tids, g->link.nr_vcpu_tids) < 0)
		log_warn("guest %s: its vCPUs are not in the --live-stat table", g->name);
	if (attach_guest(g, o) < 0) {
		session_fail(g, "cannot attach");
		return;
	}
	session_begin(g);
}

/*
 * Open files: a guest holds its control port (two FIFOs) and its spool
 * directory, and per vCPU its port, its spool data file and its compressed
 * chunks, now and then a file of malformed or overflowing pages (and with
 * --listen the port's listening socket beside the connection); the host
 * recorder per CPU its trace_pipe_raw, a pipe and the same spool files; the
 * finish a directory per trace at once. Measured: 8 guests of 2 vCPUs held
 * 81. A thousand such guests need about 12,000, past the usual soft limit of
 * 1024.
 */
#define FDS_BASE	64
#define FDS_GUEST	4
#define FDS_VCPU	4
#define FDS_LISTEN	1
#define FDS_HOST_CPU	6

/* The limit as the collector found it: what COMMAND gets back. */
static struct rlimit nofile_found;
static bool nofile_raised;

/*
 * The files set aside: FDS_BASE, the host's CPUs and each guest's share
 * (guest->fds), guessed before its HELLO and set again when its agent says
 * how many vCPUs it has (record_fds_claim()).
 */
static uint64_t fds_reserved;

/* The files guest @g needs with @cpus vCPUs. */
static uint64_t guest_fds_for(const struct guest *g, unsigned int cpus)
{
	return FDS_GUEST + (FDS_VCPU + (g->link.listen ? FDS_LISTEN : 0)) * (uint64_t)cpus;
}

/* The files guest @g needs, as far as is known before its HELLO (2 vCPUs when unknown). */
static uint64_t guest_fds(const struct guest *g)
{
	unsigned int ports = attach_count_ports(g);

	return guest_fds_for(g, ports ? ports : 2);
}

/* Raise the soft limit @rl to the hard one; Return: whether it was (@rl then is the new one). */
static bool raise_to_hard(struct rlimit *rl)
{
	struct rlimit up = { .rlim_cur = rl->rlim_max, .rlim_max = rl->rlim_max };

	if (rl->rlim_cur >= rl->rlim_max || setrlimit(RLIMIT_NOFILE, &up) < 0)
		return false;
	nofile_raised = true;
	*rl = up;
	return true;
}

/*
 * Raise the soft RLIMIT_NOFILE to the hard one when the guests need more
 * than the soft one allows, and say when even the hard one is short.
 *
 * Return: how many guests, in order, fit in the limit (@nr when all do): the
 * rest are failed before they take a descriptor, so that those that fit
 * record whole rather than every guest failing halfway. Those that fit have
 * their guess set aside; record_fds_claim() checks it again at each HELLO.
 */
static unsigned int raise_fd_limit(struct guest **gs, unsigned int nr, const struct record_opts *o)
{
	uint64_t need = FDS_BASE, host_cpus = 0, used;
	struct rlimit rl, was;
	unsigned int i, fit;

	for (i = 0; i < nr; i++) {
		gs[i]->fds = guest_fds(gs[i]);
		need += gs[i]->fds;
	}
	if (o->host_events) {
		long n = sysconf(_SC_NPROCESSORS_CONF);

		host_cpus = n > 0 ? (uint64_t)n : 1;
		need += FDS_HOST_CPU * host_cpus;
	}
	fds_reserved = need;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return nr;
	nofile_found = rl;
	if (need <= rl.rlim_cur)
		return nr;
	was = rl;
	if (raise_to_hard(&rl))
		log_info("%u guests%s need about %" PRIu64 " open files: the limit is raised from "
			 "%llu to the hard limit, %llu", nr, host_cpus ? " and the host events" : "",
			 need, (unsigned long long)was.rlim_cur, (unsigned long long)rl.rlim_cur);
	if (need <= rl.rlim_cur)
		return nr;
	used = FDS_BASE + FDS_HOST_CPU * host_cpus;
	for (fit = 0; fit < nr && used + gs[fit]->fds <= rl.rlim_cur; fit++)
		used += gs[fit]->fds;
	for (i = fit; i < nr; i++)
		gs[i]->fds = 0;
	fds_reserved = used;
	log_warn("%u guests%s need about %" PRIu64 " open files, more than the limit of %llu (the "
		 "hard limit is %llu): only the first %u are recorded. Raise it (as root `ulimit -Hn %"
		 PRIu64 "`, or LimitNOFILE= for a service)", nr, host_cpus ? " and the host events" : "",
		 need, (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max, fit, need);
	return fit;
}

/**
 * record_fds_claim() - set aside the open files a guest needs, now that its
 * agent said how many vCPUs it has
 * @g: the guest, its agent.nr_cpus from the HELLO_REPLY
 * @b: filled in: what it needs, the limit, and the limit all would fit in
 *
 * The guess made before the start counted 2 vCPUs for a guest whose ports
 * were not known yet (--listen, --wait). When the real share does not fit
 * in what the others leave, the soft RLIMIT_NOFILE is raised to the hard one
 * first; when even that is short, nothing is set aside beyond the guest's
 * control port and spool directory, so that the guest fails alone instead of
 * taking the descriptors the other guests (and the finish) need.
 *
 * Return: 0 (set aside), -EMFILE (it does not fit: @b says by how much).
 */
int record_fds_claim(struct guest *g, struct record_fds *b)
{
	uint64_t others = fds_reserved - g->fds;
	struct rlimit rl;

	b->guest = guest_fds_for(g, g->agent.nr_cpus);
	b->need = others + b->guest;
	b->limit = 0;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || b->need <= rl.rlim_cur)
		goto fits;
	b->limit = rl.rlim_cur;
	if (raise_to_hard(&rl))
		log_info("guest %s: %u vCPUs: the guests need about %" PRIu64 " open files: the limit "
			 "is raised from %llu to the hard limit, %llu", g->name, g->agent.nr_cpus,
			 b->need, (unsigned long long)b->limit, (unsigned long long)rl.rlim_cur);
	b->limit = rl.rlim_cur;
	if (b->need <= rl.rlim_cur)
		goto fits;
	g->fds = FDS_GUEST;
	fds_reserved = others + g->fds;
	return -EMFILE;
fits:
	g->fds = b->guest;
	fds_reserved = b->need;
	return 0;
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
		/* Programs that select() break above 1024: the command gets the limit we found. */
		if (nofile_raised)
			setrlimit(RLIMIT_NOFILE, &nofile_found);
		execvp(r->command[0], r->command);
		log_err("cannot run %s: %s", r->command[0], strerror(errno));
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
		recording += (r->gs[i]->state == G_RUNNING && r->gs[i]->setup.synced) ||
			     (r->gs[i]->mig.incoming && !r->gs[i]->mig.seen.resumed &&
			      !session_finished(r->gs[i]));
	}
	settled = finished + recording;
	if (!r->stopping && recording && r->o->duration && !r->duration_armed) {
		/* --wait: the duration counts from the first guest's start. */
		r->duration_armed = true;
		engine_timer_arm(r->e, &r->duration, (uint64_t)(r->o->duration * NSEC_PER_SEC), 0);
	}
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

	show_status(r->gs, r->nr, (now - r->t0) / 1e9, (now - r->last_status) / 1e9);
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

static int by_name(const void *a, const void *b)
{
	const struct guest *x = *(const struct guest *const *)a, *y = *(const struct guest *const *)b;

	return strcmp(x->name, y->name);
}

/*
 * --live: the view, its traces in the order of the trace-cmd report command
 * the summary suggests (the host, then the guests by name), so that equal
 * timestamps come out as trace-cmd orders them.
 */
static int open_live(struct recording *r, struct guest **gs, unsigned int nr)
{
	struct guest **sorted = calloc(nr ? nr : 1, sizeof(*sorted));
	char file[COLLECT_NAME_MAX + 16];
	unsigned int i;
	int idx;

	r->live = sorted ? live_new(r->o->live_ms, &r->tsc, stdout) : NULL;
	if (!r->live) {
		free(sorted);
		return -ENOMEM;
	}
	if (r->o->host_events && live_add_trace(r->live, "host.dat", true) < 0)
		goto err;
	if (r->o->live_stat && live_set_stat(r->live, &livestat_ops, r->o->live_lines) < 0)
		goto err;
	memcpy(sorted, gs, nr * sizeof(*sorted));
	qsort(sorted, nr, sizeof(*sorted), by_name);
	for (i = 0; i < nr; i++) {
		snprintf(file, sizeof(file), "guest-%s.dat", sorted[i]->name);
		idx = live_add_trace(r->live, file, false);
		if (idx < 0)
			goto err;
		sorted[i]->live_idx = idx;
	}
	free(sorted);
	return 0;
err:
	free(sorted);
	live_end(r->live);
	r->live = NULL;
	errno = ENOMEM;
	return -ENOMEM;
}

/* io_uring's queue: 1024 entries, more for many guests (at most io_uring's 32768). */
static unsigned int ring_entries(unsigned int nr)
{
	unsigned int want = 4 * COLLECT_MAX_CPUS, need = nr * 8;

	while (want < need && want < 32768)
		want *= 2;
	return want;
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
		.file_mode = 0600,
	};
	struct spool_perm perm;
	unsigned int nr = 0, i, recorded = 0, refused = 0, accepted = 0, fit, migrated = 0;
	int out_fd, spool_fd = -1;
	bool created;
	struct engine *e;
	size_t n = 0;
	int ret, status = EXIT_OK;

	for (i = 0; i < (unsigned int)argc && n < sizeof(o.cmdline) - 1; i++)
		n += snprintf(o.cmdline + n, sizeof(o.cmdline) - n, "%s%s", i ? " " : "", argv[i]);
	ret = parse_record(argc, argv, &o, gs, &nr);
	if (ret < 0) {
		if (ret == -EINVAL)
			opt_try_help();	/* opt_parse()'s own refusals have it */
		return EXIT_USAGE;
	}
	/* The live view's lines and a status line redrawn in place would share the terminal. */
	status_line = !collect_quiet && !o.live_ms && isatty(STDERR_FILENO);
	/* Host events and processes that do not exist stop here, before anything is made. */
	if (o.host_events && hostrec_check(&o) < 0)
		return EXIT_USAGE;
	if (o.all && add_all(&o, gs, &nr) < 0)
		return EXIT_FAIL;
	/*
	 * Domains first: a wrong name or a domain without ports fails before
	 * anything is made; with --wait, one not running or without its ports yet
	 * is looked for again while the others record (start_guest()).
	 */
	for (i = 0; i < nr; i++) {
		gs[i]->link.wait = o.wait;
		if (!gs[i]->link.domain[0])
			continue;
		ret = libvirt_guest_resolve(&gs[i]->link, gs[i]->name, gs[i]->link.connect_uri);
		if (ret < 0 && ret != -EAGAIN)
			return EXIT_FAIL;
		gs[i]->wait.link_ready = ret == 0;
	}

	/* Private unless --mode shares them, and the user's under sudo (store/spool.c). */
	spool_perm_default(&perm);
	perm.file = o.file_mode;
	perm.dir = spool_perm_dir_mode(o.file_mode);
	spool_perm_set(&perm);
	fit = raise_fd_limit(gs, nr, &o);
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

	r.out_fd = out_fd;
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
	/* Room for a poll on every port of a dense host (completions beyond it wait, never lost). */
	e = engine_new(ring_entries(nr));
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
	if (o.live_ms && open_live(&r, gs, nr) < 0) {
		log_err("cannot start the live view: %m");
		abandon_output(out_fd, spool_fd, o.out_dir, created);
		return EXIT_FAIL;
	}
	if (o.host_events) {
		r.host = hostrec_start(&o, e, spool_fd, r.live);
		if (r.host)
			live_set_dir(r.live, 0, hostrec_spool(r.host));
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
		g->figures.budget.max = o.max_size;
		snprintf(dirname, sizeof(dirname), "guest-%s", g->name);
		ret = spool_guest_dir(spool_fd, dirname, &g->spool_fd);
		if (ret < 0) {
			session_fail(g, "cannot create .spool/%s: %s", dirname, strerror(-ret));
			continue;
		}
		snprintf(g->spool, sizeof(g->spool), "%s/.spool/%s", o.out_dir, dirname);
		if (r.live)
			live_set_dir(r.live, g->live_idx, g->spool_fd);
		if (i >= fit) {
			/* Named in the manifest (its state file), then its descriptor goes too. */
			session_fail(g, "not recorded: no file descriptor is left for it (the open-file "
				     "limit; see the warning above)");
			close(g->spool_fd);
			g->spool_fd = -1;
			continue;
		}
		if (o.wait)
			g->wait.until = o.wait_s ? engine_now_ns() + (uint64_t)(o.wait_s * NSEC_PER_SEC) :
				UINT64_MAX;
		engine_timer_init(&g->wait.timer, wait_tick, g);
		start_guest(g);
	}
	r.t0 = r.last_status = engine_now_ns();
	if (o.duration && !o.wait) {
		r.duration_armed = true;
		engine_timer_arm(e, &r.duration, (uint64_t)(o.duration * NSEC_PER_SEC), 0);
	}
	if (status_line)
		engine_timer_arm(e, &r.status, NSEC_PER_SEC, NSEC_PER_SEC);
	if (!nr)
		start_command(&r);
	check_end(&r);
	if (r.live && live_start(r.live) < 0) {
		log_warn("the live view cannot start: the recording goes on without it");
		live_end(r.live);
		r.live = NULL;
	}
	ret = engine_loop(e);
	if (ret < 0)
		log_err("the event loop failed: %s", strerror(-ret));
	/* Everything has arrived: the view shows the rest while the spool is still open. */
	live_end(r.live);
	r.live = NULL;

	collect_status_clear();
	if (r.child > 0) {
		kill(r.child, SIGTERM);
		waitpid(r.child, NULL, 0);
	}
	if (r.host)
		hostrec_save_stats(r.host);
	for (i = 0; i < nr; i++) {
		struct guest *g = gs[i];

		recorded += g->setup.recorded;
		refused += g->setup.refused;
		accepted += g->setup.accepted;
		migrated += g->mig.out || g->mig.seen.resumed;
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
	if (nr && !recorded && refused && !accepted) {
		/* No guest took the command line (said above): a usage error, nothing kept. */
		log_err("no guest takes the events, tracer or clock asked for: nothing is recorded");
		abandon_output(out_fd, spool_fd, o.out_dir, created);
		return EXIT_USAGE;
	}
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
	if (ret == EXIT_OK && status != EXIT_OK)
		ret = status;
	/* What was recorded and what to run next, from the manifest just written. */
	if (!collect_quiet && manifest_summary(out_fd, o.out_dir, ret, stderr) < 0)
		log_info("wrote %s (exit status %d)", o.out_dir, ret);
	close(out_fd);
	return ret;
}
