// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vt-mkkvm: pack synthetic kvm:kvm_exit and kvm:kvm_entry events into raw
 * ring-buffer pages (cpuN.raw of a fixture directory, what vt-mkdat reads),
 * laid out as the format files in tests/data/kvm-exits describe them.
 *
 *   vt-mkkvm -o DIR --exit-id N --entry-id N --cpus N < EVENTS
 *
 * One event per line, each CPU's lines in timestamp order:
 *   CPU TS_NS PID exit VCPU REASON RIP
 *   CPU TS_NS PID entry VCPU RIP
 *   CPU TS_NS PID switch NEXT_PID NEXT_COMM	(with --switch-id: sched_switch as laid
 *						 out in tests/data/cap-host, for load tests)
 *   CPU TS_NS PID sw PREV_STATE NEXT_PID NEXT_COMM	(sched_switch of PID, --switch-id)
 *   CPU TS_NS PID wakeup WOKEN_PID TARGET_CPU [COMM]	(sched_wakeup or sched_waking,
 *						 --wakeup-id; COMM "vcpu" if not given)
 *   CPU TS_NS PID svmexit VCPU REASON RIP		(kvm_exit with isa 2: SVM)
 *   CPU TS_NS PID uexit REASON ERRNO		(kvm_userspace_exit, --uexit-id)
 *   CPU TS_NS PID vwake WAITED			(kvm_vcpu_wakeup, --vwake-id)
 *   CPU 0 0 newpage				(the next event starts a page on CPU,
 *						 for vt-mkdat --missed CPU:PAGE:N)
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE		4096u
#define PAGE_DATA	(PAGE - 16)
#define MAX_CPUS	64
#define EXIT_LEN	72	/* kvm_exit: requests at 64, 8 bytes */
#define ENTRY_LEN	40	/* kvm_entry: error_code at 32, 4 bytes; 4-byte aligned */
#define SWITCH_LEN	64	/* sched_switch: next_prio at 60 */
#define WAKEUP_LEN	36	/* sched_wakeup: target_cpu at 32 */
#define UEXIT_LEN	16	/* kvm_userspace_exit: errno at 12 */
#define VWAKE_LEN	20	/* kvm_vcpu_wakeup: valid at 17, 4-byte aligned */

struct cpu_out {
	FILE *f;
	uint8_t page[PAGE];
	size_t len;		/* data bytes in page */
	uint64_t page_ts, last_ts;
	bool open;
};

static void put16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

static int flush_page(struct cpu_out *c)
{
	if (!c->open)
		return 0;
	put64(c->page, c->page_ts);
	put64(c->page + 8, c->len);
	c->open = false;
	return fwrite(c->page, PAGE, 1, c->f) == 1 ? 0 : -EIO;
}

