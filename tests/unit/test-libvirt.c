// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * host-collector/setup/libvirt.c against libvirt's test driver (no daemon):
 * record --domain finds pipe and unix channels (unix paths as libvirt chose
 * them), whatever their order in the XML; a domain without channels gets the
 * exact setup command, a count mismatch and a stopped or unknown domain get
 * their own errors; setup --apply adds one channel per vCPU plus the control
 * port and creates the FIFOs, a second apply changes nothing, --remove gives
 * back the definition exactly as it was and leaves a user's own channels
 * alone; QMP query-cpus-fast gives the top-level thread ids.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <libvirt/libvirt.h>

#include "collect.h"
#include "setup/libvirt.h"
#include "setup/list.h"
#include "setup/qmp-reply.h"

static char t_dir[256];
static char t_uri[512];
static char t_log[8192];	/* every message libvirt.c logged since t_clear() */

/* list.c's option errors (opts.c) need these of log.c, whose collect_log() is ours. */
const char *collect_cmd;

void collect_usage(const char *fmt, ...)
{
	(void)fmt;
}

/* The collector's logger, as the unit sees it. */
void collect_log(int level, const char *fmt, ...)
{
	size_t n = strlen(t_log);
	va_list ap;

	if (n + 2 >= sizeof(t_log))
		return;
	n += snprintf(t_log + n, sizeof(t_log) - n, "%d: ", level);
	va_start(ap, fmt);
	if (n < sizeof(t_log))
		n += vsnprintf(t_log + n, sizeof(t_log) - n, fmt, ap);
	va_end(ap);
	if (n + 1 < sizeof(t_log))
		strcat(t_log, "\n");
}

static void t_clear(void)
{
	t_log[0] = 0;
}

static void t_log_has(const char *s)
{
	if (!strstr(t_log, s))
		fail_msg("the messages lack \"%s\"; they are:\n%s", s, t_log);
}

/* node.xml.in with @DIR@ replaced, in a fresh work directory. */
static int t_setup(void **state)
{
	const char *src = getenv("VT_SRCDIR");
	char in[512], out[512], line[1024], *at;
	FILE *fi, *fo;

	(void)state;
	snprintf(t_dir, sizeof(t_dir), "%s/vt-test-libvirt.XXXXXX", getenv("TMPDIR") ?: "/tmp");
	if (!mkdtemp(t_dir))
		return -1;
	snprintf(in, sizeof(in), "%s/tests/data/libvirt/node.xml.in", src ? src : ".");
	snprintf(out, sizeof(out), "%s/node.xml", t_dir);
	fi = fopen(in, "r");
	fo = fopen(out, "w");
	if (!fi || !fo) {
		fprintf(stderr, "cannot read %s or write %s (VT_SRCDIR?)\n", in, out);
		return -1;
	}
	while (fgets(line, sizeof(line), fi)) {
		char *p = line;

		while ((at = strstr(p, "@DIR@"))) {
			fwrite(p, 1, at - p, fo);
			fputs(t_dir, fo);
			p = at + 5;
		}
		fputs(p, fo);
	}
	fclose(fi);
	fclose(fo);
	snprintf(t_uri, sizeof(t_uri), "test://%s", out);
	return 0;
}

static int t_teardown(void **state)
{
	char cmd[600];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t_dir);
	return system(cmd) == 0 ? 0 : -1;
}

static struct guest_link *t_guest(const char *domain)
{
	struct guest_link *g = calloc(1, sizeof(*g));

	assert_non_null(g);
	snprintf(g->domain, sizeof(g->domain), "%s", domain);
	return g;
}

static void t_guest_free(struct guest_link *g)
{
	unsigned int i;

	for (i = 0; i < g->nr_cpu_paths; i++)
		free(g->cpu_paths[i]);
	free(g);
}

