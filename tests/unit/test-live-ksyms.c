// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The live view's kallsyms table (host-collector/record/live-tep.c, compiled
 * into this test) resolves every address as libtraceevent's own
 * tep_parse_kallsyms() does: the same name and start for each symbol's
 * address, the byte after it, the byte before it, and the ends, aliases
 * (several names at one address) included:
 *  - a made-up kallsyms with aliases, a module, '$' names and absolute
 *    symbols (left out by both);
 *  - this host's /proc/kallsyms (about 5 MB; skipped where it is not
 *    readable or shows zero addresses);
 *  - lines libtraceevent reads otherwise (a second space, "0x"): the text is
 *    left to tep_parse_kallsyms() itself.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "live-tep.c"
#include "vt_grow.h"

static const char made_up[] =
	"ffffffff81000000 T _stext\n"
	"ffffffff81000000 T startup_64\n"
	"ffffffff81000000 t alias_c\n"
	"ffffffff81000040 T second\n"
	"\n"
	"ffffffff81000040 W second_weak\n"
	"ffffffff81000080 t $x_bogus\n"
	"0000000000001000 A fixed_percpu_data\n"
	"0000000000002000 a abs_lower\n"
	"ffffffff810000c0 T third\n"
	"ffffffffc0a01000 t modfunc\t[e1000]\n"
	"ffffffffc0a01000 t modalias\t[e1000]\n"
	"ffffffffc0a01100 T modlast\t[e1000]\n";

/* Both handles agree on @addr. */
static void same(struct tep_handle *want, struct tep_handle *got, unsigned long long addr)
{
	const char *a = tep_find_function(want, addr), *b = tep_find_function(got, addr);

	if (!a || !b) {
		if (a != b)
			fail_msg("0x%llx: libtraceevent %s, ours %s", addr, a ? a : "none", b ? b : "none");
		return;
	}
	if (strcmp(a, b))
		fail_msg("0x%llx: libtraceevent %s, ours %s", addr, a, b);
	assert_int_equal(tep_find_function_address(want, addr), tep_find_function_address(got, addr));
}

/* Every address of @text, its neighbours and the ends, through both; true when ours was used. */
static bool compare(const char *text, unsigned int *nr)
{
	struct tep_handle *want = tep_alloc(), *got = tep_alloc();
	struct ksyms *k;
	const char *p;
	bool ours;

	assert_non_null(want);
	assert_non_null(got);
	assert_int_equal(tep_parse_kallsyms(want, text), 0);
	k = load_kallsyms(got, text, strlen(text));
	ours = k != NULL;
	*nr = 0;
	same(want, got, 0);
	same(want, got, ~0ull);
	for (p = text; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p)) {
		unsigned long long addr = strtoull(p, NULL, 16);

		same(want, got, addr);
		same(want, got, addr + 1);
		same(want, got, addr - 1);
		(*nr)++;
	}
	tep_free(got);
	tep_free(want);
	ksyms_free(k);
	return ours;
}

static void made_up_kallsyms(void **state)
{
	struct ksyms *k = ksyms_read(made_up, strlen(made_up));
	unsigned int nr;

	(void)state;
	assert_non_null(k);
	assert_int_equal(k->nr, 9);	/* no '$' name, no absolute symbol */
	ksyms_free(k);
	assert_true(compare(made_up, &nr));
	assert_int_equal(nr, 13);	/* the blank line too */
}

static void host_kallsyms(void **state)
{
	char *text = NULL;
	size_t len = 0, cap = 0;
	unsigned int nr;
	FILE *f;

	(void)state;
	f = fopen("/proc/kallsyms", "re");
	if (!f)
		skip();
	for (;;) {
		size_t n;

		assert_int_equal(vt_grow((void **)&text, &cap, len + 65536 + 1, 1), 0);
		n = fread(text + len, 1, 65536, f);
		if (!n)
			break;
		len += n;
	}
	fclose(f);
	text[len] = '\0';
	if (len < 1000 || !strncmp(text, "0000000000000000", 16)) {
		free(text);
		skip();		/* not root: every address reads 0 */
	}
	assert_true(compare(text, &nr));
	print_message("this host's kallsyms: %u lines, every address resolved alike\n", nr);
	free(text);
}

static void odd_lines_left_to_libtraceevent(void **state)
{
	static const char two_spaces[] =
		"ffffffff81000000 T _stext\n"
		"ffffffff81000040  T second\n";
	static const char prefixed[] =
		"0xffffffff81000000 T _stext\n";
	unsigned int nr;

	(void)state;
	assert_null(ksyms_read(two_spaces, strlen(two_spaces)));
	assert_null(ksyms_read(prefixed, strlen(prefixed)));
	assert_false(compare(two_spaces, &nr));
	assert_false(compare(prefixed, &nr));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(made_up_kallsyms),
		cmocka_unit_test(host_kallsyms),
		cmocka_unit_test(odd_lines_left_to_libtraceevent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
