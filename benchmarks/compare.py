"""gpuemu side by side with Numba's CUDA simulator and native numpy (issue 6, item 1).

    python benchmarks/compare.py [--json FILE] [--quick] [--no-numba] [--cpu N]

Runs the same kernels through

* gpuemu, functional mode, with every counter on (``stats=True``) and with
  stats off (``stats=False``, results only); with ``--workers N`` also stats
  off on N block workers (the process is then not pinned to one CPU);
* gpuemu's timing mode (``mode="timing"``, cycle-level) and check mode
  (``check=True``, with every counter on, and with counters off as
  ``gpuemu check`` runs it: ``check-nostats``), one run each (``--modes``);
  a gpuemu without the mode
  gives an "absent" row;
* Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``): our own Numba versions
  of the same algorithms and launch shapes, in benchmarks/numba_kernels.py.
  The simulator runs every CUDA thread as a Python thread, so it runs a
  smaller grid of the same blocks (the full one would take minutes to hours)
  and the two are compared per thread. It has no warp shuffles, so the shuffle
  reduction is n/a there;
* native numpy (the same result computed the numpy way, single-threaded BLAS),

checks every result against numpy (an AssertionError stops the script), and
prints one table; ``--json FILE`` writes the same rows as JSON.

Columns: ``seconds`` is the minimum of 3 warm runs (``--quick``: smaller
sizes, one run each); ``compile s`` is gpuemu's front end plus JIT for the
kernel, measured once before the runs and excluded from ``seconds`` (a fresh
kernel cache is used, so it is a cold compile; ``--keep-cache`` uses the
normal one). ``thread instr`` is gpuemu's own ``thread_instructions`` counter
for that launch shape: for numpy the count of the full-size gpuemu launch it
replaces, for Numba the count of gpuemu's launch at Numba's (smaller) shape.
Numba's shape is a smaller grid of the same blocks with the same work per
thread (the histogram keeps 4 elements per thread; matmul keeps K = the full
size, e.g. 32x512 times 512x32), so its count is gpuemu's count per thread
times its thread count. ``ti/s`` is thread instructions per second. ``vs
Numba`` is gpuemu's speed-up per thread: Numba's seconds per thread over
gpuemu's (equal to the ratio of the two ti/s); ``vs numpy`` is gpuemu's
seconds over numpy's at the same size (how many times slower).

Everything runs on one core: the process pins itself to one CPU (the last
one it may use, or ``--cpu N``) before numpy, BLAS or Numba start any thread,
and asks BLAS/OpenMP for one thread. Numba is an optional extra
(``pip install -e '.[bench]'``); without it (or with ``--no-numba``) its rows
say "absent". ``--numba-python PATH`` runs the Numba part with another
interpreter (one whose numba would clash with this environment's llvmlite) as
a subprocess: ``PATH benchmarks/numba_kernels.py NAME SIZE REPEATS``.
"""
from __future__ import annotations

import os
import sys

# One core and one BLAS thread, before numpy (or anything) can start threads.
for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
           "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Callable, Optional  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

# ----------------------------------------------------------------------------
# The kernels: the programs/ gallery's (numba_kernels.py has the Numba versions).
# ----------------------------------------------------------------------------

def program(name: str) -> str:
    """CUDA C source of programs/NAME.cu (kernel NAME)."""
    return (REPO / "programs" / f"{name}.cu").read_text()


HIST_PER_THREAD = 4      # histogram: elements per thread (grid-stride), at every size


# ----------------------------------------------------------------------------
# Inputs, launch shapes, references, numpy versions
# ----------------------------------------------------------------------------

