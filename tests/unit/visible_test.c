/* visible_test: the inherited masks on literal snapshots. CUDA_VISIBLE_DEVICES's grammar is one
 * table; then composition with Slurm and NVIDIA_VISIBLE_DEVICES, CUDA's order through the
 * driver's answer, MIG expansion and the whole-GPU-or-one-instance rule of the hand-off. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "failing_allocations.h"
#include "unit.h"

/* Four A100s, GPU 3 in MIG mode with two instances:
 *   position 0: GPU 0         GPU-1a2b3c4d-...
 *   position 1: GPU 1         GPU-1a2b9999-...    (shares "GPU-1a2b" with GPU 0)
 *   position 2: GPU 2         GPU-77aa0000-...
 *   position 3: GPU 3         GPU-c0ffee00-...    MIG enabled: never allowed itself
 *   position 4: GPU 3 MIG 0   MIG-aaaa1111-...    GPU instance 1, compute instance 0
 *   position 5: GPU 3 MIG 1   MIG-bbbb2222-...    GPU instance 2, compute instance 0 */
#define DEVICES 6
#define UUID0 "GPU-1a2b3c4d-0000-4000-8000-000000000000"
#define UUID1 "GPU-1a2b9999-0000-4000-8000-000000000001"
#define UUID2 "GPU-77aa0000-0000-4000-8000-000000000002"
#define UUID3 "GPU-c0ffee00-0000-4000-8000-000000000003"
#define MIG0 "MIG-aaaa1111-0000-4000-8000-000000000004"
#define MIG1 "MIG-bbbb2222-0000-4000-8000-000000000005"

static struct gpurun_device devices[DEVICES];
static struct gpurun_snapshot snapshot = { .devices = devices, .count = DEVICES };
static struct gpurun_inherited inherited;
static struct gpurun_mask mask;
static struct gpurun_error error;

static void set_device(int position, int index, const char *uuid, const char *name)
{
	gpurun_device_init_unknown(&devices[position]);
	devices[position].index = index;
	snprintf(devices[position].uuid, sizeof(devices[position].uuid), "%s", uuid);
	snprintf(devices[position].name, sizeof(devices[position].name), "%s", name);
}

static void set_instance(int position, int parent, int instance, const char *uuid, int gi)
{
	set_device(position, parent, uuid, "NVIDIA A100-SXM4-40GB MIG 3g.20gb");
	devices[position].mig_parent = parent;
	devices[position].mig_instance = instance;
	devices[position].mig_gpu_instance = gi;
	devices[position].mig_compute_instance = 0;
}

static int machine(void **state)
{
	(void)state;
	set_device(0, 0, UUID0, "NVIDIA A100-SXM4-40GB");
	set_device(1, 1, UUID1, "NVIDIA A100-SXM4-40GB");
	set_device(2, 2, UUID2, "NVIDIA A100-SXM4-40GB");
	set_device(3, 3, UUID3, "NVIDIA A100-SXM4-40GB");
	devices[3].mig_enabled = true;
	set_instance(4, 3, 0, MIG0, 1);
	set_instance(5, 3, 1, MIG1, 2);
	snapshot.count = DEVICES;
	memset(&inherited, 0, sizeof(inherited));
	memset(&error, 0, sizeof(error));
	return 0;
}

static int cleanup(void **state)
{
	(void)state;
	fail_at = -1;
	gpurun_mask_free(&mask);
	return 0;
}

/* The mask as a string, one character per position: 'x' allowed, '.' not. */
static const char *apply(struct gpurun_cuda_order *order)
{
	static char text[DEVICES + 1];

	assert_int_equal(gpurun_mask_apply(&snapshot, &inherited, order, &mask, &error), 0);
	assert_int_equal(mask.count, snapshot.count);
	for (size_t i = 0; i < snapshot.count; i++)
		text[i] = mask.allowed[i] ? 'x' : '.';
	text[snapshot.count] = '\0';
	return text;
}

static void assert_rules_mention(const char *words)
{
	if (!strstr(mask.rules, words))
		fail_msg("rules do not mention '%s':\n%s", words, mask.rules);
}

/* ---- the grammar ------------------------------------------------------------------------ */

struct grammar_case {
	const char *value;              /* CUDA_VISIBLE_DEVICES; NULL: unset */
	const char *allowed;
};

