// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * `check`: can this host record a guest with an exact clock? One line per
 * thing a recording needs (probes.c), then the short recording that compares
 * the probes with KVM's offsets (trial.c), then "exact clock: yes/no,
 * because ...". --json gives the same as one document for a bug report
 * (doc/check.schema.json).
 *
 * The clock is exact when KVM gives every vCPU's offset (debugfs, readable),
 * every change of it is seen at its moment (kvm:kvm_write_tsc_offset in a
 * tracefs instance), the guest traces with x86-tsc, and the probes of a real
 * recording agree with the offsets. The first of these that fails is the
 * reason given. The host TSC's line only warns: the offsets are in its own
 * ticks whatever its rate (a nested host under TCG has no constant_tsc).
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "check.h"
#include "json.h"
#include "opts.h"

#define CHECK_DEFAULT_DURATION	1.0
#define CHECK_DEFAULT_TIMEOUT_MS	2000

static const char *const line_names[CK_NR] = {
	[CK_TRACEFS] = "tracefs", [CK_KVMDEV] = "kvm device", [CK_DEBUGFS] = "kvm debugfs",
	[CK_TSC] = "host tsc", [CK_EVENTS] = "kvm events", [CK_THREADS] = "vcpu threads",
	[CK_AGENT] = "agent", [CK_RECORD] = "recording",
};
/* The same, as JSON keys. */
static const char *const line_keys[CK_NR] = {
	[CK_TRACEFS] = "tracefs", [CK_KVMDEV] = "kvm_device", [CK_DEBUGFS] = "kvm_debugfs",
	[CK_TSC] = "host_tsc", [CK_EVENTS] = "kvm_events", [CK_THREADS] = "vcpu_threads",
	[CK_AGENT] = "agent", [CK_RECORD] = "recording",
};
static const char *const verdicts[] = {
	[CV_YES] = "yes", [CV_NO] = "no", [CV_WARN] = "warn", [CV_SKIPPED] = "skipped",
};

enum { OPT_QEMU_PID = 256, OPT_CHARDEV, OPT_JSON, OPT_TIMEOUT, OPT_DEBUGFS, OPT_TRACEFS,
       OPT_SYSFS, OPT_PROCFS };

/* check's command line: the one declaration its parsing and --help read (opts.h). */
static const struct opt_def check_opts[] = {
	{ "domain", 'D', KIND_STRING, "NAME", "a libvirt domain (its QEMU and ports, as `list` finds them)" },
	{ "connect", 'C', KIND_STRING, "URI", "libvirt URI for --domain" },
	{ "qemu-pid", OPT_QEMU_PID, KIND_PID, "PID", "the guest's QEMU process (alone: its ports as "
	  "`list` finds them)" },
	{ "chardev-dir", OPT_CHARDEV, KIND_PATH, "DIR", "the directory of its ports (as record takes it)",
	  .what = "the directory of the guest's ports, not empty" },
	{ "json", OPT_JSON, KIND_FLAG, NULL, "one JSON document (doc/check.schema.json), for a bug report" },
	{ "duration", 'd', KIND_SECONDS, "SEC", "the short recording's length (default 1; 0 leaves it out)",
	  .min = 0, .max = 60 },
	{ "timeout", OPT_TIMEOUT, KIND_SECONDS, "SEC", "wait this long for the agent's HELLO answer "
	  "(default 2)", .min = 1, .max = 60 },
	{ "debugfs", OPT_DEBUGFS, KIND_PATH, "DIR", "where debugfs is (default /sys/kernel/debug)" },
	{ "tracefs", OPT_TRACEFS, KIND_PATH, "DIR", "where tracefs is (default /sys/kernel/tracing)" },
	{ "sysfs", OPT_SYSFS, KIND_PATH, "DIR", "where sysfs is (default /sys): the clocksource, the KVM module" },
	{ "procfs", OPT_PROCFS, KIND_PATH, "DIR", "where procfs is (default /proc): cpuinfo, QEMU's threads" },
	{ NULL },
};

static const struct opt_cmd check_cmd = {
	.name = "check",
	.usage = "(--domain NAME [--connect URI] | --qemu-pid PID |\n"
"                                   --chardev-dir DIR [--qemu-pid PID]) [--json]\n"
"                                  [--duration SEC] [--timeout SEC] [--debugfs DIR]\n"
"                                  [--tracefs DIR] [--sysfs DIR] [--procfs DIR]",
	.about =
"Check, in a few seconds, what recording this guest needs on this host, one\n"
"verdict (yes, no, warn, skipped) per line: tracefs, the KVM device, KVM's debugfs\n"
"offsets and scaling, the host TSC, the kvm events, QEMU's vCPU threads, the\n"
"agent's answer, and a short recording (record --sync kvm --sync-check into a\n"
"private temporary directory) whose probes are checked against KVM's offsets.\n"
"The last line says \"exact clock: yes\" or \"no\", and because of what.\n",
	.tail =
"Exit status: 0 the clock would be exact; 4 it would not (the lines say why);\n"
"1 an error; 2 usage error.\n",
	.defs = check_opts,
};

