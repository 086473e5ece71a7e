/* fixture: the one parser of fixture files, shared by the fake NVML, nvidia-smi and libcuda.
 * Parsing happens once per init; everything after that reads plain arrays. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture.h"

#define DEFAULT_DRIVER "550.54.15"
#define DEFAULT_CUDA_VERSION 13000

static const struct {
	const char *name;
	int code;
	const char *text;               /* nvmlErrorString */
} nvml_errors[] = {
	{ "SUCCESS", 0, "Success" },
	{ "UNINITIALIZED", 1, "Uninitialized" },
	{ "INVALID_ARGUMENT", 2, "Invalid Argument" },
	{ "NOT_SUPPORTED", 3, "Not Supported" },
	{ "NO_PERMISSION", 4, "Insufficient Permissions" },
	{ "ALREADY_INITIALIZED", 5, "Already Initialized" },
	{ "NOT_FOUND", 6, "Not Found" },
	{ "INSUFFICIENT_SIZE", 7, "Insufficient Size" },
	{ "INSUFFICIENT_POWER", 8, "Insufficient External Power" },
	{ "DRIVER_NOT_LOADED", 9, "Driver Not Loaded" },
	{ "TIMEOUT", 10, "Timeout" },
	{ "IRQ_ISSUE", 11, "Interrupt Request Issue" },
	{ "LIBRARY_NOT_FOUND", 12, "NVML Shared Library Not Found" },
	{ "FUNCTION_NOT_FOUND", 13, "Function Not Found" },
	{ "CORRUPTED_INFOROM", 14, "Corrupted infoROM" },
	{ "GPU_IS_LOST", 15, "GPU is lost" },
	{ "RESET_REQUIRED", 16, "GPU requires restart" },
	{ "OPERATING_SYSTEM", 17, "The operating system has blocked the request." },
	{ "LIB_RM_VERSION_MISMATCH", 18, "RM has detected an NVML/RM version mismatch." },
	{ "IN_USE", 19, "In use by another client" },
	{ "MEMORY", 20, "Insufficient Memory" },
	{ "NO_DATA", 21, "No data" },
	{ "INSUFFICIENT_RESOURCES", 23, "Insufficient Resources" },
	{ "ARGUMENT_VERSION_MISMATCH", 25, "Argument version mismatch" },
	{ "DEPRECATED", 26, "Deprecated" },
	{ "NOT_READY", 27, "Not Ready" },
	{ "GPU_NOT_FOUND", 28, "GPU not found" },
	{ "INVALID_STATE", 29, "Invalid state" },
	{ "UNKNOWN", 999, "Unknown Error" },
};

static const char *const field_names[FIELD_COUNT] = {
	[FIELD_HANDLE] = "handle",
	[FIELD_UUID] = "uuid",
	[FIELD_NAME] = "name",
	[FIELD_SERIAL] = "serial",
	[FIELD_PCI] = "pci",
	[FIELD_MEMORY] = "memory",
	[FIELD_MEMORY_V2] = "memory_v2",
	[FIELD_UTILIZATION] = "utilization",
	[FIELD_TEMPERATURE] = "temperature",
	[FIELD_TEMPERATURE_V] = "temperature_v",
	[FIELD_TEMPERATURE_LEGACY] = "temperature_legacy",
	[FIELD_POWER] = "power",
	[FIELD_DISPLAY_MODE] = "display_mode",
	[FIELD_DISPLAY_ACTIVE] = "display_active",
	[FIELD_PROCESSES] = "processes",
	[FIELD_MIG_MODE] = "mig_mode",
	[FIELD_MIG_MAX] = "mig_max",
	[FIELD_MIG_HANDLE] = "mig_handle",
	[FIELD_GPU_INSTANCE_ID] = "gpu_instance_id",
	[FIELD_COMPUTE_INSTANCE_ID] = "compute_instance_id",
};

