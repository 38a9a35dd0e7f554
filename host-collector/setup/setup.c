// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * `setup`: the QEMU arguments or libvirt XML that give a guest the ports
 * trace-agent(8) expects, so nobody has to wire them by hand (the kernel's old
 * virtio-trace README wired a data port to the control chardev).
 *
 * Ports: trace-path-cpu0..N-1 (one per vCPU, guest -> host pages) then
 * agent-ctl-path (the control port). virtio-serial port 0 is reserved for
 * consoles and more than 30 ports per controller were seen to lose ports in
 * the guest, so every controller gets max_ports=31 and carries ports 1..30.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "collect.h"
#include "opts.h"
#include "hotplug.h"
#include "kvmcheck.h"
#include "libvirt.h"
#include "setup.h"
#include "text.h"

#define SETUP_MAX_VCPUS		1024
#define SETUP_PORTS_PER_CTL	30
#define SETUP_DEFAULT_ROOT	"/run/virtio-trace"
#define SETUP_QMP_SOCKET	"qmp.sock"
/*
 * libvirt gives a channel without an address (qemu-guest-agent's) controller 0:
 * printed XML starts at 1 unless told otherwise; --apply reads the domain instead.
 */
#define SETUP_DEFAULT_CTL_INDEX	1
#define SETUP_MAX_CTL_INDEX	1000

struct setup_opts {
	unsigned int vcpus;
	bool unix_backend;
	bool qemu_connects;	/* unix-connect: QEMU connects, record --listen listens */
	bool libvirt;
	bool create;
	const char *name;
	char dir[PATH_MAX];
	/* setup --domain */
	const char *domain;
	const char *uri;
	bool apply;
	bool remove;
	bool live;		/* --live: the running domain too */
	/* setup --qmp SOCKET --hotplug|--remove */
	const char *qmp;
	bool hotplug;
	bool have_name;
	bool have_backend;
	bool have_dir;
	bool have_format;
	bool have_accel;	/* --accel or --kvm-device: for printed QEMU arguments only */
	unsigned int ctl_index;	/* --format libvirt: the first controller's index */
	bool have_ctl_index;
	/* the accelerator line: auto (check /dev/kvm), kvm, tcg, none */
	const char *accel;
	const char *kvm_device;
	/* setup --last-boot */
	const char *last_boot;		/* SIZE of the reserved memory */
	const char *last_boot_events;	/* SYS:EV,... enabled in the instance at boot */
};

#define SETUP_LASTBOOT_INSTANCE	"vtlast"

#define SETUP_STR_(x)	#x
#define SETUP_STR(x)	SETUP_STR_(x)

/* No -d/-f: they are record's --duration and --filter (short options mean one thing). */
enum { OPT_DIR = 256, OPT_FORMAT, OPT_CTL_INDEX, OPT_LIVE, OPT_QMP, OPT_HOTPLUG, OPT_ACCEL,
       OPT_KVM_DEVICE, OPT_LASTBOOT, OPT_LASTBOOT_EVENTS };

static const char *const accels[] = { "auto", "kvm", "tcg", "none", NULL };
static const char *const formats[] = { "qemu", "libvirt", NULL };

/*
 * setup's command line: the one declaration its parsing and --help read
 * (opts.h). Its four uses each have a usage paragraph (a row's group); an
 * option two of them take has a row in each, for its help there.
 */
