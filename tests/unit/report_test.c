/* report_test: the utilization table against GPUtil 1.4.0's showUtilization output, byte for
 * byte, and the JSON report's keys, nulls, escaping and validity. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "unit.h"

/* The fields showUtilization shows; everything else stays unknown. */
struct row {
	int index;
	const char *name;
	const char *serial;
	const char *uuid;
	double temperature;
	double load;
	double memory_total;
	double memory_used;
	double memory_free;
	const char *display_mode;
	const char *display_active;
};

#define ROWS(rows) rows, sizeof(rows) / sizeof(rows[0])

static void snapshot_of(struct gpurun_snapshot *snapshot, const struct row *rows, size_t count)
{
	assert_int_equal(gpurun_snapshot_init(snapshot, count, NULL), 0);
	for (size_t i = 0; i < count; i++) {
		struct gpurun_device *device = &snapshot->devices[i];

		device->index = rows[i].index;
		snprintf(device->name, sizeof(device->name), "%s", rows[i].name);
		snprintf(device->serial, sizeof(device->serial), "%s", rows[i].serial);
		snprintf(device->uuid, sizeof(device->uuid), "%s", rows[i].uuid);
		device->temperature = rows[i].temperature;
		device->load = rows[i].load;
		device->memory_total = rows[i].memory_total;
		device->memory_used = rows[i].memory_used;
		device->memory_free = rows[i].memory_free;
		snprintf(device->display_mode, sizeof(device->display_mode), "%s",
			 rows[i].display_mode);
		snprintf(device->display_active, sizeof(device->display_active), "%s",
			 rows[i].display_active);
	}
	snprintf(snapshot->driver_version, sizeof(snapshot->driver_version), "550.54.15");
	snapshot->source = "nvml";
}

static char *table_of(const struct gpurun_snapshot *snapshot, bool all)
{
	char *text = NULL;
	size_t length = 0;
	FILE *out = open_memstream(&text, &length);

	assert_non_null(out);
	assert_int_equal(gpurun_report_table(out, snapshot, all), 0);
	assert_int_equal(fclose(out), 0);
	return text;
}

static void assert_tables(const struct row *rows, size_t count, const char *expected,
			  const char *expected_all)
{
	struct gpurun_snapshot snapshot;
	char *text;

	snapshot_of(&snapshot, rows, count);
	text = table_of(&snapshot, false);
	assert_string_equal(text, expected);
	free(text);
	text = table_of(&snapshot, true);
	assert_string_equal(text, expected_all);
	free(text);
	gpurun_snapshot_free(&snapshot);
}

static char *json_of(const struct gpurun_snapshot *snapshot, const char *hostname,
		     double query_time)
{
	char *text = NULL;
	size_t length = 0;
	FILE *out = open_memstream(&text, &length);

	assert_non_null(out);
	assert_int_equal(gpurun_report_json(out, snapshot, hostname, query_time), 0);
	assert_int_equal(fclose(out), 0);
	return text;
}

static void use_time_zone(const char *zone)
{
	setenv("TZ", zone, 1);
	tzset();
}

/* ---- the table --------------------------------------------------------------------------- */

static const struct row typical_rows[] = {
	{ 0, "Tesla V100-SXM2-16GB", "0323617004258", "GPU-1f6c2a3e-8d4b-4f1a-9c2e-3b5d7e9f1a2b",
	  45, 29 / 100.0, 16160, 1024, 15136, "Disabled", "Disabled" },
	{ 1, "Tesla V100-SXM2-16GB", "0323617004259", "GPU-2a7d3b4f-9e5c-4a2b-8d3f-4c6e8fa02b3c",
	  71, 100 / 100.0, 16160, 16160, 0, "Enabled", "Disabled" },
	{ 2, "GeForce RTX 2080 Ti", "", "GPU-3b8e4c5a-af6d-4b3c-9e4a-5d7f9ab13c4d",
	  38, 0 / 100.0, 11019, 0, 11019, "Enabled", "Enabled" },
	{ 3, "Quadro P4000", "1422418047302", "GPU-4c9f5d6b-b07e-4c4d-af5b-6e8aabc24d5e",
	  30, 7 / 100.0, 8119, 6000, 2119, "Disabled", "Disabled" },
};

static const char typical_table[] =
	"| ID | GPU  | MEM  |\n"
	"--------------------\n"
	"|  0 |  29% |   6% |\n"
	"|  1 | 100% | 100% |\n"
	"|  2 |   0% |   0% |\n"
	"|  3 |   7% |  74% |\n";

