/* request_test: the option parser, for the command line and for GPURUN_OPTIONS: every option in
 * both value syntaxes, the defaults, and every consistency error with the option it names. */
#include <string.h>

#include "unit.h"

static struct gpurun_request request;
static struct gpurun_error error;

static int free_request(void **state)
{
	(void)state;
	gpurun_request_free(&request);
	return 0;
}

static int parse_argv(char **argv)
{
	int argc = 0;

	while (argv[argc])
		argc++;
	gpurun_request_free(&request);
	gpurun_request_init(&request);
	memset(&error, 0, sizeof(error));
	return gpurun_request_parse(&request, argc, argv, &error);
}

static int parse_string(const char *options)
{
	gpurun_request_free(&request);
	gpurun_request_init(&request);
	memset(&error, 0, sizeof(error));
	return gpurun_request_parse_string(&request, options, &error);
}

#define ARGV(...) ((char *[]){ "gpurun", __VA_ARGS__, NULL })
#define PARSE(...) parse_argv(ARGV(__VA_ARGS__))

static void assert_parsed(int status)
{
	if (status != 0)
		fail_msg("parse failed with %d: %s", status, error.message);
}

static void assert_usage(int status, const char *message)
{
	assert_int_equal(status, GPURUN_EXIT_USAGE);
	assert_int_equal(error.status, GPURUN_EXIT_USAGE);
	assert_string_equal(error.message, message);
}

/* For messages whose exact wording matters less than the option they name. */
static void assert_usage_naming(int status, const char *fragment)
{
	assert_int_equal(status, GPURUN_EXIT_USAGE);
	assert_int_equal(error.status, GPURUN_EXIT_USAGE);
	if (!strstr(error.message, fragment))
		fail_msg("message '%s' does not name '%s'", error.message, fragment);
}

/* ---- defaults and the command -------------------------------------------------------------- */

static void init_sets_documented_defaults(void **state)
{
	(void)state;
	gpurun_request_init(&request);
	assert_int_equal(request.action, GPURUN_ACTION_RUN);
	assert_true(request.max_load == 0.5);
	assert_true(request.max_memory == 0.5);
	assert_true(request.min_free_mib == 0);
	assert_false(request.include_nan);
	assert_null(request.exclude);
	assert_int_equal(request.order, GPURUN_ORDER_FIRST);
	assert_int_equal(request.limit, 1);
	assert_int_equal(request.min_count, 1);
	assert_false(request.min_count_set);
	assert_int_equal(request.random_seed, 0);
	assert_int_equal(request.attempts, 1);
	assert_true(request.interval_s == 10);
	assert_true(request.timeout_s == 0);
	assert_int_equal(request.source, GPURUN_SOURCE_AUTO);
	assert_true(request.smi_timeout_s == 10);
	assert_false(request.hand_out_uuids || request.cpu_fallback || request.no_lease || request.lazy);
	assert_null(request.preload_lib);
	assert_null(request.lock_dir);
	assert_false(request.show_all || request.json || request.verbose || request.explain);
	assert_null(request.command);
	assert_int_equal(request.command_count, 0);
}

static void plain_command_keeps_defaults(void **state)
{
	(void)state;
	assert_parsed(PARSE("python", "train.py"));
	assert_int_equal(request.action, GPURUN_ACTION_RUN);
	assert_int_equal(request.limit, 1);
	assert_int_equal(request.min_count, 1);
	assert_int_equal(request.attempts, 1);
	assert_int_equal(request.command_count, 2);
}

static void command_points_into_argv(void **state)
{
	char **argv = ARGV("--limit", "2", "python", "train.py");

	(void)state;
	assert_parsed(parse_argv(argv));
	assert_ptr_equal(request.command, argv + 3);
	assert_int_equal(request.command_count, 2);
}

static void options_stop_at_first_command_word(void **state)
{
	(void)state;
	assert_parsed(PARSE("--limit", "2", "python", "--limit", "3", "-v"));
	assert_int_equal(request.limit, 2);
	assert_false(request.verbose);
	assert_int_equal(request.command_count, 4);
	assert_string_equal(request.command[0], "python");
	assert_string_equal(request.command[1], "--limit");
}

static void double_dash_ends_options(void **state)
{
	(void)state;
	assert_parsed(PARSE("--limit", "2", "--", "--odd-program", "x"));
	assert_int_equal(request.command_count, 2);
	assert_string_equal(request.command[0], "--odd-program");
}

static void double_dash_without_command_is_no_command(void **state)
{
	(void)state;
	assert_usage(PARSE("--limit", "2", "--"),
		     "no command to run (use --print to print the choice, or --show)");
}

static void no_command_is_an_error(void **state)
{
	(void)state;
	assert_usage(PARSE("--limit", "2"),
		     "no command to run (use --print to print the choice, or --show)");
}

