/* holder_fuzz: libFuzzer target for lease holder records (gpurun_holder_parse): lock files
 * live in a directory every user can write, so their text is anyone's. */
#include "fuzz.h"
#include "gpurun.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gpurun_holder holder;
	/* An exact-size copy: a read past the record is an ASan report. */
	char *copy = malloc(size ? size : 1);

	if (!copy)
		abort();
	if (size)
		memcpy(copy, data, size);
	int status = gpurun_holder_parse(copy, size, &holder);
	free(copy);
	fuzz_require(status == 0 || status == -1);
	fuzz_require(status != 0 || holder.pid > 0);
	fuzz_require_terminated(holder.user);
	fuzz_require_terminated(holder.host);
	fuzz_require_terminated(holder.command);
	return 0;
}