int fixture_error_code(const char *name)
{
	char *end;
	long number;

	if (strncmp(name, "NVML_ERROR_", 11) == 0)
		name += 11;
	for (size_t i = 0; i < sizeof(nvml_errors) / sizeof(nvml_errors[0]); i++)
		if (strcmp(name, nvml_errors[i].name) == 0)
			return nvml_errors[i].code;
	errno = 0;
	number = strtol(name, &end, 10);
	if (errno || end == name || *end || number < 0 || number > 0xffff)
		return -1;
	return (int)number;
}

const char *fixture_error_string(int code)
{
	for (size_t i = 0; i < sizeof(nvml_errors) / sizeof(nvml_errors[0]); i++)
		if (nvml_errors[i].code == code)
			return nvml_errors[i].text;
	return "Unknown Error";
}

/* Parsing state: where we are, for messages, and what is still to be checked at the end. */
struct parser {
	struct fixture *fixture;
	const char *path;
	unsigned line;
	char *why;
	size_t why_size;
	size_t gpu_capacity;
	size_t process_capacity;
	struct fixture_gpu *current;    /* the GPU (or MIG instance) per-GPU directives apply to */
	size_t instance_capacity;
	unsigned *order;                /* `cuda_order` as written */
	size_t order_count;
};

__attribute__((format(printf, 2, 3)))
static int fail(struct parser *p, const char *fmt, ...)
{
	va_list args;
	int used = snprintf(p->why, p->why_size, "%s:%u: ", p->path, p->line);

	if (used < 0 || (size_t)used >= p->why_size)
		return -1;
	va_start(args, fmt);
	vsnprintf(p->why + used, p->why_size - (size_t)used, fmt, args);
	va_end(args);
	return -1;
}

static int parse_unsigned(const char *text, unsigned long long max, unsigned long long *value)
{
	char *end;

	if (!isdigit((unsigned char)*text))
		return -1;
	errno = 0;
	*value = strtoull(text, &end, 10);
	return errno || *end || *value > max ? -1 : 0;
}

/* Splits off the next blank-separated word; *rest points after it. */
static char *next_word(char **rest)
{
	char *word = *rest, *end;

	while (*word == ' ' || *word == '\t')
		word++;
	if (!*word)
		return NULL;
	end = word;
	while (*end && *end != ' ' && *end != '\t')
		end++;
	*rest = *end ? end + 1 : end;
	*end = '\0';
	return word;
}

static int copy_text(struct parser *p, char *dest, size_t size, const char *text,
		     const char *what)
{
	if (!*text)
		return fail(p, "%s needs a value", what);
	if (strlen(text) >= size)
		return fail(p, "%s longer than %zu characters", what, size - 1);
	strcpy(dest, text);
	return 0;
}

static void set_pci(struct fixture_gpu *gpu, unsigned domain, unsigned bus, unsigned device)
{
	gpu->domain = domain;
	gpu->bus = bus;
	gpu->device = device;
	snprintf(gpu->bus_id, sizeof(gpu->bus_id), "%08X:%02X:%02X.0", domain, bus, device);
	snprintf(gpu->bus_id_legacy, sizeof(gpu->bus_id_legacy), "%04X:%02X:%02X.0",
		 domain & 0xffff, bus, device);
}

static struct fixture_gpu *add_gpu(struct parser *p)
{
	struct fixture *f = p->fixture;
	struct fixture_gpu *gpu;
	size_t index = f->gpu_count;

	if (f->gpu_count == p->gpu_capacity) {
		size_t capacity = p->gpu_capacity ? 2 * p->gpu_capacity : 16;
		struct fixture_gpu *gpus = realloc(f->gpus, capacity * sizeof(*gpus));

		if (!gpus)
			return NULL;
		f->gpus = gpus;
		p->gpu_capacity = capacity;
	}
	gpu = &f->gpus[f->gpu_count++];
	memset(gpu, 0, sizeof(*gpu));
	snprintf(gpu->uuid, sizeof(gpu->uuid), "GPU-00000000-0000-0000-0000-%012zx", index);
	strcpy(gpu->name, "NVIDIA Fake GPU");
	snprintf(gpu->serial, sizeof(gpu->serial), "%013llu", 1000000000000ULL + index);
	/* Buses run out after 0xff: carry into the domain, so that ids stay unique and in
	 * index order. */
	set_pci(gpu, (unsigned)((0x10 + index) >> 8), (unsigned)((0x10 + index) & 0xff), 0);
	gpu->memory_total = 81920;
	gpu->temperature = 30;
	gpu->power_mw = 60000;
	gpu->first_process = f->process_total;
	gpu->mig_mode = -1;
	gpu->mig_parent = -1;
	return gpu;
}

