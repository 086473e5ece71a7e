/* request: the one option parser, for gpurun's command line and for GPURUN_OPTIONS. Every option
 * is one row of the table below; how options fit together is checked once, after the last one. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gpurun.h"

static const char *const order_names[] = {
	[GPURUN_ORDER_FIRST] = "first",
	[GPURUN_ORDER_LAST] = "last",
	[GPURUN_ORDER_RANDOM] = "random",
	[GPURUN_ORDER_LOAD] = "load",
	[GPURUN_ORDER_MEMORY] = "memory",
	[GPURUN_ORDER_FREE] = "free",
};

static const char *const source_names[] = {
	[GPURUN_SOURCE_AUTO] = "auto",
	[GPURUN_SOURCE_NVML] = "nvml",
	[GPURUN_SOURCE_SMI] = "nvidia-smi",
	[GPURUN_SOURCE_AMDGPU] = "amdgpu",
};

static const char *const vendor_names[] = {
	[GPURUN_VENDOR_ANY] = "any",
	[GPURUN_VENDOR_ONLY_NVIDIA] = "nvidia",
	[GPURUN_VENDOR_ONLY_AMD] = "amd",
};

#define COUNT_OF(array) (sizeof(array) / sizeof((array)[0]))

const char *gpurun_order_name(enum gpurun_order order)
{
	return (size_t)order < COUNT_OF(order_names) ? order_names[order] : "unknown";
}

const char *gpurun_source_name(enum gpurun_source source)
{
	return (size_t)source < COUNT_OF(source_names) ? source_names[source] : "unknown";
}

void gpurun_request_init(struct gpurun_request *request)
{
	memset(request, 0, sizeof(*request));
	request->action = GPURUN_ACTION_RUN;
	request->max_load = 0.5;
	request->max_memory = 0.5;
	request->min_free_mib = 0;
	request->order = GPURUN_ORDER_FIRST;
	request->limit = 1;
	request->min_count = 1;
	request->attempts = 1;
	request->interval_s = 10;
	request->timeout_s = 0;
	request->source = GPURUN_SOURCE_AUTO;
	request->smi_timeout_s = 10;
}

void gpurun_request_free(struct gpurun_request *request)
{
	free(request->exclude);
	free(request->preload_lib);
	free(request->lock_dir);
	request->exclude = NULL;
	request->preload_lib = NULL;
	request->lock_dir = NULL;
}

unsigned gpurun_request_needed(const struct gpurun_request *request)
{
	if (request->min_count_set)
		return request->min_count;
	/* With --limit all, "all of them or nothing" would fail on any busy machine: one will do. */
	return request->limit == GPURUN_LIMIT_ALL ? 1 : request->limit;
}

/* ---- one parse: what it has seen so far ---------------------------------------------------- */

struct parser {
	struct gpurun_request *request;
	struct gpurun_error *err;
	const char *origin;             /* prefix of every message: "" or "GPURUN_OPTIONS: " */
	int status;                     /* of the first failure; parsing goes on to find -h/-V */
	bool action_seen[GPURUN_ACTION_VERSION + 1];
	bool command_line;              /* argv, not GPURUN_OPTIONS */
	bool wait_seen;
	bool attempts_seen;
	bool seed_seen;
};

