"""`gpuemu sweep SPEC`: a grid of launches (program x arch x scheduler x size)
on a Dask cluster, one table of results.

SPEC is a JSON file:

    {
      "programs": ["vecadd.json",
                   {"manifest": "transpose_tiled33.json",
                    "sizes": [{"label": "256", "grid": [8, 8], "args": {"n": 256, "a": 65536, "t": 65536}}]}],
      "archs": ["sm_90", "sm_70"],          # default ["sm_90"]
      "schedulers": ["lrr"],                # default ["lrr"]; warp scheduling policies
      "sizes": [...],                        # default sizes of programs that give none
      "counters": ["cycles", "shared_bank_conflicts"],   # columns (default below)
      "launch": {"budget": 1000000}          # launch options of every run
    }

Paths are relative to the spec file. A program is a manifest (programs/*.json);
a size overrides its grid and, in "args", buffer counts and scalar values by
argument name (no sizes: the manifest's own launch, label "manifest").
Any other field, at any level, is an error naming the spec, the field's path
(``programs[0].sizes[1].block``) and the closest valid name (SPEC_LEVELS);
"launch" may not set "scheduler" ("schedulers" gives it).

Every run is one task on the cluster: a local one (`LocalCluster`, one
process per worker, `--workers N`, default 2) unless `--scheduler ADDRESS`
names an existing scheduler (whose workers must have gpuemu installed and
see the spec's files at the same paths). A run that fails (compile error,
fault) is a row with its error; the table is sorted in spec order.
"""
from __future__ import annotations

import difflib
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from . import manifest as mf

DEFAULT_COUNTERS = ("cycles", "thread_instructions", "shared_bank_conflicts",
                    "global_load_sectors", "l2_hits", "dram_read_sectors")


class SweepError(ValueError):
    """A spec that cannot be run; the message says what to fix."""


# The spec's fields at each level; any other field is refused, naming the
# closest valid one, as a manifest's are (a typo would otherwise leave the
# sweep running without it). A program may also be a bare manifest path.
_LAUNCH_SET_BY_THE_SPEC = {"scheduler": "the spec's 'schedulers' give it"}
SPEC_LEVELS = {
    "the spec's top level": ("programs", "archs", "schedulers", "sizes", "counters", "launch"),
    "a program": ("manifest", "sizes"),
    "a size": ("label", "grid", "args"),
    "'launch'": tuple(f for f in mf.LAUNCH_FIELDS if f not in _LAUNCH_SET_BY_THE_SPEC),
}


def _check_fields(d: dict, level: str, where: Path, path: str) -> None:
    """A SweepError for the first key of `d` that `level` has no field of."""
    msg = mf.unknown_field(d, level, SPEC_LEVELS)
    if msg:
        raise SweepError(f"{where}: {path}{msg}")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


# what each field of a size may hold (checked when the spec loads, not in every run)
_SIZE_FIELD_TYPES = {
    "grid": (lambda v: _is_int(v) or (isinstance(v, list) and 1 <= len(v) <= 3
                                      and all(_is_int(x) for x in v)), "1 to 3 integers"),
    "args": (lambda v: isinstance(v, dict), "an object of argument name: count or value"),
    "label": (lambda v: isinstance(v, (str, int, float)) and not isinstance(v, bool),
              "a string or a number"),
}


def _check_sizes(sizes: Any, where: Path, path: str) -> None:
    """A SweepError for a size that is not an object of size fields (null: the manifest's own)."""
    if sizes is not None and not isinstance(sizes, list):
        raise SweepError(f"{where}: {path}: must be a list of sizes")
    for j, size in enumerate(sizes or []):
        if size is not None and not isinstance(size, dict):
            raise SweepError(f"{where}: {path}[{j}]: a size is an object with grid / args / label")
        _check_fields(size or {}, "a size", where, f"{path}[{j}].")
        for key, (ok, wanted) in _SIZE_FIELD_TYPES.items():
            if size and key in size and not ok(size[key]):
                raise SweepError(f"{where}: {path}[{j}].{key}: must be {wanted}, got "
                                 f"{json.dumps(size[key])[:40]}")


@dataclass(frozen=True)
class Task:
    """One launch of the sweep."""
    index: int
    manifest: str                  # absolute path
    arch: str
    scheduler: str
    size_label: str
    size: Optional[dict]           # {"grid": [...], "args": {name: value}} or None
    counters: tuple
    launch: dict = field(default_factory=dict)