static const struct opt_def setup_opts_def[] = {
	{ "vcpus", 'n', KIND_UINT, "N", "the guest's vCPU count, 1.." SETUP_STR(SETUP_MAX_VCPUS)
	  " (required)", .min = 1, .max = SETUP_MAX_VCPUS, .what = "the guest's vCPUs" },
	{ "backend", 'b', KIND_STRING, "KIND",
"pipe (default): FIFOs DIR/PORT.in (host->guest) and\n"
"DIR/PORT.out (guest->host);\n"
"unix: sockets DIR/PORT that QEMU listens on;\n"
"unix-connect: sockets DIR/PORT that QEMU connects\n"
"to (again every second while none listens): use\n"
"`record --listen`" },
	{ "dir", OPT_DIR, KIND_STRING, "DIR", "where the chardevs live (default " SETUP_DEFAULT_ROOT "/NAME)" },
	{ "format", OPT_FORMAT, KIND_CHOICE, "FMT",
"qemu (default): QEMU command-line arguments, one\n"
"option and its value per line, quoted for sh;\n"
"libvirt: <controller> and <channel> elements for\n"
"the domain's <devices>", .choices = formats },
	{ "controller-index", OPT_CTL_INDEX, KIND_UINT, "I",
"libvirt: number the virtio-serial controllers from\n"
"I (default 1: index 0 is the one libvirt gives\n"
"qemu-guest-agent's channel); pick one that\n"
"`virsh dumpxml DOMAIN | grep virtio-serial` does not\n"
"show, or let `setup --domain DOMAIN --apply` choose", .min = 0, .max = SETUP_MAX_CTL_INDEX,
	  .what = "the first virtio-serial controller's index" },
	{ "create", 'c', KIND_FLAG, NULL, "create DIR and, for the pipe backend, the FIFOs\n"
	  "(mode 0600); existing ones are kept" },
	{ "name", 'N', KIND_STRING, "NAME", "the guest's name (default guest): names the default\n"
	  "DIR and QEMU's -name; record it with\n--chardev-dir DIR --name NAME" },
	{ "accel", OPT_ACCEL, KIND_CHOICE, "KIND", "auto (default): check " KVMCHECK_DEVICE " as above; "
	  "kvm or tcg:\nprint that, unchecked; none: no -accel line", .choices = accels },
	{ "kvm-device", OPT_KVM_DEVICE, KIND_PATH, "DEV", "the KVM device auto checks (default "
	  KVMCHECK_DEVICE ")", .what = "the path of the KVM device (e.g. /dev/kvm)" },
	{ "help", 'h', KIND_FLAG, NULL, "print this help and exit" },
	{ "last-boot", OPT_LASTBOOT, KIND_STRING, "SIZE", "reserve SIZE (K, M, G) for the boot-mapped "
	  "instance", .group =
"\n"
"Short options mean the same in every subcommand: --dir and --format have\n"
"none here (-d and -f are record's --duration and --filter).\n"
"\n"
"Example:\n"
"  virtio-trace-collect setup --vcpus 2 --dir /run/vt/demo --name demo --create > ports.args\n"
"  eval \"ARGS=($(cat ports.args))\"       # bash: one option per line, quoted\n"
"  qemu-system-x86_64 -cpu host -smp 2 -pidfile /run/vt/demo/qemu.pid ... \"${ARGS[@]}\"\n"
"  virtio-trace-collect record --chardev-dir /run/vt/demo --name demo \\\n"
"    --qemu-pid $(cat /run/vt/demo/qemu.pid) --qmp /run/vt/demo/qmp.sock -e sched\n"
"\n"
"Exit status: 0 printed (and created); 1 could not create or write; 2 usage error.\n"
"\n"
"Usage: virtio-trace-collect setup --last-boot SIZE [--last-boot-events SYS:EV,...]\n"
"\n"
"Print the guest kernel arguments (Linux 6.12 or later) that keep a trace across\n"
"a crash and warm reset: SIZE (e.g. 4M) of memory reserved at boot holds the\n"
"persistent, boot-mapped instance " SETUP_LASTBOOT_INSTANCE ", off at boot so that the previous\n"
"boot's trace survives until `record --last-boot " SETUP_LASTBOOT_INSTANCE "` has taken it; the\n"
"agent then turns it on to record this boot. Add them to the kernel command\n"
"line; QEMU must run without -no-reboot.\n"
"\n" },
	{ "last-boot-events", OPT_LASTBOOT_EVENTS, KIND_STRING, "SYS:EV,...",
	  "events the instance records from boot on" },
	{ "domain", 'D', KIND_STRING, "NAME", "the libvirt domain", .group =
"\n"
"Usage: virtio-trace-collect setup --domain NAME [--connect URI] --apply|--remove\n"
"                                  [--live] [--backend pipe|unix] [--dir DIR]\n"
"\n"
"Add the same ports to a libvirt domain: one channel per vCPU plus the control\n"
"port. With --live they are hot-plugged into the running domain, no reboot,\n"
"and kept in its definition; the guest's trace-agent starts by itself (udev).\n"
"Without --live they go into the persistent definition, on virtio-serial\n"
"controllers of their own (30 ports each), for the domain's next boot. Then\n"
"`record --domain NAME` finds everything itself.\n"
"\n" },
	{ "connect", 'C', KIND_STRING, "URI", "libvirt URI (default: libvirt's default, qemu:///system\n"
	  "for root)" },
	{ "apply", 'a', KIND_FLAG, NULL,
"add the channels (pipe: and create the FIFOs, owned by\n"
"the user in /etc/libvirt/qemu.conf); running it again\n"
"changes nothing; a changed vCPU count rewrites them" },
	{ "remove", 'r', KIND_FLAG, NULL, "remove exactly what --apply added" },
	{ "live", OPT_LIVE, KIND_FLAG, NULL,
"the running domain too: hot-plug the channels into\n"
"it (on free ports of its virtio-serial controllers:\n"
"libvirt cannot hot-plug a controller) or unplug them,\n"
"without a reboot" },
	{ "backend", 'b', KIND_STRING, "KIND",
"pipe (default; DIR default /var/lib/virtio-trace/NAME)\n"
"or unix (without --dir: paths libvirt chooses; the\n"
"only kind --live takes: libvirt hot-plugs no pipe)" },
	{ "dir", OPT_DIR, KIND_STRING, "DIR", "where the chardevs live" },
	{ "qmp", OPT_QMP, KIND_PATH, "SOCKET", "QEMU's QMP socket (one client at a time: not while a\n"
	  "`record --qmp` holds it)", .what = "the path of QEMU's QMP socket", .group =
"\n"
"Controller indexes: --apply puts its controllers after every virtio-serial\n"
"controller the domain has.\n"
"\n"
"Usage: virtio-trace-collect setup --qmp SOCKET --hotplug|--remove [--name NAME]\n"
"                                  [--vcpus N] [--backend pipe|unix] [--dir DIR]\n"
"\n"
"The same for a QEMU started without libvirt, through its QMP socket (-qmp\n"
"unix:SOCKET,server=on,wait=off): the ports are hot-plugged into the running\n"
"guest, no reboot, on free ports of its virtio-serial buses, else on a\n"
"virtio-serial controller hot-plugged for them.\n"
"\n" },
	{ "hotplug", OPT_HOTPLUG, KIND_FLAG, NULL,
"plug the ports in (pipe: the FIFOs are made first),\n"
"one per vCPU QEMU has (or --vcpus N), the control\n"
"port last; DIR default\n"
SETUP_DEFAULT_ROOT "/qemu-PID-START: the pid and start\n"
"time of the process that serves SOCKET (NAME,\n"
"default QEMU's -name, is only shown)" },
	{ NULL },
};