static const struct grammar_case grammar[] = {
	/* unset, empty */
	{ NULL, "xxx.xx" },                             /* every device; a MIG GPU via its instances */
	{ "", "......" },                               /* empty: no GPU */
	/* integers: NVML's index, which is CUDA's on a machine of one model */
	{ "0", "x....." },
	{ "2,0", "x.x..." },
	{ "0,1,2,3", "xxx.xx" },
	{ "3", "....xx" },                              /* a MIG GPU by index: all its instances */
	{ "4", "......" },                              /* past the last GPU */
	{ "1,4,2", ".x...." },                          /* ... ends the list there */
	{ "99999999999999999999", "......" },           /* saturates, past every GPU */
	{ "0,-1,2", "x....." },                         /* a negative number ends the list */
	{ "-1", "......" },
	{ "-0", "x....." },                             /* strtoul: -0 is 0 */
	{ "+2", "..x..." },
	{ "02", "..x..." },                             /* decimal */
	{ " 1", ".x...." },                             /* leading blanks, as strtoul skips them */
	{ "0, 2", "x.x..." },
	{ "0,\t2", "x.x..." },
	{ "1 ", ".x...." },                             /* anything after the digits is ignored */
	{ "1gpu2,2ampere", ".xx..." },                  /* PyTorch's driver-checked example */
	{ "0x1", "x....." },                            /* "0", then junk */
	{ "0,,2", "x....." },                           /* an empty entry ends the list */
	{ "2,", "..x..." },
	{ ",0", "......" },
	{ "one,2", "......" },
	{ "2,two,0", "..x..." },
	{ "0,1,0", "......" },                          /* a GPU named twice: no GPU at all */
	{ "0,+0", "......" },
	{ "0,4,0", "......" },                          /* the repeat counts before the range */
	{ "0,-1,0", "x....." },                         /* ... but not after the end */
	{ "0," UUID2, "x....." },                       /* the first entry decides: indices */
	/* GPU- UUIDs and unique prefixes */
	{ UUID2, "..x..." },
	{ "GPU-77", "..x..." },
	{ "GPU-1a2b3", "x....." },
	{ "GPU-1a2b", "......" },                       /* a prefix of two GPUs */
	{ "GPU-77,GPU-1a2b,GPU-1a2b3", "..x..." },      /* ... ends the list */
	{ "GPU-1a2b3,GPU-77", "x.x..." },
	{ "GPU-", "......" },                           /* a prefix of every GPU */
	{ "GPU-ffff", "......" },                       /* no such GPU */
	{ "GPU-77AA", "......" },                       /* hex is compared as written */
	{ "gpu-77aa", "......" },                       /* not a UUID, and not a number */
	{ "GPU-77, GPU-1a2b3", "..x..." },              /* a UUID entry is not trimmed */
	{ "GPU-77,2", "..x..." },                       /* an index among UUIDs ends the list */
	{ "GPU-77," UUID2, "......" },                  /* one GPU twice */
	{ "GPU-77,GPU-ffff,GPU-77", "......" },         /* written twice: none, past an unknown */
	{ "GPU-77,GPU-1a2b,GPU-77", "......" },         /* ... or an ambiguous entry */
	{ "GPU-77,2,GPU-77", "..x..." },                /* ... but not past the UUID entries */
	{ "GPU-77,", "..x..." },
	{ "GPU-c0ffee", "....xx" },                     /* a MIG GPU by UUID: all its instances */
	/* MIG instances */
	{ MIG0, "....x." },
	{ MIG1 ",GPU-77", "..x..x" },                   /* MIG and GPU UUIDs mix */
	{ "GPU-c0ffee," MIG0, "....xx" },
	{ "MIG-aaaa1111", "......" },                   /* MIG UUIDs are matched whole */
	{ MIG0 "," MIG0, "......" },
	{ "MIG-GPU-c0ffee00-0000-4000-8000-000000000003/2/0", ".....x" },   /* before R470 */
	{ "MIG-GPU-c0ffee/1/0", "....x." },             /* with an abbreviated GPU UUID */
	{ "MIG-GPU-c0ffee/9/0", "......" },             /* no such instance */
	{ "MIG-GPU-77aa/1/0", "......" },               /* a GPU without MIG */
	{ "MIG-GPU-1a2b/1/0", "......" },               /* an ambiguous GPU */
	{ "MIG-GPU-c0ffee/1", "......" },               /* no compute instance */
	{ "MIG-GPU-c0ffee/1/0,GPU-77", "..x.x." },
	{ MIG0 ",0", "....x." },
	{ "garbage", "......" },
};