static int add_process(struct parser *p, char *rest, bool race)
{
	struct fixture *f = p->fixture;
	struct fixture_gpu *gpu = p->current;
	char *pid_text = next_word(&rest), *mib_text = next_word(&rest);
	unsigned long long pid, mib;
	struct fixture_process *process;

	if (!pid_text || !mib_text || next_word(&rest) || parse_unsigned(pid_text, 0xffffffffu, &pid)
	    || parse_unsigned(mib_text, 1ULL << 40, &mib))
		return fail(p, "expected: %s PID MIB", race ? "process_race" : "process");
	if (race) {
		if (gpu->has_race)
			return fail(p, "one process_race per GPU");
		gpu->has_race = true;
		gpu->race = (struct fixture_process){ (unsigned)pid, mib };
		return 0;
	}
	/* Only the last GPU takes process lines, so each GPU's processes are contiguous. */
	if (f->process_total == p->process_capacity) {
		size_t capacity = p->process_capacity ? 2 * p->process_capacity : 16;
		struct fixture_process *processes = realloc(f->processes, capacity * sizeof(*processes));

		if (!processes)
			return fail(p, "out of memory");
		f->processes = processes;
		p->process_capacity = capacity;
	}
	process = &f->processes[f->process_total++];
	process->pid = (unsigned)pid;
	process->used_mib = mib;
	gpu->process_count++;
	return 0;
}

static int parse_error_directive(struct parser *p, char *rest)
{
	struct fixture *f = p->fixture;
	char *field = next_word(&rest), *name = next_word(&rest);
	int code;

	if (!field || !name || next_word(&rest))
		return fail(p, "expected: error FIELD ERROR");
	code = fixture_error_code(name);
	if (code <= 0)
		return fail(p, "unknown NVML error '%s'", name);
	if (strcmp(field, "count") == 0) {
		f->count_error = code;
		return 0;
	}
	if (strcmp(field, "driver") == 0) {
		f->driver_error = code;
		return 0;
	}
	for (int i = 0; i < FIELD_COUNT; i++) {
		if (strcmp(field, field_names[i]) == 0) {
			if (!p->current)
				return fail(p, "'error %s' needs a gpu before it", field);
			p->current->errors[i] = code;
			return 0;
		}
	}
	return fail(p, "unknown field '%s'", field);
}

static int parse_flag(struct parser *p, const char *text, bool *flag)
{
	if (strcmp(text, "on") == 0)
		*flag = true;
	else if (strcmp(text, "off") == 0)
		*flag = false;
	else
		return fail(p, "expected on or off, not '%s'", text);
	return 0;
}

/* smi_error TEXT may span lines: `\n` stands for a newline. */
static void unescape_newlines(char *dest, size_t size, const char *text)
{
	size_t n = 0;

	for (; *text && n + 1 < size; text++) {
		if (text[0] == '\\' && text[1] == 'n') {
			dest[n++] = '\n';
			text++;
		} else {
			dest[n++] = *text;
		}
	}
	dest[n] = '\0';
}