static const char typical_table_all[] =
	"| ID | Name                 | Serial        | UUID                                     || GPU temp. | GPU util. | Memory util. || Memory total | Memory used | Memory free || Display mode | Display active |\n"
	"-------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------\n"
	"|  0 | Tesla V100-SXM2-16GB | 0323617004258 | GPU-1f6c2a3e-8d4b-4f1a-9c2e-3b5d7e9f1a2b ||       45C |       29% |           6% ||      16160MB |      1024MB |     15136MB || Disabled     | Disabled       |\n"
	"|  1 | Tesla V100-SXM2-16GB | 0323617004259 | GPU-2a7d3b4f-9e5c-4a2b-8d3f-4c6e8fa02b3c ||       71C |      100% |         100% ||      16160MB |     16160MB |         0MB || Enabled      | Disabled       |\n"
	"|  2 | GeForce RTX 2080 Ti  | [N/A]         | GPU-3b8e4c5a-af6d-4b3c-9e4a-5d7f9ab13c4d ||       38C |        0% |           0% ||      11019MB |         0MB |     11019MB || Enabled      | Enabled        |\n"
	"|  3 | Quadro P4000         | 1422418047302 | GPU-4c9f5d6b-b07e-4c4d-af5b-6e8aabc24d5e ||       30C |        7% |          74% ||       8119MB |      6000MB |      2119MB || Disabled     | Disabled       |\n";

static void table_typical(void **state)
{
	(void)state;
	assert_tables(ROWS(typical_rows), typical_table, typical_table_all);
}

/* NaN prints as Python prints it ("nan", never "-nan"); a total of 0 gives an unknown
 * utilization where GPUtil would divide by zero. */
static void table_unknown_numbers(void **state)
{
	static const struct row rows[] = {
		{ 0, "Tesla T4", "1", "GPU-a", 40, NAN, 15360, 300, 15060, "Disabled", "Disabled" },
		{ 1, "Tesla T4", "2", "GPU-b", -NAN, 12 / 100.0, 15360, NAN, NAN, "Disabled",
		  "Disabled" },
		{ 2, "Tesla T4", "3", "GPU-c", 41, 5 / 100.0, 0, 0, 0, "Disabled", "Disabled" },
	};

	(void)state;
	assert_tables(ROWS(rows),
		"| ID | GPU  | MEM  |\n"
		"--------------------\n"
		"|  0 | nan% |   2% |\n"
		"|  1 |  12% | nan% |\n"
		"|  2 |   5% | nan% |\n",
		"| ID | Name     | Serial | UUID  || GPU temp. | GPU util. | Memory util. || Memory total | Memory used | Memory free || Display mode | Display active |\n"
		"-------------------------------------------------------------------------------------------------------------------------------------------------------\n"
		"|  0 | Tesla T4 | 1      | GPU-a ||       40C |      nan% |           2% ||      15360MB |       300MB |     15060MB || Disabled     | Disabled       |\n"
		"|  1 | Tesla T4 | 2      | GPU-b ||      nanC |       12% |         nan% ||      15360MB |       nanMB |       nanMB || Disabled     | Disabled       |\n"
		"|  2 | Tesla T4 | 3      | GPU-c ||       41C |        5% |         nan% ||          0MB |         0MB |         0MB || Disabled     | Disabled       |\n");
}