static void test_pipe_channels(void **state)
{
	struct guest_link *g = t_guest("vt-pipe");
	char want[600];

	(void)state;
	t_clear();
	assert_int_equal(libvirt_guest_resolve(g, g->domain, t_uri), 0);
	snprintf(want, sizeof(want), "%s/pipe/agent-ctl-path", t_dir);
	assert_string_equal(g->ctl_path, want);
	assert_int_equal(g->nr_cpu_paths, 2);
	snprintf(want, sizeof(want), "%s/pipe/trace-path-cpu0", t_dir);
	assert_string_equal(g->cpu_paths[0], want);
	snprintf(want, sizeof(want), "%s/pipe/trace-path-cpu1", t_dir);
	assert_string_equal(g->cpu_paths[1], want);
	/* The test driver has no QEMU: no threads, no pid, said once. */
	assert_int_equal(g->nr_vcpu_tids, 0);
	assert_int_equal(g->qemu_pid, 0);
	t_log_has("QEMU's process was not found");
	/* The domain's UUID, as libvirt writes it: what names its VM's kallsyms cache entry. */
	assert_string_equal(g->uuid, "5e3f1c2a-9b7d-4e6f-8a1b-2c3d4e5f6a7b");
	t_guest_free(g);
}

static void test_unix_auto_paths(void **state)
{
	struct guest_link *g = t_guest("vt-unix");
	const char *base = "/var/lib/libvirt/qemu/channel/target/domain-2-vt-unix/";
	char want[600];
	unsigned int i;

	(void)state;
	t_clear();
	assert_int_equal(libvirt_guest_resolve(g, g->domain, t_uri), 0);
	snprintf(want, sizeof(want), "%sagent-ctl-path", base);
	assert_string_equal(g->ctl_path, want);
	assert_int_equal(g->nr_cpu_paths, 3);
	for (i = 0; i < 3; i++) {
		snprintf(want, sizeof(want), "%strace-path-cpu%u", base, i);
		assert_string_equal(g->cpu_paths[i], want);
	}
	t_guest_free(g);
}

static void test_no_channels(void **state)
{
	struct guest_link *g = t_guest("vt-none");
	char want[800];

	(void)state;
	t_clear();
	assert_int_equal(libvirt_guest_resolve(g, g->domain, t_uri), -ENOENT);
	snprintf(want, sizeof(want), "3: domain vt-none has no trace channels: run "
		 "`virtio-trace-collect setup --domain vt-none --connect '%s' --apply`, then restart "
		 "the domain", t_uri);
	t_log_has(want);
	assert_int_equal(g->nr_cpu_paths, 0);
	t_guest_free(g);
}

static void test_count_mismatch(void **state)
{
	struct guest_link *g = t_guest("vt-short");

	(void)state;
	t_clear();
	assert_int_equal(libvirt_guest_resolve(g, g->domain, t_uri), -EINVAL);
	t_log_has("domain vt-short has 2 trace-path-cpuN channels for 4 vCPUs: run "
		  "`virtio-trace-collect setup --domain vt-short --connect '");
	t_log_has("--apply` again");
	t_guest_free(g);
}

static void test_not_running_not_found(void **state)
{
	struct guest_link *g = t_guest("vt-off"), *h = t_guest("no-such-domain");

	(void)state;
	t_clear();
	assert_int_equal(libvirt_guest_resolve(g, g->domain, t_uri), -ESRCH);
	t_log_has("domain vt-off is not running: start it (`virsh --connect '");
	t_clear();
	assert_int_equal(libvirt_guest_resolve(h, h->domain, t_uri), -ENOENT);
	t_log_has("domain no-such-domain not found at test://");
	t_guest_free(g);
	t_guest_free(h);
}

static unsigned int t_count(const char *hay, const char *needle)
{
	unsigned int n = 0;

	for (; (hay = strstr(hay, needle)); hay++)
		n++;
	return n;
}

static char *t_inactive(virConnectPtr conn, const char *name)
{
	virDomainPtr dom = virDomainLookupByName(conn, name);
	char *xml;

	assert_non_null(dom);
	xml = virDomainGetXMLDesc(dom, VIR_DOMAIN_XML_INACTIVE);
	virDomainFree(dom);
	assert_non_null(xml);
	return xml;
}

