"""check_overlap.py LOG EXPECTED_JOBS: every job ran, and no two jobs whose run intervals
overlap shared a GPU. LOG lines are "<start ns> <end ns> <CUDA_VISIBLE_DEVICES>"."""
import sys

jobs = []
with open(sys.argv[1]) as log:
    for line in log:
        start, end, visible = line.split()
        jobs.append((int(start), int(end), set(visible.split(","))))
expected = int(sys.argv[2])
if len(jobs) != expected:
    sys.exit(f"{len(jobs)} jobs ran, wanted {expected}")
for gpus in (job[2] for job in jobs):
    if not gpus or "" in gpus or "<unset>" in gpus:
        sys.exit(f"a job ran without GPUs: {gpus}")
jobs.sort()
for i, (start, end, gpus) in enumerate(jobs):
    for other_start, other_end, other_gpus in jobs[i + 1:]:
        if other_start >= end:
            break
        if gpus & other_gpus:
            sys.exit(f"overlapping jobs shared GPU {sorted(gpus & other_gpus)}")
print(f"{len(jobs)} jobs, no overlap on a GPU")
