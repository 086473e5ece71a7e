/* units_test: every accepted and rejected form of the value parsers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"

static void fraction_is(const char *text, double expected)
{
	double value = -1;

	if (gpurun_parse_fraction(text, &value) != 0)
		fail_msg("'%s' was rejected", text);
	assert_true(value == expected);
}

static void fraction_rejected(const char *text)
{
	double value = 42;

	if (gpurun_parse_fraction(text, &value) == 0)
		fail_msg("'%s' was accepted as %g", text, value);
	assert_true(value == 42);
}

static void fraction_decimal(void **state)
{
	(void)state;
	fraction_is("0.3", 0.3);
	fraction_is("0", 0);
	fraction_is("1", 1);
	fraction_is("1.0", 1);
	fraction_is(".5", 0.5);
	fraction_is("0.", 0);
	fraction_is("0.123456", 0.123456);
}

static void fraction_percent(void **state)
{
	(void)state;
	fraction_is("30%", 0.3);
	fraction_is("30.5%", 0.305);
	fraction_is("0%", 0);
	fraction_is("100%", 1);
	fraction_is("50%", 0.5);
}

static void fraction_out_of_range(void **state)
{
	(void)state;
	fraction_rejected("1.5");
	fraction_rejected("1.0000001");
	fraction_rejected("100.5%");
	fraction_rejected("150%");
	fraction_rejected("-0.1");
	fraction_rejected("-0");
	fraction_rejected("+0.3");
}

static void fraction_malformed(void **state)
{
	(void)state;
	fraction_rejected("");
	fraction_rejected(".");
	fraction_rejected("%");
	fraction_rejected("nan");
	fraction_rejected("NAN");
	fraction_rejected("inf");
	fraction_rejected(" 0.3");
	fraction_rejected("0.3 ");
	fraction_rejected("0.3x");
	fraction_rejected("30%%");
	fraction_rejected("30 %");
	fraction_rejected("0x0.8");
	fraction_rejected("3e-1");
	fraction_rejected("0,3");
}

/* Thresholds written to full precision mean exactly the double they spell, as in GPUtil
 * (Python's float()): a fraction printed by repr() compared strictly against the same GPU's
 * memory use must not come out one ulp off, in either form. */
static void fraction_full_precision_is_exact(void **state)
{
	char text[64];
	unsigned seed = 12345;

	(void)state;
	fraction_is("0.09012858072916667", 2215.0 / 24576);
	fraction_is("9.012858072916667%", strtod("0.09012858072916667", NULL));
	for (int i = 0; i < 20000; i++) {
		double x = (double)rand_r(&seed) / RAND_MAX * (double)rand_r(&seed) / RAND_MAX;
		double y;

		snprintf(text, sizeof(text), "%.17f", x);
		fraction_is(text, strtod(text, NULL));
		snprintf(text, sizeof(text), "%.15f%%", x * 100);
		y = strtod(text, NULL) / 100;
		if (gpurun_parse_fraction(text, &x) != 0 || fabs(x - y) > 1e-15)
			fail_msg("'%s' gave %.17g, not about %.17g", text, x, y);
	}
	fraction_is("0.00000000000000000000000000000000000000000000000000000000000000001", 1e-65);
	fraction_is("000000000000000000000000000000000000000000000000000000000000000000.5", 0.5);
	fraction_is("0.5000000000000000000000000000000000000000000000000000000000000000000000", 0.5);
	fraction_is("0.00000000000000000000000000000000000000000000000000000000000000001"
		    "00000000000000000000000000000000000000000000000000000000000000000", 1e-65);
	fraction_rejected("0.10000000000000000000000000000000000000000000000000000000000000000"
			  "00000000000000000000000000000000000000000000000000000000000000001");
	double seconds;
	assert_int_equal(gpurun_parse_duration("1000000000000000000000000000000000000000000000000"
					       "0000000000000000000000", &seconds), 0);
	assert_true(seconds == 1e70);
	assert_int_equal(gpurun_parse_duration("120.000m", &seconds), 0);
	assert_true(seconds == 7200);
}

static void size_is(const char *text, double expected)
{
	double value = -1;

	if (gpurun_parse_size_mib(text, &value) != 0)
		fail_msg("'%s' was rejected", text);
	if (value != expected)
		fail_msg("'%s' gave %g MiB, not %g", text, value, expected);
}

static void size_rejected(const char *text)
{
	double value = 42;

	if (gpurun_parse_size_mib(text, &value) == 0)
		fail_msg("'%s' was accepted as %g MiB", text, value);
	assert_true(value == 42);
}

static void size_bare_number_is_mib(void **state)
{
	(void)state;
	size_is("512", 512);
	size_is("0", 0);
	size_is("1.5", 1.5);
}

static void size_binary_units(void **state)
{
	(void)state;
	size_is("100K", 100.0 / 1024);
	size_is("512M", 512);
	size_is("20G", 20480);
	size_is("1.5T", 1.5 * 1024 * 1024);
}