/* Two-digit indices fit under "ID"; it takes a third digit to widen the column. */
static void table_twelve_gpus(void **state)
{
	struct row rows[12];
	char uuids[12][8];

	(void)state;
	for (int i = 0; i < 12; i++) {
		snprintf(uuids[i], sizeof(uuids[i]), "GPU-%02d", i);
		rows[i] = (struct row){ i, "NVIDIA H100 80GB HBM3", "", uuids[i], 30 + i,
					(i * 9) / 100.0, 81559, i * 6000, 81559 - i * 6000,
					"Disabled", "Disabled" };
	}
	assert_tables(ROWS(rows),
		"| ID | GPU | MEM |\n"
		"------------------\n"
		"|  0 |  0% |  0% |\n"
		"|  1 |  9% |  7% |\n"
		"|  2 | 18% | 15% |\n"
		"|  3 | 27% | 22% |\n"
		"|  4 | 36% | 29% |\n"
		"|  5 | 45% | 37% |\n"
		"|  6 | 54% | 44% |\n"
		"|  7 | 63% | 51% |\n"
		"|  8 | 72% | 59% |\n"
		"|  9 | 81% | 66% |\n"
		"| 10 | 90% | 74% |\n"
		"| 11 | 99% | 81% |\n",
		"| ID | Name                  | Serial | UUID   || GPU temp. | GPU util. | Memory util. || Memory total | Memory used | Memory free || Display mode | Display active |\n"
		"---------------------------------------------------------------------------------------------------------------------------------------------------------------------\n"
		"|  0 | NVIDIA H100 80GB HBM3 | [N/A]  | GPU-00 ||       30C |        0% |           0% ||      81559MB |         0MB |     81559MB || Disabled     | Disabled       |\n"
		"|  1 | NVIDIA H100 80GB HBM3 | [N/A]  | GPU-01 ||       31C |        9% |           7% ||      81559MB |      6000MB |     75559MB || Disabled     | Disabled       |\n"
		"|  2 | NVIDIA H100 80GB HBM3 | [N/A]  | GPU-02 ||       32C |       18% |          15% ||      81559MB |     12000MB |     69559MB || Disabled     | Disabled       |\n"
		"|  3 | NVIDIA H100 80GB HBM3 | [N/A]  | GPU-03 ||       33C |       27% |          22% ||      81559MB |     18000MB |     63559MB || Disabled     | Disabled       |\n"
		"|  4 | NVIDIA H100 80GB HBM3 | [N/A]  | GPU-04 ||       34C |       36% |          29% ||      81559MB |     24000MB |     57559MB || Disabled     | Disabled       |\n"
		"|  5 | NVIDIA H100 80GB HBM3 | [N/A]  | GPU-05 ||       35C |       45% |          37% ||      81559MB |     30000MB |     51559MB || Disabled     | Disabled       |\n"
		"|  6 | NVIDIA H100 80GB HBM3 | [N/A]  | GPU-06 ||       36C |       54% |          44% ||      81559MB |     36000MB |     45559MB || Disabled     | Disabled       |\n"
		"|  7 | NVIDIA H100 80GB HBM3 | [N/A]  | GPU-07 ||       37C |       63% |          51% ||      81559MB |     42000MB |     39559MB || Disabled     | Disabled       |\n"
		"|  8 | NVIDIA H100 80GB HBM3 | [N/A]  | GPU-08 ||       38C |       72% |          59% ||      81559MB |     48000MB |     33559MB || Disabled     | Disabled       |\n"
		"|  9 | NVIDIA H100 80GB HBM3 | [N/A]  | GPU-09 ||       39C |       81% |          66% ||      81559MB |     54000MB |     27559MB || Disabled     | Disabled       |\n"
		"| 10 | NVIDIA H100 80GB HBM3 | [N/A]  | GPU-10 ||       40C |       90% |          74% ||      81559MB |     60000MB |     21559MB || Disabled     | Disabled       |\n"
		"| 11 | NVIDIA H100 80GB HBM3 | [N/A]  | GPU-11 ||       41C |       99% |          81% ||      81559MB |     66000MB |     15559MB || Disabled     | Disabled       |\n");
}

static void table_wide_index(void **state)
{
	static const struct row rows[] = {
		{ 9, "A", "s", "u", 30, 0, 100, 1, 99, "Disabled", "Disabled" },
		{ 100, "A", "s", "u", 30, 0, 100, 1, 99, "Disabled", "Disabled" },
		{ 1000, "A", "s", "u", 30, 0, 100, 1, 99, "Disabled", "Disabled" },
	};

	(void)state;
	assert_tables(ROWS(rows),
		"| ID   | GPU | MEM |\n"
		"--------------------\n"
		"|    9 |  0% |  1% |\n"
		"|  100 |  0% |  1% |\n"
		"| 1000 |  0% |  1% |\n",
		"| ID   | Name | Serial | UUID || GPU temp. | GPU util. | Memory util. || Memory total | Memory used | Memory free || Display mode | Display active |\n"
		"----------------------------------------------------------------------------------------------------------------------------------------------------\n"
		"|    9 | A    | s      | u    ||       30C |        0% |           1% ||        100MB |         1MB |        99MB || Disabled     | Disabled       |\n"
		"|  100 | A    | s      | u    ||       30C |        0% |           1% ||        100MB |         1MB |        99MB || Disabled     | Disabled       |\n"
		"| 1000 | A    | s      | u    ||       30C |        0% |           1% ||        100MB |         1MB |        99MB || Disabled     | Disabled       |\n");
}

/* Long text widens its column; unknown text is nvidia-smi's "[N/A]"; widths count characters,
 * not bytes, as Python's len() does. */
