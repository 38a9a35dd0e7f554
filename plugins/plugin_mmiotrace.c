// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtraceevent plugin: the mmiotrace tracer's entries (ftrace/mmiotrace_rw and
 * ftrace/mmiotrace_map) printed the way mmiotrace users read them, instead of
 * the kernel's print fmt of bare numbers:
 *
 *   mmiotrace_rw:  R 4 map=1 phys=0x20040008 value=0x80080783 pc=0xffffffffc0012358 <sym+0x18>
 *   mmiotrace_map: MAP map=1 phys=0xfebc0000 virt=0xffffc90000080000 len=0x20000
 *
 * R and W carry the access width in bytes, as in the kernel's text log;
 * UNKNOWN is an access the kernel could not decode (its value holds the first
 * instruction bytes); UNMAP is an iounmap. Opcodes: 1 read, 2 write, 3 map,
 * 4 unmap, 5 unknown (include/linux/mmiotrace.h).
 *
 * Records come from a guest: a record too short for its fields says so, and
 * one whose format lacks a field is printed field by field.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <event-parse.h>
#include <trace-seq.h>

enum mmio_opcode {
	MMIO_READ = 1,
	MMIO_WRITE = 2,
	MMIO_PROBE = 3,
	MMIO_UNPROBE = 4,
	MMIO_UNKNOWN_OP = 5,
};

int tep_plugin_loader(struct tep_handle *tep);
int tep_plugin_unloader(struct tep_handle *tep);

/*
 * One field of @record: 0, -ENOENT when the format has no such field (the
 * record is then printed field by field), -EOVERFLOW when the record is too
 * short to hold it.
 */
static int field_val(struct tep_event *event, struct tep_record *record, const char *name,
		     unsigned long long *val)
{
	struct tep_format_field *f = tep_find_field(event, name);

	if (!f || f->offset < 0 || f->size <= 0 || f->size > 8)
		return -ENOENT;
	if (f->offset + f->size > record->size)
		return -EOVERFLOW;
	return tep_read_number_field(f, record->data, val) == 0 ? 0 : -ENOENT;
}

/* Read @n fields into @vals; print the record another way when one is missing. */
static bool fields(struct trace_seq *s, struct tep_event *event, struct tep_record *record,
		   const char *const *names, unsigned long long *vals, unsigned int n)
{
	unsigned int i;
	int ret;

	for (i = 0; i < n; i++) {
		ret = field_val(event, record, names[i], &vals[i]);
		if (ret == -EOVERFLOW) {
			trace_seq_printf(s, "[truncated record: %d bytes, no %s]", record->size,
					 names[i]);
			return false;
		}
		if (ret < 0) {
			tep_print_fields(s, record->data, record->size, event);
			return false;
		}
	}
	return true;
}

static void print_pc(struct trace_seq *s, struct tep_event *event, unsigned long long pc)
{
	unsigned long long start;
	unsigned long size;
	const char *name;

	trace_seq_printf(s, " pc=0x%llx", pc);
	if (pc && tep_find_function_info(event->tep, pc, &name, &start, &size) && name)
		trace_seq_printf(s, " <%s+0x%llx>", name, pc - start);
}

static int mmiotrace_rw(struct trace_seq *s, struct tep_record *record, struct tep_event *event,
			void *context)
{
	static const char *const names[] = { "phys", "value", "pc", "map_id", "opcode", "width" };
	enum { PHYS, VALUE, PC, MAP_ID, OPCODE, WIDTH };
	unsigned long long v[6];
	const char *op;

	if (!fields(s, event, record, names, v, 6))
		return 0;
	switch (v[OPCODE]) {
	case MMIO_READ:
		op = "R";
		break;
	case MMIO_WRITE:
		op = "W";
		break;
	default:
		op = "UNKNOWN";
		break;
	}
	trace_seq_printf(s, "%s %llu map=%d phys=0x%llx value=0x%llx", op, v[WIDTH],
			 (int32_t)v[MAP_ID], v[PHYS], v[VALUE]);
	print_pc(s, event, v[PC]);
	if (v[OPCODE] != MMIO_READ && v[OPCODE] != MMIO_WRITE && v[OPCODE] != MMIO_UNKNOWN_OP)
		trace_seq_printf(s, " opcode=%llu", v[OPCODE]);
	return 0;
}

static int mmiotrace_map(struct trace_seq *s, struct tep_record *record, struct tep_event *event,
			 void *context)
{
	static const char *const names[] = { "phys", "virt", "len", "map_id", "opcode" };
	enum { PHYS, VIRT, LEN, MAP_ID, OPCODE };
	unsigned long long v[5];

	if (!fields(s, event, record, names, v, 5))
		return 0;
	switch (v[OPCODE]) {
	case MMIO_PROBE:
		trace_seq_printf(s, "MAP map=%d phys=0x%llx virt=0x%llx len=0x%llx",
				 (int32_t)v[MAP_ID], v[PHYS], v[VIRT], v[LEN]);
		break;
	case MMIO_UNPROBE:
		/* An iounmap knows only the mapping and its virtual address. */
		trace_seq_printf(s, "UNMAP map=%d virt=0x%llx", (int32_t)v[MAP_ID], v[VIRT]);
		break;
	default:
		trace_seq_printf(s, "UNKNOWN map=%d phys=0x%llx virt=0x%llx len=0x%llx opcode=%llu",
				 (int32_t)v[MAP_ID], v[PHYS], v[VIRT], v[LEN], v[OPCODE]);
		break;
	}
	return 0;
}

/**
 * tep_plugin_loader() - register the mmiotrace handlers (libtraceevent calls it)
 * @tep: the trace event parser
 *
 * Return: 0.
 */
int tep_plugin_loader(struct tep_handle *tep)
{
	tep_register_event_handler(tep, -1, "ftrace", "mmiotrace_rw", mmiotrace_rw, NULL);
	tep_register_event_handler(tep, -1, "ftrace", "mmiotrace_map", mmiotrace_map, NULL);
	return 0;
}

/**
 * tep_plugin_unloader() - unregister the handlers
 * @tep: the trace event parser
 *
 * Return: 0.
 */
int tep_plugin_unloader(struct tep_handle *tep)
{
	tep_unregister_event_handler(tep, -1, "ftrace", "mmiotrace_rw", mmiotrace_rw, NULL);
	tep_unregister_event_handler(tep, -1, "ftrace", "mmiotrace_map", mmiotrace_map, NULL);
	return 0;
}