static void no_arguments_at_all_is_no_command(void **state)
{
	char *argv[] = { "gpurun", NULL };

	(void)state;
	gpurun_request_init(&request);
	assert_usage(gpurun_request_parse(&request, 1, argv, &error),
		     "no command to run (use --print to print the choice, or --show)");
}

/* ---- every option ------------------------------------------------------------------------- */

static void limit_number(void **state)
{
	(void)state;
	assert_parsed(PARSE("--limit", "3", "true"));
	assert_int_equal(request.limit, 3);
	assert_parsed(PARSE("--limit=4", "true"));
	assert_int_equal(request.limit, 4);
}

static void limit_all(void **state)
{
	(void)state;
	assert_parsed(PARSE("--limit", "all", "true"));
	assert_int_equal(request.limit, GPURUN_LIMIT_ALL);
	assert_parsed(PARSE("--limit=all", "true"));
	assert_int_equal(request.limit, GPURUN_LIMIT_ALL);
}

static void limit_zero_is_an_error(void **state)
{
	(void)state;
	assert_usage(PARSE("--limit", "0", "true"),
		     "--limit: '0' is not a number of GPUs (1 to 4294967294) or 'all'");
	/* The largest unsigned is what 'all' is stored as: as a number it must not mean all. */
	assert_usage(PARSE("--limit", "4294967295", "true"),
		     "--limit: '4294967295' is not a number of GPUs (1 to 4294967294) or 'all'");
	assert_parsed(PARSE("--limit", "4294967294", "true"));
	assert_int_equal(request.limit, 4294967294u);
}

static void limit_garbage_is_an_error(void **state)
{
	(void)state;
	assert_usage_naming(PARSE("--limit=two", "true"), "--limit: 'two'");
	assert_usage_naming(PARSE("--limit", "-1", "true"), "--limit: '-1'");
}

static void min_count_defaults_to_limit(void **state)
{
	(void)state;
	assert_parsed(PARSE("--limit", "3", "true"));
	assert_int_equal(request.min_count, 3);
	assert_false(request.min_count_set);
	/* A request filled in by a program rather than parsed: the same rule. */
	request.limit = 5;
	assert_int_equal(gpurun_request_needed(&request), 5);
}

static void min_count_with_limit_all_defaults_to_one(void **state)
{
	(void)state;
	assert_parsed(PARSE("--limit", "all", "true"));
	assert_int_equal(request.min_count, 1);
	assert_int_equal(gpurun_request_needed(&request), 1);
}

static void min_count_number(void **state)
{
	(void)state;
	assert_parsed(PARSE("--limit", "4", "--min-count", "2", "true"));
	assert_int_equal(request.min_count, 2);
	assert_true(request.min_count_set);
	assert_int_equal(gpurun_request_needed(&request), 2);
	assert_parsed(PARSE("--min-count=3", "--limit=4", "true"));
	assert_int_equal(request.min_count, 3);
}

static void min_count_with_limit_all_is_free(void **state)
{
	(void)state;
	assert_parsed(PARSE("--limit", "all", "--min-count", "5", "true"));
	assert_int_equal(request.min_count, 5);
}

static void min_count_above_limit_is_an_error(void **state)
{
	(void)state;
	assert_usage(PARSE("--min-count", "3", "--limit", "2", "true"),
		     "--min-count 3 is more than --limit 2");
}

static void min_count_zero_is_an_error(void **state)
{
	(void)state;
	assert_usage(PARSE("--min-count", "0", "true"),
		     "--min-count: '0' is not a number of GPUs (1 or more)");
}

static void max_load_both_forms(void **state)
{
	(void)state;
	assert_parsed(PARSE("--max-load", "0.3", "true"));
	assert_true(request.max_load == 0.3);
	assert_parsed(PARSE("--max-load=30%", "true"));
	assert_true(request.max_load == 0.3);
}

static void max_load_out_of_range_is_an_error(void **state)
{
	(void)state;
	assert_usage(PARSE("--max-load", "1.5", "true"),
		     "--max-load: '1.5' is not a fraction between 0 and 1 (e.g. 0.3 or 30%)");
}

static void max_load_one_is_legal(void **state)
{
	(void)state;
	assert_parsed(PARSE("--max-load", "1", "true"));
	assert_true(request.max_load == 1);
}

static void max_memory_both_forms(void **state)
{
	(void)state;
	assert_parsed(PARSE("--max-memory", "0.25", "true"));
	assert_true(request.max_memory == 0.25);
	assert_parsed(PARSE("--max-memory=100%", "true"));
	assert_true(request.max_memory == 1);
}

static void max_memory_bad_value_is_an_error(void **state)
{
	(void)state;
	assert_usage(PARSE("--max-memory=-0.1", "true"),
		     "--max-memory: '-0.1' is not a fraction between 0 and 1 (e.g. 0.3 or 30%)");
}

