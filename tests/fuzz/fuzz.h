/* fuzz.h: what every libFuzzer target in tests/fuzz shares: the input as C text, and checks
 * that crash the target (so libFuzzer keeps the input) when a parser breaks its promises. */
#ifndef GPURUN_FUZZ_H
#define GPURUN_FUZZ_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken promise is a finding: say which, and crash. */
#define fuzz_require(condition)                                                              \
	do {                                                                                 \
		if (!(condition)) {                                                          \
			fprintf(stderr, "%s:%d: broken promise: %s\n", __FILE__, __LINE__,   \
				#condition);                                                 \
			abort();                                                             \
		}                                                                            \
	} while (0)

/* The input as a NUL-terminated string (it may hold NULs of its own, which end it early, as
 * they would in an environment variable). Free it. */
static inline char *fuzz_text(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);

	if (!text)
		abort();
	if (size)
		memcpy(text, data, size);
	text[size] = '\0';
	return text;
}

/* A fixed-size string field is always terminated inside its array. */
#define fuzz_require_terminated(array) fuzz_require(memchr((array), '\0', sizeof(array)) != NULL)

/* Splits the input at NUL bytes into at most max pieces, each a NUL-terminated string in one
 * allocation (*storage, to free). Returns how many. */
static inline size_t fuzz_split(const uint8_t *data, size_t size, char **pieces, size_t max,
				char **storage)
{
	size_t count = 0;
	char *text = fuzz_text(data, size);

	*storage = text;
	if (max == 0)
		return 0;
	pieces[count++] = text;
	for (size_t i = 0; i < size && count < max; i++) {
		if (text[i] == '\0')
			pieces[count++] = text + i + 1;
	}
	return count;
}

#endif