/* test:///default's "test" domain: persistent and running, no channels. */
static void test_apply_again_remove(void **state)
{
	virConnectPtr conn = virConnectOpen("test:///default");
	struct libvirt_setup s = { .domain = "test", .uri = "test:///default" };
	char *before, *after, *again, *removed, path[600];
	struct guest_link *g = t_guest("test");
	unsigned int i;
	struct stat st;

	(void)state;
	assert_non_null(conn);
	before = t_inactive(conn, "test");
	assert_int_equal(t_count(before, "<channel"), 0);

	snprintf(s.dir, sizeof(s.dir), "%s/apply", t_dir);
	t_clear();
	assert_int_equal(libvirt_setup_conn(conn, &s), 0);
	assert_true(s.changed);
	assert_true(s.vcpus >= 1);
	after = t_inactive(conn, "test");
	/* One data channel per vCPU, the control port, one controller, the record of it. */
	assert_int_equal(t_count(after, "<channel type='pipe'>"), s.vcpus + 1);
	assert_int_equal(t_count(after, "<target type='virtio' name='trace-path-cpu"), s.vcpus);
	assert_int_equal(t_count(after, "name='agent-ctl-path'"), 1);
	assert_int_equal(t_count(after, "<controller type='virtio-serial'"), 1);
	assert_int_equal(t_count(after, "vtrace:ports"), 1);
	snprintf(path, sizeof(path), "<source path='%s/apply/trace-path-cpu0'/>", t_dir);
	assert_int_equal(t_count(after, path), 1);
	assert_int_equal(t_count(after, "port='1'/>"), 1);
	for (i = 0; i <= s.vcpus; i++) {
		if (i < s.vcpus)
			snprintf(path, sizeof(path), "%s/apply/trace-path-cpu%u.out", t_dir, i);
		else
			snprintf(path, sizeof(path), "%s/apply/agent-ctl-path.in", t_dir);
		assert_int_equal(lstat(path, &st), 0);
		assert_true(S_ISFIFO(st.st_mode));
		assert_int_equal(st.st_mode & 0777, 0600);
	}

	/* The running domain still has none: record says to restart, not to run setup. */
	t_clear();
	assert_int_equal(libvirt_guest_from_conn(conn, g, g->domain, "test:///default"), -ENOENT);
	t_log_has("its persistent definition has them");
	t_log_has("take effect at the next boot");

	/* Again: nothing changes, and it says so. */
	s.changed = true;
	assert_int_equal(libvirt_setup_conn(conn, &s), 0);
	assert_false(s.changed);
	again = t_inactive(conn, "test");
	assert_string_equal(again, after);

	/* Another backend rewrites ours, still one controller. */
	s.unix_backend = true;
	s.dir[0] = 0;
	assert_int_equal(libvirt_setup_conn(conn, &s), 0);
	assert_true(s.changed);
	free(again);
	again = t_inactive(conn, "test");
	assert_int_equal(t_count(again, "<channel type='unix'>"), s.vcpus + 1);
	assert_int_equal(t_count(again, "<channel type='pipe'>"), 0);
	assert_int_equal(t_count(again, "<controller type='virtio-serial'"), 1);
	assert_int_equal(t_count(again, "<source mode='bind'"), 0);	/* libvirt chooses the paths */

	/* Remove: exactly the definition there was before. */
	s.remove = true;
	assert_int_equal(libvirt_setup_conn(conn, &s), 0);
	assert_true(s.changed);
	removed = t_inactive(conn, "test");
	assert_string_equal(removed, before);
	assert_int_equal(libvirt_setup_conn(conn, &s), 0);
	assert_false(s.changed);

	free(before);
	free(after);
	free(again);
	free(removed);
	t_guest_free(g);
	virConnectClose(conn);
}

/* Channels a user wrote (no record of an apply) are not setup's to touch. */
static void test_user_channels_alone(void **state)
{
	virConnectPtr conn = virConnectOpen(t_uri);
	struct libvirt_setup s = { .domain = "vt-pipe", .uri = t_uri };
	char *before, *after;

	(void)state;
	assert_non_null(conn);
	snprintf(s.dir, sizeof(s.dir), "%s/user", t_dir);
	before = t_inactive(conn, "vt-pipe");
	t_clear();
	assert_int_equal(libvirt_setup_conn(conn, &s), -EEXIST);
	t_log_has("that setup did not add");
	s.remove = true;
	assert_int_equal(libvirt_setup_conn(conn, &s), -EEXIST);
	t_log_has("left alone");
	after = t_inactive(conn, "vt-pipe");
	assert_string_equal(after, before);
	free(before);
	free(after);
	virConnectClose(conn);
}

/*
 * setup --live on a running domain without a virtio-serial controller: libvirt
 * cannot hot-plug one, so nothing is tried, the definition stays as it was, and
 * the message says what to change. On a stopped domain: not running.
 */