def load_spec(path: str | Path) -> list:
    """The spec's tasks, in order (programs, then sizes, archs, schedulers)."""
    path = Path(path)
    try:
        spec = mf.read_json(path, "a spec")
    except mf.ManifestError as e:
        raise SweepError(str(e)) from None
    if not isinstance(spec, dict) or not spec.get("programs"):
        raise SweepError(f"{path}: needs a non-empty \"programs\" list")
    if not isinstance(spec["programs"], list):
        raise SweepError(f"{path}: 'programs' must be a list of manifests, got "
                         f"{json.dumps(spec['programs'])[:40]}")
    _check_fields(spec, "the spec's top level", path, "")
    base = path.resolve().parent
    archs = _names(spec, "archs", ["sm_90"], path)
    for i, arch in enumerate(archs):
        _check_arch(arch, path, f"archs[{i}]")
    scheds = _names(spec, "schedulers", ["lrr"], path)
    counters = tuple(_names(spec, "counters", list(DEFAULT_COUNTERS), path))
    launch = spec.get("launch", {})
    if not isinstance(launch, dict):
        raise SweepError(f"{path}: \"launch\" must be an object of launch options")
    for key, why in _LAUNCH_SET_BY_THE_SPEC.items():
        if key in launch:
            raise SweepError(f"{path}: launch.{key}: a spec's 'launch' may not set it: {why}")
    _check_fields(launch, "'launch'", path, "launch.")
    default_sizes = spec.get("sizes")
    _check_sizes(default_sizes, path, "sizes")
    tasks = []
    for i, p in enumerate(spec["programs"]):
        if isinstance(p, str):
            p = {"manifest": p}
        if not isinstance(p, dict) or "manifest" not in p:
            raise SweepError(f"{path}: each program is a manifest path or {{\"manifest\": ...}}")
        _check_fields(p, "a program", path, f"programs[{i}].")
        if not isinstance(p["manifest"], str):
            raise SweepError(f"{path}: programs[{i}].manifest: must be a manifest's path (a "
                             f"string), got {json.dumps(p['manifest'])[:40]}")
        _check_sizes(p.get("sizes"), path, f"programs[{i}].sizes")
        man = (base / p["manifest"]).resolve()
        if not man.is_file():
            raise SweepError(f"{path}: {p['manifest']}: no such manifest")
        sizes = p.get("sizes", default_sizes) or [None]
        for size, arch, sched in itertools.product(sizes, archs, scheds):
            label = "manifest" if size is None else str(size.get("label", _label(size)))
            tasks.append(Task(len(tasks), str(man), arch, sched, label, size, counters, dict(launch)))
    if default_sizes and all(isinstance(p, dict) and "sizes" in p for p in spec["programs"]):
        raise SweepError(f"{path}: 'sizes' (the default sizes) would be unused: every program "
                         f"gives its own")
    return tasks


def _names(spec: dict, key: str, default: list, path: Path) -> list:
    v = spec.get(key, default)
    if not isinstance(v, list) or not v or not all(isinstance(x, str) for x in v):
        raise SweepError(f"{path}: \"{key}\" must be a non-empty list of names")
    return v


def _check_arch(name: str, where: Path, path: str) -> None:
    """A SweepError for a name no preset answers to, naming the closest preset."""
    from .arch import PRESETS, get_preset
    try:
        get_preset(name)
    except ValueError:
        close = difflib.get_close_matches(name, list(PRESETS), n=1)
        raise SweepError(f"{where}: {path}: unknown arch {name!r}"
                         + (f"; did you mean '{close[0]}'?" if close else "")
                         + f" (the presets: {', '.join(PRESETS)})") from None


def _label(size: dict) -> str:
    if "grid" in size:
        return "grid " + "x".join(str(g) for g in _grid(size))
    return json.dumps(size.get("args", {}))


def _grid(size: dict) -> list:
    """A size's grid as a list ([] when it gives none; one integer is [X])."""
    g = size.get("grid", [])
    return [g] if isinstance(g, int) else list(g)


def apply_size(m, size: Optional[dict]):
    """The manifest with the size's grid, buffer counts and scalar values."""
    if not size:
        return m
    if "grid" in size:
        g = _grid(size)
        m.grid = tuple(int(x) for x in g) + (1,) * (3 - len(g))
    for name, value in (size.get("args") or {}).items():
        arg = next((a for a in m.args if a.name == name), None)
        if arg is None:
            raise mf.ManifestError(f"size sets '{name}', which is not an argument of {m.kernel}")
        if arg.kind == "buffer":
            if not _is_int(value) or value < 0:
                raise mf.ManifestError(f"size sets buffer '{name}' to {value!r}: a buffer's "
                                       f"count is an integer of at least 0")
            arg.count = value
        else:
            arg.value = value
    return m