static void table_names(void **state)
{
	static const struct row rows[] = {
		{ 0, "NVIDIA Graphics Device with a very long marketing name, 80GB HBM3e, liquid cooled, rev B",
		  "1234567890123456789012345678901", "MIG-5d3e1b2a-0c4f-5e6d-8a9b-7c6d5e4f3a2b",
		  50, 0.5, 1000, 500, 500, "", "" },
		{ 1, "", "", "", 51, 0.5, 1000, 500, 500, "Enabled", "Disabled" },
		{ 2, "Radeon\u2122 Pro \u00e9t\u00e9", "\u00e9", "GPU-\u00e9", 52, 0.5, 1000, 500, 500,
		  "Disabled", "Enabled" },
	};

	(void)state;
	assert_tables(ROWS(rows),
		"| ID | GPU | MEM |\n"
		"------------------\n"
		"|  0 | 50% | 50% |\n"
		"|  1 | 50% | 50% |\n"
		"|  2 | 50% | 50% |\n",
		"| ID | Name                                                                                     | Serial                          | UUID                                     || GPU temp. | GPU util. | Memory util. || Memory total | Memory used | Memory free || Display mode | Display active |\n"
		"---------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------\n"
		"|  0 | NVIDIA Graphics Device with a very long marketing name, 80GB HBM3e, liquid cooled, rev B | 1234567890123456789012345678901 | MIG-5d3e1b2a-0c4f-5e6d-8a9b-7c6d5e4f3a2b ||       50C |       50% |          50% ||       1000MB |       500MB |       500MB || [N/A]        | [N/A]          |\n"
		"|  1 | [N/A]                                                                                    | [N/A]                           | [N/A]                                    ||       51C |       50% |          50% ||       1000MB |       500MB |       500MB || Enabled      | Disabled       |\n"
		"|  2 | Radeon\u2122 Pro \u00e9t\u00e9                                                                          | \u00e9                               | GPU-\u00e9                                    ||       52C |       50% |          50% ||       1000MB |       500MB |       500MB || Disabled     | Enabled        |\n");
}

/* Python's '{:.0f}' rounds the exact binary value half to even: 0.5 -> 0, 1.5 -> 2,
 * 2.5 -> 2, 12.5 -> 12, 99.5 -> 100. */
static void table_rounding(void **state)
{
	static const struct row rows[] = {
		{ 0, "R", "s", "u", 0.5, 0.005, 200, 1, 199.5, "Disabled", "Disabled" },
		{ 1, "R", "s", "u", 1.5, 0.015, 200, 3, 196.5, "Disabled", "Disabled" },
		{ 2, "R", "s", "u", 2.5, 0.025, 200, 5, 194.5, "Disabled", "Disabled" },
		{ 3, "R", "s", "u", 3.5, 0.125, 200, 25, 174.5, "Disabled", "Disabled" },
		{ 4, "R", "s", "u", 99.5, 0.995, 200, 199, 0.5, "Disabled", "Disabled" },
	};

	(void)state;
	assert_tables(ROWS(rows),
		"| ID | GPU  | MEM  |\n"
		"--------------------\n"
		"|  0 |   0% |   0% |\n"
		"|  1 |   2% |   2% |\n"
		"|  2 |   2% |   2% |\n"
		"|  3 |  12% |  12% |\n"
		"|  4 | 100% | 100% |\n",
		"| ID | Name | Serial | UUID || GPU temp. | GPU util. | Memory util. || Memory total | Memory used | Memory free || Display mode | Display active |\n"
		"--------------------------------------------------------------------------------------------------------------------------------------------------\n"
		"|  0 | R    | s      | u    ||        0C |        0% |           0% ||        200MB |         1MB |       200MB || Disabled     | Disabled       |\n"
		"|  1 | R    | s      | u    ||        2C |        2% |           2% ||        200MB |         3MB |       196MB || Disabled     | Disabled       |\n"
		"|  2 | R    | s      | u    ||        2C |        2% |           2% ||        200MB |         5MB |       194MB || Disabled     | Disabled       |\n"
		"|  3 | R    | s      | u    ||        4C |       12% |          12% ||        200MB |        25MB |       174MB || Disabled     | Disabled       |\n"
		"|  4 | R    | s      | u    ||      100C |      100% |         100% ||        200MB |       199MB |         0MB || Disabled     | Disabled       |\n");
}

static void table_zero_devices(void **state)
{
	struct gpurun_snapshot snapshot;
	char *text;

	(void)state;
	assert_int_equal(gpurun_snapshot_init(&snapshot, 0, NULL), 0);
	text = table_of(&snapshot, false);
	assert_string_equal(text, "| ID | GPU | MEM |\n------------------\n");
	free(text);
	text = table_of(&snapshot, true);
	assert_string_equal(text,
		"| ID | Name | Serial | UUID || GPU temp. | GPU util. | Memory util. || Memory total | Memory used | Memory free || Display mode | Display active |\n"
		"--------------------------------------------------------------------------------------------------------------------------------------------------\n");
	free(text);
}

static void hold(struct gpurun_device *device, pid_t pid, uid_t uid, const char *user,
		 const char *host, const char *command)
{
	device->leased = true;
	device->holder.pid = pid;
	device->holder.uid = uid;
	device->holder.start_time = 1700000000;
	snprintf(device->holder.user, sizeof(device->holder.user), "%s", user);
	snprintf(device->holder.host, sizeof(device->holder.host), "%s", host);
	snprintf(device->holder.command, sizeof(device->holder.command), "%s", command);
}