/* The ports of a chardev directory: agent-ctl-path and trace-path-cpuN. */
static void ports_of_dir(struct check *c, const char *dir)
{
	struct list_guest *g = &c->guest;
	char path[4200], name[64];
	struct stat st;
	unsigned int i;

	snprintf(g->ctl_path, sizeof(g->ctl_path), "%s/agent-ctl-path", dir);
	snprintf(path, sizeof(path), "%s.out", g->ctl_path);
	g->ctl_port = stat(path, &st) == 0 || stat(g->ctl_path, &st) == 0;
	for (i = 0; i < COLLECT_MAX_CPUS; i++) {
		snprintf(name, sizeof(name), "trace-path-cpu%u", i);
		snprintf(path, sizeof(path), "%s/%s.out", dir, name);
		if (stat(path, &st) < 0) {
			snprintf(path, sizeof(path), "%s/%s", dir, name);
			if (stat(path, &st) < 0)
				break;
		}
		g->data_ports++;
	}
	g->running = true;
	snprintf(g->name, sizeof(g->name), "check");
	snprintf(c->chardev_dir, sizeof(c->chardev_dir), "%s", dir);
	c->have_ports = g->ctl_port && g->data_ports;
}

/* --domain, or --qemu-pid alone: the guest as `list` finds it. */
static int find_guest(struct check *c)
{
	struct list_found f;
	unsigned int i;
	int ret = -ENOENT;

	if (list_find(c->uri, !c->domain, c->qemu_pid != 0, &f) < 0)
		return -ENOMEM;
	for (i = 0; i < f.nr; i++) {
		const struct list_guest *g = &f.g[i];

		if (c->domain ? !(g->libvirt && !strcmp(g->domain, c->domain)) :
				g->qemu_pid != c->qemu_pid)
			continue;
		c->guest = *g;
		c->guest.agent = LIST_AGENT_UNKNOWN;
		c->qemu_pid = g->qemu_pid;
		snprintf(c->chardev_dir, sizeof(c->chardev_dir), "%s", g->chardev_dir);
		c->have_ports = list_ports_ready(g) && !g->listen;
		ret = 0;
		break;
	}
	if (ret < 0 && c->domain)
		snprintf(c->missing, sizeof(c->missing), "libvirt has no domain %s with trace ports "
			 "(`virtio-trace-collect list` shows the guests)%s%s", c->domain,
			 f.libvirt_note[0] ? ": " : "", f.libvirt_note);
	else if (ret < 0)
		log_warn("QEMU pid %d has no trace ports `virtio-trace-collect list` finds: the agent "
			 "is not asked", (int)c->qemu_pid);
	list_free(&f);
	return ret;
}

/* The first thing that keeps the clock from being exact, in @c->because. */
static void decide(struct check *c)
{
	const struct check_line *l = c->lines;
	const char *kvm_note = c->kvm_usable ? "" : "; and this host's KVM: ";

#define NO(...)	snprintf(c->because, sizeof(c->because), __VA_ARGS__)
	c->exact = false;
	if (c->tcg)
		NO("%s%s%s", l[CK_THREADS].detail, kvm_note, c->kvm_usable ? "" : l[CK_KVMDEV].detail);
	else if (!c->qemu_pid)
		NO("%s", l[CK_DEBUGFS].detail);
	else if (l[CK_DEBUGFS].v != CV_YES && l[CK_DEBUGFS].v != CV_WARN)
		NO("KVM's offsets cannot be read: %s%s%s", l[CK_DEBUGFS].detail, kvm_note,
		   c->kvm_usable ? "" : l[CK_KVMDEV].detail);
	else if (l[CK_TRACEFS].v != CV_YES)
		NO("KVM's offset changes cannot be followed at their moments (%s): record would "
		   "re-read debugfs every second, which bounds the mapping and no more",
		   l[CK_TRACEFS].detail);
	else if (!c->ev_write_tsc)
		NO("%s", l[CK_EVENTS].detail);
	else if (l[CK_AGENT].v != CV_YES)
		NO("the agent did not answer (%s): the guest's trace clock cannot be checked",
		   l[CK_AGENT].detail);
	else if (l[CK_RECORD].v != CV_YES && l[CK_RECORD].v != CV_WARN)
		NO("the short recording %s: %s", l[CK_RECORD].v == CV_SKIPPED ? "was left out" :
		   "disagrees", l[CK_RECORD].detail);
	else {
		c->exact = true;
		NO("KVM gives each vCPU's TSC offset (%s), kvm:kvm_write_tsc_offset each change at "
		   "its moment, the guest traces with x86-tsc, and %llu probe replies of a %g s "
		   "recording agree with the offsets", c->vm_dir,
		   (unsigned long long)c->trial.replies, c->duration);
	}
#undef NO
}