static void min_free_both_forms(void **state)
{
	(void)state;
	assert_parsed(PARSE("--min-free", "20G", "true"));
	assert_true(request.min_free_mib == 20480);
	assert_parsed(PARSE("--min-free=512", "true"));
	assert_true(request.min_free_mib == 512);
}

static void min_free_bad_value_is_an_error(void **state)
{
	(void)state;
	assert_usage_naming(PARSE("--min-free", "20X", "true"), "--min-free: '20X'");
}

static void include_nan_flag(void **state)
{
	(void)state;
	assert_parsed(PARSE("--include-nan", "true"));
	assert_true(request.include_nan);
}

static void exclude_both_forms(void **state)
{
	(void)state;
	assert_parsed(PARSE("--exclude", "0,GPU-abc", "true"));
	assert_string_equal(request.exclude, "0,GPU-abc");
	assert_parsed(PARSE("--exclude=3", "true"));
	assert_string_equal(request.exclude, "3");
}

static void exclude_is_a_copy(void **state)
{
	char value[] = "1,2";
	char **argv = ARGV("--exclude", value, "true");

	(void)state;
	assert_parsed(parse_argv(argv));
	value[0] = '9';
	assert_string_equal(request.exclude, "1,2");
}

static void exclude_given_twice_excludes_both(void **state)
{
	(void)state;
	assert_parsed(PARSE("--exclude", "1", "--exclude", "2,GPU-ab", "true"));
	assert_string_equal(request.exclude, "1,2,GPU-ab");
}

static void exclude_word_that_could_name_no_gpu_is_an_error(void **state)
{
	(void)state;
	assert_usage_naming(PARSE("--exclude", "2x", "true"), "--exclude: '2x'");
	assert_usage_naming(PARSE("--exclude", "--", "true"), "--exclude: '--'");
	assert_usage_naming(PARSE("--exclude", "0,GPU-", "true"), "--exclude: '0,GPU-'");
	assert_usage_naming(PARSE("--exclude", "GPU-xyz", "true"), "--exclude: 'GPU-xyz'");
	assert_usage_naming(PARSE("--exclude", "c37e0b91", "true"), "--exclude: 'c37e0b91'");
	assert_usage_naming(PARSE("--exclude", "1234567890", "true"), "--exclude: '1234567890'");
	assert_parsed(PARSE("--exclude", "mig-0A-1,gpu-C37E,007", "true"));
	assert_parsed(PARSE("--exclude", "MIG-GPU-c37e0b91-5a28-4f6d-8e14-b92a6c0d7f35/1/0", "true"));
	assert_usage_naming(PARSE("--exclude", "GPU-c37e/1", "true"), "--exclude: 'GPU-c37e/1'");
}

static void exclude_empty_entry_is_an_error(void **state)
{
	(void)state;
	assert_usage_naming(PARSE("--exclude", "0,,1", "true"), "--exclude: '0,,1'");
	assert_usage_naming(PARSE("--exclude", "0,", "true"), "--exclude: '0,'");
	assert_usage_naming(PARSE("--exclude=", "true"), "--exclude: ''");
	assert_usage_naming(PARSE("--exclude", "0, 1", "true"), "--exclude: '0, 1'");
}

static void order_every_name(void **state)
{
	static const struct {
		const char *word;
		enum gpurun_order order;
	} orders[] = {
		{ "first", GPURUN_ORDER_FIRST }, { "last", GPURUN_ORDER_LAST },
		{ "random", GPURUN_ORDER_RANDOM }, { "load", GPURUN_ORDER_LOAD },
		{ "memory", GPURUN_ORDER_MEMORY }, { "free", GPURUN_ORDER_FREE },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(orders) / sizeof(orders[0]); i++) {
		assert_parsed(PARSE("--order", (char *)orders[i].word, "--limit=2", "true"));
		assert_int_equal(request.order, orders[i].order);
		assert_string_equal(gpurun_order_name(orders[i].order), orders[i].word);
	}
	assert_parsed(PARSE("--order=last", "true"));
	assert_int_equal(request.order, GPURUN_ORDER_LAST);
}

static void order_unknown_is_an_error(void **state)
{
	(void)state;
	assert_usage(PARSE("--order", "fastest", "true"),
		     "--order: 'fastest' is not one of first, last, random, load, memory, free");
}

static void seed_both_forms(void **state)
{
	(void)state;
	assert_parsed(PARSE("--order", "random", "--seed", "42", "true"));
	assert_int_equal(request.random_seed, 42);
	assert_parsed(PARSE("--seed=7", "--order=random", "true"));
	assert_int_equal(request.random_seed, 7);
	assert_usage(PARSE("--order", "random", "--seed", "4294967296", "true"),
		     "--seed: '4294967296' is not an integer from 0 to 4294967295");
}