static int parse_machine_directive(struct parser *p, const char *directive, char *rest,
				   bool *handled)
{
	struct fixture *f = p->fixture;
	unsigned long long value;
	char *word;

	*handled = true;
	if (strcmp(directive, "driver") == 0)
		return copy_text(p, f->driver, sizeof(f->driver), rest, "driver");
	if (strcmp(directive, "cuda_version") == 0) {
		if (parse_unsigned(rest, 1000000, &value))
			return fail(p, "expected: cuda_version N");
		f->cuda_version = (int)value;
		return 0;
	}
	if (strcmp(directive, "init_error") == 0) {
		f->init_error = fixture_error_code(rest);
		return f->init_error > 0 ? 0 : fail(p, "unknown NVML error '%s'", rest);
	}
	if (strcmp(directive, "error") == 0)
		return parse_error_directive(p, rest);
	if (strcmp(directive, "smi_error") == 0) {
		word = next_word(&rest);
		if (!word || parse_unsigned(word, 255, &value) || !*rest)
			return fail(p, "expected: smi_error STATUS TEXT");
		f->smi_error = true;
		f->smi_status = (int)value;
		unescape_newlines(f->smi_text, sizeof(f->smi_text), rest);
		return 0;
	}
	if (strcmp(directive, "smi_hang") == 0)
		f->smi_hang = true;
	else if (strcmp(directive, "smi_crlf") == 0)
		f->smi_crlf = true;
	else if (strcmp(directive, "smi_no_final_newline") == 0)
		f->smi_no_final_newline = true;
	else if (strcmp(directive, "cuda_ignores_visible") == 0)
		f->cuda_ignores_visible = true;
	else if (strcmp(directive, "cuda_lingers") == 0)
		f->cuda_lingers = true;
	else if (strcmp(directive, "cuda_order") == 0) {
		free(p->order);
		p->order_count = 0;
		p->order = malloc((strlen(rest) / 2 + 1) * sizeof(*p->order));
		if (!p->order)
			return fail(p, "out of memory");
		while ((word = next_word(&rest))) {
			if (parse_unsigned(word, 1u << 20, &value))
				return fail(p, "cuda_order: '%s' is not an index", word);
			p->order[p->order_count++] = (unsigned)value;
		}
	} else if (strcmp(directive, "gpus") == 0) {
		if (parse_unsigned(rest, 1u << 16, &value))
			return fail(p, "expected: gpus N");
		for (unsigned long long i = 0; i < value; i++) {
			struct fixture_gpu *gpu = add_gpu(p);
			size_t index = f->gpu_count - 1;

			if (!gpu)
				return fail(p, "out of memory");
			gpu->utilization = (unsigned)(index * 37 % 101);
			gpu->memory_used = index * 53 % 97 * 800;
		}
		p->current = NULL;
	} else if (strcmp(directive, "gpu") == 0) {
		if (*rest)
			return fail(p, "gpu takes no value");
		p->current = add_gpu(p);
		if (!p->current)
			return fail(p, "out of memory");
	} else {
		*handled = false;
	}
	return 0;
}

/* A MIG instance of the current GPU (the last `gpu`), in the next free slot or the one given.
 * Its defaults: a UUID spelling "MIG" and its GPU and slot, its GPU's name with " MIG", serial
 * and PCI id, 10 GiB, GPU instance id slot + 1, compute instance id 0, and no utilization,
 * temperature or power, which NVML reports only for whole GPUs. */
