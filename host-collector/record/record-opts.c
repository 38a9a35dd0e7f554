// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * record's command line: its one declaration (the table --help and opts.c's
 * parser read), and the options into struct record_opts and the guests, each
 * kind of option a step of its own; then the checks of what goes together.
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hold.h"
#include "hostrec.h"
#include "live.h"
#include "record.h"
#include "record-int.h"
#include "session.h"
#include "opts.h"
#include "text.h"
#include "trigger-guest.h"
#include "vt_pages.h"

enum { OPT_CHARDEV = 256, OPT_LISTEN, OPT_CTL, OPT_CPU, OPT_NAME, OPT_QEMU_PID, OPT_VERBOSE,
       OPT_TOP, OPT_BUFSZ, OPT_BUDGET, OPT_SUBBUF, OPT_LASTBOOT, OPT_CLOCK, OPT_HOST, OPT_MAXSZ, OPT_FV,
       OPT_NOCOMP, OPT_ZEND, OPT_KCACHE, OPT_NOKCACHE, OPT_KEEP, OPT_FORCE, OPT_FSYNC, OPT_SYNC,
       OPT_TSCOFF, OPT_PROBES, OPT_SINTV, OPT_ALIVE, OPT_DEBUGFS, OPT_STOPTO, OPT_QMP, OPT_DOMAIN,
       OPT_CONNECT, OPT_KVM_EXITS, OPT_LISTEN_GROUP, OPT_LISTEN_UID, OPT_MODE, OPT_WAIT, OPT_ALL,
       OPT_ANY_USER, OPT_LIVE, OPT_LIVE_STAT, OPT_INCOMING, OPT_NO_KVM_EVENTS, OPT_SYNC_CHECK,
       OPT_HOLD, OPT_TRIG_GUEST, OPT_TRIG_FD, OPT_NO_LIBVIRT };

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
"root's); --no-libvirt leaves libvirt's domains out\n"
"(libvirt not asked)", .left = "  --all[=NAME,...] [--connect URI] [--any-user] [--no-libvirt]",
	  .optional = true },
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
	{ "buffer-budget", OPT_BUDGET, KIND_UINT, "KB",
"the guest's ring buffers, every CPU together, may grow to\n"
"KB while its port drains slower than it fills (default:\n"
"the agent's, 0: fixed; each resize pauses the guest's\n"
"recording a moment, events then lost uncounted)",
	  .min = 0, .max = UINT32_MAX, .what = "KiB" },
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
	{ "trigger-guest-filter", OPT_TRIG_GUEST, KIND_STRING, "'SYS:EV[ if FILTER]'",
"have each guest's agent watch this event with this\n"
"kernel filter and report a match (at most one a\n"
"second; an agent without WATCH: none, with a warning)" },
	{ "trigger-fd", OPT_TRIG_FD, KIND_STRING, "FD",
"write a line per guest trigger taken to FD (the\n"
"daemon's pipe): trigger-guest NAME SYS:EV TIMESTAMP,\n"
"and panic NAME ACTION for QMP's first GUEST_PANICKED" },
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
	{ "alive-interval", OPT_ALIVE, KIND_SECONDS, "S",
"ask the agent for its statistics every S seconds while\n"
"recording (0: never, the default): an agent that\n"
"restarted, or whose guest rebooted, answers \"send\n"
"HELLO first\" and the guest's recording ends there;\n"
"a cheap check for --hold, whose session is silent", .min = 0 },
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
	{ "no-libvirt", OPT_NO_LIBVIRT, KIND_FLAG, NULL, NULL, .unlisted = true },
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

/* A new guest in @gs, its descriptors closed; NULL when there are too many or no memory. */
struct guest *record_new_guest(struct guest **gs, unsigned int *nr)
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

/* What parse_record()'s steps share: the options, the guests, and the guest the line is at. */
struct parse {
	struct record_opts *o;
	struct guest **gs;
	unsigned int *nr;
	struct guest *g;		/* the guest a GUEST's option belongs to, or NULL */
	bool kvm_exits;
};

/* A step's answer for an option that is not its own: the next step is asked. */
#define NOT_MINE	1

/*
 * --chardev-dir, --ctl, --domain begin a guest; --all, --any-user, --no-libvirt and --connect go
 * with them.
 */
