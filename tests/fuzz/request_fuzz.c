/* request_fuzz: libFuzzer target for the option parser, both ways in: GPURUN_OPTIONS text
 * (gpurun_request_parse_string, read by the preload library inside any program) and a command
 * line (gpurun_request_parse, the input split at NUL bytes into argv). The first byte chooses. */
#include "fuzz.h"
#include "gpurun.h"

#define MAX_WORDS 64

static void check_request(const struct gpurun_request *request)
{
	fuzz_require(strcmp(gpurun_order_name(request->order), "unknown") != 0);
	fuzz_require(strcmp(gpurun_source_name(request->source), "unknown") != 0);
	fuzz_require(!isnan(request->max_load) && !isnan(request->max_memory));
	fuzz_require(!isnan(request->min_free_mib) && request->min_free_mib >= 0);
	fuzz_require(!isnan(request->interval_s) && request->interval_s >= 0);
	fuzz_require(!isnan(request->timeout_s) && request->timeout_s >= 0);
	fuzz_require(!isnan(request->smi_timeout_s) && request->smi_timeout_s >= 0);
	fuzz_require(request->limit >= 1);
	if (request->action == GPURUN_ACTION_RUN || request->action == GPURUN_ACTION_PRINT)
		fuzz_require(request->limit == GPURUN_LIMIT_ALL ||
			     request->min_count <= request->limit);
	/* Strings the request keeps are its own copies, still readable after the input is gone. */
	if (request->exclude)
		fuzz_require(strlen(request->exclude) < (size_t)-1);
	if (request->lock_dir)
		fuzz_require(strlen(request->lock_dir) < (size_t)-1);
}

static void check_error(int status, const struct gpurun_error *err)
{
	fuzz_require(status == GPURUN_EXIT_USAGE || status == GPURUN_EXIT_SOFTWARE);
	fuzz_require_terminated(err->message);
	fuzz_require(err->message[0] != '\0');
}

static void parse_text(const uint8_t *data, size_t size)
{
	struct gpurun_request request;
	struct gpurun_error err;
	char *text = fuzz_text(data, size);

	gpurun_request_init(&request);
	int status = gpurun_request_parse_string(&request, text, &err);
	free(text);         /* the request must not point into it */
	if (status == 0) {
		check_request(&request);
		fuzz_require(request.command == NULL || request.command_count == 0);
	} else {
		check_error(status, &err);
	}
	gpurun_request_free(&request);
}

static void parse_argv(const uint8_t *data, size_t size)
{
	struct gpurun_request request;
	struct gpurun_error err;
	char *words[MAX_WORDS + 2];
	char *storage;
	size_t count = fuzz_split(data, size, words + 1, MAX_WORDS, &storage);

	words[0] = "gpurun";
	words[count + 1] = NULL;
	gpurun_request_init(&request);
	int status = gpurun_request_parse(&request, (int)count + 1, words, &err);
	if (status == 0) {
		check_request(&request);
		if (request.command_count > 0) {
			fuzz_require(request.command > words && request.command <= words + count);
			fuzz_require(request.command + request.command_count == words + count + 1);
		}
	} else {
		check_error(status, &err);
	}
	gpurun_request_free(&request);
	free(storage);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	if (data[0] & 1)
		parse_argv(data + 1, size - 1);
	else
		parse_text(data + 1, size - 1);
	return 0;
}
