#!/usr/bin/env python3
"""seeds.py: writes the seed corpus of every fuzz target (tests/fuzz/corpus/<target>/), valid
inputs of each format and the awkward cases the tests already know, so that fuzzing starts
from the real formats instead of from nothing. Run it after changing a format; the files are
checked in."""
import hashlib
import os

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def write(target, seeds):
    directory = os.path.join(HERE, "corpus", target)
    os.makedirs(directory, exist_ok=True)
    for seed in seeds:
        data = seed.encode() if isinstance(seed, str) else seed
        name = hashlib.sha1(data).hexdigest()[:16]
        with open(os.path.join(directory, name), "wb") as out:
            out.write(data)


def smi():
    with open(os.path.join(ROOT, "tests/integration/expected/four.smi.csv")) as f:
        four = f.read()
    line = ("0, GPU-4f1c8e2a-7b3d-4e59-a1c6-2d8f9b0e3a71, 85, 81920, 60000, 21920, 550.54.15, "
            "NVIDIA A100-SXM4-80GB, 1324021034512, Disabled, Disabled, 61, 00000000:07:00.0, 312.45\n")
    return [
        four,
        four.replace("\n", "\r\n"),
        four.rstrip("\n"),
        line,
        line.replace("312.45", "[Not Supported]").replace(", 85,", ", [N/A],"),
        line.replace("NVIDIA A100-SXM4-80GB", "Tesla, Inc. GPU, rev 2"),
        line.replace(", 81920,", ", 0,"),
        line.replace("61", "[Insufficient Permissions]").replace("60000", "[Unknown Error]"),
        "No devices were found\n",
        "",
        "\n\n",
    ]


def values():
    return ["0.3", "30%", "100%", "0", "512", "20G", "20GiB", "1.5TiB", "512MiB", "64K", "2T",
            "90", "90s", "15m", "2h", "0.5", "1e3", "inf", "nan", "-1", "0x10", " 5", "5 ",
            "18446744073709551616", "4294967295", "4294967296", "1e308", "1e309G", "all"]


def holder():
    return [
        "pid=4242\nuid=1000\nuser=alice\nstart=1732890000\nhost=node17\ncommand=python train.py --lr 3e-4\n",
        "pid=1\n",
        "pid=abc\nuser=mallory\n",
        "pid=2147483648\n",
        "command=" + "x" * 400 + "\npid=7\nhost=" + "h" * 100,
        "uid=4294967296\nstart=-5\npid=9",
        "",
        "==\n=\n\n",
    ]


def request():
    text = ["--limit 2 --order memory", "--lazy --min-free 20G --exclude 0,GPU-abc",
            "--max-load 30% --max-memory 0.4 --include-nan --attempts 3 --interval 90s",
            "--wait --timeout 2h --cpu-fallback --uuid", "--limit all --min-count 2",
            "--lock-dir '/tmp/a b' --source nvidia-smi --smi-timeout 5",
            "--order random --seed 7", "--show --all --json", "--print --explain -v",
            "\"unbalanced", "trailing\\", "--limit=3 --order=free", "--no-lease --vendor amd",
            "--min-count 3 --limit 2", "--help", "-V", "--bogus", "python train.py"]
    argv = [["--limit", "2", "--order", "memory", "python", "train.py"],
            ["--print", "--limit", "all"], ["--show", "--processes", "--watch", "2"],
            ["--lazy", "--preload-lib", "/usr/lib/libgpurun-preload.so", "--", "sh", "-c", "x"],
            ["--limit"], ["--", "--limit"], ["-h"], ["--exclude", "0,1,GPU-1", "true"]]
    return (["\x00" + t for t in text] + ["\x01" + "\x00".join(a) for a in argv])


def visible():
    # byte 0: which variables are unset (bit i: variable i); byte 1: the driver's answer.
    # Variables: CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER, SLURM_STEP_GPUS, SLURM_JOB_GPUS,
    # SLURM_JOB_ID, NVIDIA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES.
    def seed(unset, driver, *values):
        return bytes([unset, driver]) + "\x00".join(values).encode()
    return [
        seed(0x7e, 0, "0,2"),
        seed(0x7c, 0x42, "1,0", "FASTEST_FIRST"),
        seed(0x7e, 0, "GPU-2222,1"),
        seed(0x7e, 0, "GPU-22222222-0000-4000-8000-000000000001"),
        seed(0x7e, 0, "MIG-aaaa1111-0000-4000-8000-000000000004"),
        seed(0x7e, 0, "MIG-GPU-c0ffee00-0000-4000-8000-000000000003/1/0"),
        seed(0x7e, 0, "0,0"),
        seed(0x7e, 0, "-1"),
        seed(0x7e, 0, ""),
        seed(0x7e, 0, "0, 1"),
        seed(0x61, 0, "0", "PCI_BUS_ID", "1,2", "0-2", "123", "all"),
        seed(0x41, 0, "", "", "", "", "", "none"),
        seed(0x3f, 0, "", "", "", "", "", "", "1,GPU-0123456789abcdef"),
        seed(0x00, 0xc7, "3,1", "", "0,2-3", "", "77", "GPU-22222222-0000-4000-8000-000000000001,2", "0"),
    ]


def sysfs():
    # pieces: vendor, device, uevent, vram total, vram used, busy, unique_id, product, serial,
    # temp1_input, power1_average, module version, fdinfo/3, status, cmdline, comm
    good = ["0x1002\n", "0x740f\n",
            "DRIVER=amdgpu\nPCI_CLASS=38000\nPCI_ID=1002:740F\nPCI_SLOT_NAME=0000:03:00.0\n",
            "68719476736\n", "64424509440\n", "97\n", "b39adaf836600b31\n",
            "AMD Instinct MI210\n", "692243000123\n", "61000\n", "187000000\n", "6.8.5\n",
            "pos:\t0\nflags:\t02100002\ndrm-driver:\tamdgpu\ndrm-pdev:\t0000:03:00.0\n"
            "drm-client-id:\t21\ndrm-memory-vram:\t524288 KiB\n",
            "Name:\tworker\nUmask:\t0022\nPid:\t100\nUid:\t4242\t4242\t4242\t4242\n",
            "python\x00train.py\x00", "python\n"]
    seeds = ["\x00".join(good)]
    broken = list(good)
    broken[3], broken[5], broken[9] = "garbage\n", "101\n", "-999999999\n"
    seeds.append("\x00".join(broken))
    other = list(good)
    other[0], other[2] = "0x10de\n", "PCI_SLOT_NAME=zzzz\n"
    seeds.append("\x00".join(other))
    seeds.append("\x00".join(good[:5]))
    seeds.append("")
    return seeds


write("smi", smi())
write("values", values())
write("holder", holder())
write("request", request())
write("visible", visible())
write("sysfs", sysfs())
