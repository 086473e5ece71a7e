/* units: the value parsers behind the options (fractions, sizes, durations, counts), and
 * durations written back for people.
 * Numbers are scanned by hand so that a host program's locale (LC_NUMERIC) cannot change them. */
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gpurun.h"

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* The longest decimal accepted: more digits than any double can tell apart, with room. */
#define DECIMAL_MAX 64

/* Scans a plain decimal, "12", "0.3", ".5" or "5." (no sign, no blanks, no exponent, no hex, no
 * inf or nan), and converts it times 10^-shift with one rounding, as strtod rounds the same
 * number: "30%" and "0.3" give one double. strtod reads the digits without their decimal point
 * and an exponent instead, so that a host program's LC_NUMERIC cannot change its reading.
 * Returns the text after the number, or NULL when there is none (or it has more than
 * DECIMAL_MAX digits from its first to its last that is not 0). */
static const char *scan_decimal(const char *text, int shift, double *value)
{
	char digits[DECIMAL_MAX + 16] = "0";
	size_t count = 0, zeros = 0;    /* zeros after the last other digit, held back */
	int exponent = -shift;
	bool seen_point = false, seen_digit = false;
	const char *s = text;

	for (; is_digit(*s) || (*s == '.' && !seen_point); s++) {
		if (*s == '.') {
			seen_point = true;
			continue;
		}
		seen_digit = true;
		exponent -= seen_point;
		/* Leading zeros say nothing; trailing ones only scale: neither takes room. */
		if (*s == '0') {
			zeros += count > 0;
			continue;
		}
		if (count + zeros >= DECIMAL_MAX)
			return NULL;
		memset(digits + count, '0', zeros);
		count += zeros;
		zeros = 0;
		digits[count++] = *s;
	}
	if (!seen_digit)
		return NULL;
	count += count == 0;    /* all zeros: the "0" already there */
	snprintf(digits + count, sizeof(digits) - count, "e%d", exponent + (int)zeros);
	*value = strtod(digits, NULL);
	return s;
}

int gpurun_parse_fraction(const char *text, double *fraction)
{
	double value;
	const char *rest = scan_decimal(text, 0, &value);

	if (rest && strcmp(rest, "%") == 0)
		rest = scan_decimal(text, 2, &value);
	else if (rest && *rest != '\0')
		return -1;
	if (!rest || !(value >= 0 && value <= 1))
		return -1;
	*fraction = value;
	return 0;
}

/* Binary units, in MiB: G = 1024 MiB. */
static const struct {
	char letter;
	double mib;
} size_units[] = {
	{ 'k', 1.0 / 1024 },
	{ 'm', 1 },
	{ 'g', 1024 },
	{ 't', 1024.0 * 1024 },
};

int gpurun_parse_size_mib(const char *text, double *mib)
{
	double number;
	const char *rest = scan_decimal(text, 0, &number);
	double unit = 1;
	double value;

	if (!rest)
		return -1;
	if (*rest != '\0') {
		size_t i;

		for (i = 0; i < sizeof(size_units) / sizeof(size_units[0]); i++)
			if ((*rest | 0x20) == size_units[i].letter)
				break;
		if (i == sizeof(size_units) / sizeof(size_units[0]))
			return -1;
		unit = size_units[i].mib;
		rest++;
		if (*rest != '\0' && strcasecmp(rest, "iB") != 0 && strcasecmp(rest, "B") != 0)
			return -1;
	}
	value = number * unit;
	if (!isfinite(value))
		return -1;
	*mib = value;
	return 0;
}

int gpurun_parse_duration(const char *text, double *seconds)
{
	double number;
	const char *rest = scan_decimal(text, 0, &number);
	double unit;
	double value;

	if (!rest)
		return -1;
	if (strcmp(rest, "") == 0 || strcmp(rest, "s") == 0)
		unit = 1;
	else if (strcmp(rest, "m") == 0)
		unit = 60;
	else if (strcmp(rest, "h") == 0)
		unit = 3600;
	else if (strcmp(rest, "d") == 0)
		unit = 86400;
	else
		return -1;
	value = number * unit;
	if (!isfinite(value))
		return -1;
	*seconds = value;
	return 0;
}

int gpurun_parse_count(const char *text, unsigned *count)
{
	unsigned value = 0;

	if (!is_digit(*text))
		return -1;
	for (const char *s = text; *s; s++) {
		if (!is_digit(*s))
			return -1;
		if (value > (UINT_MAX - (unsigned)(*s - '0')) / 10)
			return -1;
		value = value * 10 + (unsigned)(*s - '0');
	}
	*count = value;
	return 0;
}

/* Whole seconds first, so that 59.7 s reads 1m00s, not 60s or 0m60s. */
void gpurun_format_duration(double seconds, char *text, size_t size)
{
	long whole = seconds > 0 ? (long)(seconds + 0.5) : 0;

	if (whole < 60)
		snprintf(text, size, "%lds", whole);
	else if (whole < 3600)
		snprintf(text, size, "%ldm%02lds", whole / 60, whole % 60);
	else
		snprintf(text, size, "%ldh%02ldm", whole / 3600, whole % 3600 / 60);
}