#define GRAMMAR_CASES (sizeof(grammar) / sizeof(grammar[0]))
_Static_assert(GRAMMAR_CASES >= 40, "the grammar table");

/* One table row: state is the row. */
static void grammar_case(void **state)
{
	const struct grammar_case *row = *state;
	const char *got;

	inherited.cuda_visible_devices = row->value;
	got = apply(NULL);
	if (strcmp(got, row->allowed) != 0)
		fail_msg("allowed %s, expected %s\n%s", got, row->allowed, mask.rules);
	/* Only a variable that leaves nothing says why; the machine has GPUs. */
	if ((strcmp(got, "......") == 0) != (mask.nothing_allowed[0] != '\0'))
		fail_msg("nothing_allowed is '%s'", mask.nothing_allowed);
	if (mask.warning[0])
		fail_msg("unexpected warning '%s'", mask.warning);
}

static void rules_say_where_the_list_ends(void **state)
{
	(void)state;
	inherited.cuda_visible_devices = "2,-1,0";
	assert_string_equal(apply(NULL), "..x...");
	assert_rules_mention("CUDA_VISIBLE_DEVICES=2,-1,0 (inherited): GPU 2; the list ends at '-1' "
			     "(negative)");
	assert_rules_mention("PCI order (the GPUs are all one model");
	assert_int_equal(mask.verdicts[0], GPURUN_MASK_NOT_VISIBLE);
	assert_int_equal(mask.verdicts[2], GPURUN_MASK_ALLOWED);
	/* Not named, the MIG-enabled GPU is out of the job altogether, and says so. */
	assert_int_equal(mask.verdicts[3], GPURUN_MASK_NOT_VISIBLE);
}

static void nothing_allowed_says_why(void **state)
{
	(void)state;
	inherited.cuda_visible_devices = "";
	apply(NULL);
	assert_string_equal(mask.nothing_allowed,
			    "CUDA_VISIBLE_DEVICES is empty, which gives a program no GPU");
	inherited.cuda_visible_devices = "1,1";
	apply(NULL);
	assert_non_null(strstr(mask.nothing_allowed, "names a GPU twice"));
	inherited.cuda_visible_devices = "GPU-1a2b";
	apply(NULL);
	assert_non_null(strstr(mask.nothing_allowed, "'GPU-1a2b' (a prefix of several GPUs' UUIDs)"));
}

static void mig_gpu_is_never_allowed_itself(void **state)
{
	(void)state;
	assert_string_equal(apply(NULL), "xxx.xx");
	assert_int_equal(mask.verdicts[3], GPURUN_MASK_MIG_ENABLED);
	assert_string_equal(gpurun_mask_verdict_text(mask.verdicts[3]),
			    "MIG enabled: its MIG instances are chosen instead");
	inherited.cuda_visible_devices = "3";
	apply(NULL);
	assert_rules_mention("GPU 3 (MIG enabled: its 2 instances)");
	assert_int_equal(mask.verdicts[3], GPURUN_MASK_MIG_ENABLED);   /* named: still the job's */
	assert_true(gpurun_mask_leaves(&mask, 3));
	inherited.cuda_visible_devices = "0";
	apply(NULL);
	assert_false(gpurun_mask_leaves(&mask, 3));
}

/* A MIG GPU without instances contributes nothing, and an index naming it is still valid. */
static void mig_gpu_without_instances(void **state)
{
	(void)state;
	snapshot.count = 4;
	inherited.cuda_visible_devices = "3,1";
	assert_string_equal(apply(NULL), ".x..");
}

static void index_is_the_nvml_index_not_a_position(void **state)
{
	(void)state;
	set_device(0, 1, UUID1, "NVIDIA A100-SXM4-40GB");
	set_device(1, 0, UUID0, "NVIDIA A100-SXM4-40GB");
	snapshot.count = 2;
	inherited.cuda_visible_devices = "0";
	assert_string_equal(apply(NULL), ".x");
}