static const struct opt_habit setup_habits[] = {
	{ 'd', "record's --duration; setup's directory is --dir" },
	{ 'f', "record's --filter; setup's format is --format" },
	{ 0, NULL },
};

static const struct opt_cmd setup_cmd = {
	.name = "setup",
	.usage = "--vcpus N [--backend pipe|unix|unix-connect]\n"
"                                  [--dir DIR]\n"
"                                  [--format qemu|libvirt] [--create] [--name NAME]\n"
"                                  [--controller-index I]\n"
"                                  [--accel auto|kvm|tcg|none] [--kvm-device DEV]",
	.about =
"Print what a guest needs for trace-agent(8): one virtio-serial port per vCPU\n"
"(trace-path-cpu0 .. trace-path-cpuN-1) and the control port agent-ctl-path,\n"
"each backed by a host chardev DIR/PORTNAME, at most 30 ports per\n"
"virtio-serial controller (max_ports=31, port 0 is left to consoles).\n"
"The QEMU arguments also name the guest with debug-threads=on (so that its\n"
"vCPU threads are called \"CPU n/...\" and record can find them) and give it\n"
"a QMP socket DIR/qmp.sock for `record --qmp DIR/qmp.sock`.\n"
"They start with the accelerator: -accel kvm where this host's /dev/kvm can run\n"
"a stock guest (then `record --qemu-pid PID` takes KVM's exact per-vCPU TSC\n"
"offsets as the clock); otherwise -accel tcg, and standard error says why (no\n"
"/dev/kvm, no access, or a /dev/kvm that runs no stock kernel: kvm_pvm's) and\n"
"what a TCG guest needs.\n",
	.tail =
"A FIFO that is in DIR already is taken only when it is what setup makes (the\n"
"QEMU's user's, 0600, no link) and no process has it open; DIR must be one\n"
"nobody but root (or you) can write. With --qmp, --remove unplugs what\n"
"--hotplug added (the control port first) and removes the FIFOs it made.\n"
"\n"
"Exit status: 0 done or nothing to do; 1 libvirt, QEMU or the files failed;\n"
"2 usage.\n",
	.defs = setup_opts_def,
	.habits = setup_habits,
};