static int add_instance(struct parser *p, char *rest)
{
	struct fixture *f = p->fixture;
	struct fixture_gpu *parent, *instance;
	unsigned long long slot = 0;
	size_t parent_index;

	if (!p->current)
		return fail(p, "'mig_instance' needs a gpu before it");
	parent = p->current->mig_parent >= 0 ? &f->gpus[p->current->mig_parent] : p->current;
	parent_index = (size_t)(parent - f->gpus);
	if (parent->mig_mode != 1)
		return fail(p, "'mig_instance' needs 'mig on' on its gpu first");
	if (*rest && parse_unsigned(rest, 1000, &slot))
		return fail(p, "expected: mig_instance [SLOT]");
	for (size_t i = 0; i < parent->instance_count; i++) {
		unsigned taken = f->instances[parent->first_instance + i].mig_slot;

		if (!*rest && taken >= slot)
			slot = taken + 1;
		else if (*rest && taken == slot)
			return fail(p, "mig_instance: slot %llu is taken", slot);
	}
	if (slot >= parent->mig_max)
		return fail(p, "mig_instance: slot %llu is not below mig_max %u", slot, parent->mig_max);
	if (f->instance_total == p->instance_capacity) {
		size_t capacity = p->instance_capacity ? 2 * p->instance_capacity : 16;
		struct fixture_gpu *grown = realloc(f->instances, capacity * sizeof(*grown));

		if (!grown)
			return fail(p, "out of memory");
		f->instances = grown;
		p->instance_capacity = capacity;
	}
	if (parent->instance_count == 0)
		parent->first_instance = f->instance_total;
	instance = &f->instances[f->instance_total++];
	memset(instance, 0, sizeof(*instance));
	memcpy(instance->serial, parent->serial, sizeof(instance->serial));
	memcpy(instance->bus_id, parent->bus_id, sizeof(instance->bus_id));
	memcpy(instance->bus_id_legacy, parent->bus_id_legacy, sizeof(instance->bus_id_legacy));
	instance->domain = parent->domain;
	instance->bus = parent->bus;
	instance->device = parent->device;
	instance->temperature = parent->temperature;
	instance->power_mw = parent->power_mw;
	instance->mig_mode = -1;
	instance->mig_parent = (long)parent_index;
	instance->mig_slot = (unsigned)slot;
	instance->gpu_instance_id = (unsigned)slot + 1;
	instance->compute_instance_id = 0;
	snprintf(instance->uuid, sizeof(instance->uuid), "MIG-00000000-0000-4d49-47%02x-%012zx",
		 (unsigned)slot, parent_index);
	snprintf(instance->name, sizeof(instance->name), "%.90s MIG", parent->name);
	instance->memory_total = 10240;
	instance->errors[FIELD_UTILIZATION] = NVML_ERROR_NOT_SUPPORTED;
	instance->errors[FIELD_TEMPERATURE] = NVML_ERROR_NOT_SUPPORTED;
	instance->errors[FIELD_POWER] = NVML_ERROR_NOT_SUPPORTED;
	instance->first_process = f->process_total;
	parent->instance_count++;
	p->current = instance;
	return 0;
}

/* `mig`, `mig_max`, `mig_instance`, `instance_ids`. */
static int parse_mig_directive(struct parser *p, const char *directive, char *rest, bool *handled)
{
	struct fixture_gpu *gpu = p->current;
	unsigned long long value, other;
	char *word;

	*handled = true;
	if (strcmp(directive, "mig_instance") == 0)
		return add_instance(p, rest);
	if (strcmp(directive, "mig") == 0 || strcmp(directive, "mig_max") == 0) {
		if (!gpu || gpu->mig_parent >= 0)
			return fail(p, "'%s' needs a gpu (not a mig_instance) before it", directive);
		if (strcmp(directive, "mig_max") == 0) {
			if (parse_unsigned(rest, 1000, &value))
				return fail(p, "expected: mig_max N");
			gpu->mig_max = (unsigned)value;
			return 0;
		}
		if (strcmp(rest, "on") != 0 && strcmp(rest, "off") != 0)
			return fail(p, "expected: mig on|off");
		gpu->mig_mode = strcmp(rest, "on") == 0;
		if (!gpu->mig_max)
			gpu->mig_max = 7;
		return 0;
	}
	if (strcmp(directive, "instance_ids") == 0) {
		if (!gpu || gpu->mig_parent < 0)
			return fail(p, "'instance_ids' needs a mig_instance before it");
		word = next_word(&rest);
		if (!word || parse_unsigned(word, 1u << 20, &value) || !(word = next_word(&rest)) ||
		    parse_unsigned(word, 1u << 20, &other) || next_word(&rest))
			return fail(p, "expected: instance_ids GI CI");
		gpu->gpu_instance_id = (unsigned)value;
		gpu->compute_instance_id = (unsigned)other;
		return 0;
	}
	*handled = false;
	return 0;
}