/* Records the first failure only: later words may be nonsense caused by the first mistake. */
static int reject(struct parser *p, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int reject(struct parser *p, int status, const char *fmt, ...)
{
	char message[sizeof(p->err->message)];
	va_list args;

	if (p->status != 0)
		return status;
	va_start(args, fmt);
	vsnprintf(message, sizeof(message), fmt, args);
	va_end(args);
	p->status = status;
	return gpurun_fail(p->err, status, "%s%s", p->origin, message);
}

/* ---- the options ----------------------------------------------------------------------------- */

struct option_spec;
typedef int apply_fn(struct parser *p, const struct option_spec *option, const char *value);

/* What follows an option's name: nothing, a value (in its word after '=', or the next word),
 * or --watch's optional duration (after '=', or the next word when it is a duration). */
enum option_value { NO_VALUE, VALUE, OPTIONAL_DURATION };

struct option_spec {
	const char *name;
	char short_name;                /* 0: none */
	enum option_value value;
	apply_fn *apply;
	size_t field;                   /* where the shared handlers store it: a *_FIELD below */
	enum gpurun_action action;      /* for apply_action */
};

/* The request field a shared handler stores into. Its type is checked where the table names
 * it (a field of another type matches no association and does not compile), so that FIELD's
 * cast back is always right. (A type in an association cannot be parenthesized.) */
#define TYPED_FIELD(member, type)                                                            \
	(offsetof(struct gpurun_request, member) +                                           \
	 _Generic(((struct gpurun_request *)0)->member, type: 0)) /* NOLINT(bugprone-macro-parentheses) */
#define BOOL_FIELD(member) TYPED_FIELD(member, bool)
#define DOUBLE_FIELD(member) TYPED_FIELD(member, double)
#define STRING_FIELD(member) TYPED_FIELD(member, char *)
#define FIELD(type, option) (*(type *)((char *)p->request + (option)->field))

static int apply_limit(struct parser *p, const struct option_spec *option, const char *value)
{
	unsigned limit;

	if (strcmp(value, "all") == 0) {
		p->request->limit = GPURUN_LIMIT_ALL;
		return 0;
	}
	/* The largest count is GPURUN_LIMIT_ALL's value: a number, it must not mean "all". */
	if (gpurun_parse_count(value, &limit) != 0 || limit == 0 || limit == GPURUN_LIMIT_ALL)
		return reject(p, GPURUN_EXIT_USAGE,
			      "%s: '%s' is not a number of GPUs (1 to %u) or 'all'",
			      option->name, value, GPURUN_LIMIT_ALL - 1);
	p->request->limit = limit;
	return 0;
}

static int apply_min_count(struct parser *p, const struct option_spec *option, const char *value)
{
	unsigned count;

	if (gpurun_parse_count(value, &count) != 0 || count == 0)
		return reject(p, GPURUN_EXIT_USAGE, "%s: '%s' is not a number of GPUs (1 or more)",
			      option->name, value);
	p->request->min_count = count;
	p->request->min_count_set = true;
	return 0;
}

static int apply_fraction(struct parser *p, const struct option_spec *option, const char *value)
{
	if (gpurun_parse_fraction(value, &FIELD(double, option)) != 0)
		return reject(p, GPURUN_EXIT_USAGE,
			      "%s: '%s' is not a fraction between 0 and 1 (e.g. 0.3 or 30%%)",
			      option->name, value);
	return 0;
}

static int apply_size(struct parser *p, const struct option_spec *option, const char *value)
{
	if (gpurun_parse_size_mib(value, &FIELD(double, option)) != 0)
		return reject(p, GPURUN_EXIT_USAGE,
			      "%s: '%s' is not a size (MiB, or with a unit: 512M, 20G, 1.5TiB)",
			      option->name, value);
	return 0;
}

static int apply_interval(struct parser *p, const struct option_spec *option, const char *value)
{
	if (gpurun_parse_duration(value, &FIELD(double, option)) != 0)
		return reject(p, GPURUN_EXIT_USAGE,
			      "%s: '%s' is not a duration (seconds, or with a unit: 90s, 15m, 2h, 1d)",
			      option->name, value);
	return 0;
}

/* A timeout of zero could only mean "give up at once" or "never": both would surprise. */
static int apply_timeout(struct parser *p, const struct option_spec *option, const char *value)
{
	double seconds;

	if (gpurun_parse_duration(value, &seconds) != 0 || seconds <= 0)
		return reject(p, GPURUN_EXIT_USAGE,
			      "%s: '%s' is not a duration above 0 (seconds, or with a unit: 90s, 15m, 2h, 1d)",
			      option->name, value);
	FIELD(double, option) = seconds;
	return 0;
}

static int apply_attempts(struct parser *p, const struct option_spec *option, const char *value)
{
	unsigned attempts;

	if (gpurun_parse_count(value, &attempts) != 0 || attempts == 0)
		return reject(p, GPURUN_EXIT_USAGE, "%s: '%s' is not a number of attempts (1 or more)",
			      option->name, value);
	p->request->attempts = attempts;
	p->attempts_seen = true;
	return 0;
}

static int apply_wait(struct parser *p, const struct option_spec *option, const char *value)
{
	(void)option;
	(void)value;
	p->request->attempts = GPURUN_ATTEMPTS_UNLIMITED;
	p->wait_seen = true;
	return 0;
}

static int apply_seed(struct parser *p, const struct option_spec *option, const char *value)
{
	if (gpurun_parse_count(value, &p->request->random_seed) != 0)
		return reject(p, GPURUN_EXIT_USAGE, "%s: '%s' is not an integer from 0 to %u",
			      option->name, value, UINT_MAX);
	p->seed_seen = true;
	return 0;
}

static int find_name(const char *const *names, size_t count, const char *value)
{
	for (size_t i = 0; i < count; i++)
		if (names[i] && strcmp(names[i], value) == 0)
			return (int)i;
	return -1;
}

static int apply_order(struct parser *p, const struct option_spec *option, const char *value)
{
	int order = find_name(order_names, COUNT_OF(order_names), value);

	if (order < 0)
		return reject(p, GPURUN_EXIT_USAGE,
			      "%s: '%s' is not one of first, last, random, load, memory, free",
			      option->name, value);
	p->request->order = (enum gpurun_order)order;
	return 0;
}

static int apply_source(struct parser *p, const struct option_spec *option, const char *value)
{
	int source = find_name(source_names, COUNT_OF(source_names), value);

	if (source < 0)
		return reject(p, GPURUN_EXIT_USAGE,
			      "%s: '%s' is not one of auto, nvml, nvidia-smi, amdgpu",
			      option->name, value);
	p->request->source = (enum gpurun_source)source;
	return 0;
}

static int apply_vendor(struct parser *p, const struct option_spec *option, const char *value)
{
	int vendor = find_name(vendor_names, COUNT_OF(vendor_names), value);

	if (vendor < 0)
		return reject(p, GPURUN_EXIT_USAGE, "%s: '%s' is not one of nvidia, amd, any",
			      option->name, value);
	p->request->vendor = (enum gpurun_vendor_filter)vendor;
	return 0;
}

/* --watch [SECONDS]: the interval is optional (parse_words hands over the next word only when
 * it is a duration), as watch(1)'s default of 2 seconds. */
static int apply_watch(struct parser *p, const struct option_spec *option, const char *value)
{
	double seconds = 2;

	if (value && (gpurun_parse_duration(value, &seconds) != 0 || seconds < 0.1))
		return reject(p, GPURUN_EXIT_USAGE,
			      "%s: '%s' is not an interval of 0.1 seconds or more (e.g. 2, 0.5, 1m)",
			      option->name, value);
	p->request->watch_s = seconds;
	return 0;
}

/* Every string in the request is the request's own copy, whichever parser it came from. */
static int store_copy(struct parser *p, char **field, const char *value)
{
	char *copy = strdup(value);

	if (!copy)
		return reject(p, GPURUN_EXIT_SOFTWARE, "out of memory");
	free(*field);
	*field = copy;
	return 0;
}

/* An index ("3"), or a UUID or the start of one: "GPU-c37e0b91", "MIG-..." and, from drivers
 * before R470, "MIG-GPU-<uuid>/<gpu instance>/<compute instance>". */
static bool is_exclusion_word(const char *word, size_t length)
{
	size_t prefix = length > 8 && strncasecmp(word, "MIG-GPU-", 8) == 0 ? 8
			: length > 4 && (strncasecmp(word, "GPU-", 4) == 0 ||
					 strncasecmp(word, "MIG-", 4) == 0) ? 4 : 0;
	const char *allowed = prefix == 8 ? "0123456789abcdefABCDEF-/" : "0123456789abcdefABCDEF-";
	size_t digits = 0;

	if (prefix > 0) {
		for (size_t i = prefix; i < length; i++) {
			if (!word[i] || !strchr(allowed, word[i]))
				return false;
			digits += word[i] != '-' && word[i] != '/';
		}
		return digits > 0;
	}
	for (size_t i = 0; i < length; i++)
		if (word[i] < '0' || word[i] > '9')
			return false;
	/* Nine digits hold every index a machine has; more could overflow the comparison. */
	return length > 0 && length <= 9;
}

/* Exclusion words are matched later against indices and UUIDs; reject here what could never
 * match, so that a typo is not silently "excluding nothing". */
static bool is_word_list(const char *list)
{
	for (const char *s = list;;) {
		size_t length = strcspn(s, ",");

		if (!is_exclusion_word(s, length))
			return false;
		if (s[length] == '\0')
			return true;
		s += length + 1;
	}
}

/* Given twice, --exclude excludes both lists. */
static int apply_exclude(struct parser *p, const struct option_spec *option, const char *value)
{
	char **exclude = &p->request->exclude;
	char *joined;

	if (!is_word_list(value))
		return reject(p, GPURUN_EXIT_USAGE,
			      "%s: '%s' is not a comma list of GPU indices and UUIDs (e.g. 0,3 or GPU-...)",
			      option->name, value);
	if (!*exclude)
		return store_copy(p, exclude, value);
	if (asprintf(&joined, "%s,%s", *exclude, value) < 0)
		return reject(p, GPURUN_EXIT_SOFTWARE, "out of memory");
	free(*exclude);
	*exclude = joined;
	return 0;
}

static int apply_path(struct parser *p, const struct option_spec *option, const char *value)
{
	if (value[0] == '\0')
		return reject(p, GPURUN_EXIT_USAGE, "%s: the path is empty", option->name);
	return store_copy(p, &FIELD(char *, option), value);
}

static int apply_flag(struct parser *p, const struct option_spec *option, const char *value)
{
	(void)value;
	FIELD(bool, option) = true;
	return 0;
}

/* An explanation of every choice is a kind of verbosity. */
static int apply_explain(struct parser *p, const struct option_spec *option, const char *value)
{
	(void)option;
	(void)value;
	p->request->explain = true;
	p->request->verbose = true;
	return 0;
}

static int apply_action(struct parser *p, const struct option_spec *option, const char *value)
{
	(void)value;
	p->action_seen[option->action] = true;
	return 0;
}

static const struct option_spec options[] = {
	/* selection */
	{ "--limit", .value = VALUE, .apply = apply_limit },
	{ "--min-count", .value = VALUE, .apply = apply_min_count },
	{ "--max-load", .value = VALUE, .apply = apply_fraction, .field = DOUBLE_FIELD(max_load) },
	{ "--max-memory", .value = VALUE, .apply = apply_fraction, .field = DOUBLE_FIELD(max_memory) },
	{ "--min-free", .value = VALUE, .apply = apply_size, .field = DOUBLE_FIELD(min_free_mib) },
	{ "--include-nan", .apply = apply_flag, .field = BOOL_FIELD(include_nan) },
	{ "--exclude", .value = VALUE, .apply = apply_exclude },
	{ "--order", .value = VALUE, .apply = apply_order },
	{ "--seed", .value = VALUE, .apply = apply_seed },
	/* waiting */
	{ "--attempts", .value = VALUE, .apply = apply_attempts },
	{ "--interval", .value = VALUE, .apply = apply_interval, .field = DOUBLE_FIELD(interval_s) },
	{ "--wait", .apply = apply_wait },
	{ "--timeout", .value = VALUE, .apply = apply_timeout, .field = DOUBLE_FIELD(timeout_s) },
	/* data source */
	{ "--source", .value = VALUE, .apply = apply_source },
	{ "--smi-timeout", .value = VALUE, .apply = apply_timeout,
	  .field = DOUBLE_FIELD(smi_timeout_s) },
	{ "--vendor", .value = VALUE, .apply = apply_vendor },
	/* hand-off */
	{ "--uuid", .apply = apply_flag, .field = BOOL_FIELD(hand_out_uuids) },
	{ "--cpu-fallback", .apply = apply_flag, .field = BOOL_FIELD(cpu_fallback) },
	{ "--no-lease", .apply = apply_flag, .field = BOOL_FIELD(no_lease) },
	{ "--lazy", .apply = apply_flag, .field = BOOL_FIELD(lazy) },
	{ "--preload-lib", .value = VALUE, .apply = apply_path, .field = STRING_FIELD(preload_lib) },
	{ "--lock-dir", .value = VALUE, .apply = apply_path, .field = STRING_FIELD(lock_dir) },
	/* actions */
	{ "--print", .apply = apply_action, .action = GPURUN_ACTION_PRINT },
	{ "--show", .apply = apply_action, .action = GPURUN_ACTION_SHOW },
	{ "--help", 'h', .apply = apply_action, .action = GPURUN_ACTION_HELP },
	{ "--version", 'V', .apply = apply_action, .action = GPURUN_ACTION_VERSION },
	/* reports */
	{ "--all", .apply = apply_flag, .field = BOOL_FIELD(show_all) },
	{ "--json", .apply = apply_flag, .field = BOOL_FIELD(json) },
	{ "--processes", .apply = apply_flag, .field = BOOL_FIELD(processes) },
	{ "--wide", .apply = apply_flag, .field = BOOL_FIELD(wide) },
	{ "--watch", .value = OPTIONAL_DURATION, .apply = apply_watch },
	{ "--verbose", 'v', .apply = apply_flag, .field = BOOL_FIELD(verbose) },
	{ "--explain", .apply = apply_explain },
};

/* Finds the option a word names: "--name", "--name=value" (*inline_value set) or "-x". */
static const struct option_spec *find_option(const char *word, const char **inline_value)
{
	size_t name_length = strcspn(word, "=");

	*inline_value = NULL;
	for (size_t i = 0; i < COUNT_OF(options); i++) {
		const struct option_spec *option = &options[i];

		if (word[1] == '-') {
			if (strncmp(word, option->name, name_length) == 0 &&
			    option->name[name_length] == '\0') {
				if (word[name_length] == '=')
					*inline_value = word + name_length + 1;
				return option;
			}
		} else if (option->short_name && word[1] == option->short_name &&
			   (word[2] == '\0' || word[2] == '=')) {
			/* "-h=x" is -h with a value it does not take, not an unknown option. */
			if (word[2] == '=')
				*inline_value = word + 3;
			return option;
		}
	}
	return NULL;
}

/* Applies the option words; returns the position of the first command word (count if none).
 * After a failure it keeps reading, so that a later -h or -V still wins. */
static int parse_words(struct parser *p, int count, char **words)
{
	int i = 0;

	while (i < count) {
		const char *word = words[i];
		const char *value;
		const struct option_spec *option;

		if (strcmp(word, "--") == 0)
			return i + 1;
		if (word[0] != '-')
			return i;
		i++;
		option = find_option(word, &value);
		if (!option) {
			reject(p, GPURUN_EXIT_USAGE, "unknown option '%.*s'",
			       (int)strcspn(word, "="), word);
		} else if (option->value == OPTIONAL_DURATION) {
			double seconds;

			if (!value && i < count && gpurun_parse_duration(words[i], &seconds) == 0)
				value = words[i++];
			option->apply(p, option, value);
		} else if (option->value == NO_VALUE) {
			if (value)
				reject(p, GPURUN_EXIT_USAGE, "option '%s' takes no value", option->name);
			else
				option->apply(p, option, NULL);
		} else {
			if (!value && i < count)
				value = words[i++];
			if (value)
				option->apply(p, option, value);
			else
				reject(p, GPURUN_EXIT_USAGE, "option '%s' needs a value", option->name);
		}
	}
	return i;
}

/* How the options fit together, checked once all are read; none depends on their order. */
static int check_consistency(struct parser *p)
{
	struct gpurun_request *request = p->request;

	if (p->action_seen[GPURUN_ACTION_PRINT] && p->action_seen[GPURUN_ACTION_SHOW])
		return reject(p, GPURUN_EXIT_USAGE, "--print and --show cannot be used together");
	if (p->action_seen[GPURUN_ACTION_PRINT])
		request->action = GPURUN_ACTION_PRINT;
	else if (p->action_seen[GPURUN_ACTION_SHOW])
		request->action = GPURUN_ACTION_SHOW;

	if (p->wait_seen && p->attempts_seen)
		return reject(p, GPURUN_EXIT_USAGE,
			      "--wait and --attempts cannot be used together (--wait means unlimited attempts)");
	if (request->timeout_s > 0 && p->attempts_seen)
		return reject(p, GPURUN_EXIT_USAGE,
			      "--timeout and --attempts cannot be used together (--timeout means attempts "
			      "until it runs out)");
	if (!request->min_count_set)
		request->min_count = gpurun_request_needed(request);
	else if (request->limit != GPURUN_LIMIT_ALL && request->min_count > request->limit)
		return reject(p, GPURUN_EXIT_USAGE, "--min-count %u is more than --limit %u",
			      request->min_count, request->limit);

	if (request->show_all && request->action != GPURUN_ACTION_SHOW)
		return reject(p, GPURUN_EXIT_USAGE, "--all needs --show");
	if (request->json && request->action != GPURUN_ACTION_SHOW)
		return reject(p, GPURUN_EXIT_USAGE, "--json needs --show");
	if (request->processes && request->action != GPURUN_ACTION_SHOW)
		return reject(p, GPURUN_EXIT_USAGE, "--processes needs --show");
	if (request->wide && request->action != GPURUN_ACTION_SHOW)
		return reject(p, GPURUN_EXIT_USAGE, "--wide needs --show");
	if (request->watch_s > 0 && request->action != GPURUN_ACTION_SHOW)
		return reject(p, GPURUN_EXIT_USAGE, "--watch needs --show");
	if ((request->source == GPURUN_SOURCE_NVML || request->source == GPURUN_SOURCE_SMI) &&
	    request->vendor == GPURUN_VENDOR_ONLY_AMD)
		return reject(p, GPURUN_EXIT_USAGE, "--source %s reads NVIDIA GPUs only, not --vendor amd",
			      gpurun_source_name(request->source));
	if (request->source == GPURUN_SOURCE_AMDGPU && request->vendor == GPURUN_VENDOR_ONLY_NVIDIA)
		return reject(p, GPURUN_EXIT_USAGE, "--source amdgpu reads AMD GPUs only, not --vendor nvidia");
	if (p->seed_seen && request->order != GPURUN_ORDER_RANDOM)
		return reject(p, GPURUN_EXIT_USAGE, "--seed needs --order random");
	if (!p->command_line && request->preload_lib)
		return reject(p, GPURUN_EXIT_USAGE, "--preload-lib is the gpurun command's: the "
						    "library is already loaded");
	if (request->preload_lib && !request->lazy)
		return reject(p, GPURUN_EXIT_USAGE, "--preload-lib needs --lazy");
	/* The preload library chooses when the program starts CUDA, which HIP programs never do. */
	if (request->lazy &&
	    (request->vendor == GPURUN_VENDOR_ONLY_AMD || request->source == GPURUN_SOURCE_AMDGPU))
		return reject(p, GPURUN_EXIT_USAGE, "--lazy chooses when the program starts CUDA, so "
						    "NVIDIA GPUs only: not with --vendor amd or --source amdgpu");
	if (request->lazy && request->action == GPURUN_ACTION_PRINT)
		return reject(p, GPURUN_EXIT_USAGE, "--lazy cannot be used with --print");
	if (request->lazy && request->action == GPURUN_ACTION_SHOW)
		return reject(p, GPURUN_EXIT_USAGE, "--lazy cannot be used with --show");
	return 0;
}

/* Help and version win over every mistake: someone asking for help may not know the syntax. */
static bool help_or_version(struct parser *p)
{
	if (p->action_seen[GPURUN_ACTION_HELP])
		p->request->action = GPURUN_ACTION_HELP;
	else if (p->action_seen[GPURUN_ACTION_VERSION])
		p->request->action = GPURUN_ACTION_VERSION;
	else
		return false;
	return true;
}

int gpurun_request_parse(struct gpurun_request *request, int argc, char **argv,
			 struct gpurun_error *err)
{
	struct parser p = { .request = request, .err = err, .origin = "", .command_line = true };
	int count = argc > 1 ? argc - 1 : 0;
	char **words = argv + 1;
	int command_start = parse_words(&p, count, words);

	request->command = command_start < count ? words + command_start : NULL;
	request->command_count = command_start < count ? count - command_start : 0;
	if (help_or_version(&p))
		return 0;
	if (p.status != 0 || check_consistency(&p) != 0)
		return p.status;

	if (request->action == GPURUN_ACTION_RUN && request->command_count == 0)
		return reject(&p, GPURUN_EXIT_USAGE,
			      "no command to run (use --print to print the choice, or --show)");
	if (request->action != GPURUN_ACTION_RUN && request->command_count > 0)
		return reject(&p, GPURUN_EXIT_USAGE, "%s runs no command, but '%s' was given",
			      request->action == GPURUN_ACTION_PRINT ? "--print" : "--show",
			      request->command[0]);
	return 0;
}

/* ---- GPURUN_OPTIONS ------------------------------------------------------------------------- */

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* Splits text into words the way a shell splits plain words: blanks separate, '...' keeps
 * everything as it is, "..." keeps everything but \" and \\, and a backslash elsewhere takes
 * the next character literally. Each word is written into buffer (as long as text, plus one). */
static int split_words(struct parser *p, const char *text, char *buffer, char **words, int *count)
{
	const char *s = text;
	char *out = buffer;
	int n = 0;

	for (;;) {
		while (is_blank(*s))
			s++;
		if (*s == '\0')
			break;
		words[n++] = out;
		while (*s != '\0' && !is_blank(*s)) {
			char quote = *s;

			if (quote == '\'' || quote == '"') {
				for (s++; *s != quote; s++) {
					if (*s == '\0')
						return reject(p, GPURUN_EXIT_USAGE, "unbalanced %c quote",
							      quote);
					if (quote == '"' && *s == '\\' && (s[1] == '"' || s[1] == '\\'))
						s++;
					*out++ = *s;
				}
				s++;
			} else if (*s == '\\') {
				if (s[1] == '\0')
					return reject(p, GPURUN_EXIT_USAGE, "ends with a lone backslash");
				*out++ = s[1];
				s += 2;
			} else {
				*out++ = *s++;
			}
		}
		*out++ = '\0';
	}
	*count = n;
	return 0;
}

int gpurun_request_parse_string(struct gpurun_request *request, const char *options_text,
				struct gpurun_error *err)
{
	struct parser p = { .request = request, .err = err, .origin = "GPURUN_OPTIONS: " };
	size_t length = strlen(options_text);
	char *buffer = malloc(length + 1);
	/* Words are separated by at least one blank, so there are at most length / 2 + 1. */
	char **words = malloc((length / 2 + 1) * sizeof(*words));
	int count = 0;
	int command_start;

	if (!buffer || !words) {
		free(buffer);
		free(words);
		return gpurun_fail(err, GPURUN_EXIT_SOFTWARE, "out of memory");
	}
	if (split_words(&p, options_text, buffer, words, &count) != 0)
		goto done;
	command_start = parse_words(&p, count, words);
	if (help_or_version(&p)) {
		p.status = 0;
		goto done;
	}
	if (p.status != 0)
		goto done;
	if (command_start < count) {
		p.status = gpurun_fail(err, GPURUN_EXIT_USAGE,
				       "GPURUN_OPTIONS cannot contain a command (found '%s')",
				       words[command_start]);
		goto done;
	}
	check_consistency(&p);
done:
	/* The request keeps copies of its strings, so the words can go. */
	free(buffer);
	free(words);
	return p.status;
}
