"""compare.py: checks that GPU readings from different sources agree, for acceptance.sh.

    compare.py REF1 REF2 CANDIDATE...

Each argument is KIND:PATH. KIND is `smi` (acceptance.sh's own nvidia-smi query, see SMI_FIELDS;
a file PATH.display, when present, holds `index, display_mode, display_active` lines), `json`
(`gpurun --show --json`) or `table` (`gpurun --show --all`). REF1 and REF2 are two readings
taken one before and one after the candidates, so that their difference is the noise of a
second query: a candidate's number must lie within [min(REF1, REF2) - floor, max + floor].
Identity fields must be equal in all three. Prints one summary line (ok) or one line per
disagreement; exits 0 when everything agrees, 1 when not, 2 when a reading cannot be parsed.
"""
import json
import sys

# Name is last: it is the only field that may contain ", ", the CSV separator.
SMI_FIELDS = ["index", "uuid", "serial", "pci.bus_id", "driver_version", "utilization.gpu",
              "memory.total", "memory.used", "memory.free", "temperature.gpu", "power.draw",
              "name"]
IDENTITY = ["index", "uuid", "name", "serial", "pci.bus_id", "driver_version", "display_mode",
            "display_active"]
# Floors added to the spread of the two reference readings, and why:
# - utilization.gpu: NVML's figure is the busy fraction over the driver's last sample period
#   (1/6 s to 1 s); two reads a moment apart on a GPU that just ran anything can differ by a
#   few points. Idle, both read 0.
# - memory.*: NVML answers bytes, nvidia-smi whole MiB (gpurun floors to MiB the same way); a
#   MiB or two covers rounding. Nothing allocates device memory while these readings are taken.
# - memory.util: the table prints used/total as a whole percent.
# - temperature.gpu: a whole-degree sensor that can tick between reads.
# - power.draw: sampled, and not always over the same window by both paths (instant vs one-second
#   average on recent drivers); idle draw wanders by a few watts, so 10 W or 10 %, whichever is
#   larger.
FLOORS = {
    "utilization.gpu": lambda v: 5.0,
    "memory.total": lambda v: 1.0,
    "memory.used": lambda v: 2.0,
    "memory.free": lambda v: 2.0,
    "memory.util": lambda v: 1.0,
    "temperature.gpu": lambda v: 2.0,
    "power.draw": lambda v: max(10.0, 0.1 * abs(v)),
}
UNKNOWN = {"", "[N/A]", "[Not Supported]", "[Unknown Error]", "[Insufficient Permissions]",
           "[GPU is lost]", "nan", "N/A"}
TABLE_COLUMNS = {
    "ID": "index", "Name": "name", "Serial": "serial", "UUID": "uuid",
    "GPU temp.": "temperature.gpu", "GPU util.": "utilization.gpu", "Memory util.": "memory.util",
    "Memory total": "memory.total", "Memory used": "memory.used", "Memory free": "memory.free",
    "Display mode": "display_mode", "Display active": "display_active",
}


# The units the table appends to its numbers.
TABLE_SUFFIX = {"temperature.gpu": "C", "utilization.gpu": "%", "memory.util": "%",
                "memory.total": "MB", "memory.used": "MB", "memory.free": "MB"}


def value(key, text):
    """A reading as None (unknown), a number (measurements) or a string (identity, kept as
    written: a serial's leading zeros matter)."""
    if text is None:
        return None
    text = str(text).strip()
    # Any bracketed remark is no reading, as lib/probe_smi.c reads it: the drivers add new
    # ones ("[Requested functionality has been deprecated]" for display_mode since 575).
    if text in UNKNOWN or (text.startswith("[") and text.endswith("]")):
        return None
    if key not in FLOORS:
        return text
    suffix = TABLE_SUFFIX.get(key, "")
    if suffix and text.endswith(suffix):
        text = text[: -len(suffix)]
    try:
        return float(text)
    except ValueError:
        return text     # not a number where one belongs: reported as a disagreement


def with_memory_util(gpu):
    used, total = gpu.get("memory.used"), gpu.get("memory.total")
    if "memory.util" not in gpu:
        gpu["memory.util"] = (100.0 * used / total
                              if isinstance(used, float) and isinstance(total, float) and total
                              else None)
    return gpu