static void test_live_no_room(void **state)
{
	virConnectPtr conn = virConnectOpen("test:///default");
	struct libvirt_setup s = { .domain = "test", .uri = "test:///default", .live = true,
				   .unix_backend = true };
	virConnectPtr conn2 = virConnectOpen(t_uri);
	struct libvirt_setup off = { .domain = "vt-off", .uri = t_uri, .live = true,
				     .unix_backend = true };
	char *before, *after;

	(void)state;
	assert_non_null(conn);
	assert_non_null(conn2);
	before = t_inactive(conn, "test");
	t_clear();
	assert_int_equal(libvirt_setup_conn(conn, &s), -ENOSPC);
	assert_false(s.changed);
	t_log_has("domain test has no virtio-serial controller, and libvirt cannot hot-plug one");
	t_log_has("the trace channels need");
	t_log_has("<controller type='virtio-serial' index='N' ports='31'/>");
	t_log_has("--apply` (without --live) adds one");
	after = t_inactive(conn, "test");
	assert_string_equal(after, before);
	t_clear();
	assert_int_equal(libvirt_setup_conn(conn2, &off), -ESRCH);
	t_log_has("domain vt-off is not running: --live changes the running domain");
	free(before);
	free(after);
	virConnectClose(conn);
	virConnectClose(conn2);
}

/* record --wait: a domain not running, or without its channels yet, is -EAGAIN and no message. */
static void test_wait_quiet(void **state)
{
	struct guest_link *off = t_guest("vt-off"), *none = t_guest("vt-none"), *pipe = t_guest("vt-pipe");

	(void)state;
	off->wait = none->wait = pipe->wait = true;
	t_clear();
	assert_int_equal(libvirt_guest_resolve(off, off->domain, t_uri), -EAGAIN);
	assert_int_equal(libvirt_guest_resolve(none, none->domain, t_uri), -EAGAIN);
	assert_string_equal(t_log, "");
	assert_int_equal(off->nr_cpu_paths + none->nr_cpu_paths, 0);
	assert_int_equal(libvirt_guest_resolve(pipe, pipe->domain, t_uri), 0);
	assert_int_equal(pipe->nr_cpu_paths, 2);
	t_guest_free(off);
	t_guest_free(none);
	t_guest_free(pipe);
}

/* list: the domains with trace channels, their ports counted; the others left out. */
static void test_list(void **state)
{
	struct list_guest *g = NULL;
	unsigned int nr = 0, i, seen = 0;
	char note[256], dir[600];

	(void)state;
	assert_int_equal(libvirt_list(t_uri, &g, &nr, note, sizeof(note)), 0);
	assert_string_equal(note, "");
	for (i = 0; i < nr; i++) {
		assert_true(g[i].libvirt);
		assert_string_equal(g[i].uri, t_uri);
		assert_string_not_equal(g[i].domain, "vt-none");
		assert_string_not_equal(g[i].domain, "vt-off");
		if (!strcmp(g[i].domain, "vt-pipe")) {
			seen++;
			assert_true(g[i].running);
			assert_int_equal(g[i].vcpus, 2);
			assert_int_equal(g[i].data_ports, 2);
			assert_true(g[i].ctl_port);
			assert_true(list_ports_ready(&g[i]));
			snprintf(dir, sizeof(dir), "%s/pipe", t_dir);
			assert_string_equal(g[i].chardev_dir, dir);
			assert_string_equal(g[i].name, "vt-pipe");
		} else if (!strcmp(g[i].domain, "vt-short")) {
			seen++;
			assert_int_equal(g[i].vcpus, 4);
			assert_int_equal(g[i].data_ports, 2);
			assert_false(list_ports_ready(&g[i]));
		} else if (!strcmp(g[i].domain, "vt-unix")) {
			seen++;
			assert_int_equal(g[i].data_ports, 3);
			assert_true(list_ports_ready(&g[i]));
		}
	}
	assert_int_equal(seen, 3);
	free(g);
	/* A libvirt that cannot be asked: a note, no list. */
	assert_true(libvirt_list("test:///no/such/node.xml", &g, &nr, note, sizeof(note)) < 0);
	assert_int_equal(nr, 0);
	assert_non_null(strstr(note, "cannot be asked"));
	free(g);
}