@dataclass
class Bench:
    name: str
    src: str
    kernel: str
    full: int            # the size
    numba_full: Optional[int]   # Numba's size in a full run (None: cannot run there)
    quick: int
    numba_quick: Optional[int]
    warm_size: int       # a small launch: warm-up (and the test's size)
    make_inputs: Callable[[int], dict]
    shape: Callable[[dict], tuple]            # inputs -> (grid, block)
    outputs: Callable[[dict], dict]           # inputs -> {name: numpy zeros} (the outputs)
    args: Callable[[dict, dict], tuple]       # (device inputs, device outputs) -> kernel args
    result: Callable[[dict], "object"]        # device outputs -> numpy result
    reference: Callable[[dict], "object"]     # inputs -> expected (float64 where it matters)
    native: Callable[[dict], "object"]        # inputs -> the numpy way (timed)
    rtol: float = 0.0                         # 0: exact
    # (numba size, full size) -> inputs of Numba's smaller launch; default make_inputs(numba size)
    numba_inputs: Optional[Callable[[int, int], dict]] = None
    size_label: Callable[[int], str] = field(default=lambda n: _count(n))

    def small_inputs(self, numba_size: int, full_size: int) -> dict:
        """Inputs of the smaller launch Numba runs: the same blocks, the same work per thread."""
        if self.numba_inputs:
            return self.numba_inputs(numba_size, full_size)
        return self.make_inputs(numba_size)

    def small_label(self, numba_size: int, full_size: int) -> str:
        if self.name == "matmul":
            return f"{numba_size}x{numba_size} K={full_size}"
        return self.size_label(numba_size)

    def threads(self, inp: dict) -> int:
        grid, block = self.shape(inp)
        g = (tuple(grid) + (1, 1))[:3]
        b = (tuple(block) + (1, 1))[:3]
        return g[0] * g[1] * g[2] * b[0] * b[1] * b[2]

    def check(self, out, inp: dict, who: str) -> None:
        import numpy as np
        ref = inp.get("_ref")
        if ref is None:
            ref = inp["_ref"] = self.reference(inp)
        out = np.asarray(out).reshape(np.shape(ref))
        if self.rtol:
            ok = np.allclose(out, ref, rtol=self.rtol, atol=self.rtol)
        else:
            ok = np.array_equal(out, ref)
        assert ok, f"{self.name} ({who}): wrong result, max |diff| " \
                   f"{np.max(np.abs(out.astype(np.float64) - ref)):.3g}"


def _count(n: int) -> str:
    for unit, div in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div}{unit}"
    return str(n)


def _rng(seed):
    import numpy as np
    return np.random.default_rng(seed)


def _vec_inputs(n):
    r = _rng(1)
    return {"a": r.random(n, dtype="float32"), "b": r.random(n, dtype="float32")}


def _sq_inputs(n):
    return {"a": _rng(2).random((n, n), dtype="float32")}


def _red_inputs(n):
    return {"x": _rng(3).random(n, dtype="float32")}


def _mm_inputs(n, k=None):
    """A (n x k) and B (k x n); k = n by default. Numba runs n small with the full k,
    so that every thread does the same K/16 tile steps as in the full launch."""
    k = n if k is None else k
    r = _rng(4)
    return {"A": r.random((n, k), dtype="float32"), "B": r.random((k, n), dtype="float32")}