static void other_vendors_are_left_alone(void **state)
{
	(void)state;
	devices[2].vendor = GPURUN_VENDOR_AMD;
	inherited.cuda_visible_devices = "";
	assert_string_equal(apply(NULL), "..x...");
	assert_string_equal(mask.nothing_allowed, "");
}

static void old_interface_reads_pci_order(void **state)
{
	bool allowed[DEVICES];

	(void)state;
	snprintf(devices[0].name, sizeof(devices[0].name), "NVIDIA H100");
	assert_int_equal(gpurun_visible_mask(&snapshot, "1,0", allowed, &error), 0);
	assert_true(allowed[0] && allowed[1] && !allowed[2] && !allowed[3] && !allowed[4]);
	assert_int_equal(gpurun_visible_mask(&snapshot, NULL, allowed, &error), 0);
	assert_true(allowed[0] && allowed[2] && !allowed[3] && allowed[5]);
}

/* ---- CUDA's order: the driver's answer ----------------------------------------------------- */

static char answer[4][GPURUN_UUID_SIZE];

static struct gpurun_cuda_order answered(size_t count)
{
	struct gpurun_cuda_order order = { .asked = true, .answered = true, .count = count,
					   .uuids = answer };
	return order;
}

/* GPUs 0 and 1 are H100s: CUDA numbers them first only if the driver says so. */
static void mixed_models(void)
{
	snprintf(devices[0].name, sizeof(devices[0].name), "NVIDIA H100 PCIe");
	snprintf(devices[1].name, sizeof(devices[1].name), "NVIDIA H100 PCIe");
}

static void driver_places_indices_on_mixed_models(void **state)
{
	struct gpurun_cuda_order order;

	(void)state;
	mixed_models();
	snprintf(answer[0], sizeof(answer[0]), "GPU-77aa0000-0000-4000-8000-000000000002");
	order = answered(1);
	inherited.cuda_visible_devices = "0";
	assert_string_equal(apply(&order), "..x...");
	assert_rules_mention("CUDA's order as the CUDA driver reports it");
	assert_string_equal(mask.warning, "");
}

static void driver_showing_a_mig_instance_names_its_gpu(void **state)
{
	struct gpurun_cuda_order order;

	(void)state;
	mixed_models();
	/* cuDeviceGetUuid_v2's bytes carry no prefix; the driver's answer is spelled GPU-. */
	snprintf(answer[0], sizeof(answer[0]), "GPU-bbbb2222-0000-4000-8000-000000000005");
	snprintf(answer[1], sizeof(answer[1]), "GPU-1A2B3C4D-0000-4000-8000-000000000000");
	order = answered(2);
	inherited.cuda_visible_devices = "1,0";
	assert_string_equal(apply(&order), "x...xx");
}

static void driver_showing_nothing_allows_nothing(void **state)
{
	struct gpurun_cuda_order order = answered(0);

	(void)state;
	mixed_models();
	inherited.cuda_visible_devices = "7";
	assert_string_equal(apply(&order), "......");
	assert_non_null(strstr(mask.nothing_allowed, "CUDA_VISIBLE_DEVICES=7 names no GPU"));
}

static void pci_bus_id_needs_no_driver(void **state)
{
	struct gpurun_cuda_order order = { 0 };

	(void)state;
	mixed_models();
	inherited.cuda_visible_devices = "2";
	inherited.cuda_device_order = "PCI_BUS_ID";
	assert_string_equal(apply(&order), "..x...");
	assert_false(order.asked);
	assert_rules_mention("PCI order (CUDA_DEVICE_ORDER=PCI_BUS_ID)");
}

static void one_model_needs_no_driver(void **state)
{
	struct gpurun_cuda_order order = { 0 };

	(void)state;
	inherited.cuda_visible_devices = "2";
	inherited.cuda_device_order = "FASTEST_FIRST";
	assert_string_equal(apply(&order), "..x...");
	assert_false(order.asked);
}

static void uuids_need_no_driver(void **state)
{
	struct gpurun_cuda_order order = { 0 };

	(void)state;
	mixed_models();
	inherited.cuda_visible_devices = "GPU-77";
	assert_string_equal(apply(&order), "..x...");
	assert_false(order.asked);
}