/* A reply as QEMU 7.2 gives it through libvirt: "props" has its own thread-id. */
static void test_cpus_fast(void **state)
{
	static const char reply[] =
		"{\"return\":[{\"thread-id\":21318,\"props\":{\"core-id\":0,\"thread-id\":0,"
		"\"socket-id\":0},\"qom-path\":\"/machine/unattached/device[0]\",\"cpu-index\":0,"
		"\"target\":\"x86_64\"},{\"thread-id\":21319,\"props\":{\"core-id\":0,\"thread-id\":0,"
		"\"socket-id\":1},\"qom-path\":\"/machine/unattached/device[2]\",\"cpu-index\":1,"
		"\"target\":\"x86_64\"}],\"id\":\"libvirt-412\"}";
	static const char *bad[] = {
		"{\"return\":[]}",
		"{\"error\":{\"class\":\"CommandNotFound\"}}",
		"{\"return\":[{\"cpu-index\":0,\"props\":{\"thread-id\":7}}]}",
		"{\"return\":[{\"cpu-index\":0,\"thread-id\":-1}]}",
		"{\"return\":[{\"cpu-index\":0,\"thread-id\":12",
	};
	uint32_t tids[4] = { 0 };
	unsigned int nr = 9, i;

	(void)state;
	assert_int_equal(qmp_parse_cpus_fast(reply, strlen(reply), tids, 4, &nr), 0);
	assert_int_equal(nr, 2);
	assert_int_equal(tids[0], 21318);
	assert_int_equal(tids[1], 21319);
	/* More vCPUs than room: the rest are skipped, nothing written past @max. */
	tids[1] = 0;
	assert_int_equal(qmp_parse_cpus_fast(reply, strlen(reply), tids, 1, &nr), 0);
	assert_int_equal(nr, 1);
	assert_int_equal(tids[1], 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(qmp_parse_cpus_fast(bad[i], strlen(bad[i]), tids, 4, &nr), -EBADMSG);
}

/* query-uuid: QEMU's -uuid, lower case; its default (all zeros) names no VM; nothing else goes. */
static void test_qmp_uuid(void **state)
{
	static const char reply[] = "{\"return\": {\"UUID\": \"5E3F1C2A-9b7d-4e6f-8a1b-2c3d4e5f6a7b\"}, "
				    "\"id\": \"vt-uuid\"}";
	static const char zero[] = "{\"return\": {\"UUID\": \"00000000-0000-0000-0000-000000000000\"}}";
	static const char *bad[] = {
		"{\"return\": {\"UUID\": \"5e3f1c2a-9b7d-4e6f-8a1b-2c3d4e5f6a7\"}}",
		"{\"return\": {\"UUID\": \"5e3f1c2a-9b7d-4e6f-8a1b-2c3d4e5f6a7g\"}}",
		"{\"return\": {\"UUID\": \"5e3f1c2a/9b7d-4e6f-8a1b-2c3d4e5f6a7b\"}}",
		"{\"return\": {\"UUID\": \"../../x-9b7d-4e6f-8a1b-2c3d4e5f6a7b\"}}",
		"{\"error\": {\"class\": \"CommandNotFound\"}}",
		"{\"return\": {\"UUID\": 7}}",
	};
	char uuid[40];
	unsigned int i;

	(void)state;
	assert_int_equal(qmp_parse_uuid(reply, strlen(reply), uuid, sizeof(uuid)), 0);
	assert_string_equal(uuid, "5e3f1c2a-9b7d-4e6f-8a1b-2c3d4e5f6a7b");
	assert_int_equal(qmp_parse_uuid(zero, strlen(zero), uuid, sizeof(uuid)), -ENOENT);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(qmp_parse_uuid(bad[i], strlen(bad[i]), uuid, sizeof(uuid)), -EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pipe_channels),
		cmocka_unit_test(test_qmp_uuid),
		cmocka_unit_test(test_unix_auto_paths),
		cmocka_unit_test(test_no_channels),
		cmocka_unit_test(test_count_mismatch),
		cmocka_unit_test(test_not_running_not_found),
		cmocka_unit_test(test_apply_again_remove),
		cmocka_unit_test(test_user_channels_alone),
		cmocka_unit_test(test_cpus_fast),
		cmocka_unit_test(test_live_no_room),
		cmocka_unit_test(test_wait_quiet),
		cmocka_unit_test(test_list),
	};

	return cmocka_run_group_tests_name("libvirt: record --domain and setup --domain with "
					   "libvirt's test driver", tests, t_setup, t_teardown);
}