/* Port @i's name: data ports first, then the control port. */
static void setup_port_name(const struct setup_opts *o, unsigned int i, char *buf, size_t len)
{
	if (i < o->vcpus)
		snprintf(buf, len, "trace-path-cpu%u", i);
	else
		snprintf(buf, len, "agent-ctl-path");
}

static void setup_chardev_id(const struct setup_opts *o, unsigned int i, char *buf, size_t len)
{
	if (i < o->vcpus)
		snprintf(buf, len, "vt-cpu%u", i);
	else
		snprintf(buf, len, "vt-ctl");
}

/* One QEMU option and its value; the value quoted for sh only when it must be. */
static void setup_put_arg(const char *opt, const char *val)
{
	const char *p;
	bool plain = true;

	for (p = val; *p; p++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:=,+@%-", *p))
			plain = false;
	if (plain) {
		printf("%s %s\n", opt, val);
		return;
	}
	printf("%s '", opt);
	for (p = val; *p; p++) {
		if (*p == '\'')
			fputs("'\\''", stdout);
		else
			putchar(*p);
	}
	puts("'");
}

/* QEMU option values separate properties with ','; a literal ',' is written ',,'. */
static void setup_qemu_path(char *out, size_t len, const char *dir, const char *port)
{
	size_t n = 0;
	const char *parts[3] = { dir, "/", port };
	const char *p;
	int k;

	for (k = 0; k < 3; k++)
		for (p = parts[k]; *p && n + 2 < len; p++) {
			if (*p == ',')
				out[n++] = ',';
			out[n++] = *p;
		}
	out[n] = 0;
}

/*
 * The accelerator of the printed arguments: --accel's, or with auto KVM where
 * this host's /dev/kvm can run a stock guest (kvmcheck.c); otherwise TCG, and
 * standard error says why and what a TCG guest needs.
 */
static const char *setup_accel(const struct setup_opts *o)
{
	struct kvmcheck k;

	if (strcmp(o->accel, "auto"))
		return o->accel;
	kvmcheck_run(o->kvm_device, "/sys", "/proc/cpuinfo", &k);
	if (k.usable)
		return "kvm";
	fprintf(stderr, "virtio-trace-collect setup: no KVM for the guest: %s\n", k.reason);
	fprintf(stderr, "virtio-trace-collect setup: so %s (QEMU's emulator, TCG): boot the "
		"guest kernel with trace_clock=x86-tsc (and idle=halt on QEMU's default CPU); "
		"record's clock is then the in-band probes', with an error bound, not KVM's exact "
		"TSC offsets%s\n",
		o->libvirt ? "the domain must be <domain type='qemu'>" : "the arguments say -accel tcg",
		o->libvirt ? "" : " (--accel kvm prints -accel kvm anyway)");
	return "tcg";
}

static void setup_print_qemu(const struct setup_opts *o, const char *accel)
{
	unsigned int nports = o->vcpus + 1, nctl, i;
	char val[3 * PATH_MAX], path[2 * PATH_MAX + 64], port[32], id[32];

	if (strcmp(accel, "none"))
		setup_put_arg("-accel", accel);

	/*
	 * debug-threads=on names the vCPU threads "CPU n/TCG|KVM" (the host file's GUEST
	 * option needs them); the QMP socket lets record ask QEMU for them and follow stop/cont.
	 */
	snprintf(val, sizeof(val), "%s,debug-threads=on", o->name);
	setup_put_arg("-name", val);
	setup_qemu_path(path, sizeof(path), o->dir, SETUP_QMP_SOCKET);
	snprintf(val, sizeof(val), "unix:%s,server=on,wait=off", path);
	setup_put_arg("-qmp", val);
	nctl = (nports + SETUP_PORTS_PER_CTL - 1) / SETUP_PORTS_PER_CTL;
	for (i = 0; i < nctl; i++) {
		snprintf(val, sizeof(val), "virtio-serial-pci,id=vtser%u,max_ports=%d", i,
			 SETUP_PORTS_PER_CTL + 1);
		setup_put_arg("-device", val);
	}
	for (i = 0; i < nports; i++) {
		setup_port_name(o, i, port, sizeof(port));
		setup_chardev_id(o, i, id, sizeof(id));
		setup_qemu_path(path, sizeof(path), o->dir, port);
		if (o->unix_backend)
			snprintf(val, sizeof(val), "socket,id=%s,path=%s,%s", id, path,
				 o->qemu_connects ? "server=off,reconnect=1" : "server=on,wait=off");
		else
			snprintf(val, sizeof(val), "pipe,id=%s,path=%s", id, path);
		setup_put_arg("-chardev", val);
		snprintf(val, sizeof(val), "virtserialport,bus=vtser%u.0,nr=%u,chardev=%s,name=%s",
			 i / SETUP_PORTS_PER_CTL, i % SETUP_PORTS_PER_CTL + 1, id, port);
		setup_put_arg("-device", val);
	}
}

static void setup_put_xml(const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", stdout); break;
		case '<': fputs("&lt;", stdout); break;
		case '>': fputs("&gt;", stdout); break;
		case '\'': fputs("&apos;", stdout); break;
		case '"': fputs("&quot;", stdout); break;
		default: putchar(*s);
		}
	}
}