static void print_text(const struct check *c)
{
	unsigned int i;

	for (i = 0; i < CK_NR; i++)
		printf("%s: %s: %s\n", line_names[i], verdicts[c->lines[i].v], c->lines[i].detail);
	printf("exact clock: %s, because %s\n", c->exact ? "yes" : "no", c->because);
}

static void json_facts(struct jw *w, const struct check *c)
{
	unsigned int i;

	jw_obj(w, "kvm");
	jw_str(w, "module", c->kvm_module[0] ? c->kvm_module : NULL);
	jw_bool(w, "device_usable", c->kvm_usable);
	jw_str(w, "vm_dir", c->vm_dir[0] ? c->vm_dir : NULL);
	jw_arr(w, "vcpus");
	for (i = 0; i < c->nr_vcpus && c->vcpus[i].ratio; i++) {
		jw_inline(w, NULL, '{');
		jw_u64(w, "vcpu", c->vcpus[i].id);
		jw_i64(w, "tsc_offset", c->vcpus[i].offset);
		jw_u64(w, "ratio", c->vcpus[i].ratio);
		jw_u64(w, "frac_bits", c->vcpus[i].frac_bits);
		jw_bool(w, "scaling_files", c->vcpus[i].has_scaling);
		jw_end(w, '}');
	}
	jw_end(w, ']');
	jw_end(w, '}');
	jw_obj(w, "host_tsc");
	jw_bool(w, "constant_tsc", c->constant_tsc);
	jw_bool(w, "nonstop_tsc", c->nonstop_tsc);
	jw_str(w, "clocksource", c->clocksource);
	jw_bool(w, "tsc_available", c->tsc_available);
	jw_end(w, '}');
	jw_obj(w, "kvm_events");
	jw_bool(w, "kvm_exit", c->ev_exit);
	jw_bool(w, "kvm_entry", c->ev_entry);
	jw_bool(w, "kvm_write_tsc_offset", c->ev_write_tsc);
	jw_end(w, '}');
	jw_arr(w, "vcpu_threads");
	for (i = 0; i < c->nr_threads; i++) {
		jw_inline(w, NULL, '{');
		jw_u64(w, "cpu", c->threads[i].cpu);
		jw_u64(w, "tid", (uint64_t)c->threads[i].tid);
		jw_str(w, "accel", c->threads[i].accel);
		jw_end(w, '}');
	}
	jw_end(w, ']');
	jw_obj(w, "agent");
	jw_str(w, "software", c->guest.software[0] ? c->guest.software : NULL);
	jw_str(w, "kernel", c->guest.kernel[0] ? c->guest.kernel : NULL);
	jw_u64(w, "cpus", c->guest.agent_cpus);
	jw_end(w, '}');
	if (!c->trial.ran) {
		jw_null(w, "recording");
		return;
	}
	jw_obj(w, "recording");
	jw_fixed(w, "duration_s", c->duration, 3);
	if (c->trial.rc >= 0)
		jw_u64(w, "exit_status", (uint64_t)c->trial.rc);
	else
		jw_null(w, "exit_status");
	jw_str(w, "clock", c->trial.clock);
	jw_str(w, "sync_method", c->trial.method);
	jw_str(w, "kvm_changes_from", c->trial.changes_from[0] ? c->trial.changes_from : NULL);
	jw_u64(w, "probe_bursts", c->trial.bursts);
	jw_u64(w, "probe_replies", c->trial.replies);
	jw_u64(w, "replies_outside", c->trial.outside);
	jw_u64(w, "vcpus_checked", c->trial.cpus);
	jw_u64(w, "narrowest_interval_ticks", c->trial.min_width);
	jw_u64(w, "changes_not_seen", c->trial.not_seen);
	jw_end(w, '}');
}