/* No driver: PCI order, and one warning that says what was assumed and how to be sure. */
static void no_driver_warns_on_mixed_models(void **state)
{
	struct gpurun_cuda_order order = { 0 };

	(void)state;
	mixed_models();
	setenv("GPURUN_CUDA_LIB", "/nonexistent/libcuda.so.1", 1);
	inherited.cuda_visible_devices = "2";
	assert_string_equal(apply(&order), "..x...");
	unsetenv("GPURUN_CUDA_LIB");
	assert_true(order.asked);
	assert_false(order.answered);
	assert_non_null(strstr(order.failure, "not found (no CUDA driver)"));
	assert_non_null(strstr(mask.warning, "CUDA_VISIBLE_DEVICES=2: the GPUs differ in model"));
	assert_non_null(strstr(mask.warning, "Set CUDA_DEVICE_ORDER=PCI_BUS_ID or use UUIDs"));
	assert_rules_mention("indices assumed in PCI order");
	gpurun_cuda_order_free(&order);
}

static void unknown_model_counts_as_different(void **state)
{
	struct gpurun_cuda_order order = { .asked = true, .failure = "no driver" };

	(void)state;
	devices[1].name[0] = '\0';
	inherited.cuda_visible_devices = "0";
	apply(&order);
	assert_non_null(strstr(mask.warning, "no driver"));
}

/* ---- composition: Slurm, containers ------------------------------------------------------ */

/* Four plain GPUs for the Slurm cases (MIG changes Slurm's numbering). */
static void four_plain_gpus(void)
{
	snapshot.count = 4;
	devices[3].mig_enabled = false;
}

static void slurm_step_gpus_are_the_allocation(void **state)
{
	(void)state;
	four_plain_gpus();
	inherited.slurm_step_gpus = "0,2";
	inherited.slurm_job_gpus = "0,1,2";
	inherited.cuda_visible_devices = "0,2";
	assert_string_equal(apply(NULL), "x.x.");
	assert_int_equal(mask.verdicts[1], GPURUN_MASK_OUTSIDE_SLURM);
	assert_rules_mention("SLURM_STEP_GPUS=0,2 (the Slurm step's GPUs, node indices): GPU 0, GPU 2");
}

static void slurm_job_gpus_without_a_step(void **state)
{
	(void)state;
	four_plain_gpus();
	inherited.slurm_job_gpus = "1,3";
	assert_string_equal(apply(NULL), ".x.x");
}

/* Both must allow a GPU: CUDA_VISIBLE_DEVICES cannot move a job outside its allocation. */
static void slurm_and_cuda_visible_intersect(void **state)
{
	(void)state;
	four_plain_gpus();
	inherited.slurm_step_gpus = "0,1";
	inherited.cuda_visible_devices = "1,2";
	assert_string_equal(apply(NULL), ".x..");
	assert_int_equal(mask.verdicts[0], GPURUN_MASK_NOT_VISIBLE);
	assert_int_equal(mask.verdicts[2], GPURUN_MASK_OUTSIDE_SLURM);
	inherited.cuda_visible_devices = "2,3";
	assert_string_equal(apply(NULL), "....");
	assert_non_null(strstr(mask.nothing_allowed, "have no GPU in common"));
}

/* Under cgroup confinement the job sees only its GPUs, renumbered from 0, while Slurm's
 * variables keep the node's numbers. */
static void confined_job_sees_only_its_gpus(void **state)
{
	(void)state;
	snapshot.count = 2;
	inherited.slurm_step_gpus = "2,3";
	inherited.cuda_visible_devices = "0,1";
	assert_string_equal(apply(NULL), "xx");
	assert_rules_mention("a confined job sees only its own GPUs");
}

static void slurm_garbage_allows_nothing(void **state)
{
	(void)state;
	four_plain_gpus();
	inherited.slurm_job_gpus = "gpu:2";
	assert_string_equal(apply(NULL), "....");
	assert_non_null(strstr(mask.nothing_allowed, "SLURM_JOB_GPUS=gpu:2 is not a list"));
	inherited.slurm_job_gpus = "";
	assert_string_equal(apply(NULL), "....");
}

static void slurm_job_without_gpus_does_not_limit(void **state)
{
	(void)state;
	four_plain_gpus();
	inherited.slurm_job_id = "42";
	assert_string_equal(apply(NULL), "xxxx");
	assert_rules_mention("Slurm job 42 has no GPU allocation");
}