static void setup_print_libvirt(const struct setup_opts *o)
{
	unsigned int nports = o->vcpus + 1, nctl, i;
	char port[32];

	nctl = (nports + SETUP_PORTS_PER_CTL - 1) / SETUP_PORTS_PER_CTL;
	printf("<!-- virtio-trace ports for guest %s, %u vCPUs: put these in <devices>. -->\n",
	       o->name, o->vcpus);
	/* No "--" inside an XML comment: the options are named without their dashes. */
	printf("<!-- Controller index%s %u%s must be unused in the domain (virsh dumpxml DOMAIN | grep "
	       "virtio-serial): else pick others with setup's option controller-index, or let "
	       "setup's domain and apply options add these. -->\n",
	       nctl > 1 ? "es" : "", o->ctl_index, nctl > 1 ? " and up" : "");
	for (i = 0; i < nctl; i++)
		printf("<controller type='virtio-serial' index='%u' ports='%d'/>\n", o->ctl_index + i,
		       SETUP_PORTS_PER_CTL + 1);
	for (i = 0; i < nports; i++) {
		setup_port_name(o, i, port, sizeof(port));
		printf("<channel type='%s'>\n", o->unix_backend ? "unix" : "pipe");
		printf("  <source %spath='", !o->unix_backend ? "" :
		       o->qemu_connects ? "mode='connect' " : "mode='bind' ");
		setup_put_xml(o->dir);
		if (o->qemu_connects)
			printf("/%s'>\n    <reconnect enabled='yes' timeout='1'/>\n  </source>\n", port);
		else
			printf("/%s'/>\n", port);
		printf("  <target type='virtio' name='%s'/>\n", port);
		printf("  <address type='virtio-serial' controller='%u' bus='0' port='%u'/>\n",
		       o->ctl_index + i / SETUP_PORTS_PER_CTL, i % SETUP_PORTS_PER_CTL + 1);
		printf("</channel>\n");
	}
}

static int setup_mkfifo(const char *path)
{
	struct stat st;

	if (mkfifo(path, 0600) == 0)
		return chmod(path, 0600) < 0 ? -errno : 0;
	if (errno != EEXIST)
		return -errno;
	if (lstat(path, &st) < 0)
		return -errno;
	return S_ISFIFO(st.st_mode) ? 0 : -EEXIST;
}

static int setup_create(const struct setup_opts *o)
{
	char path[PATH_MAX], port[32];
	const char *sfx[2] = { ".in", ".out" };
	unsigned int i, k;
	int ret;

	ret = collect_mkdirs(o->dir);
	if (ret < 0) {
		fprintf(stderr, "virtio-trace-collect setup: cannot create %s: %s\n", o->dir,
			strerror(-ret));
		return ret;
	}
	if (o->unix_backend)
		return 0;
	for (i = 0; i <= o->vcpus; i++) {
		setup_port_name(o, i, port, sizeof(port));
		for (k = 0; k < 2; k++) {
			if (snprintf(path, sizeof(path), "%s/%s%s", o->dir, port, sfx[k]) >=
			    (int)sizeof(path))
				ret = -ENAMETOOLONG;
			else
				ret = setup_mkfifo(path);
			if (ret < 0) {
				fprintf(stderr, "virtio-trace-collect setup: cannot create the FIFO %s: %s\n",
					path, ret == -EEXIST ? "exists and is not a FIFO" : strerror(-ret));
				return ret;
			}
		}
	}
	return 0;
}