static int parse_new_guest(struct parse *p, int c, const struct opt_val *val)
{
	struct record_opts *o = p->o;
	struct guest *g;

	(void)val;
	switch (c) {
	case OPT_CHARDEV:
	case OPT_CTL:
	case OPT_DOMAIN:
		g = p->g = record_new_guest(p->gs, p->nr);
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
		return 0;
	case OPT_ALL:
		o->all = true;
		o->all_names = optarg;
		p->g = NULL;
		return 0;
	case OPT_ANY_USER:
		o->any_user = true;
		return 0;
	case OPT_NO_LIBVIRT:
		o->no_libvirt = true;
		return 0;
	case OPT_CONNECT:
		if (o->all && !p->g) {
			o->all_uri = optarg;
			return 0;
		}
		if (!p->g || !p->g->link.domain[0]) {
			collect_usage("--connect must follow --domain or --all");
			return -EINVAL;
		}
		if (strlen(optarg) >= sizeof(p->g->link.connect_uri)) {
			collect_usage("--connect URI is too long");
			return -EINVAL;
		}
		snprintf(p->g->link.connect_uri, sizeof(p->g->link.connect_uri), "%s", optarg);
		return 0;
	}
	return NOT_MINE;
}

/* --listen, --incoming, --cpu, --name, --qemu-pid and --qmp: the guest's before them. */
static int parse_guest_opt(struct parse *p, int c, const struct opt_val *val)
{
	struct guest *g = p->g;
	int pid;

	(void)val;
	if (c != OPT_LISTEN && c != OPT_INCOMING && c != OPT_CPU && c != OPT_NAME &&
	    c != OPT_QEMU_PID && c != OPT_QMP)
		return NOT_MINE;
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
		if (opt_pid("--qemu-pid", optarg, &pid) < 0)
			return -EINVAL;
		g->link.qemu_pid = pid;
	}
	return 0;
}

/* --listen-group and --listen-uid: a name, or a number that names none. */
static int parse_listen_owner(struct parse *p, int c, const struct opt_val *val)
{
	struct record_opts *o = p->o;
	struct passwd *pw;
	struct group *gr;
	unsigned long v;
	char *end;

	(void)val;
	if (c != OPT_LISTEN_GROUP && c != OPT_LISTEN_UID)
		return NOT_MINE;
	v = strtoul(optarg, &end, 10);
	if (c == OPT_LISTEN_GROUP) {
		gr = getgrnam(optarg);
		if (!gr && (*end || end == optarg || v >= (gid_t)-1)) {
			collect_usage("--listen-group '%s': no such "
				"group", optarg);
			return -EINVAL;
		}
		o->listen_gid = gr ? gr->gr_gid : (gid_t)v;
		o->have_listen_gid = true;
		return 0;
	}
	pw = getpwnam(optarg);
	if (!pw && (*end || end == optarg || v >= (uid_t)-1)) {
		collect_usage("--listen-uid '%s': no such "
			"user", optarg);
		return -EINVAL;
	}
	o->listen_uid = pw ? pw->pw_uid : (uid_t)v;
	o->have_listen_uid = true;
	return 0;
}

/* What is recorded: the guest's events, tracer, buffers and clock, the host's events. */
static int parse_events(struct parse *p, int c, const struct opt_val *val)
{
	struct record_opts *o = p->o;
	char *end;
	long v;

	switch (c) {
	case 'e':
		if (o->nr_events >= COLLECT_MAX_EVENTS) {
			collect_usage("--event '%s': at most %d events", optarg, COLLECT_MAX_EVENTS);
			return -EINVAL;
		}
		o->events[o->nr_events++] = optarg;
		return 0;
	case 'f':
		if (!o->nr_events) {
			collect_usage("-f applies to the -e before it");
			return -EINVAL;
		}
		o->filters[o->nr_events - 1] = optarg;
		return 0;
	case 'p': o->tracer = optarg; return 0;
	case OPT_TOP: o->top_level = true; return 0;
	case OPT_BUFSZ: o->buffer_kb = (unsigned int)val->u; return 0;
	case OPT_BUDGET:
		o->budget_kb = (unsigned int)val->u;
		o->have_budget = true;
		return 0;
	case OPT_LASTBOOT:
		if (!collect_name_ok(optarg) || strchr(optarg, '.')) {
			collect_usage("--last-boot '%s': an instance name, of [A-Za-z0-9_-]", optarg);
			return -EINVAL;
		}
		o->last_boot = optarg;
		return 0;
	case OPT_SUBBUF: o->subbuf_kb = (unsigned int)val->u; return 0;
	case OPT_CLOCK: o->clock = optarg; return 0;
	case OPT_HOST: o->host_events = optarg; return 0;
	case OPT_KVM_EXITS: p->kvm_exits = true; return 0;
	case 'P':
		v = strtol(optarg, &end, 10);
		if (*end || v <= 0 || v > INT32_MAX || o->nr_host_pids >= COLLECT_MAX_HOST_PIDS) {
			collect_usage("--host-pid '%s': a process id (at most %d of them)", optarg,
				      COLLECT_MAX_HOST_PIDS);
			return -EINVAL;
		}
		o->host_pids[o->nr_host_pids++] = (pid_t)v;
		return 0;
	}
	return NOT_MINE;
}