/* Leases follow the table, which stays GPUtil's; a command line cannot fake another line. */
static void table_leases(void **state)
{
	struct gpurun_snapshot snapshot;
	char *text;

	(void)state;
	use_time_zone("UTC");
	snapshot_of(&snapshot, ROWS(typical_rows));
	hold(&snapshot.devices[1], 4240, 1000, "alice", "node1", "python train.py --epochs 3");
	hold(&snapshot.devices[3], 5150, 1001, "", "", "sh -c 'a\nb'");
	text = table_of(&snapshot, false);
	assert_string_equal(text,
		"| ID | GPU  | MEM  |\n"
		"--------------------\n"
		"|  0 |  29% |   6% |\n"
		"|  1 | 100% | 100% |\n"
		"|  2 |   0% |   0% |\n"
		"|  3 |   7% |  74% |\n"
		"GPU 1 leased by pid 4240 (alice@node1) since 2023-11-14 22:13:20: python train.py --epochs 3\n"
		"GPU 3 leased by pid 5150 (1001@?) since 2023-11-14 22:13:20: sh -c 'a?b'\n");
	free(text);
	text = table_of(&snapshot, true);
	assert_non_null(strstr(text, typical_table_all));
	assert_non_null(strstr(text, "|\nGPU 1 leased by pid 4240 (alice@node1) since "));
	free(text);
	gpurun_snapshot_free(&snapshot);
}

static void table_many_devices(void **state)
{
	struct gpurun_snapshot snapshot;
	char *text;
	size_t lines = 0;

	(void)state;
	assert_int_equal(gpurun_snapshot_init(&snapshot, 1024, NULL), 0);
	for (int i = 0; i < 1024; i++) {
		snapshot.devices[i].index = i;
		snapshot.devices[i].load = (i * 37 % 101) / 100.0;
		snapshot.devices[i].memory_total = 81920;
		snapshot.devices[i].memory_used = (i * 53 % 97) * 800;
	}
	text = table_of(&snapshot, true);
	for (const char *c = text; *c; c++)
		lines += *c == '\n';
	assert_int_equal(lines, 1026);
	assert_string_equal(strstr(text, "\n| 1023 "),
		"\n| 1023 | [N/A] | [N/A]  | [N/A] ||      nanC |       77% |          91% ||      81920MB |     74400MB |       nanMB || [N/A]        | [N/A]          |\n");
	free(text);
	gpurun_snapshot_free(&snapshot);
}

static void reports_fail_when_writing_fails(void **state)
{
	struct gpurun_snapshot snapshot;
	FILE *full = fopen("/dev/full", "w");

	(void)state;
	if (!full)
		skip();
	snapshot_of(&snapshot, ROWS(typical_rows));
	assert_int_equal(gpurun_report_table(full, &snapshot, true), -1);
	clearerr(full);
	assert_int_equal(gpurun_report_json(full, &snapshot, "node1", 0), -1);
	fclose(full);
	gpurun_snapshot_free(&snapshot);
}

/* ---- JSON -------------------------------------------------------------------------------- */

static void add_process(struct gpurun_device *device, unsigned pid, double used_mib,
			const char *user, const char *command)
{
	struct gpurun_process *process;

	device->processes = realloc(device->processes,
				    (device->process_count + 1) * sizeof(*device->processes));
	assert_non_null(device->processes);
	process = &device->processes[device->process_count++];
	memset(process, 0, sizeof(*process));
	process->pid = pid;
	process->used_mib = used_mib;
	snprintf(process->user, sizeof(process->user), "%s", user);
	snprintf(process->command, sizeof(process->command), "%s", command);
	device->processes_known = true;
}