/* Options that would change nothing are refused, as --json without --show is. */
static void options_that_would_change_nothing_are_errors(void **state)
{
	(void)state;
	assert_usage_naming(PARSE("--seed", "42", "true"), "--seed needs --order random");
	assert_usage_naming(PARSE("--order", "load", "--seed", "1", "true"),
			    "--seed needs --order random");
	assert_usage_naming(PARSE("--preload-lib", "/p.so", "true"), "--preload-lib needs --lazy");
	assert_usage_naming(PARSE("--timeout", "1m", "--attempts", "3", "true"),
			    "--timeout and --attempts cannot be used together");
	assert_usage_naming(PARSE("--attempts", "1", "--timeout", "1m", "true"),
			    "--timeout and --attempts cannot be used together");
	assert_usage_naming(PARSE("--lazy", "--vendor", "amd", "true"), "NVIDIA GPUs only");
	assert_usage_naming(PARSE("--source", "amdgpu", "--lazy", "true"), "NVIDIA GPUs only");
}

static void seed_bad_value_is_an_error(void **state)
{
	(void)state;
	assert_usage_naming(PARSE("--seed", "-3", "true"), "--seed: '-3'");
}

static void attempts_both_forms(void **state)
{
	(void)state;
	assert_parsed(PARSE("--attempts", "5", "true"));
	assert_int_equal(request.attempts, 5);
	assert_parsed(PARSE("--attempts=6", "true"));
	assert_int_equal(request.attempts, 6);
}

static void attempts_zero_is_an_error(void **state)
{
	(void)state;
	assert_usage(PARSE("--attempts", "0", "true"),
		     "--attempts: '0' is not a number of attempts (1 or more)");
}

static void wait_means_unlimited_attempts(void **state)
{
	(void)state;
	assert_parsed(PARSE("--wait", "true"));
	assert_int_equal(request.attempts, GPURUN_ATTEMPTS_UNLIMITED);
}

static void wait_with_attempts_is_an_error(void **state)
{
	(void)state;
	assert_usage_naming(PARSE("--wait", "--attempts", "3", "true"),
			    "--wait and --attempts cannot be used together");
	assert_usage_naming(PARSE("--attempts", "3", "--wait", "true"),
			    "--wait and --attempts cannot be used together");
}

static void interval_both_forms(void **state)
{
	(void)state;
	assert_parsed(PARSE("--interval", "30", "true"));
	assert_true(request.interval_s == 30);
	assert_parsed(PARSE("--interval=1.5m", "true"));
	assert_true(request.interval_s == 90);
}

static void interval_zero_is_legal(void **state)
{
	(void)state;
	assert_parsed(PARSE("--interval", "0", "true"));
	assert_true(request.interval_s == 0);
}

static void interval_bad_value_is_an_error(void **state)
{
	(void)state;
	assert_usage_naming(PARSE("--interval", "soon", "true"), "--interval: 'soon'");
}

static void timeout_both_forms(void **state)
{
	(void)state;
	assert_parsed(PARSE("--timeout", "2h", "true"));
	assert_true(request.timeout_s == 7200);
	assert_parsed(PARSE("--timeout=90", "true"));
	assert_true(request.timeout_s == 90);
}

static void timeout_zero_is_an_error(void **state)
{
	(void)state;
	assert_usage_naming(PARSE("--timeout", "0", "true"), "--timeout: '0'");
}

static void source_every_name(void **state)
{
	(void)state;
	assert_parsed(PARSE("--source", "nvml", "true"));
	assert_int_equal(request.source, GPURUN_SOURCE_NVML);
	assert_parsed(PARSE("--source=nvidia-smi", "true"));
	assert_int_equal(request.source, GPURUN_SOURCE_SMI);
	assert_parsed(PARSE("--source", "auto", "true"));
	assert_int_equal(request.source, GPURUN_SOURCE_AUTO);
}

static void source_unknown_is_an_error(void **state)
{
	(void)state;
	assert_usage(PARSE("--source", "smi", "true"),
		     "--source: 'smi' is not one of auto, nvml, nvidia-smi, amdgpu");
}

static void source_names(void **state)
{
	(void)state;
	assert_string_equal(gpurun_source_name(GPURUN_SOURCE_AUTO), "auto");
	assert_string_equal(gpurun_source_name(GPURUN_SOURCE_NVML), "nvml");
	assert_string_equal(gpurun_source_name(GPURUN_SOURCE_SMI), "nvidia-smi");
	assert_string_equal(gpurun_source_name(GPURUN_SOURCE_AMDGPU), "amdgpu");
	assert_string_equal(gpurun_source_name((enum gpurun_source)99), "unknown");
	assert_string_equal(gpurun_order_name((enum gpurun_order)99), "unknown");
}

static void smi_timeout_both_forms(void **state)
{
	(void)state;
	assert_parsed(PARSE("--smi-timeout", "3", "true"));
	assert_true(request.smi_timeout_s == 3);
	assert_parsed(PARSE("--smi-timeout=2m", "true"));
	assert_true(request.smi_timeout_s == 120);
}