static int parse_gpu_directive(struct parser *p, const char *directive, char *rest)
{
	struct fixture_gpu *gpu = p->current;
	unsigned long long value, total, used;
	unsigned domain, bus, device, function;
	char *end;
	int consumed = 0;
	double watts;

	if (!gpu)
		return fail(p, "'%s' needs a gpu before it", directive);
	if (strcmp(directive, "uuid") == 0)
		return copy_text(p, gpu->uuid, sizeof(gpu->uuid), rest, "uuid");
	if (strcmp(directive, "name") == 0)
		return copy_text(p, gpu->name, sizeof(gpu->name), rest, "name");
	/* NVML's serial buffer is 30 bytes. */
	if (strcmp(directive, "serial") == 0)
		return copy_text(p, gpu->serial, 30, rest, "serial");
	if (strcmp(directive, "pci") == 0) {
		if (sscanf(rest, "%x:%x:%x.%x%n", &domain, &bus, &device, &function, &consumed) != 4
		    || rest[consumed] || bus > 0xff || device > 0x1f || function != 0)
			return fail(p, "expected: pci DOMAIN:BUS:DEVICE.0 (hex), not '%s'", rest);
		set_pci(gpu, domain, bus, device);
		return 0;
	}
	if (strcmp(directive, "util") == 0) {
		if (parse_unsigned(rest, 100, &value))
			return fail(p, "expected: util PERCENT (0..100)");
		gpu->utilization = (unsigned)value;
		return 0;
	}
	if (strcmp(directive, "memory") == 0) {
		char *total_text = next_word(&rest), *used_text = next_word(&rest);

		if (!total_text || !used_text || next_word(&rest)
		    || parse_unsigned(total_text, 1ULL << 30, &total)
		    || parse_unsigned(used_text, total, &used))
			return fail(p, "expected: memory TOTAL USED (MiB, USED <= TOTAL)");
		gpu->memory_total = total;
		gpu->memory_used = used;
		return 0;
	}
	if (strcmp(directive, "reserved") == 0) {
		if (parse_unsigned(rest, 1ULL << 30, &value))
			return fail(p, "expected: reserved MIB");
		gpu->memory_reserved = value;
		return 0;
	}
	if (strcmp(directive, "temperature") == 0) {
		if (parse_unsigned(rest, 200, &value))
			return fail(p, "expected: temperature C");
		gpu->temperature = (unsigned)value;
		return 0;
	}
	if (strcmp(directive, "power") == 0) {
		watts = strtod(rest, &end);
		if (end == rest || *end || !(watts >= 0 && watts < 100000))
			return fail(p, "expected: power WATTS");
		gpu->power_mw = (unsigned)(watts * 1000 + 0.5);
		return 0;
	}
	if (strcmp(directive, "display_mode") == 0)
		return parse_flag(p, rest, &gpu->display_mode);
	if (strcmp(directive, "display_active") == 0)
		return parse_flag(p, rest, &gpu->display_active);
	if (strcmp(directive, "process") == 0)
		return add_process(p, rest, false);
	if (strcmp(directive, "process_race") == 0)
		return add_process(p, rest, true);
	if (strcmp(directive, "process_growth") == 0) {
		unsigned long long growth;

		if (parse_unsigned(rest, 100000, &growth))
			return fail(p, "expected: process_growth N");
		gpu->growth = (unsigned)growth;
		return 0;
	}
	if (strcmp(directive, "lost") == 0) {
		if (*rest)
			return fail(p, "lost takes no value");
		gpu->lost = true;
		return 0;
	}
	return fail(p, "unknown directive '%s'", directive);
}