static void json_typical(void **state)
{
	struct gpurun_snapshot snapshot;
	char *text;

	(void)state;
	use_time_zone("UTC");
	snapshot_of(&snapshot, typical_rows, 2);
	snprintf(snapshot.devices[0].pci_bus_id, GPURUN_BUS_ID_SIZE, "00000000:07:00.0");
	snprintf(snapshot.devices[1].pci_bus_id, GPURUN_BUS_ID_SIZE, "00000000:0F:00.0");
	snapshot.devices[0].power_draw = 61.5;
	snapshot.devices[1].power_draw = 250.456;
	add_process(&snapshot.devices[0], 4242, 1000, "alice", "python train.py");
	add_process(&snapshot.devices[0], 4243, 24.5, "bob", "nvtop");
	hold(&snapshot.devices[0], 4240, 1000, "alice", "node1", "python train.py");
	snapshot.processes_unseen = 2;
	text = json_of(&snapshot, "node1", 1700000000.25);
	assert_string_equal(text,
		"{\"hostname\": \"node1\", \"driver_version\": \"550.54.15\", "
		"\"query_time\": \"2023-11-14T22:13:20.250000+00:00\", \"source\": \"nvml\", "
		"\"processes_unseen\": 2, \"gpus\": ["
		"{\"index\": 0, \"uuid\": \"GPU-1f6c2a3e-8d4b-4f1a-9c2e-3b5d7e9f1a2b\", "
		"\"name\": \"Tesla V100-SXM2-16GB\", \"serial\": \"0323617004258\", "
		"\"pci.bus_id\": \"00000000:07:00.0\", \"utilization.gpu\": 29, \"memory.used\": 1024, "
		"\"memory.total\": 16160, \"memory.free\": 15136, \"temperature.gpu\": 45, "
		"\"power.draw\": 61.5, \"display_mode\": \"Disabled\", \"display_active\": \"Disabled\", "
		"\"lost\": false, \"mig_parent\": null, \"processes\": ["
		"{\"pid\": 4242, \"username\": \"alice\", \"command\": \"python train.py\", \"gpu_memory_usage\": 1000}, "
		"{\"pid\": 4243, \"username\": \"bob\", \"command\": \"nvtop\", \"gpu_memory_usage\": 24}], "
		"\"lease\": {\"pid\": 4240, \"user\": \"alice\", \"host\": \"node1\", "
		"\"start_time\": \"2023-11-14T22:13:20+00:00\", \"command\": \"python train.py\"}}, "
		"{\"index\": 1, \"uuid\": \"GPU-2a7d3b4f-9e5c-4a2b-8d3f-4c6e8fa02b3c\", "
		"\"name\": \"Tesla V100-SXM2-16GB\", \"serial\": \"0323617004259\", "
		"\"pci.bus_id\": \"00000000:0F:00.0\", \"utilization.gpu\": 100, \"memory.used\": 16160, "
		"\"memory.total\": 16160, \"memory.free\": 0, \"temperature.gpu\": 71, "
		"\"power.draw\": 250.46, \"display_mode\": \"Enabled\", \"display_active\": \"Disabled\", "
		"\"lost\": false, \"mig_parent\": null, \"processes\": null, \"lease\": null}]}\n");
	free(text);
	gpurun_snapshot_free(&snapshot);
}

static void json_unknowns_are_null(void **state)
{
	struct gpurun_snapshot snapshot;
	struct gpurun_device *device;
	char *text;

	(void)state;
	assert_int_equal(gpurun_snapshot_init(&snapshot, 2, NULL), 0);
	device = &snapshot.devices[0];
	device->index = 0;
	device->lost = true;
	add_process(device, 77, NAN, "", "");
	device = &snapshot.devices[1];
	device->index = 1;
	device->mig_parent = 0;
	device->mig_instance = 0;
	device->load = -0.001;
	device->memory_used = INFINITY;
	device->power_draw = -NAN;
	text = json_of(&snapshot, NULL, NAN);
	assert_string_equal(text,
		"{\"hostname\": null, \"driver_version\": null, \"query_time\": null, \"source\": null, "
		"\"processes_unseen\": 0, \"gpus\": [{\"index\": 0, \"uuid\": null, \"name\": null, "
		"\"serial\": null, "
		"\"pci.bus_id\": null, \"utilization.gpu\": null, \"memory.used\": null, "
		"\"memory.total\": null, \"memory.free\": null, \"temperature.gpu\": null, "
		"\"power.draw\": null, \"display_mode\": null, \"display_active\": null, "
		"\"lost\": true, \"mig_parent\": null, \"processes\": [{\"pid\": 77, \"username\": null, "
		"\"command\": null, \"gpu_memory_usage\": null}], \"lease\": null}, "
		"{\"index\": 1, \"uuid\": null, \"name\": null, \"serial\": null, "
		"\"pci.bus_id\": null, \"utilization.gpu\": 0, \"memory.used\": null, "
		"\"memory.total\": null, \"memory.free\": null, \"temperature.gpu\": null, "
		"\"power.draw\": null, \"display_mode\": null, \"display_active\": null, "
		"\"lost\": false, \"mig_parent\": 0, \"processes\": null, \"lease\": null}]}\n");
	free(text);
	gpurun_snapshot_free(&snapshot);
}

#define FFFD "\xEF\xBF\xBD"

/* Quotes, backslashes and control characters are escaped; valid UTF-8 passes through; each
 * maximal ill-formed sequence becomes one U+FFFD, as Python's decode(errors="replace"). */