/* One of setup's options, into @o (--dir's into *@dir). Return: 0, or -EINVAL after the message. */
static int setup_option(struct setup_opts *o, int c, const struct opt_val *val, const char **dir)
{
	static const char *const backends[] = { "pipe", "unix", "unix-connect", NULL };
	unsigned long v;
	char *end;

	switch (c) {
	case OPT_LASTBOOT:
		/* reserve_mem's size: digits and one K, M or G. */
		v = strtoul(val->s, &end, 10);
		if (!v || (*end && (strchr("KMG", *end) == NULL || end[1]))) {
			collect_usage("--last-boot '%s': a size in bytes, more than 0, with an "
				      "optional K, M or G suffix (e.g. 4M)", val->s);
			return -EINVAL;
		}
		o->last_boot = val->s;
		break;
	case OPT_LASTBOOT_EVENTS:
		if (strspn(val->s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:,*") !=
		    strlen(val->s)) {
			collect_usage("--last-boot-events '%s': events SYSTEM:EVENT,... of "
				      "[A-Za-z0-9_*]", val->s);
			return -EINVAL;
		}
		o->last_boot_events = val->s;
		break;
	case 'D':
		if (!*val->s) {
			collect_usage("-D/--domain '': a libvirt domain's name");
			return -EINVAL;
		}
		o->domain = val->s;
		break;
	case 'C': o->uri = val->s; break;
	case 'a': o->apply = true; break;
	case 'r': o->remove = true; break;
	case OPT_LIVE: o->live = true; break;
	case OPT_QMP: o->qmp = val->s; break;
	case OPT_HOTPLUG: o->hotplug = true; break;
	case OPT_ACCEL:
		o->accel = val->s;
		o->have_accel = true;
		break;
	case OPT_KVM_DEVICE:
		o->kvm_device = val->s;
		o->have_accel = true;
		break;
	case 'n': o->vcpus = val->u; break;
	case 'b':
		o->have_backend = true;
		o->unix_backend = strcmp(val->s, "pipe") != 0;
		o->qemu_connects = !strcmp(val->s, "unix-connect");
		/* "socket" is unix's old name, still taken. */
		if (strcmp(val->s, "socket") && opt_one_of("-b/--backend", val->s, backends) < 0)
			return -EINVAL;
		break;
	case OPT_DIR:
		*dir = val->s;
		o->have_dir = true;
		break;
	case OPT_CTL_INDEX:
		o->ctl_index = val->u;
		o->have_ctl_index = true;
		break;
	case OPT_FORMAT:
		o->have_format = true;
		o->libvirt = val->i == 1;
		break;
	case 'c': o->create = true; break;
	case 'N':
		if (!collect_name_ok(val->s)) {
			collect_usage("-N/--name '%s': a guest's name, 1 to %d of A-Z a-z 0-9 _ - ., "
				      "not starting with '.' or '-'", val->s, COLLECT_NAME_MAX - 1);
			return -EINVAL;
		}
		o->name = val->s;
		o->have_name = true;
		break;
	}
	return 0;
}

/*
 * What the options ask for, checked as one use of setup (--last-boot, --qmp,
 * --domain, or the QEMU arguments). Return: 1 when DIR is --dir's to make
 * absolute, 0 when o->dir is settled (or not needed), or -EINVAL after the
 * message.
 */
static int setup_check(struct setup_opts *o, const char *dir)
{
	if (o->last_boot_events && !o->last_boot) {
		collect_usage("--last-boot-events goes with --last-boot");
		return -EINVAL;
	}
	if (o->last_boot) {
		if (o->vcpus || o->domain || o->apply || o->remove || o->create || o->have_format ||
		    o->qmp || o->hotplug || o->live || o->have_accel) {
			collect_usage("--last-boot prints kernel "
				"arguments only: run it on its own");
			return -EINVAL;
		}
		return 0;
	}
	if (o->qmp || o->hotplug) {
		if (!o->qmp || o->hotplug == o->remove) {
			collect_usage("--qmp SOCKET goes with one of "
				"--hotplug or --remove (see --help)");
			return -EINVAL;
		}
		if (o->domain || o->apply || o->live || o->uri || o->have_format || o->create ||
		    o->have_ctl_index || o->have_accel) {
			collect_usage("--qmp takes --name, --vcpus, "
				"--backend and --dir only (--domain, --apply, --live, --format, --create and "
				"--accel are for the other uses of setup)");
			return -EINVAL;
		}
		if (o->qemu_connects) {
			collect_usage("--qmp takes --backend pipe or unix");
			return -EINVAL;
		}
		if (!dir)
			return 0;	/* hotplug_run(): /run/virtio-trace/qemu-PID-START */
	} else if (o->domain || o->apply || o->remove || o->uri || o->live) {
		if (!o->domain || o->apply == o->remove) {
			collect_usage("--domain NAME goes with one of "
				"--apply or --remove (see --help)");
			return -EINVAL;
		}
		if (o->vcpus || o->have_format || o->create || o->have_ctl_index || o->have_accel) {
			collect_usage("with --domain the vCPU count and "
				"controller indexes come from the definition, --format, --create and "
				"--accel do not apply");
			return -EINVAL;
		}
		if (o->qemu_connects) {
			collect_usage("--domain takes --backend pipe or "
				"unix (record --domain connects to the sockets libvirt makes)");
			return -EINVAL;
		}
		if (o->remove && (o->have_dir || o->have_backend)) {
			collect_usage("--remove takes no --dir or "
				"--backend: it removes what --apply added");
			return -EINVAL;
		}
		/* libvirt hot-plugs no pipe chardev ("Hotplug unsupported for char device type 'pipe'"). */
		if (o->live && o->apply && o->have_backend && !o->unix_backend) {
			collect_usage("--live needs --backend unix: libvirt "
				"cannot hot-plug pipe channels");
			return -EINVAL;
		}
		if (o->live && o->apply)
			o->unix_backend = true;
		if (!dir && o->unix_backend)
			return 0;	/* libvirt's automatic socket paths */
		if (!dir && o->remove)
			return 0;
		if (!dir && libvirt_default_dir(o->dir, sizeof(o->dir), o->domain) < 0) {
			collect_usage("domain '%s' cannot name a "
				"directory: give --dir DIR", o->domain);
			return -EINVAL;
		}
		if (!dir)
			return 0;
	} else if (!o->vcpus) {
		collect_usage("--vcpus N is required (see --help)");
		return -EINVAL;
	} else if (o->have_ctl_index && !o->libvirt) {
		collect_usage("--controller-index goes with --format "
			"libvirt (QEMU's controllers are named vtserN)");
		return -EINVAL;
	}
	if (!dir) {
		snprintf(o->dir, sizeof(o->dir), "%s/%s", SETUP_DEFAULT_ROOT, o->name);
		return 0;
	}
	return 1;
}

/* --dir DIR as o->dir: absolute (QEMU and libvirt resolve against their own cwd), canonical. */
static int setup_dir(struct setup_opts *o, const char *dir)
{
	if (!*dir || strchr(dir, '\n')) {
		collect_usage("--dir '%s': a directory's path, not empty, of one line", dir);
		return -EINVAL;
	}
	/* QEMU and libvirt resolve relative paths against their own cwd: make it absolute. */
	if (dir[0] == '/') {
		if (snprintf(o->dir, sizeof(o->dir), "%s", dir) >= (int)sizeof(o->dir))
			goto err_long;
	} else {
		char cwd[PATH_MAX];

		if (!getcwd(cwd, sizeof(cwd))) {
			log_err("getcwd: %s", strerror(errno));
			return -EINVAL;
		}
		if (snprintf(o->dir, sizeof(o->dir), "%s/%s", strcmp(cwd, "/") ? cwd : "", dir) >=
		    (int)sizeof(o->dir))
			goto err_long;
	}
	/* Port paths are DIR/PORT: no trailing slashes, so the output is canonical. */
	while (strlen(o->dir) > 1 && o->dir[strlen(o->dir) - 1] == '/')
		o->dir[strlen(o->dir) - 1] = 0;
	return 0;

err_long:
	collect_usage("--dir '%s': a directory's path of at most %zu bytes", dir, sizeof(o->dir) - 1);
	return -EINVAL;
}

static int setup_parse(int argc, char **argv, struct setup_opts *o)
{
	const char *dir = NULL;
	struct opt_val val;
	int c, ret;

	o->name = "guest";
	o->ctl_index = SETUP_DEFAULT_CTL_INDEX;
	o->accel = "auto";
	o->kvm_device = KVMCHECK_DEVICE;
	optind = 1;
	while ((c = opt_parse(&setup_cmd, argc, argv, &val)) != -1) {
		if (c == OPT_HELP)
			return 1;
		if (c == OPT_ERROR)
			return -2;	/* opt_parse() said why, and where to look */
		ret = setup_option(o, c, &val, &dir);
		if (ret < 0)
			return ret;
	}
	if (optind < argc) {
		collect_usage("unexpected argument '%s'", argv[optind]);
		return -EINVAL;
	}
	ret = setup_check(o, dir);
	if (ret <= 0)
		return ret;
	return setup_dir(o, dir);
}

/**
 * setup_main() - the setup subcommand
 * @argc: argument count
 * @argv: arguments
 *
 * Return: an exit status.
 */
int setup_main(int argc, char **argv)
{
	struct setup_opts o = { 0 };
	const char *accel;
	int ret;

	ret = setup_parse(argc, argv, &o);
	if (ret > 0)
		return EXIT_OK;
	if (ret < 0) {
		if (ret == -EINVAL)
			opt_try_help();
		return EXIT_USAGE;
	}
	if (o.last_boot) {
		printf("reserve_mem=%s:4096:%s trace_instance=%s^traceoff@%s%s%s\n", o.last_boot,
		       SETUP_LASTBOOT_INSTANCE, SETUP_LASTBOOT_INSTANCE, SETUP_LASTBOOT_INSTANCE,
		       o.last_boot_events ? "," : "", o.last_boot_events ? o.last_boot_events : "");
		return fflush(stdout) == EOF || ferror(stdout) ? EXIT_FAIL : EXIT_OK;
	}
	if (o.qmp) {
		struct hotplug_opts ho = {
			.qmp = o.qmp, .remove = o.remove, .unix_backend = o.unix_backend, .vcpus = o.vcpus,
		};

		if (o.have_name)
			snprintf(ho.name, sizeof(ho.name), "%s", o.name);
		snprintf(ho.dir, sizeof(ho.dir), "%s", o.dir);
		ret = hotplug_run(&ho);
		if (fflush(stdout) == EOF || ferror(stdout))
			return EXIT_FAIL;
		return ret < 0 ? EXIT_FAIL : EXIT_OK;
	}
	if (o.domain) {
		struct libvirt_setup ls = {
			.domain = o.domain, .uri = o.uri, .remove = o.remove, .live = o.live,
			.unix_backend = o.unix_backend,
		};

		snprintf(ls.dir, sizeof(ls.dir), "%s", o.dir);
		ret = libvirt_setup_run(&ls);
		if (fflush(stdout) == EOF || ferror(stdout))
			return EXIT_FAIL;
		if (ret == 0 && ls.vcpus > COLLECT_MAX_CPUS)
			fprintf(stderr, "virtio-trace-collect setup: warning: record handles at most %d "
				"vCPUs per guest\n", COLLECT_MAX_CPUS);
		return ret < 0 ? EXIT_FAIL : EXIT_OK;
	}
	if (o.vcpus > COLLECT_MAX_CPUS)
		fprintf(stderr, "virtio-trace-collect setup: warning: record handles at most %d "
			"vCPUs per guest\n", COLLECT_MAX_CPUS);
	if (o.create && setup_create(&o) < 0)
		return EXIT_FAIL;
	accel = setup_accel(&o);
	if (o.libvirt)
		setup_print_libvirt(&o);
	else
		setup_print_qemu(&o, accel);
	if (fflush(stdout) == EOF || ferror(stdout)) {
		fprintf(stderr, "virtio-trace-collect setup: write error: %s\n", strerror(errno));
		return EXIT_FAIL;
	}
	return EXIT_OK;
}