static void print_json(const struct check *c)
{
	struct utsname u;
	unsigned int i;
	struct jw w;

	jw_begin_pretty(&w, stdout);
	jw_obj(&w, NULL);
	jw_u64(&w, "schema_version", 1);
	jw_str(&w, "collector", "virtio-trace-collect " PACKAGE_VERSION);
	jw_str(&w, "host_kernel", uname(&u) == 0 ? u.release : NULL);
	jw_obj(&w, "guest");
	jw_str(&w, "domain", c->domain);
	if (c->qemu_pid)
		jw_u64(&w, "qemu_pid", (uint64_t)c->qemu_pid);
	else
		jw_null(&w, "qemu_pid");
	jw_str(&w, "chardev_dir", c->chardev_dir[0] ? c->chardev_dir : NULL);
	jw_str(&w, "control_port", c->have_ports ? c->guest.ctl_path : NULL);
	jw_end(&w, '}');
	jw_obj(&w, "checks");
	for (i = 0; i < CK_NR; i++) {
		jw_inline(&w, line_keys[i], '{');
		jw_str(&w, "verdict", verdicts[c->lines[i].v]);
		jw_str(&w, "detail", c->lines[i].detail);
		jw_end(&w, '}');
	}
	jw_end(&w, '}');
	json_facts(&w, c);
	jw_bool(&w, "exact_clock", c->exact);
	jw_str(&w, "because", c->because);
	jw_end(&w, '}');
}

static int parse(struct check *c, int argc, char **argv)
{
	struct opt_val v;
	int opt;

	optind = 1;
	while ((opt = opt_parse(&check_cmd, argc, argv, &v)) != -1) {
		switch (opt) {
		case 'D': c->domain = v.s; break;
		case 'C': c->uri = v.s; break;
		case OPT_CHARDEV: c->chardev_dir_opt = v.s; break;
		case OPT_JSON: c->json = true; break;
		case OPT_DEBUGFS: c->debugfs = v.s; break;
		case OPT_TRACEFS: c->tracefs = v.s; break;
		case OPT_SYSFS: c->sysfs = v.s; break;
		case OPT_PROCFS: c->procfs = v.s; break;
		case OPT_QEMU_PID: c->qemu_pid = v.i; break;
		case 'd': c->duration = v.d; break;
		case OPT_TIMEOUT: c->timeout_ms = (unsigned int)(v.d * 1000 + 0.5); break;
		case OPT_HELP: return 1;
		default: return -2;	/* opt_parse() said why */
		}
	}
	if (optind < argc) {
		collect_usage("unexpected argument '%s'", argv[optind]);
		return -EINVAL;
	}
	if (!!c->domain + !!c->chardev_dir_opt + (c->qemu_pid && !c->chardev_dir_opt) != 1) {
		collect_usage("name one guest: --domain NAME, --chardev-dir DIR (with --qemu-pid PID "
			      "for KVM's offsets), or --qemu-pid PID");
		return -EINVAL;
	}
	if (c->uri && !c->domain) {
		collect_usage("--connect goes with --domain");
		return -EINVAL;
	}
	return 0;
}

/**
 * check_main() - the check subcommand
 * @argc: argument count
 * @argv: arguments
 *
 * Return: EXIT_OK when the clock would be exact, EXIT_NOT_EXACT when not,
 * EXIT_USAGE or EXIT_FAIL.
 */
int check_main(int argc, char **argv)
{
	static struct check c;
	int ret;

	memset(&c, 0, sizeof(c));
	c.duration = CHECK_DEFAULT_DURATION;
	c.timeout_ms = CHECK_DEFAULT_TIMEOUT_MS;
	c.debugfs = "/sys/kernel/debug";
	c.tracefs = "/sys/kernel/tracing";
	c.sysfs = "/sys";
	c.procfs = "/proc";
	ret = parse(&c, argc, argv);
	if (ret == -EINVAL)
		opt_try_help();
	if (ret)
		return ret > 0 ? EXIT_OK : EXIT_USAGE;
	if (c.chardev_dir_opt) {
		ports_of_dir(&c, c.chardev_dir_opt);
	} else {
		ret = find_guest(&c);
		if (ret == -ENOMEM)
			return EXIT_FAIL;
	}
	c.guest.qemu_pid = c.qemu_pid;		/* its own ports: not another holder */
	check_tracefs(&c);
	check_kvm_device(&c);
	check_debugfs(&c);
	check_host_tsc(&c);
	check_kvm_events(&c);
	check_threads(&c);
	check_agent(&c);
	check_trial(&c);
	decide(&c);
	if (c.json)
		print_json(&c);
	else
		print_text(&c);
	if (fflush(stdout) == EOF || ferror(stdout)) {
		log_err("write error on standard output");
		return EXIT_FAIL;
	}
	return c.exact ? EXIT_OK : EXIT_NOT_EXACT;
}