static void size_unit_spellings(void **state)
{
	(void)state;
	size_is("20GiB", 20480);
	size_is("20GB", 20480);
	size_is("20g", 20480);
	size_is("20gib", 20480);
	size_is("20gb", 20480);
	size_is("512MiB", 512);
	size_is("1KB", 1.0 / 1024);
	size_is("1TiB", 1024 * 1024);
}

static void size_malformed(void **state)
{
	(void)state;
	size_rejected("");
	size_rejected("G");
	size_rejected("-1");
	size_rejected("-1G");
	size_rejected("+1G");
	size_rejected("20X");
	size_rejected("20Gi");
	size_rejected("20GiBs");
	size_rejected("20 G");
	size_rejected(" 20G");
	size_rejected("20G ");
	size_rejected("512B");
	size_rejected("nan");
	size_rejected("inf");
	size_rejected("1e3");
}

static void size_overflow(void **state)
{
	char huge[400];

	(void)state;
	memset(huge, '9', sizeof(huge) - 2);
	huge[sizeof(huge) - 2] = 'T';
	huge[sizeof(huge) - 1] = '\0';
	size_rejected(huge);
}

static void duration_is(const char *text, double expected)
{
	double value = -1;

	if (gpurun_parse_duration(text, &value) != 0)
		fail_msg("'%s' was rejected", text);
	if (value != expected)
		fail_msg("'%s' gave %g s, not %g", text, value, expected);
}

static void duration_rejected(const char *text)
{
	double value = 42;

	if (gpurun_parse_duration(text, &value) == 0)
		fail_msg("'%s' was accepted as %g s", text, value);
	assert_true(value == 42);
}

static void duration_bare_number_is_seconds(void **state)
{
	(void)state;
	duration_is("90", 90);
	duration_is("0", 0);
	duration_is("2.5", 2.5);
}

static void duration_units(void **state)
{
	(void)state;
	duration_is("90s", 90);
	duration_is("15m", 900);
	duration_is("1.5m", 90);
	duration_is("2h", 7200);
	duration_is("1d", 86400);
}

static void duration_malformed(void **state)
{
	(void)state;
	duration_rejected("");
	duration_rejected("s");
	duration_rejected("-1");
	duration_rejected("-1s");
	duration_rejected("10x");
	duration_rejected("10ms");
	duration_rejected("10 s");
	duration_rejected("10S");
	duration_rejected("inf");
	duration_rejected("infs");
	duration_rejected("nan");
	duration_rejected(" 10");
}

static void count_is(const char *text, unsigned expected)
{
	unsigned value = 12345;

	if (gpurun_parse_count(text, &value) != 0)
		fail_msg("'%s' was rejected", text);
	assert_int_equal(value, expected);
}

static void count_rejected(const char *text)
{
	unsigned value = 12345;

	if (gpurun_parse_count(text, &value) == 0)
		fail_msg("'%s' was accepted as %u", text, value);
	assert_int_equal(value, 12345);
}

static void count_accepted(void **state)
{
	(void)state;
	count_is("0", 0);
	count_is("1", 1);
	count_is("007", 7);
	count_is("4294967295", 4294967295u);
}

static void count_malformed(void **state)
{
	(void)state;
	count_rejected("");
	count_rejected("-1");
	count_rejected("+1");
	count_rejected(" 1");
	count_rejected("1 ");
	count_rejected("1.0");
	count_rejected("1x");
	count_rejected("0x10");
}

static void count_overflow(void **state)
{
	(void)state;
	count_rejected("4294967296");
	count_rejected("99999999999999999999");
}

static void duration_formatted(const char *expected, double seconds)
{
	char text[32];

	gpurun_format_duration(seconds, text, sizeof(text));
	assert_string_equal(text, expected);
}

static void duration_formats_for_people(void **state)
{
	(void)state;
	duration_formatted("0s", 0);
	duration_formatted("0s", -1);
	duration_formatted("1s", 0.6);
	duration_formatted("59s", 59.4);
	duration_formatted("1m00s", 59.7);      /* not "60s" */
	duration_formatted("1m05s", 65);
	duration_formatted("2m00s", 119.6);     /* not "1m60s" */
	duration_formatted("59m59s", 3599.4);
	duration_formatted("1h00m", 3599.6);
	duration_formatted("1h00m", 3659);      /* not "1h01m" for 59 s */
	duration_formatted("2h10m", 7800);
	duration_formatted("26h00m", 93600);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fraction_decimal),
		cmocka_unit_test(fraction_percent),
		cmocka_unit_test(fraction_out_of_range),
		cmocka_unit_test(fraction_malformed),
		cmocka_unit_test(fraction_full_precision_is_exact),
		cmocka_unit_test(size_bare_number_is_mib),
		cmocka_unit_test(size_binary_units),
		cmocka_unit_test(size_unit_spellings),
		cmocka_unit_test(size_malformed),
		cmocka_unit_test(size_overflow),
		cmocka_unit_test(duration_bare_number_is_seconds),
		cmocka_unit_test(duration_units),
		cmocka_unit_test(duration_malformed),
		cmocka_unit_test(duration_formats_for_people),
		cmocka_unit_test(count_accepted),
		cmocka_unit_test(count_malformed),
		cmocka_unit_test(count_overflow),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