static void slurm_indices_are_not_applied_with_mig(void **state)
{
	(void)state;
	inherited.slurm_step_gpus = "0";
	inherited.cuda_visible_devices = MIG1;
	assert_string_equal(apply(NULL), ".....x");
	assert_rules_mention("not applied: on a machine with MIG");
}

/* Without CUDA_VISIBLE_DEVICES to name the allocated instances, gpurun cannot tell which they
 * are: none, rather than every GPU of the node. */
static void slurm_on_a_mig_machine_without_the_list_allows_nothing(void **state)
{
	(void)state;
	inherited.slurm_step_gpus = "0";
	assert_string_equal(apply(NULL), "......");
	assert_int_equal(mask.verdicts[0], GPURUN_MASK_OUTSIDE_SLURM);
	assert_non_null(strstr(mask.nothing_allowed, "CUDA_VISIBLE_DEVICES, which would name them, "
					"is not set"));
}

static void container_none_means_no_gpu(void **state)
{
	(void)state;
	inherited.nvidia_visible_devices = "none";
	assert_string_equal(apply(NULL), "......");
	assert_int_equal(mask.verdicts[0], GPURUN_MASK_NO_GPU);
	assert_string_equal(mask.nothing_allowed,
			    "NVIDIA_VISIBLE_DEVICES=none: this container was given no GPU");
}

/* CDI specs set "void" in containers whose GPUs came in by CDI: NVML shows what they have. */
static void container_void_is_not_applied(void **state)
{
	(void)state;
	inherited.nvidia_visible_devices = "void";
	assert_string_equal(apply(NULL), "xxx.xx");
	assert_rules_mention("NVIDIA_VISIBLE_DEVICES=void: the container runtime injected nothing");
}

static void container_all_empty_and_indices_are_not_applied_again(void **state)
{
	(void)state;
	inherited.nvidia_visible_devices = "all";
	assert_string_equal(apply(NULL), "xxx.xx");
	inherited.nvidia_visible_devices = "";
	assert_string_equal(apply(NULL), "xxx.xx");
	inherited.nvidia_visible_devices = "5,7";
	assert_string_equal(apply(NULL), "xxx.xx");
	assert_rules_mention("applied by the container runtime");
}

static void container_uuids_limit(void **state)
{
	(void)state;
	inherited.nvidia_visible_devices = UUID2 "," UUID3;
	assert_string_equal(apply(NULL), "..x.xx");
	assert_int_equal(mask.verdicts[0], GPURUN_MASK_OUTSIDE_CONTAINER);
	inherited.nvidia_visible_devices = MIG0;
	inherited.cuda_visible_devices = "3";
	assert_string_equal(apply(NULL), "....x.");
}

/* ---- the hand-off: whole GPUs, or one instance -------------------------------------------- */

static void whole_gpus_go_first(void **state)
{
	size_t candidates[] = { 4, 0, 5, 2 };

	(void)state;
	assert_int_equal(gpurun_visible_whole_first(&snapshot, candidates, 4), 2);
	assert_int_equal(candidates[0], 0);
	assert_int_equal(candidates[1], 2);
	assert_int_equal(candidates[2], 4);
	assert_int_equal(candidates[3], 5);
	assert_int_equal(gpurun_visible_whole_first(&snapshot, candidates + 2, 2), 0);
	assert_int_equal(gpurun_visible_whole_first(&snapshot, candidates, 0), 0);
}

/* ---- out of memory ------------------------------------------------------------------------ */

/* Applies the variables once with each allocation failing in turn, then with none failing, and
 * returns how many allocations that last run made. */
static long fail_each_allocation(struct gpurun_cuda_order *order)
{
	for (fail_at = 0;; fail_at++) {
		int status;

		allocations = 0;
		allocation_failed = false;
		memset(&error, 0, sizeof(error));
		status = gpurun_mask_apply(&snapshot, &inherited, order, &mask, &error);
		if (!allocation_failed) {
			assert_int_equal(status, 0);
			fail_at = -1;
			return allocations;
		}
		if (status != GPURUN_EXIT_SOFTWARE)
			fail_msg("allocation %ld failed, and the status is %d:\n%s", fail_at, status,
				 mask.rules);
		assert_string_equal(error.message, "out of memory");
	}
}

/* Out of memory in any step is gpurun's failure (exit 70), never a mask that leaves GPUs out
 * (which would say "names no GPU" and exit 75). */