static void smi_timeout_zero_is_an_error(void **state)
{
	(void)state;
	assert_usage_naming(PARSE("--smi-timeout", "0", "true"), "--smi-timeout: '0'");
}

static void hand_off_flags(void **state)
{
	(void)state;
	assert_parsed(PARSE("--uuid", "true"));
	assert_true(request.hand_out_uuids);
	assert_parsed(PARSE("--cpu-fallback", "true"));
	assert_true(request.cpu_fallback);
	assert_parsed(PARSE("--no-lease", "true"));
	assert_true(request.no_lease);
	assert_parsed(PARSE("--lazy", "true"));
	assert_true(request.lazy);
	assert_false(request.hand_out_uuids);
}

static void paths_both_forms(void **state)
{
	(void)state;
	assert_parsed(PARSE("--lazy", "--preload-lib", "/opt/p.so", "--lock-dir=/run/locks", "true"));
	assert_string_equal(request.preload_lib, "/opt/p.so");
	assert_string_equal(request.lock_dir, "/run/locks");
	assert_parsed(PARSE("--lazy", "--preload-lib=/x.so", "--lock-dir", "/y", "true"));
	assert_string_equal(request.preload_lib, "/x.so");
	assert_string_equal(request.lock_dir, "/y");
}

static void empty_path_is_an_error(void **state)
{
	(void)state;
	assert_usage_naming(PARSE("--lock-dir=", "true"), "--lock-dir");
	assert_usage_naming(PARSE("--preload-lib", "", "true"), "--preload-lib");
}

static void value_may_start_with_a_dash(void **state)
{
	(void)state;
	assert_parsed(PARSE("--lock-dir", "-odd", "true"));
	assert_string_equal(request.lock_dir, "-odd");
}

/* ---- actions and reports ------------------------------------------------------------------- */

static void print_action(void **state)
{
	(void)state;
	assert_parsed(PARSE("--print"));
	assert_int_equal(request.action, GPURUN_ACTION_PRINT);
	assert_null(request.command);
}

static void show_action(void **state)
{
	(void)state;
	assert_parsed(PARSE("--show"));
	assert_int_equal(request.action, GPURUN_ACTION_SHOW);
}

static void show_all_and_json(void **state)
{
	(void)state;
	assert_parsed(PARSE("--show", "--all"));
	assert_true(request.show_all);
	assert_parsed(PARSE("--json", "--show"));
	assert_true(request.json);
}

static void repeated_action_is_harmless(void **state)
{
	(void)state;
	assert_parsed(PARSE("--print", "--print"));
	assert_int_equal(request.action, GPURUN_ACTION_PRINT);
}

static void print_with_show_is_an_error(void **state)
{
	(void)state;
	assert_usage(PARSE("--print", "--show"), "--print and --show cannot be used together");
}

static void print_with_command_is_an_error(void **state)
{
	(void)state;
	assert_usage(PARSE("--print", "python"), "--print runs no command, but 'python' was given");
}

static void show_with_command_is_an_error(void **state)
{
	(void)state;
	assert_usage(PARSE("--show", "--", "python"),
		     "--show runs no command, but 'python' was given");
}

static void all_without_show_is_an_error(void **state)
{
	(void)state;
	assert_usage(PARSE("--all", "--print"), "--all needs --show");
}

static void json_without_show_is_an_error(void **state)
{
	(void)state;
	assert_usage(PARSE("--json", "true"), "--json needs --show");
}

static void json_with_print_is_an_error(void **state)
{
	(void)state;
	assert_usage(PARSE("--print", "--json"), "--json needs --show");
}

static void lazy_with_print_is_an_error(void **state)
{
	(void)state;
	assert_usage(PARSE("--lazy", "--print"), "--lazy cannot be used with --print");
}

static void lazy_with_show_is_an_error(void **state)
{
	(void)state;
	assert_usage(PARSE("--show", "--lazy"), "--lazy cannot be used with --show");
}

static void verbose_long_and_short(void **state)
{
	(void)state;
	assert_parsed(PARSE("--verbose", "true"));
	assert_true(request.verbose);
	assert_parsed(PARSE("-v", "true"));
	assert_true(request.verbose);
}

static void explain_implies_verbose(void **state)
{
	(void)state;
	assert_parsed(PARSE("--explain", "true"));
	assert_true(request.explain);
	assert_true(request.verbose);
}

static void explain_with_print(void **state)
{
	(void)state;
	assert_parsed(PARSE("--explain", "--print"));
	assert_true(request.explain);
	assert_int_equal(request.action, GPURUN_ACTION_PRINT);
}

static void help_long_and_short(void **state)
{
	(void)state;
	assert_parsed(PARSE("--help"));
	assert_int_equal(request.action, GPURUN_ACTION_HELP);
	assert_parsed(PARSE("-h"));
	assert_int_equal(request.action, GPURUN_ACTION_HELP);
}