def _hist_inputs(n):
    import numpy as np
    data = _rng(5).integers(0, 1 << 30, n).astype(np.int32)
    return {"data": data, "grid": max(1, n // (256 * HIST_PER_THREAD))}


def _np():
    import numpy as np
    return np


def _reduce_bench(name, src, kernel, numba_full, numba_quick):
    np = _np()
    return Bench(
        name, src, kernel, full=1 << 22, numba_full=numba_full, quick=1 << 20,
        numba_quick=numba_quick, warm_size=1 << 12, make_inputs=_red_inputs,
        shape=lambda i: ((i["x"].size // 256,), (256,)),
        outputs=lambda i: {"o": np.zeros(i["x"].size // 256, np.float32)},
        args=lambda d, o: (d["x"], o["o"]),
        result=lambda o: o["o"].get(),
        reference=lambda i: i["x"].reshape(-1, 256).astype(np.float64).sum(axis=1),
        native=lambda i: i["x"].reshape(-1, 256).sum(axis=1),
        rtol=1e-5)


def make_benches() -> dict:
    np = _np()
    i32 = np.int32
    benches = [
        Bench("vecadd", program("vecadd"), "vecadd", full=1 << 20, numba_full=1 << 14, quick=1 << 18,
              numba_quick=1 << 12, warm_size=1 << 12, make_inputs=_vec_inputs,
              shape=lambda i: (((i["a"].size + 255) // 256,), (256,)),
              outputs=lambda i: {"c": np.zeros_like(i["a"])},
              args=lambda d, o: (d["a"], d["b"], o["c"], i32(d["a"].size)),
              result=lambda o: o["c"].get(),
              reference=lambda i: i["a"] + i["b"],
              native=lambda i: i["a"] + i["b"]),
        Bench("transpose", program("transpose_tiled33"), "transpose_tiled33", full=1024, numba_full=128, quick=512,
              numba_quick=64, warm_size=64, make_inputs=_sq_inputs,
              shape=lambda i: ((i["a"].shape[0] // 32, i["a"].shape[0] // 32), (32, 8)),
              outputs=lambda i: {"t": np.zeros_like(i["a"])},
              args=lambda d, o: (o["t"], d["a"], i32(d["a"].shape[0])),
              result=lambda o: o["t"].get(),
              reference=lambda i: i["a"].T,
              native=lambda i: np.ascontiguousarray(i["a"].T),
              size_label=lambda n: f"{n}x{n}"),
        _reduce_bench("reduce_shared", program("reduce_sequential"), "reduce_sequential", 1 << 11, 1 << 9),
        _reduce_bench("reduce_shfl", program("reduce_shfl"), "reduce_shfl", None, None),
        Bench("matmul", program("matmul_tiled"), "matmul_tiled", full=512, numba_full=32, quick=256, numba_quick=16,
              warm_size=32, make_inputs=_mm_inputs,
              shape=lambda i: ((i["B"].shape[1] // 16, i["A"].shape[0] // 16), (16, 16)),
              outputs=lambda i: {"C": np.zeros((i["A"].shape[0], i["B"].shape[1]), np.float32)},
              args=lambda d, o: (d["A"], d["B"], o["C"], i32(d["A"].shape[0]),
                                 i32(d["B"].shape[1]), i32(d["A"].shape[1])),
              result=lambda o: o["C"].get(),
              reference=lambda i: i["A"].astype(np.float64) @ i["B"],
              native=lambda i: i["A"] @ i["B"],
              rtol=1e-4, size_label=lambda n: f"{n}x{n}", numba_inputs=_mm_inputs),
        Bench("histogram", program("histogram_shared_atomics"), "histogram_shared_atomics", full=1 << 20, numba_full=1 << 14,
              quick=1 << 18, numba_quick=1 << 12, warm_size=1 << 12, make_inputs=_hist_inputs,
              shape=lambda i: ((i["grid"],), (256,)),
              outputs=lambda i: {"h": np.zeros(256, np.uint32)},
              args=lambda d, o: (d["data"], o["h"], i32(d["data"].size)),
              result=lambda o: o["h"].get(),
              reference=lambda i: np.bincount(i["data"] & 255, minlength=256).astype(np.uint32),
              native=lambda i: np.bincount(i["data"] & 255, minlength=256).astype(np.uint32)),
    ]
    return {b.name: b for b in benches}


class _LazyBenches(dict):
    """BENCHES, built on first use (numpy must not be imported before the pinning)."""

    def _fill(self):
        if not dict.__len__(self):
            self.update(make_benches())

    def __getitem__(self, k):
        self._fill()
        return dict.__getitem__(self, k)

    def __iter__(self):
        self._fill()
        return dict.__iter__(self)

    def values(self):
        self._fill()
        return dict.values(self)


BENCHES = _LazyBenches()


# ----------------------------------------------------------------------------
# Running
# ----------------------------------------------------------------------------

def compile_kernel(bench: Bench):
    """(kernel, compile seconds, where it came from)."""
    import gpuemu
    t0 = time.perf_counter()
    mod = gpuemu.RawModule(code=bench.src, arch="sm_90")
    k = mod.get_function(bench.kernel)
    return k, time.perf_counter() - t0, getattr(k.compiled, "from_cache", "?")


def gpuemu_launch(bench: Bench, k, inp: dict, stats: bool, repeats: int, clock=time.perf_counter,
                  **options):
    """Launch REPEATS times on INP (inputs copied in once, outputs zeroed before each
    launch, outside the timing), checking every result. (times by CLOCK, launch of the
    last run). OPTIONS go to the launch (mode="timing", check=True, workers=N)."""
    import gpuemu
    dev = {n: gpuemu.asarray(v) for n, v in inp.items() if not n.startswith("_") and hasattr(v, "dtype")}
    for n, v in inp.items():
        if n not in dev:
            dev[n] = v
    host_out = bench.outputs(inp)
    grid, block = bench.shape(inp)
    times, launch = [], None
    for _ in range(repeats):
        out = {n: gpuemu.asarray(v) for n, v in host_out.items()}
        args = bench.args(dev, out)
        t0 = clock()
        launch = k(grid, block, args, stats=stats, **options)
        times.append(clock() - t0)
        bench.check(bench.result(out), inp, f"gpuemu stats={stats} {options}")
    return times, launch


def numpy_run(bench: Bench, inp: dict, repeats: int):
    bench.check(bench.native(inp), inp, "numpy warm-up")
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = bench.native(inp)
        times.append(time.perf_counter() - t0)
        bench.check(out, inp, "numpy")
    return times


def numba_run(bench: Bench, size: int, full: int, repeats: int, numba_python: Optional[str],
              cpu: int):
    """Times of REPEATS Numba-simulator launches at SIZE (after one small warm-up launch)."""
    if numba_python:
        cmd = [numba_python, str(HERE / "numba_kernels.py"), bench.name, str(size), str(full),
               str(repeats)]
        env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
        p = subprocess.run(["taskset", "-c", str(cpu), *cmd] if _has_taskset() else cmd,
                           capture_output=True, text=True, env=env, cwd=REPO)
        if p.returncode:
            raise RuntimeError(f"numba subprocess failed:\n{p.stderr[-3000:]}")
        return json.loads(p.stdout.strip().splitlines()[-1])["times"]
    import numba_kernels
    return numba_kernels.time_launches(bench, size, full, repeats)


def _has_taskset() -> bool:
    from shutil import which
    return which("taskset") is not None


def numba_available(numba_python: Optional[str]) -> Optional[str]:
    """None if the Numba part can run, else why not."""
    if numba_python:
        p = subprocess.run([numba_python, "-c", "import numba"], capture_output=True, text=True)
        return None if p.returncode == 0 else f"numba not importable by {numba_python}"
    try:
        sys.path.insert(0, str(HERE))
        import numba_kernels  # noqa: F401  (sets NUMBA_ENABLE_CUDASIM before importing numba)
    except ImportError as e:
        return f"numba absent ({e})"
    return None


# The other modes, run once each (timing mode is the slow one): engine label,
# launch options, and the launch option a gpuemu without the mode lacks.
MODES = {"timing": ("gpuemu timing", {"mode": "timing"}),
         "check": ("gpuemu check", {"check": True}),
         # the bug finders alone, as `gpuemu check` runs them (no counters)
         "check-nostats": ("gpuemu check no-stats", {"check": True, "stats": False})}


def mode_available(mode: str) -> bool:
    """Whether this gpuemu has the mode's launch option (mode="timing" or check=)."""
    import inspect
    from gpuemu import api
    opts = MODES[mode][1]
    if "mode" in opts:
        return "mode" in inspect.signature(api.RawKernel.__call__).parameters
    return "check" in getattr(api, "LAUNCH_OPTIONS", ())


def bench_kernel(bench: Bench, size: int, numba_size: Optional[int], repeats: int,
                 numba_why: Optional[str], numba_python: Optional[str], cpu: int,
                 log=print, modes: tuple = ("timing", "check", "check-nostats"), workers: int = 1) -> list:
    """The table rows of one kernel: gpuemu stats on/off (and with WORKERS block
    workers when > 1), its other MODES, Numba, numpy."""
    k, t_compile, origin = compile_kernel(bench)
    inp = bench.make_inputs(size)
    threads = bench.threads(inp)
    label = bench.size_label(size)
    warm = bench.make_inputs(bench.warm_size)
    rows = []
    # gpuemu: a small warm-up launch per mode (anything lazy), then the timed runs.
    res = {}
    for stats in (True, False):
        gpuemu_launch(bench, k, warm, stats, 1)
        times, launch = gpuemu_launch(bench, k, inp, stats, repeats)
        res[stats] = (min(times), launch)
    ti = res[True][1].stats["thread_instructions"]
    extra = []          # (engine, seconds or None, note)
    if workers > 1:
        gpuemu_launch(bench, k, warm, False, 1, workers=workers)
        t_w = min(gpuemu_launch(bench, k, inp, False, repeats, workers=workers)[0])
        extra.append((f"gpuemu no-stats x{workers}", t_w,
                      f"{workers} block workers: {res[False][0] / t_w:.2f}x one worker"))
    for mode in modes:
        engine, opts = MODES[mode]
        opts = dict(opts)
        stats = opts.pop("stats", True)
        if not mode_available(mode):
            extra.append((engine, None, f"absent: this gpuemu has no {mode} mode"))
            continue
        gpuemu_launch(bench, k, warm, stats, 1, **opts)
        t_m = min(gpuemu_launch(bench, k, inp, stats, 1, **opts)[0])
        extra.append((engine, t_m, "one run"))
    t_numpy = min(numpy_run(bench, inp, max(repeats, 3)))

    # Numba: its own (smaller) size; gpuemu's count at that launch shape.
    numba_row = {"kernel": bench.name, "engine": "numba-sim", "size": None, "threads": None,
                 "seconds": None, "compile_seconds": None, "thread_instructions": None,
                 "ti_per_s": None, "seconds_per_thread": None, "ti_per_thread": None,
                 "speedup_vs_numba": None, "slowdown_vs_numpy": None, "note": None}
    numba_rate = numba_per_thread = None
    if numba_size is None:
        numba_row["note"] = "n/a: no warp shuffles in Numba's simulator"
    elif numba_why:
        numba_row["note"] = numba_why
    else:
        ninp = bench.small_inputs(numba_size, size)
        _, nl = gpuemu_launch(bench, k, ninp, True, 1)
        nti = nl.stats["thread_instructions"]
        nthreads = bench.threads(ninp)
        t_numba = min(numba_run(bench, numba_size, size, repeats, numba_python, cpu))
        numba_rate = nti / t_numba
        numba_per_thread = t_numba / nthreads
        numba_row.update(size=bench.small_label(numba_size, size), threads=nthreads,
                         seconds=t_numba, thread_instructions=nti, ti_per_s=numba_rate,
                         seconds_per_thread=numba_per_thread, ti_per_thread=nti / nthreads,
                         note="smaller grid of the same blocks; compared per thread")

    for stats, engine in ((True, "gpuemu stats"), (False, "gpuemu no-stats")):
        t = res[stats][0]
        rate = ti / t
        rows.append({"kernel": bench.name, "engine": engine, "size": label, "threads": threads,
                     "seconds": t, "compile_seconds": t_compile, "compile_origin": origin,
                     "thread_instructions": ti, "ti_per_s": rate,
                     "seconds_per_thread": t / threads, "ti_per_thread": ti / threads,
                     "speedup_vs_numba": numba_per_thread / (t / threads) if numba_rate else None,
                     "slowdown_vs_numpy": t / t_numpy, "note": None})
    for engine, t, note in extra:
        rows.append({"kernel": bench.name, "engine": engine, "size": label, "threads": threads,
                     "seconds": t, "compile_seconds": t_compile if t else None,
                     "thread_instructions": ti if t else None,
                     "ti_per_s": ti / t if t else None,
                     "seconds_per_thread": t / threads if t else None,
                     "ti_per_thread": ti / threads if t else None,
                     "speedup_vs_numba": (numba_per_thread / (t / threads)
                                          if t and numba_rate else None),
                     "slowdown_vs_numpy": t / t_numpy if t else None, "note": note})
    rows.append(numba_row)
    rows.append({"kernel": bench.name, "engine": "numpy", "size": label, "threads": threads,
                 "seconds": t_numpy, "compile_seconds": None, "thread_instructions": ti,
                 "ti_per_s": ti / t_numpy, "seconds_per_thread": t_numpy / threads,
                 "ti_per_thread": ti / threads, "speedup_vs_numba": None, "slowdown_vs_numpy": 1.0,
                 "note": "gpuemu's count for the same launch"})
    if log:
        log(f"  {bench.name}: done", file=sys.stderr)
    return rows


def _fmt_si(x: Optional[float]) -> str:
    if x is None:
        return "-"
    for unit, div in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(x) >= div:
            return f"{x / div:.3g}{unit}"
    return f"{x:.3g}"


def _fmt_s(x: Optional[float]) -> str:
    if x is None:
        return "-"
    return f"{x:.4f}" if x < 10 else f"{x:.2f}"


def _fmt_x(x: Optional[float]) -> str:
    if x is None:
        return "-"
    return f"{x:,.0f}x" if x >= 100 else f"{x:.3g}x"


def format_table(rows: list) -> str:
    head = ["kernel", "engine", "size", "threads", "seconds", "compile s", "thread instr",
            "ti/s", "vs Numba", "vs numpy"]
    body = []
    for r in rows:
        if r["seconds"] is None:
            body.append([r["kernel"], r["engine"], "-", "-", "n/a" if "n/a" in (r["note"] or "")
                         else "absent", "-", "-", "-", "-", "-"])
            continue
        body.append([r["kernel"], r["engine"], r["size"], _fmt_si(r["threads"]), _fmt_s(r["seconds"]),
                     _fmt_s(r["compile_seconds"]), _fmt_si(r["thread_instructions"]),
                     _fmt_si(r["ti_per_s"]),
                     (_fmt_x(r["speedup_vs_numba"]) + " faster") if r["speedup_vs_numba"] else "-",
                     (_fmt_x(r["slowdown_vs_numpy"]) + " slower") if r["engine"].startswith("gpuemu")
                     else "-"])
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)]
    left = {0, 1}
    line = lambda cells: "  ".join(c.ljust(w) if i in left else c.rjust(w)  # noqa: E731
                                   for i, (c, w) in enumerate(zip(cells, widths)))
    out = [line(head), "  ".join("-" * w for w in widths)]
    prev = None
    for r, b in zip(rows, body):
        if prev is not None and r["kernel"] != prev:
            out.append("")
        prev = r["kernel"]
        out.append(line(b))
    return "\n".join(out)


def pin_to_one_core(cpu: Optional[int]) -> int:
    allowed = sorted(os.sched_getaffinity(0))
    cpu = allowed[-1] if cpu is None else cpu
    os.sched_setaffinity(0, {cpu})
    return cpu


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    ap.add_argument("--quick", action="store_true", help="smaller sizes, one run each (< 1 minute)")
    ap.add_argument("--no-numba", action="store_true", help="skip Numba's simulator")
    ap.add_argument("--numba-python", metavar="PATH",
                    help="run the Numba part with this interpreter, as a subprocess")
    ap.add_argument("--cpu", type=int, help="the CPU to pin to (default: the last allowed one)")
    ap.add_argument("--kernels", help="comma-separated subset (default: all)")
    ap.add_argument("--modes", default="timing,check,check-nostats",
                    help="other gpuemu modes to run once each (default timing,check,check-nostats; "
                         "'' for none)")
    ap.add_argument("--workers", type=int, default=1,
                    help="also run stats off on N block workers (N > 1; not pinned to one CPU)")
    ap.add_argument("--keep-cache", action="store_true",
                    help="use the normal gpuemu kernel cache (default: a fresh one, cold compiles)")
    ap.add_argument("--repeats", type=int,
                    help="warm runs per measurement, the least reported (default 3; 1 with --quick); "
                         "more on a shared or virtual machine whose speed drifts")
    a = ap.parse_args(argv)

    cpu = pin_to_one_core(a.cpu) if a.workers <= 1 else (a.cpu or 0)
    if not a.keep_cache:
        os.environ["GPUEMU_CACHE_DIR"] = tempfile.mkdtemp(prefix="gpuemu-bench-cache-")
    sys.path.insert(0, str(REPO))
    sys.path.insert(0, str(HERE))
    import numpy as np
    import gpuemu

    numba_why = "skipped (--no-numba)" if a.no_numba else numba_available(a.numba_python)
    names = a.kernels.split(",") if a.kernels else list(BENCHES)
    repeats = a.repeats or (1 if a.quick else 3)
    t_all = time.perf_counter()
    print(f"gpuemu {getattr(gpuemu, '__version__', '')} functional mode vs Numba's CUDA simulator "
          f"vs numpy {np.__version__}; pinned to CPU {cpu}; "
          f"{'one run' if repeats == 1 else f'min of {repeats} warm runs'}"
          + (f"; numba: {numba_why}" if numba_why else ""), file=sys.stderr)
    rows = []
    for name in names:
        b = BENCHES[name]
        size = b.quick if a.quick else b.full
        nsize = b.numba_quick if a.quick else b.numba_full
        rows += bench_kernel(b, size, nsize, repeats, numba_why, a.numba_python, cpu,
                             modes=tuple(m for m in a.modes.split(",") if m), workers=a.workers)
    elapsed = time.perf_counter() - t_all
    print(format_table(rows))
    print(f"\n({elapsed:.0f} s in all; seconds: min of {repeats} warm run(s), compile excluded; "
          f"vs Numba: Numba's seconds per thread over gpuemu's, Numba on a smaller grid of "
          f"the same blocks with the same work per thread)")
    if a.json:
        meta = {"quick": a.quick, "cpu": cpu, "repeats": repeats, "numpy": np.__version__,
                "numba": _numba_version(a.numba_python) if not numba_why else None,
                "numba_note": numba_why, "elapsed_seconds": elapsed}
        Path(a.json).write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    return 0


def _numba_version(numba_python: Optional[str]) -> Optional[str]:
    if numba_python:
        p = subprocess.run([numba_python, "-c", "import numba; print(numba.__version__)"],
                           capture_output=True, text=True)
        return p.stdout.strip() or None
    import numba
    return numba.__version__


if __name__ == "__main__":
    sys.exit(main())