static void out_of_memory_is_an_error(void **state)
{
	struct gpurun_cuda_order order;

	(void)state;
	/* The mask's two, Slurm's indices, CUDA_VISIBLE_DEVICES's list, the devices it names and
	 * its integer entries. */
	inherited.slurm_step_gpus = "0,1,2";
	inherited.cuda_visible_devices = "2,0";
	assert_true(fail_each_allocation(NULL) >= 6);
	inherited.cuda_visible_devices = "GPU-77," MIG0;
	assert_true(fail_each_allocation(NULL) >= 5);
	/* Integers placed through the driver's answer. */
	mixed_models();
	snprintf(answer[0], sizeof(answer[0]), "%s", UUID2);
	order = answered(1);
	inherited.cuda_visible_devices = "0";
	assert_true(fail_each_allocation(&order) >= 6);
	assert_rules_mention("CUDA's order as the CUDA driver reports it");
}

/* ROCR_VISIBLE_DEVICES too: an allocation that fails while it is read is an error, never all
 * AMD GPUs left out. */
static void out_of_memory_with_rocr_visible_devices_is_an_error(void **state)
{
	(void)state;
	devices[1].vendor = GPURUN_VENDOR_AMD;
	devices[2].vendor = GPURUN_VENDOR_AMD;
	inherited.rocr_visible_devices = "1";
	assert_true(fail_each_allocation(NULL) >= 3);
	assert_string_equal(apply(NULL), "x.x.xx");     /* AMD 1 is position 2 */
}

#define TEST(name) cmocka_unit_test_setup_teardown(name, machine, cleanup)

int main(void)
{
	const struct CMUnitTest others[] = {
		TEST(rules_say_where_the_list_ends),
		TEST(nothing_allowed_says_why),
		TEST(mig_gpu_is_never_allowed_itself),
		TEST(mig_gpu_without_instances),
		TEST(index_is_the_nvml_index_not_a_position),
		TEST(other_vendors_are_left_alone),
		TEST(old_interface_reads_pci_order),
		TEST(driver_places_indices_on_mixed_models),
		TEST(driver_showing_a_mig_instance_names_its_gpu),
		TEST(driver_showing_nothing_allows_nothing),
		TEST(pci_bus_id_needs_no_driver),
		TEST(one_model_needs_no_driver),
		TEST(uuids_need_no_driver),
		TEST(no_driver_warns_on_mixed_models),
		TEST(unknown_model_counts_as_different),
		TEST(slurm_step_gpus_are_the_allocation),
		TEST(slurm_job_gpus_without_a_step),
		TEST(slurm_and_cuda_visible_intersect),
		TEST(confined_job_sees_only_its_gpus),
		TEST(slurm_garbage_allows_nothing),
		TEST(slurm_job_without_gpus_does_not_limit),
		TEST(slurm_indices_are_not_applied_with_mig),
		TEST(slurm_on_a_mig_machine_without_the_list_allows_nothing),
		TEST(container_none_means_no_gpu),
		TEST(container_void_is_not_applied),
		TEST(container_all_empty_and_indices_are_not_applied_again),
		TEST(container_uuids_limit),
		TEST(whole_gpus_go_first),
		TEST(out_of_memory_is_an_error),
		TEST(out_of_memory_with_rocr_visible_devices_is_an_error),
	};
	size_t other_count = sizeof(others) / sizeof(others[0]);
	struct CMUnitTest *tests = calloc(GRAMMAR_CASES + other_count, sizeof(*tests));
	char (*names)[160] = calloc(GRAMMAR_CASES, sizeof(*names));

	if (!tests || !names)
		return 1;
	/* The table's rows are tests of their own, named after the value. */
	for (size_t i = 0; i < GRAMMAR_CASES; i++) {
		snprintf(names[i], sizeof(names[i]), "grammar: CUDA_VISIBLE_DEVICES%s%s",
			 grammar[i].value ? "=" : " unset", grammar[i].value ? grammar[i].value : "");
		tests[i] = (struct CMUnitTest){ names[i], grammar_case, machine, cleanup,
						(void *)&grammar[i] };
	}
	memcpy(tests + GRAMMAR_CASES, others, sizeof(others));
	int failed = _cmocka_run_group_tests("visible_test", tests, GRAMMAR_CASES + other_count,
					     NULL, NULL);
	free(tests);
	free(names);
	return failed;
}