static void version_long_and_short(void **state)
{
	(void)state;
	assert_parsed(PARSE("--version"));
	assert_int_equal(request.action, GPURUN_ACTION_VERSION);
	assert_parsed(PARSE("-V"));
	assert_int_equal(request.action, GPURUN_ACTION_VERSION);
}

static void help_wins_over_mistakes(void **state)
{
	(void)state;
	assert_parsed(PARSE("--lmit", "--limit", "0", "-h"));
	assert_int_equal(request.action, GPURUN_ACTION_HELP);
	assert_parsed(PARSE("--print", "--show", "--all", "--help", "python"));
	assert_int_equal(request.action, GPURUN_ACTION_HELP);
}

static void version_wins_over_mistakes(void **state)
{
	(void)state;
	assert_parsed(PARSE("--wait", "--attempts", "2", "-V"));
	assert_int_equal(request.action, GPURUN_ACTION_VERSION);
}

static void help_wins_over_version(void **state)
{
	(void)state;
	assert_parsed(PARSE("-V", "-h"));
	assert_int_equal(request.action, GPURUN_ACTION_HELP);
}

/* ---- option syntax errors ------------------------------------------------------------------ */

static void unknown_option(void **state)
{
	(void)state;
	assert_usage(PARSE("--lmit", "2", "true"), "unknown option '--lmit'");
}

static void unknown_option_with_value(void **state)
{
	(void)state;
	assert_usage(PARSE("--lmit=2", "true"), "unknown option '--lmit'");
}

static void unknown_short_option(void **state)
{
	(void)state;
	assert_usage(PARSE("-x", "true"), "unknown option '-x'");
	assert_usage(PARSE("-hv", "true"), "unknown option '-hv'");
}

static void abbreviation_is_unknown(void **state)
{
	(void)state;
	assert_usage(PARSE("--lim", "2", "true"), "unknown option '--lim'");
}

static void missing_value(void **state)
{
	(void)state;
	assert_usage(PARSE("--limit"), "option '--limit' needs a value");
}

static void flag_with_value_is_an_error(void **state)
{
	(void)state;
	assert_usage(PARSE("--print=yes"), "option '--print' takes no value");
	assert_usage(PARSE("-v=1", "true"), "option '--verbose' takes no value");
	assert_usage(PARSE("-vh", "true"), "unknown option '-vh'");
}

static void first_error_is_reported(void **state)
{
	(void)state;
	assert_usage(PARSE("--lmit", "--limit", "0", "true"), "unknown option '--lmit'");
}

/* ---- GPURUN_OPTIONS ------------------------------------------------------------------------ */

static void string_options(void **state)
{
	(void)state;
	assert_parsed(parse_string("--limit 2 --order memory --max-load=30%"));
	assert_int_equal(request.limit, 2);
	assert_int_equal(request.order, GPURUN_ORDER_MEMORY);
	assert_true(request.max_load == 0.3);
	assert_int_equal(request.action, GPURUN_ACTION_RUN);
	assert_null(request.command);
}

static void string_empty_keeps_defaults(void **state)
{
	(void)state;
	assert_parsed(parse_string(""));
	assert_int_equal(request.limit, 1);
	assert_parsed(parse_string(" \t\n "));
	assert_int_equal(request.limit, 1);
}

static void string_blanks_of_every_kind_separate(void **state)
{
	(void)state;
	assert_parsed(parse_string("\t--limit\n3   --uuid "));
	assert_int_equal(request.limit, 3);
	assert_true(request.hand_out_uuids);
}

static void string_single_quotes(void **state)
{
	(void)state;
	assert_parsed(parse_string("--lock-dir '/tmp/a b\\c \"d\"'"));
	assert_string_equal(request.lock_dir, "/tmp/a b\\c \"d\"");
}

static void string_double_quotes_with_escapes(void **state)
{
	(void)state;
	assert_parsed(parse_string("--lock-dir \"/tmp/a \\\"b\\\" \\\\c \\n 'd'\""));
	assert_string_equal(request.lock_dir, "/tmp/a \"b\" \\c \\n 'd'");
}

static void string_backslash_outside_quotes(void **state)
{
	(void)state;
	assert_parsed(parse_string("--lock-dir /tmp/a\\ b\\'c"));
	assert_string_equal(request.lock_dir, "/tmp/a b'c");
}

static void string_quoted_parts_join(void **state)
{
	(void)state;
	assert_parsed(parse_string("--lock-dir=/tmp/'a b'\"c d\"e"));
	assert_string_equal(request.lock_dir, "/tmp/a bc de");
}

static void string_unbalanced_single_quote(void **state)
{
	(void)state;
	assert_usage(parse_string("--lock-dir '/tmp/a"), "GPURUN_OPTIONS: unbalanced ' quote");
}

static void string_unbalanced_double_quote(void **state)
{
	(void)state;
	assert_usage(parse_string("--lock-dir \"/tmp/a\\\""), "GPURUN_OPTIONS: unbalanced \" quote");
}

