// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * record --live-stat's table (livestat.c): synthetic host events of one vCPU
 * thread, laid out by the kernel's own formats (tests/data), give rows of
 * exact per-second percentages (in the guest, halted, preempted, exits,
 * unknown, adding up to 100) with the exit reasons ordered by their time, a
 * row per second cut at the second's boundary.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <event-parse.h>

#include "record/livestat.h"

#define NS	1000000000ull
#define MS	1000000ull
#define TID	100
#define HOG	200

static struct tep_handle *tep;
static struct tep_event *ev_entry, *ev_exit, *ev_switch, *ev_wakeup;

static struct tep_event *parse(const char *rel, const char *sys)
{
	char path[4096], buf[65536];
	const char *src = getenv("VT_SRCDIR");
	struct tep_event *ev = NULL;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/tests/data/%s", src ? src : ".", rel);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	assert_int_equal(tep_parse_format(tep, &ev, buf, n, sys), 0);
	return ev;
}

static int setup(void **state)
{
	(void)state;
	tep = tep_alloc();
	assert_non_null(tep);
	ev_entry = parse("kvm-exits/formats/kvm/kvm_entry", "kvm");
	ev_exit = parse("kvm-exits/formats/kvm/kvm_exit", "kvm");
	ev_switch = parse("cap-host/formats/sched/sched_switch", "sched");
	ev_wakeup = parse("cap-host/formats/sched/sched_wakeup", "sched");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tep_free(tep);
	return 0;
}

static void put(uint8_t *data, struct tep_event *ev, const char *name, uint64_t v)
{
	struct tep_format_field *f = tep_find_any_field(ev, name);

	assert_non_null(f);
	memcpy(data + f->offset, &v, f->size < 8 ? f->size : 8);	/* little-endian */
}

/* One host record of @ev at @ts on CPU 0, run by @pid, with up to two fields set. */
static void feed(struct livestat *ls, struct tep_event *ev, uint64_t ts, int pid, const char *f1,
		 uint64_t v1, const char *f2, uint64_t v2)
{
	uint8_t data[128] = { 0 };
	struct tep_record rec = { .ts = ts, .cpu = 0, .data = data, .size = sizeof(data) };
	uint16_t id = ev->id;

	memcpy(data, &id, 2);
	memcpy(data + 4, &pid, 4);
	if (f1)
		put(data, ev, f1, v1);
	if (f2)
		put(data, ev, f2, v2);
	livestat_host(ls, tep, &rec, 0);
}

static void kexit(struct livestat *ls, uint64_t ts, uint64_t reason)
{
	feed(ls, ev_exit, ts, TID, "exit_reason", reason, "isa", 2);	/* SVM */
}

static void kentry(struct livestat *ls, uint64_t ts)
{
	feed(ls, ev_entry, ts, TID, NULL, 0, NULL, 0);
}

/* The rows of two seconds: exits by time, halted after HLT, preempted once woken. */
static void test_two_seconds(void **state)
{
	const uint32_t tids[] = { TID };
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	struct livestat *ls;
	uint64_t t0 = 50 * NS;

	(void)state;
	assert_non_null(out);
	ls = livestat_new(out, NS, 1000);
	assert_non_null(ls);
	assert_int_equal(livestat_add_guest(ls, "vm", tids, 1), 0);
	/* Second 1: guest 0.5 s, npf 0.1, guest 0.1, io 0.2, guest 0.05, hlt, asleep 0.05. */
	kentry(ls, t0);
	kexit(ls, t0 + 500 * MS, 0x400);	/* npf */
	kentry(ls, t0 + 600 * MS);
	kexit(ls, t0 + 700 * MS, 0x07b);	/* io */
	kentry(ls, t0 + 900 * MS);
	kexit(ls, t0 + 950 * MS, 0x078);	/* hlt */
	feed(ls, ev_switch, t0 + 950 * MS, TID, "prev_pid", TID, "prev_state", 1);
	/* Second 2: asleep to 1.2, woken, preempted by HOG to 1.3, then in the guest. */
	feed(ls, ev_wakeup, t0 + 1200 * MS, HOG, "pid", TID, "target_cpu", 0);
	feed(ls, ev_switch, t0 + 1300 * MS, HOG, "prev_pid", HOG, "next_pid", TID);
	kentry(ls, t0 + 1300 * MS);
	/* Past the third second's start: both are cut. */
	kexit(ls, t0 + 2100 * MS, 0x07b);
	fclose(out);
	printf("%s", text);
	assert_non_null(strstr(text,
		"# vcpu-stat 50.000000 +1.000000 s\n"
		"# GUEST            VCPU     TID    GUEST   HALTED  PREEMPT    EXITS  UNKNOWN  TOP EXITS\n"
		"# vm                  0     100    65.0%     5.0%     0.0%    30.0%     0.0%  io 20.0% npf 10.0%\n"
		"# vcpu-stat 51.000000 +1.000000 s\n"
		"# GUEST            VCPU     TID    GUEST   HALTED  PREEMPT    EXITS  UNKNOWN  TOP EXITS\n"
		"# vm                  0     100    70.0%    20.0%    10.0%     0.0%     0.0%\n"));
	/* The TCG note is for recordings without KVM's events only. */
	assert_null(strstr(text, "no kvm_entry"));
	livestat_free(ls);
	free(text);
}

/* The top three of four reasons, most first; a gap of seconds is one longer row. */
static void test_top_three(void **state)
{
	const uint32_t tids[] = { TID };
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	struct livestat *ls;
	uint64_t t0 = 7 * NS;

	(void)state;
	ls = livestat_new(out, NS, 1000);
	assert_int_equal(livestat_add_guest(ls, "vm", tids, 1), 0);
	kexit(ls, t0, 0x072);			/* cpuid 0.1 */
	kexit(ls, t0 + 100 * MS, 0x07c);	/* msr 0.4 */
	kexit(ls, t0 + 500 * MS, 0x400);	/* npf 0.2 */
	kexit(ls, t0 + 700 * MS, 0x07b);	/* io 0.3 */
	kentry(ls, t0 + 1000 * MS);
	kentry(ls, t0 + 3500 * MS);		/* seconds 2 and 3 had no event: one row */
	fclose(out);
	printf("%s", text);
	assert_non_null(strstr(text,
		"# vm                  0     100     0.0%     0.0%     0.0%   100.0%     0.0%  msr 40.0% io 30.0% npf 20.0%\n"
		"# vcpu-stat 8.000000 +2.000000 s\n"));
	assert_non_null(strstr(text, "# vm                  0     100   100.0%     0.0%     0.0%     0.0%     0.0%\n"));
	livestat_free(ls);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_seconds),
		cmocka_unit_test(test_top_three),
	};

	printf("livestat: per-second vCPU rows of exact percentages, top exits by time\n");
	return cmocka_run_group_tests(tests, setup, teardown);
}