static void json_escaping(void **state)
{
	static const char name[] = "A \"quoted\" \\ name\n\t\x01\x1f\x7f|\xff|\xe4\xb8x|\xc0\xaf|"
				   "\xed\xa0\x80|\xe4\xb8\xad|\xf4\x90\x80\x80|\xf0\x9f\x98";
	struct gpurun_snapshot snapshot;
	char *text;
	char *start;

	(void)state;
	assert_int_equal(gpurun_snapshot_init(&snapshot, 1, NULL), 0);
	memcpy(snapshot.devices[0].name, name, sizeof(name));
	snprintf(snapshot.devices[0].holder.command, GPURUN_COMMAND_SIZE, "say \"hi\"\r\n");
	snapshot.devices[0].leased = true;
	text = json_of(&snapshot, "host\\with\"quotes", 0);
	assert_non_null(strstr(text, "{\"hostname\": \"host\\\\with\\\"quotes\", "));
	start = strstr(text, "\"name\": ");
	assert_non_null(start);
	assert_memory_equal(start,
		"\"name\": \"A \\\"quoted\\\" \\\\ name\\u000a\\u0009\\u0001\\u001f\x7f|" FFFD "|" FFFD
		"x|" FFFD FFFD "|" FFFD FFFD FFFD "|\xe4\xb8\xad|" FFFD FFFD FFFD FFFD "|" FFFD "\", ",
		strlen("\"name\": \"A \\\"quoted\\\" \\\\ name\\u000a\\u0009\\u0001\\u001f\x7f|" FFFD "|"
		       FFFD "x|" FFFD FFFD "|" FFFD FFFD FFFD "|\xe4\xb8\xad|" FFFD FFFD FFFD FFFD "|"
		       FFFD "\", "));
	assert_non_null(strstr(text, "\"command\": \"say \\\"hi\\\"\\u000d\\u000a\"}"));
	free(text);
	gpurun_snapshot_free(&snapshot);
}

static void json_zero_devices(void **state)
{
	struct gpurun_snapshot snapshot;
	char *text;

	(void)state;
	use_time_zone("UTC");
	assert_int_equal(gpurun_snapshot_init(&snapshot, 0, NULL), 0);
	snprintf(snapshot.driver_version, sizeof(snapshot.driver_version), "550.54.15");
	snapshot.source = "nvidia-smi";
	text = json_of(&snapshot, "node1", 0);
	assert_string_equal(text,
		"{\"hostname\": \"node1\", \"driver_version\": \"550.54.15\", "
		"\"query_time\": \"1970-01-01T00:00:00.000000+00:00\", \"source\": \"nvidia-smi\", "
		"\"processes_unseen\": 0, \"gpus\": []}\n");
	free(text);
}

/* Local time with its offset, whichever side of UTC; microseconds round into the seconds. */
static void json_query_time(void **state)
{
	struct gpurun_snapshot snapshot;
	char *text;

	(void)state;
	assert_int_equal(gpurun_snapshot_init(&snapshot, 0, NULL), 0);
	use_time_zone("IST-5:30");
	text = json_of(&snapshot, "h", 1700000000.5);
	assert_non_null(strstr(text, "\"query_time\": \"2023-11-15T03:43:20.500000+05:30\""));
	free(text);
	use_time_zone("EST5");
	text = json_of(&snapshot, "h", 1700000000.9999996);
	assert_non_null(strstr(text, "\"query_time\": \"2023-11-14T17:13:21.000000-05:00\""));
	free(text);
	use_time_zone("UTC");
}

/* Whatever bytes the driver and lock files hold, the output parses as JSON. */
static void json_is_valid(void **state)
{
	struct gpurun_snapshot snapshot;
	unsigned long long seed = 12345;
	FILE *checker;

	(void)state;
	if (system("command -v python3 >/dev/null 2>&1") != 0)
		skip();
	assert_int_equal(gpurun_snapshot_init(&snapshot, 1024, NULL), 0);
	for (size_t i = 0; i < snapshot.count; i++) {
		struct gpurun_device *device = &snapshot.devices[i];

		device->index = (int)i;
		for (size_t c = 0; c + 1 < sizeof(device->name); c++) {
			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			device->name[c] = (char)(1 + (seed >> 33) % 255);
		}
		device->load = i % 3 ? (double)i / 1024 : NAN;
		device->power_draw = i % 5 ? i * 1.2345 : INFINITY;
		device->memory_total = 81920;
		device->memory_used = i % 7 ? i * 10.5 : -NAN;
		add_process(device, (unsigned)i, i * 0.5, "user\x01\xff", "cmd\"\\\x80");
		hold(device, (pid_t)i, 0, "\xc3", "h\x7f", "c\xe2\x82");
	}
	checker = popen("python3 -c 'import json, sys; "
			"sys.exit(0 if len(json.load(sys.stdin)[\"gpus\"]) == 1024 else 1)'", "w");
	assert_non_null(checker);
	assert_int_equal(gpurun_report_json(checker, &snapshot, "node1", 1700000000.25), 0);
	assert_int_equal(pclose(checker), 0);
	gpurun_snapshot_free(&snapshot);
}

/* ---- what GPUtil has no column for: --wide and --processes ------------------------------ */