/* Where it goes and how: the output, its files, when it ends. */
static int parse_output(struct parse *p, int c, const struct opt_val *val)
{
	struct record_opts *o = p->o;
	unsigned long v;
	char *end;

	switch (c) {
	case 'o': o->out_dir = optarg; return 0;
	case 'd': o->duration = val->d; return 0;
	case OPT_WAIT:
		o->wait = true;
		o->wait_s = 0;
		if (!optarg)
			return 0;
		o->wait_s = strtod(optarg, &end);
		if (end == optarg || *end || !(o->wait_s > 0) || o->wait_s > 31 * 86400) {
			collect_usage("--wait '%s': seconds, more than 0 and at most %d (no value: "
				      "no limit)", optarg, 31 * 86400);
			return -EINVAL;
		}
		return 0;
	case OPT_MAXSZ: o->max_size = val->u64; return 0;
	case OPT_FV: o->file_version = 6 + val->i; return 0;
	case OPT_NOCOMP: o->compress = false; return 0;
	case OPT_ZEND: o->compress_at_end = true; return 0;
	case OPT_KCACHE: o->kcache_dir = optarg; o->no_kcache = false; return 0;
	case OPT_NOKCACHE: o->no_kcache = true; return 0;
	case OPT_KEEP: o->keep_spool = true; return 0;
	case OPT_FORCE: o->force = true; return 0;
	case OPT_MODE:
		v = strtoul(optarg, &end, 8);
		/* Read and write bits; the collector reads its own files back. */
		if (*end || end == optarg || optarg[0] == '-' || v & ~0666ul ||
		    (v & 0600) != 0600) {
			collect_usage("--mode '%s': the files' mode in octal, "
				"read and write bits only, the owner's included (e.g. 0640)", optarg);
			return -EINVAL;
		}
		o->file_mode = (mode_t)v;
		return 0;
	case OPT_FSYNC: o->fsync = true; return 0;
	case OPT_TRIG_GUEST: return trig_guest_parse(o, optarg);
	case OPT_TRIG_FD: return trig_guest_fd(o, optarg);
	}
	return NOT_MINE;
}

/* The clocks, the live view and the messages. */
static int parse_sync_live(struct parse *p, int c, const struct opt_val *val)
{
	struct record_opts *o = p->o;
	char *end;

	switch (c) {
	case OPT_SYNC: o->sync = val->s; return 0;
	case OPT_TSCOFF:
		o->tsc_offset = val->i64;
		o->have_tsc_offset = true;
		return 0;
	case OPT_PROBES: o->sync_probes = (unsigned int)val->u; return 0;
	case OPT_SINTV: o->sync_interval = val->d; return 0;
	case OPT_ALIVE: o->alive_interval = val->d; return 0;
	case OPT_DEBUGFS: o->debugfs = optarg; return 0;
	case OPT_NO_KVM_EVENTS: o->no_kvm_events = true; return 0;
	case OPT_SYNC_CHECK: o->sync_check = true; return 0;
	case OPT_STOPTO: o->stop_timeout = val->d; return 0;
	case OPT_LIVE:
		o->live_ms = optarg ? strtoul(optarg, &end, 10) : LIVE_WINDOW_MS;
		if (optarg && (*end || !o->live_ms || o->live_ms > LIVE_WINDOW_MAX_MS)) {
			collect_usage("--live '%s': the window in milliseconds, a whole number from "
				      "1 to %u (no value: %u)", optarg, LIVE_WINDOW_MAX_MS,
				      LIVE_WINDOW_MS);
			return -EINVAL;
		}
		o->live_lines = true;
		return 0;
	case OPT_LIVE_STAT: o->live_stat = true; return 0;
	case OPT_HOLD: o->hold = true; return 0;
	case 'q': collect_quiet = 1; return 0;
	case OPT_VERBOSE: collect_verbose = 1; return 0;
	case OPT_HELP: exit(EXIT_OK);
	}
	return NOT_MINE;
}