static void string_lone_backslash_at_end(void **state)
{
	(void)state;
	assert_usage(parse_string("--uuid \\"), "GPURUN_OPTIONS: ends with a lone backslash");
}

static void string_command_is_an_error(void **state)
{
	(void)state;
	assert_usage(parse_string("--limit 2 python"),
		     "GPURUN_OPTIONS cannot contain a command (found 'python')");
}

static void string_command_after_double_dash_is_an_error(void **state)
{
	(void)state;
	assert_usage(parse_string("-- python"),
		     "GPURUN_OPTIONS cannot contain a command (found 'python')");
}

static void string_errors_name_the_variable(void **state)
{
	(void)state;
	assert_usage(parse_string("--lmit 2"), "GPURUN_OPTIONS: unknown option '--lmit'");
	assert_usage(parse_string("--max-load 2"),
		     "GPURUN_OPTIONS: --max-load: '2' is not a fraction between 0 and 1 (e.g. 0.3 or 30%)");
	assert_usage(parse_string("--wait --attempts 2"),
		     "GPURUN_OPTIONS: --wait and --attempts cannot be used together (--wait means unlimited attempts)");
}

static void string_values_are_owned(void **state)
{
	char options[] = "--lock-dir /locks --exclude 1,2";

	(void)state;
	assert_parsed(parse_string(options));
	memset(options, 'x', sizeof(options) - 1);
	assert_string_equal(request.lock_dir, "/locks");
	assert_string_equal(request.exclude, "1,2");
}

static void string_preload_lib_is_the_commands(void **state)
{
	(void)state;
	assert_int_equal(parse_string("--lazy --preload-lib /p.so"), GPURUN_EXIT_USAGE);
	assert_non_null(strstr(error.message, "GPURUN_OPTIONS: --preload-lib is the gpurun command's"));
}

static void string_empty_quotes_are_an_empty_value(void **state)
{
	(void)state;
	assert_usage_naming(parse_string("--lock-dir ''"), "--lock-dir: the path is empty");
}

/* ---- processes, watch, vendors (issue 6) ------------------------------------------------- */

static void show_processes_wide(void **state)
{
	(void)state;
	assert_parsed(PARSE("--show", "--processes", "--wide"));
	assert_true(request.processes);
	assert_true(request.wide);
	assert_true(request.watch_s == 0);
}

static void processes_and_wide_need_show(void **state)
{
	(void)state;
	assert_usage(PARSE("--processes", "true"), "--processes needs --show");
	assert_usage(PARSE("--print", "--wide"), "--wide needs --show");
}

static void watch_interval_is_optional(void **state)
{
	(void)state;
	assert_parsed(PARSE("--show", "--watch"));
	assert_true(request.watch_s == 2);
	assert_parsed(PARSE("--show", "--watch", "0.5"));
	assert_true(request.watch_s == 0.5);
	assert_parsed(PARSE("--watch", "1m", "--show"));
	assert_true(request.watch_s == 60);
	assert_parsed(PARSE("--show", "--watch=3"));
	assert_true(request.watch_s == 3);
	assert_parsed(PARSE("--show", "--watch", "--json"));
	assert_true(request.watch_s == 2);
	assert_true(request.json);
}

static void watch_bad_values(void **state)
{
	(void)state;
	assert_usage_naming(PARSE("--show", "--watch=0"), "--watch: '0'");
	assert_usage_naming(PARSE("--show", "--watch=soon"), "--watch: 'soon'");
	/* Not a duration, so not the interval: a command, which --show does not take. */
	assert_usage(PARSE("--show", "--watch", "top"), "--show runs no command, but 'top' was given");
	assert_usage(PARSE("--watch", "true"), "--watch needs --show");
}

static void vendor_every_name(void **state)
{
	(void)state;
	assert_parsed(PARSE("--vendor", "amd", "true"));
	assert_int_equal(request.vendor, GPURUN_VENDOR_ONLY_AMD);
	assert_parsed(PARSE("--vendor=nvidia", "true"));
	assert_int_equal(request.vendor, GPURUN_VENDOR_ONLY_NVIDIA);
	assert_parsed(PARSE("--vendor", "any", "true"));
	assert_int_equal(request.vendor, GPURUN_VENDOR_ANY);
	assert_parsed(PARSE("--source", "amdgpu", "true"));
	assert_int_equal(request.source, GPURUN_SOURCE_AMDGPU);
	assert_usage(PARSE("--vendor", "intel", "true"),
		     "--vendor: 'intel' is not one of nvidia, amd, any");
}