static char *table_with(const struct gpurun_snapshot *snapshot, bool all, bool wide,
			bool processes)
{
	struct gpurun_table_options options = { .all = all, .wide = wide, .processes = processes };
	char *text = NULL;
	size_t length = 0;
	FILE *out = open_memstream(&text, &length);

	assert_non_null(out);
	assert_int_equal(gpurun_report_table_with(out, snapshot, &options), 0);
	assert_int_equal(fclose(out), 0);
	return text;
}

static void table_without_options_is_gputil(void **state)
{
	struct gpurun_snapshot snapshot;
	char *text;

	(void)state;
	snapshot_of(&snapshot, ROWS(typical_rows));
	add_process(&snapshot.devices[0], 4242, 1000, "alice", "python x.py");
	text = table_with(&snapshot, false, false, false);
	assert_string_equal(text, typical_table);
	free(text);
	text = table_with(&snapshot, true, false, false);
	assert_string_equal(text, typical_table_all);
	free(text);
	gpurun_snapshot_free(&snapshot);
}

static void table_wide_columns(void **state)
{
	struct gpurun_snapshot snapshot;
	char *text;

	(void)state;
	snapshot_of(&snapshot, ROWS(typical_rows));
	snprintf(snapshot.devices[0].pci_bus_id, GPURUN_BUS_ID_SIZE, "00000000:07:00.0");
	snapshot.devices[0].power_draw = 312.45;
	snapshot.devices[3].vendor = GPURUN_VENDOR_AMD;
	snprintf(snapshot.devices[3].pci_bus_id, GPURUN_BUS_ID_SIZE, "0000:c1:00.0");
	snapshot.devices[3].power_draw = 1043.5;
	text = table_with(&snapshot, false, true, false);
	assert_string_equal(text,
		"| ID | GPU  | MEM  || Vendor | PCI bus id       | Power |\n"
		"---------------------------------------------------------\n"
		"|  0 |  29% |   6% || NVIDIA | 00000000:07:00.0 |  312W |\n"
		"|  1 | 100% | 100% || NVIDIA | [N/A]            |  nanW |\n"
		"|  2 |   0% |   0% || NVIDIA | [N/A]            |  nanW |\n"
		"|  3 |   7% |  74% || AMD    | 0000:c1:00.0     | 1044W |\n");
	free(text);
	text = table_with(&snapshot, true, true, false);
	assert_non_null(strstr(text, "| Display active || Vendor | PCI bus id       | Power |\n"));
	free(text);
	gpurun_snapshot_free(&snapshot);
}

static void table_processes_under_each_row(void **state)
{
	struct gpurun_snapshot snapshot;
	char *text;

	(void)state;
	use_time_zone("UTC");
	snapshot_of(&snapshot, ROWS(typical_rows));
	add_process(&snapshot.devices[0], 4242, 1000, "alice", "python train.py --lr 3e-4");
	add_process(&snapshot.devices[0], 123456, NAN, "", "");
	add_process(&snapshot.devices[1], 77, 16000, "bob", "a\tb");
	snapshot.devices[2].processes_known = true;
	hold(&snapshot.devices[1], 4240, 1000, "alice", "node1", "python train.py --epochs 3");
	text = table_with(&snapshot, false, false, true);
	assert_string_equal(text,
		"| ID | GPU  | MEM  |\n"
		"--------------------\n"
		"|  0 |  29% |   6% |\n"
		"      4242  alice   1000 MiB  python train.py --lr 3e-4\n"
		"    123456  ?          ? MiB  ?\n"
		"|  1 | 100% | 100% |\n"
		"        77  bob    16000 MiB  a?b\n"
		"    leased by pid 4240 (alice@node1) since 2023-11-14 22:13:20: python train.py --epochs 3\n"
		"|  2 |   0% |   0% |\n"
		"    no processes\n"
		"|  3 |   7% |  74% |\n"
		"    processes unknown\n");
	free(text);
	gpurun_snapshot_free(&snapshot);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(table_typical),
		cmocka_unit_test(table_unknown_numbers),
		cmocka_unit_test(table_twelve_gpus),
		cmocka_unit_test(table_wide_index),
		cmocka_unit_test(table_names),
		cmocka_unit_test(table_rounding),
		cmocka_unit_test(table_zero_devices),
		cmocka_unit_test(table_leases),
		cmocka_unit_test(table_many_devices),
		cmocka_unit_test(reports_fail_when_writing_fails),
		cmocka_unit_test(json_typical),
		cmocka_unit_test(json_unknowns_are_null),
		cmocka_unit_test(json_escaping),
		cmocka_unit_test(json_zero_devices),
		cmocka_unit_test(json_query_time),
		cmocka_unit_test(json_is_valid),
		cmocka_unit_test(table_without_options_is_gputil),
		cmocka_unit_test(table_wide_columns),
		cmocka_unit_test(table_processes_under_each_row),
	};

	use_time_zone("UTC");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
