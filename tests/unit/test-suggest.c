// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * "Did you mean": the edit distance counts one step for an insertion,
 * deletion, substitution or a swap of neighbours, case aside; only names
 * within 1 + len/4 steps are offered, nearest first, the nearest ones only;
 * nothing is offered for a name too far from every other, or for the name
 * itself.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "vt_suggest.h"

static void t_distance(void **state)
{
	(void)state;
	assert_int_equal(vt_edit_distance("sched_switch", "sched_switch"), 0);
	assert_int_equal(vt_edit_distance("sched_swich", "sched_switch"), 1);	/* deletion */
	assert_int_equal(vt_edit_distance("sched_swtich", "sched_switch"), 1);	/* swap */
	assert_int_equal(vt_edit_distance("Sched_Switch", "sched_switch"), 0);	/* case */
	assert_int_equal(vt_edit_distance("", "nop"), 3);
	assert_int_equal(vt_edit_distance("kitten", "sitting"), 3);
}

static void t_suggest(void **state)
{
	static const char *const events[] = {
		"sched:sched_switch", "sched:sched_wakeup", "sched:sched_wakeup_new",
		"irq:irq_handler_entry", "irq:irq_handler_exit", "timer:timer_start",
	};
	struct vt_suggest sg;
	char buf[1024];
	size_t i;

	(void)state;
	vt_suggest_init(&sg, "sched:sched_swich");
	for (i = 0; i < sizeof(events) / sizeof(events[0]); i++)
		vt_suggest_add(&sg, events[i]);
	vt_suggest_format(&sg, buf, sizeof(buf));
	assert_string_equal(buf, "did you mean sched:sched_switch?");

	/* The nearest only (entry at 1, exit at 3); two at the same distance, both. */
	vt_suggest_init(&sg, "irq:irq_handler_entr");
	for (i = 0; i < sizeof(events) / sizeof(events[0]); i++)
		vt_suggest_add(&sg, events[i]);
	vt_suggest_format(&sg, buf, sizeof(buf));
	assert_string_equal(buf, "did you mean irq:irq_handler_entry?");
	vt_suggest_init(&sg, "nap");
	vt_suggest_add(&sg, "nop");
	vt_suggest_add(&sg, "map");
	vt_suggest_add(&sg, "function_graph");
	vt_suggest_format(&sg, buf, sizeof(buf));
	assert_string_equal(buf, "did you mean nop or map?");

	/* Nothing close, and the name itself is no suggestion. */
	vt_suggest_init(&sg, "xyzzy");
	vt_suggest_add(&sg, "sched:sched_switch");
	vt_suggest_add(&sg, "xyzzy");
	vt_suggest_format(&sg, buf, sizeof(buf));
	assert_string_equal(buf, "");

	/* A small buffer is cut, never overrun. */
	vt_suggest_init(&sg, "sched:sched_swich");
	vt_suggest_add(&sg, "sched:sched_switch");
	assert_int_equal(vt_suggest_format(&sg, buf, 8), 7);
	assert_string_equal(buf, "did you");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_distance),
		cmocka_unit_test(t_suggest),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