/* Each option is one step's, in the order of --help's groups. */
static int (*const parse_steps[])(struct parse *p, int c, const struct opt_val *val) = {
	parse_new_guest, parse_guest_opt, parse_listen_owner, parse_events, parse_output,
	parse_sync_live,
};

/*
 * --kvm-exits: what `report --exits` and `--vcpus` read, added to
 * --host-events; the sched events filtered to the vCPU threads (hostrec.c),
 * unless --host-events asks for sched events of its own.
 */
static int add_kvm_exits(struct record_opts *o)
{
	static char list[4096];

	o->kvm_sched = !hostrec_lists_sched(o->host_events);
	if ((size_t)snprintf(list, sizeof(list), "kvm:kvm_exit,kvm:kvm_entry,"
			     "kvm:kvm_userspace_exit,kvm:kvm_vcpu_wakeup%s%s%s",
			     o->kvm_sched ? ",sched:sched_switch,sched:sched_wakeup" : "",
			     o->host_events ? "," : "",
			     o->host_events ? o->host_events : "") >= sizeof(list))
		return -EINVAL;
	o->host_events = list;
	return 0;
}

/* The options that need, or exclude, others. */
static int check_together(struct record_opts *o, struct guest **gs, unsigned int nr)
{
	unsigned int i;

	if (o->live_stat && !o->host_events) {
		collect_usage("--live-stat reads the host's events of the vCPU threads: give "
			      "--kvm-exits (or --host-events with sched_switch and sched_wakeup)");
		return -EINVAL;
	}
	if (o->live_stat && !o->live_ms)
		o->live_ms = LIVE_WINDOW_MS;
	for (i = 0; i < nr && !gs[i]->mig.incoming; i++)
		;
	if (hold_usage(o->hold, o->live_ms, i < nr) < 0)
		return -EINVAL;
	if (o->all && nr) {
		collect_usage("--all records every guest `list` finds: give no "
			"other guest with it");
		return -EINVAL;
	}
	if (o->any_user && !o->all) {
		collect_usage("--any-user says whose QEMUs --all takes: give it with --all");
		return -EINVAL;
	}
	if (o->no_libvirt && (!o->all || o->all_uri)) {
		collect_usage("--no-libvirt leaves libvirt's domains out of --all: give it with --all "
			"and without --connect");
		return -EINVAL;
	}
	if (!nr && !o->host_events && !o->all) {
		collect_usage("no guest given (--chardev-dir DIR, --ctl PATH --cpu PATH, "
			"or --domain NAME)");
		return -EINVAL;
	}
	if (o->have_listen_gid || o->have_listen_uid) {
		for (i = 0; i < nr && !gs[i]->link.listen; i++)
			;
		if (i == nr) {
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
	return 0;
}

/* Guest @i's name: --name, else its domain's or its directory's; unique, and not the host's. */
static int name_guest(struct guest **gs, unsigned int i)
{
	struct guest *x = gs[i];
	const char *base;

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
		base = strrchr(x->link.chardev_dir, '/');
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
	return 0;
}

/**
 * record_parse() - record's command line into its options and guests
 * @argc: arguments from "record" on
 * @argv: their values
 * @o: the options, their defaults set
 * @gs: the guests' table, filled from gs[*nr] on
 * @nr: how many guests it holds
 *
 * Return: 0; -EINVAL after a message (usage error, opt_try_help() still to
 * say); another -errno when opt_parse() said why and where to look.
 */
int record_parse(int argc, char **argv, struct record_opts *o, struct guest **gs,
		 unsigned int *nr)
{
	struct parse p = { .o = o, .gs = gs, .nr = nr };
	struct opt_val val;
	unsigned int i;
	int c, ret;

	optind = 1;
	while ((c = opt_parse(&record_cmd, argc, argv, &val)) != -1) {
		ret = NOT_MINE;
		for (i = 0; ret == NOT_MINE && i < sizeof(parse_steps) / sizeof(parse_steps[0]); i++)
			ret = parse_steps[i](&p, c, &val);
		if (ret == NOT_MINE)
			return -2;	/* opt_parse() said why, and where to look */
		if (ret < 0)
			return ret;
	}
	if (optind < argc) {
		if (strcmp(argv[optind - 1], "--") != 0) {
			collect_usage("unexpected argument '%s'", argv[optind]);
			return -EINVAL;
		}
		o->command = argv + optind;
	}
	if (p.kvm_exits && add_kvm_exits(o) < 0)
		return -EINVAL;
	ret = check_together(o, gs, *nr);
	for (i = 0; !ret && i < *nr; i++)
		ret = name_guest(gs, i);
	return ret;
}