static int parse_line(struct parser *p, char *line)
{
	char *rest = line, *directive, *end;
	bool handled;
	int status;

	/* `#` at the start of a word starts a comment, so "GPU#1" stays a name. */
	for (char *c = line; *c; c++) {
		if (*c == '#' && (c == line || c[-1] == ' ' || c[-1] == '\t')) {
			*c = '\0';
			break;
		}
	}
	end = line + strlen(line);
	while (end > line && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
		*--end = '\0';
	directive = next_word(&rest);
	if (!directive)
		return 0;
	while (*rest == ' ' || *rest == '\t')
		rest++;
	status = parse_machine_directive(p, directive, rest, &handled);
	if (!handled)
		status = parse_mig_directive(p, directive, rest, &handled);
	return handled ? status : parse_gpu_directive(p, directive, rest);
}

/* Checks what only the whole file can tell, and resolves `cuda_order`: listed GPUs first,
 * the rest after them in PCI order. */
static int finish(struct parser *p)
{
	struct fixture *f = p->fixture;
	size_t n = 0;
	bool *seen;

	for (size_t i = 0; i < f->gpu_count; i++) {
		const struct fixture_gpu *gpu = &f->gpus[i];

		if (gpu->memory_used + gpu->memory_reserved > gpu->memory_total)
			return fail(p, "gpu %zu: memory used + reserved exceeds the total", i);
		/* NVML has no utilization for a MIG-enabled GPU, only for whole ones. */
		if (gpu->mig_mode == 1 && !f->gpus[i].errors[FIELD_UTILIZATION])
			f->gpus[i].errors[FIELD_UTILIZATION] = NVML_ERROR_NOT_SUPPORTED;
	}
	for (size_t i = 0; i < f->instance_total; i++) {
		const struct fixture_gpu *instance = &f->instances[i];

		if (instance->memory_used + instance->memory_reserved > instance->memory_total)
			return fail(p, "gpu %ld: a MIG instance's memory used exceeds its total",
				    instance->mig_parent);
	}

	f->cuda_order = malloc((f->gpu_count + 1) * sizeof(*f->cuda_order));
	seen = calloc(f->gpu_count + 1, sizeof(*seen));
	if (!f->cuda_order || !seen) {
		free(seen);
		return fail(p, "out of memory");
	}
	for (size_t i = 0; i < p->order_count; i++) {
		unsigned index = p->order[i];

		if (index >= f->gpu_count || seen[index]) {
			free(seen);
			return fail(p, "cuda_order: %u is %s", index,
				    index >= f->gpu_count ? "not a GPU" : "listed twice");
		}
		seen[index] = true;
		f->cuda_order[n++] = index;
	}
	for (size_t i = 0; i < f->gpu_count; i++)
		if (!seen[i])
			f->cuda_order[n++] = (unsigned)i;
	free(seen);
	return 0;
}

static char *read_file(const char *path, size_t *length)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	char *text = NULL;
	size_t size = 0;
	ssize_t got;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		text = malloc((size_t)st.st_size + 1);
	else
		errno = EINVAL;
	/* The file may be rewritten while we read it: read until EOF, within the buffer. */
	while (text && size < (size_t)st.st_size) {
		got = read(fd, text + size, (size_t)st.st_size - size);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		size += (size_t)got;
	}
	close(fd);
	if (text) {
		text[size] = '\0';
		*length = size;
	}
	return text;
}

int fixture_load(const char *path, struct fixture *fixture, char *why, size_t why_size)
{
	struct parser p = { .fixture = fixture, .path = path, .why = why, .why_size = why_size };
	char *text, *line, *next;
	size_t length = 0;
	int status = 0;

	memset(fixture, 0, sizeof(*fixture));
	if (why_size)
		why[0] = '\0';
	if (!path || !*path) {
		errno = ENOENT;
		return -1;
	}
	text = read_file(path, &length);
	if (!text)
		return -1;
	strcpy(fixture->driver, DEFAULT_DRIVER);
	fixture->cuda_version = DEFAULT_CUDA_VERSION;
	for (line = text; status == 0 && line < text + length; line = next) {
		char *newline = strchr(line, '\n');

		next = newline ? newline + 1 : text + length;
		if (newline)
			*newline = '\0';
		p.line++;
		if (strlen(line) != (size_t)((newline ? newline : text + length) - line))
			status = fail(&p, "NUL byte in line");
		else
			status = parse_line(&p, line);
	}
	if (status == 0)
		status = finish(&p);
	free(p.order);
	free(text);
	if (status) {
		fixture_free(fixture);
		return -1;
	}
	return 0;
}

void fixture_free(struct fixture *fixture)
{
	free(fixture->gpus);
	free(fixture->processes);
	free(fixture->cuda_order);
	free(fixture->instances);
	memset(fixture, 0, sizeof(*fixture));
}