def run_task(task: Task) -> dict:
    """Run one launch (in a worker); its row of the table."""
    row = {"index": task.index, "program": Path(task.manifest).stem, "arch": task.arch,
           "scheduler": task.scheduler, "size": task.size_label, "threads": None,
           "seconds": None, "compile_seconds": None, "result": None, "error": None}
    try:
        m = apply_size(mf.load(task.manifest), task.size)
        g, b = m.grid, m.block
        row["threads"] = g[0] * g[1] * g[2] * b[0] * b[1] * b[2]
        res = mf.run(m, arch=task.arch, scheduler=task.scheduler, **task.launch)
        row["seconds"] = res.launch.seconds
        row["compile_seconds"] = res.launch.compile_seconds
        if m.has_expectation:
            row["result"] = "mismatch" if mf.check(res) else "match"
        st = res.launch.stats
        for c in task.counters:
            row[c] = st.get(c)
        missing = [c for c in task.counters if c not in st]
        if missing:
            close = difflib.get_close_matches(missing[0], list(st), n=1)
            row["error"] = (f"counter '{missing[0]}' is not one this launch reports"
                            + (f"; did you mean '{close[0]}'?" if close else ""))
    except Exception as e:   # a failed run is a row, never the end of the sweep
        row["error"] = f"{type(e).__name__}: {e}"
    return row


# seconds to wait for a --scheduler address to answer (Dask's default is 30)
CONNECT_TIMEOUT = 10


def run_sweep(tasks: list, scheduler: Optional[str] = None, workers: int = 2,
              log=None) -> list:
    """Run the tasks on Dask (a local cluster unless `scheduler` is an address); rows in order.
    A scheduler that does not answer within CONNECT_TIMEOUT seconds, or an address
    Dask cannot read, is a SweepError naming the address."""
    from distributed import Client, LocalCluster
    cluster = None
    if scheduler:
        try:
            client = Client(scheduler, timeout=CONNECT_TIMEOUT)
        except (OSError, ValueError) as e:      # (OSError: timed out, refused; ValueError: a bad scheme)
            raise SweepError(f"cannot connect to the Dask scheduler at {scheduler!r}: {e}") from None
    else:
        cluster = LocalCluster(n_workers=max(1, workers), threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    try:
        if log:
            log(f"sweep: {len(tasks)} runs on {client.scheduler_info()['address']} "
                f"({len(client.scheduler_info()['workers'])} workers)")
        futures = client.map(run_task, tasks, pure=False)
        rows = client.gather(futures)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return sorted(rows, key=lambda r: r["index"])


def format_table(rows: list, counters: tuple) -> str:
    head = ["program", "arch", "scheduler", "size", "threads", "seconds", "result", *counters]
    body = []
    for r in rows:
        cells = [r["program"], r["arch"], r["scheduler"], r["size"], _s(r["threads"]),
                 "-" if r["seconds"] is None else f"{r['seconds']:.3f}",
                 r["error"] and "error" or (r["result"] or "-")]
        cells += [_s(r.get(c)) for c in counters]
        body.append(cells)
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
    line = lambda cells: "  ".join(c.ljust(w) if i < 4 else c.rjust(w)  # noqa: E731
                                   for i, (c, w) in enumerate(zip(cells, widths)))
    out = [line(head), "  ".join("-" * w for w in widths)] + [line(b) for b in body]
    errors = [r for r in rows if r["error"]]
    for r in errors:
        out.append(f"error: {r['program']} {r['arch']} {r['scheduler']} {r['size']}: {r['error']}")
    return "\n".join(out)


def _s(v: Any) -> str:
    return "-" if v is None else str(v)


def write_rows(rows: list, path: str | Path, counters: tuple) -> None:
    """The rows as JSON (.json) or CSV (anything else)."""
    path = Path(path)
    if path.suffix == ".json":
        path.write_text(json.dumps(rows, indent=1) + "\n")
        return
    import csv
    cols = ["program", "arch", "scheduler", "size", "threads", "seconds", "compile_seconds", "result",
            "error", *counters]
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