static int add_event(struct cpu_out *c, uint64_t ts, const uint8_t *payload, size_t plen)
{
	uint64_t delta;

	if (c->open && (ts < c->last_ts || ts - c->last_ts >= (1u << 27) ||
			c->len + 4 + plen > PAGE_DATA))
		if (flush_page(c) < 0)
			return -EIO;
	if (!c->open) {
		memset(c->page, 0, PAGE);
		c->open = true;
		c->len = 0;
		c->page_ts = ts;
		c->last_ts = ts;
	}
	delta = ts - c->last_ts;
	/* type_len = payload / 4 (<= 28), time_delta in the upper 27 bits */
	put32(c->page + 16 + c->len, (uint32_t)(plen / 4) | (uint32_t)(delta << 5));
	memcpy(c->page + 16 + c->len + 4, payload, plen);
	c->len += 4 + plen;
	c->last_ts = ts;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "exit-id", required_argument, NULL, 'x' },
		{ "entry-id", required_argument, NULL, 'n' },
		{ "cpus", required_argument, NULL, 'c' },
		{ "switch-id", required_argument, NULL, 's' },
		{ "wakeup-id", required_argument, NULL, 'w' },
		{ "uexit-id", required_argument, NULL, 'u' },
		{ "vwake-id", required_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 },
	};
	struct cpu_out cpus[MAX_CPUS] = { 0 };
	unsigned int exit_id = 0, entry_id = 0, switch_id = 0, wakeup_id = 0, uexit_id = 0, vwake_id = 0;
	unsigned int nr = 0, i;
	const char *dir = NULL;
	char line[512], path[4200];
	int c, ret = 0;

	while ((c = getopt_long(argc, argv, "o:", lo, NULL)) != -1) {
		switch (c) {
		case 'o': dir = optarg; break;
		case 'x': exit_id = strtoul(optarg, NULL, 0); break;
		case 'n': entry_id = strtoul(optarg, NULL, 0); break;
		case 'c': nr = strtoul(optarg, NULL, 0); break;
		case 's': switch_id = strtoul(optarg, NULL, 0); break;
		case 'w': wakeup_id = strtoul(optarg, NULL, 0); break;
		case 'u': uexit_id = strtoul(optarg, NULL, 0); break;
		case 'v': vwake_id = strtoul(optarg, NULL, 0); break;
		default: return 2;
		}
	}
	if (!dir || !exit_id || !entry_id || !nr || nr > MAX_CPUS) {
		fprintf(stderr, "usage: vt-mkkvm -o DIR --exit-id N --entry-id N --cpus N < EVENTS\n");
		return 2;
	}
	for (i = 0; i < nr; i++) {
		snprintf(path, sizeof(path), "%s/cpu%u.raw", dir, i);
		cpus[i].f = fopen(path, "w");
		if (!cpus[i].f) {
			perror(path);
			return 1;
		}
	}
	while (fgets(line, sizeof(line), stdin)) {
		uint64_t ts, rip;
		unsigned int cpu, vcpu, reason;
		uint8_t p[EXIT_LEN] = { 0 };
		char kind[16], comm[16];
		int pid, next, err;
		long long state;

		if (sscanf(line, "%u %" SCNu64 " %d %15s", &cpu, &ts, &pid, kind) != 4 || cpu >= nr) {
			fprintf(stderr, "vt-mkkvm: bad line: %s", line);
			return 1;
		}
		put16(p, strcmp(kind, "exit") && strcmp(kind, "svmexit") ? entry_id : exit_id);
		put32(p + 4, pid);
		if (!strcmp(kind, "newpage")) {
			ret = flush_page(&cpus[cpu]);
		} else if (!strcmp(kind, "sw") && switch_id &&
		    sscanf(line, "%*u %*u %*d %*s %lld %d %15s", &state, &next, comm) == 3) {
			memset(p, 0, sizeof(p));
			put16(p, switch_id);
			put32(p + 4, pid);
			snprintf((char *)p + 8, 16, "vcpu");
			put32(p + 24, pid);
			put64(p + 32, (uint64_t)state);
			memcpy(p + 40, comm, strnlen(comm, 15));
			put32(p + 56, next);
			ret = add_event(&cpus[cpu], ts, p, SWITCH_LEN);
		} else if (!strcmp(kind, "wakeup") && wakeup_id &&
			   sscanf(line, "%*u %*u %*d %*s %d %u", &next, &vcpu) == 2) {
			put16(p, wakeup_id);
			if (sscanf(line, "%*u %*u %*d %*s %*d %*u %15s", comm) != 1)
				snprintf(comm, sizeof(comm), "vcpu");
			memcpy(p + 8, comm, strnlen(comm, 15));
			put32(p + 24, next);
			put32(p + 32, vcpu);
			ret = add_event(&cpus[cpu], ts, p, WAKEUP_LEN);
		} else if (!strcmp(kind, "uexit") && uexit_id &&
			   sscanf(line, "%*u %*u %*d %*s %u %d", &reason, &err) == 2) {
			put16(p, uexit_id);
			put32(p + 8, reason);
			put32(p + 12, (uint32_t)err);
			ret = add_event(&cpus[cpu], ts, p, UEXIT_LEN);
		} else if (!strcmp(kind, "vwake") && vwake_id &&
			   sscanf(line, "%*u %*u %*d %*s %u", &vcpu) == 1) {
			put16(p, vwake_id);
			put64(p + 8, 1000);
			p[16] = vcpu != 0;
			p[17] = 1;
			ret = add_event(&cpus[cpu], ts, p, VWAKE_LEN);
		} else if (!strcmp(kind, "switch") && switch_id &&
		    sscanf(line, "%*u %*u %*d %*s %d %15s", &next, comm) == 2) {
			memset(p, 0, sizeof(p));
			put16(p, switch_id);
			put32(p + 4, pid);
			snprintf((char *)p + 8, 16, "prev");
			put32(p + 24, pid);
			memcpy(p + 40, comm, strnlen(comm, 15));
			put32(p + 56, next);
			ret = add_event(&cpus[cpu], ts, p, SWITCH_LEN);
		} else if ((!strcmp(kind, "exit") || !strcmp(kind, "svmexit")) &&
		    sscanf(line, "%*u %*u %*d %*s %u %u %" SCNx64, &vcpu, &reason, &rip) == 3) {
			put32(p + 8, reason);
			put64(p + 16, rip);
			put32(p + 24, strcmp(kind, "exit") ? 2 : 1);	/* isa: SVM, VMX */
			put32(p + 56, vcpu);
			ret = add_event(&cpus[cpu], ts, p, EXIT_LEN);
		} else if (!strcmp(kind, "entry") &&
			   sscanf(line, "%*u %*u %*d %*s %u %" SCNx64, &vcpu, &rip) == 2) {
			put32(p + 8, vcpu);
			put64(p + 16, rip);
			ret = add_event(&cpus[cpu], ts, p, ENTRY_LEN);
		} else {
			fprintf(stderr, "vt-mkkvm: bad line: %s", line);
			return 1;
		}
		if (ret < 0)
			return 1;
	}
	for (i = 0; i < nr; i++)
		if (flush_page(&cpus[i]) < 0 || fclose(cpus[i].f) != 0)
			return 1;
	return 0;
}