def load_smi(path):
    gpus = {}
    with open(path) as f:
        for line in f:
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            parts = line.split(", ", len(SMI_FIELDS) - 1)
            if len(parts) != len(SMI_FIELDS):
                raise ValueError(f"{path}: not a query line: {line!r}")
            gpu = {k: value(k, v) for k, v in zip(SMI_FIELDS, parts)}
            gpu["index"] = int(gpu["index"])
            gpus[gpu["index"]] = gpu
    try:
        with open(path + ".display") as f:
            for line in f:
                parts = [p.strip() for p in line.split(",")]
                if len(parts) == 3 and parts[0].isdigit() and int(parts[0]) in gpus:
                    gpus[int(parts[0])]["display_mode"] = value("display_mode", parts[1])
                    gpus[int(parts[0])]["display_active"] = value("display_active", parts[2])
    except FileNotFoundError:
        pass
    return {i: with_memory_util(g) for i, g in gpus.items()}


def load_json(path):
    with open(path) as f:
        report = json.load(f)
    gpus = {}
    for entry in report["gpus"]:
        gpu = {k: value(k, entry.get(k)) for k in
               ["uuid", "name", "serial", "pci.bus_id", "utilization.gpu", "memory.total",
                "memory.used", "memory.free", "temperature.gpu", "power.draw", "display_mode",
                "display_active"]}
        gpu["index"] = int(entry["index"])
        gpu["driver_version"] = value("driver_version", report.get("driver_version"))
        gpus[gpu["index"]] = with_memory_util(gpu)
    return gpus


def load_table(path):
    header, gpus = None, {}
    with open(path) as f:
        for line in f:
            if not line.startswith("|"):
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|") if c.strip()]
            if header is None:
                header = cells
                continue
            if len(cells) != len(header):
                raise ValueError(f"{path}: row with {len(cells)} cells under {len(header)} titles")
            gpu = {}
            for title, cell in zip(header, cells):
                key = TABLE_COLUMNS.get(title)
                if key:
                    gpu[key] = value(key, cell)
            gpu["index"] = int(gpu["index"])
            gpus[gpu["index"]] = gpu
    if header is None:
        raise ValueError(f"{path}: no table")
    return gpus


LOADERS = {"smi": load_smi, "json": load_json, "table": load_table}


def show(v):
    if isinstance(v, float):
        return f"{v:g}"
    return "unknown" if v is None else repr(v)


def compare(ref1, ref2, candidate, label):
    problems, fields = [], 0
    if sorted(candidate) != sorted(ref1) or sorted(ref1) != sorted(ref2):
        return [f"{label}: GPUs {sorted(candidate)}, nvidia-smi/reference shows {sorted(ref1)}"
                f" then {sorted(ref2)}"], 0
    for index in sorted(candidate):
        got, a, b = candidate[index], ref1[index], ref2[index]
        for key in sorted(got):
            if key not in a or key not in b:
                continue    # a field only one side reports (display modes when the query failed)
            fields += 1
            x, ya, yb = got[key], a[key], b[key]
            if key in IDENTITY or key not in FLOORS:
                if not (x == ya == yb):
                    problems.append(f"{label} GPU {index} {key}: {show(x)}, reference "
                                    f"{show(ya)}" + ("" if ya == yb else f" then {show(yb)}"))
                continue
            if x is None or ya is None or yb is None:
                if not (x is None and ya is None and yb is None):
                    problems.append(f"{label} GPU {index} {key}: {show(x)}, reference "
                                    f"{show(ya)}/{show(yb)}")
                continue
            floor = FLOORS[key](max(abs(ya), abs(yb)))
            low, high = min(ya, yb) - floor, max(ya, yb) + floor
            if not low <= x <= high:
                problems.append(f"{label} GPU {index} {key}: {show(x)} outside "
                                f"[{low:g}, {high:g}] (reference {show(ya)}, {show(yb)})")
    return problems, fields


def main(argv):
    if len(argv) < 4:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    try:
        readings = []
        for arg in argv[1:]:
            kind, _, path = arg.partition(":")
            readings.append((kind, LOADERS[kind](path)))
    except (OSError, ValueError, KeyError, json.JSONDecodeError) as e:
        print(f"cannot read {arg}: {e}")
        return 2
    (_, ref1), (_, ref2) = readings[0], readings[1]
    problems, fields = [], 0
    for kind, candidate in readings[2:]:
        p, n = compare(ref1, ref2, candidate, kind)
        problems += p
        fields += n
    for line in problems:
        print(line)
    if problems:
        return 1
    print(f"{len(ref1)} GPU(s), {fields} readings agree")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
