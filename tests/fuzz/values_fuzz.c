/* values_fuzz: libFuzzer target for the option value parsers (sizes, durations, fractions,
 * counts), which read what users type and what GPURUN_OPTIONS holds. */
#include "fuzz.h"
#include "gpurun.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_text(data, size);
	double value;
	unsigned count;

	/* Every parser promises: no negatives, no NaN, nothing accepted with trailing garbage. */
	value = -1;
	if (gpurun_parse_fraction(text, &value) == 0)
		fuzz_require(!isnan(value) && value >= 0);
	value = -1;
	if (gpurun_parse_size_mib(text, &value) == 0)
		fuzz_require(!isnan(value) && value >= 0);
	value = -1;
	if (gpurun_parse_duration(text, &value) == 0)
		fuzz_require(!isnan(value) && value >= 0);
	if (gpurun_parse_count(text, &count) == 0)
		fuzz_require(text[0] != '\0' && text[0] != '-');
	free(text);
	return 0;
}