static void vendor_and_source_must_agree(void **state)
{
	(void)state;
	assert_usage(PARSE("--source", "nvml", "--vendor", "amd", "true"),
		     "--source nvml reads NVIDIA GPUs only, not --vendor amd");
	assert_usage(PARSE("--vendor", "nvidia", "--source", "amdgpu", "true"),
		     "--source amdgpu reads AMD GPUs only, not --vendor nvidia");
	assert_parsed(PARSE("--source", "nvidia-smi", "--vendor", "nvidia", "true"));
}

#define TEST(name) cmocka_unit_test_teardown(name, free_request)

int main(void)
{
	const struct CMUnitTest tests[] = {
		TEST(init_sets_documented_defaults),
		TEST(plain_command_keeps_defaults),
		TEST(command_points_into_argv),
		TEST(options_stop_at_first_command_word),
		TEST(double_dash_ends_options),
		TEST(double_dash_without_command_is_no_command),
		TEST(no_command_is_an_error),
		TEST(no_arguments_at_all_is_no_command),
		TEST(limit_number),
		TEST(limit_all),
		TEST(limit_zero_is_an_error),
		TEST(limit_garbage_is_an_error),
		TEST(min_count_defaults_to_limit),
		TEST(min_count_with_limit_all_defaults_to_one),
		TEST(min_count_number),
		TEST(min_count_with_limit_all_is_free),
		TEST(min_count_above_limit_is_an_error),
		TEST(min_count_zero_is_an_error),
		TEST(max_load_both_forms),
		TEST(max_load_out_of_range_is_an_error),
		TEST(max_load_one_is_legal),
		TEST(max_memory_both_forms),
		TEST(max_memory_bad_value_is_an_error),
		TEST(min_free_both_forms),
		TEST(min_free_bad_value_is_an_error),
		TEST(include_nan_flag),
		TEST(exclude_both_forms),
		TEST(exclude_is_a_copy),
		TEST(exclude_given_twice_excludes_both),
		TEST(exclude_word_that_could_name_no_gpu_is_an_error),
		TEST(exclude_empty_entry_is_an_error),
		TEST(order_every_name),
		TEST(order_unknown_is_an_error),
		TEST(seed_both_forms),
		TEST(options_that_would_change_nothing_are_errors),
		TEST(seed_bad_value_is_an_error),
		TEST(attempts_both_forms),
		TEST(attempts_zero_is_an_error),
		TEST(wait_means_unlimited_attempts),
		TEST(wait_with_attempts_is_an_error),
		TEST(interval_both_forms),
		TEST(interval_zero_is_legal),
		TEST(interval_bad_value_is_an_error),
		TEST(timeout_both_forms),
		TEST(timeout_zero_is_an_error),
		TEST(source_every_name),
		TEST(source_unknown_is_an_error),
		TEST(source_names),
		TEST(smi_timeout_both_forms),
		TEST(smi_timeout_zero_is_an_error),
		TEST(hand_off_flags),
		TEST(paths_both_forms),
		TEST(empty_path_is_an_error),
		TEST(value_may_start_with_a_dash),
		TEST(print_action),
		TEST(show_action),
		TEST(show_all_and_json),
		TEST(repeated_action_is_harmless),
		TEST(print_with_show_is_an_error),
		TEST(print_with_command_is_an_error),
		TEST(show_with_command_is_an_error),
		TEST(all_without_show_is_an_error),
		TEST(json_without_show_is_an_error),
		TEST(json_with_print_is_an_error),
		TEST(lazy_with_print_is_an_error),
		TEST(lazy_with_show_is_an_error),
		TEST(verbose_long_and_short),
		TEST(explain_implies_verbose),
		TEST(explain_with_print),
		TEST(help_long_and_short),
		TEST(version_long_and_short),
		TEST(help_wins_over_mistakes),
		TEST(version_wins_over_mistakes),
		TEST(help_wins_over_version),
		TEST(unknown_option),
		TEST(unknown_option_with_value),
		TEST(unknown_short_option),
		TEST(abbreviation_is_unknown),
		TEST(missing_value),
		TEST(flag_with_value_is_an_error),
		TEST(first_error_is_reported),
		TEST(string_options),
		TEST(string_empty_keeps_defaults),
		TEST(string_blanks_of_every_kind_separate),
		TEST(string_single_quotes),
		TEST(string_double_quotes_with_escapes),
		TEST(string_backslash_outside_quotes),
		TEST(string_quoted_parts_join),
		TEST(string_unbalanced_single_quote),
		TEST(string_unbalanced_double_quote),
		TEST(string_lone_backslash_at_end),
		TEST(string_command_is_an_error),
		TEST(string_command_after_double_dash_is_an_error),
		TEST(string_errors_name_the_variable),
		TEST(string_values_are_owned),
		TEST(string_preload_lib_is_the_commands),
		TEST(string_empty_quotes_are_an_empty_value),
		TEST(show_processes_wide),
		TEST(processes_and_wide_need_show),
		TEST(watch_interval_is_optional),
		TEST(watch_bad_values),
		TEST(vendor_every_name),
		TEST(vendor_and_source_must_agree),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
