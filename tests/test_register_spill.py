"""Register spilling (isa/register_spill.py): values beyond the cap live in
local memory, and their loads and stores are charged as local accesses."""
import glob
import os
import random

import numpy as np

import gpuemu
import isa
from gpuemu.arch import get_preset
from isa.register_estimate import BASE_REGISTERS, register_demand
from isa.register_spill import apply_register_cap, choose_spills, choose_spills_reference, spill_kernel

PROGRAMS = os.path.join(os.path.dirname(__file__), "..", "programs")

# eight values live across a loop whose trip count is not a constant
SRC = r'''
extern "C" __global__ void k(float *o, const float *a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v0 = a[i], v1 = v0 * 2.0f, v2 = v1 + 3.0f, v3 = v2 * 0.5f;
    float v4 = v3 - 1.0f, v5 = v4 * 1.5f, v6 = v5 + 0.25f, v7 = v6 * 0.75f;
    float s = 0.0f;
    for (int j = 0; j < n; ++j)
        s += v0 * v7 + v1 * v6 + v2 * v5 + v3 * v4;
    o[i] = s + v0 + v1 + v2 + v3 + v4 + v5 + v6 + v7;
}
'''


def run(options=(), arch="sm_90"):
    a = np.random.default_rng(1).random(64).astype(np.float32)
    o = np.zeros_like(a)
    mod = gpuemu.RawModule(code=SRC, arch=arch, options=options)
    k = mod.get_function("k")
    launch = k((2,), (32,), (o, a, np.int32(3)))
    return k, launch, a, o


def reference(a, n=3):
    v = [a]
    v.append(v[0] * np.float32(2)); v.append(v[1] + np.float32(3)); v.append(v[2] * np.float32(0.5))
    v.append(v[3] - np.float32(1)); v.append(v[4] * np.float32(1.5)); v.append(v[5] + np.float32(0.25))
    v.append(v[6] * np.float32(0.75))
    s = np.zeros_like(a)
    for _ in range(n):
        s = s + (v[0] * v[7] + v[1] * v[6] + v[2] * v[5] + v[3] * v[4])
    for x in v:
        s = s + x
    return s


def test_without_a_cap_nothing_spills():
    k, launch, a, o = run()
    assert k.registers.spilled == 0
    assert launch.stats["spill_load_requests"] == 0 and launch.stats["local_load_requests"] == 0


def test_a_capped_kernel_gives_the_same_results():
    _, _, a, o = run(("-maxrregcount=12",))
    np.testing.assert_allclose(o, reference(a), rtol=1e-5)


def test_spilled_values_become_local_requests():
    k, launch, a, o = run(("-maxrregcount=12",))
    st = launch.stats
    assert k.registers.count == 12 and k.registers.spilled > 0
    assert st["spill_load_requests"] > 0 and st["spill_store_requests"] > 0
    # every spill request is a local request (nothing else here is local)
    assert st["local_load_requests"] == st["spill_load_requests"]
    assert st["local_store_requests"] == st["spill_store_requests"]
    # full warps of 4-byte values: 32 lanes x 4 bytes per request
    assert st["spill_bytes"] == 128 * (st["spill_load_requests"] + st["spill_store_requests"])


def test_spill_loads_are_charged_through_l1():
    # a spilled value stored in the prologue is reloaded every iteration: L1 hits
    _, launch, _, _ = run(("-maxrregcount=12",))
    assert launch.stats["l1_hits"] > 0
    assert launch.stats["cycles"] > run()[1].stats["cycles"]


def test_a_tighter_cap_spills_more():
    loose = run(("-maxrregcount=14",))[1].stats["spill_load_requests"]
    tight = run(("-maxrregcount=10",))[1].stats["spill_load_requests"]
    assert tight > loose > 0


def test_spill_counters_are_per_line():
    _, launch, _, _ = run(("-maxrregcount=12",))
    loop_line = SRC.splitlines().index("        s += v0 * v7 + v1 * v6 + v2 * v5 + v3 * v4;") + 1
    assert launch.stats_by_line[loop_line]["spill_load_requests"] > 0


def test_choose_spills_brings_the_pressure_under_the_cap():
    fn = isa.compile_source(SRC, "t.cu").kernel("k")
    demand = register_demand(fn)
    chosen = choose_spills(fn, demand - 3)
    assert 1 <= len(chosen) and all(v.storage == "reg" for v in chosen)
    new, plan = spill_kernel(fn, demand - 3)
    # each reload needs a register for a moment, so the rewritten kernel's
    # demand falls, though not always all the way to the cap
    assert register_demand(new) < demand
    assert plan.store_bytes > 0 and plan.load_bytes >= plan.store_bytes
    assert plan.frame_bytes == 4 * len(chosen)


def test_launch_bounds_cap_spills_on_fermi_limit():
    # cc2.x allows 63 registers per thread; a 70-register kernel spills there only
    body = "".join(f"float a{j} = a[i] + {j}.0f;" for j in range(60))
    loop = "for (int j = 0; j < n; ++j) {" + "".join(f"a{j} = a{j} * a{(j + 1) % 60};" for j in range(60)) + "}"
    total = " + ".join(f"a{j}" for j in range(60))
    src = (f'extern "C" __global__ void k(float *o, const float *a, int n)'
           f'{{ int i = threadIdx.x; {body} {loop} o[i] = {total}; }}')
    fn = isa.compile_source(src, "t.cu").kernel("k")
    _, est90, plan90 = apply_register_cap(fn, get_preset("sm_90"))
    _, est20, plan20 = apply_register_cap(fn, get_preset("cc2x"))
    assert est90.spilled == 0 and plan90.spilled == ()
    assert est20.count == 63 and plan20.spilled


# -- choose_spills against its plain reference (one spill per round, the pressure recomputed)

def _same_spills(fn, cap):
    fast = choose_spills(fn, cap)
    ref = choose_spills_reference(fn, cap)
    return [id(v) for v in fast] == [id(v) for v in ref], len(ref)


def _all_caps(fn):
    return range(BASE_REGISTERS, register_demand(fn) + 1)


def test_choose_spills_matches_the_reference_on_programs():
    checked = 0
    for path in sorted(glob.glob(os.path.join(PROGRAMS, "*.cu"))):
        with open(path) as f:
            m = isa.compile_source(f.read(), path)
        for fn in m.kernels:
            for cap in _all_caps(fn):
                same, n = _same_spills(fn, cap)
                assert same, (fn.name, cap)
                checked += n > 0
    assert checked > 50


def _random_kernel(rng: random.Random) -> str:
    """Straight-line code over ints, floats, doubles and pointers, with some
    blocks, branches and loops so that intervals nest, cross and widen."""
    types = ["int", "float", "double", "unsigned", "long long"]
    names, lines = [], []
    for i in range(rng.randint(5, 40)):
        t = rng.choice(types)
        if names and rng.random() < 0.7:
            init = " + ".join(f"({t}){rng.choice(names)}" for _ in range(rng.randint(1, 3)))
        else:
            init = f"({t})x[{i}]"
        lines.append(f"{t} v{i} = {init};")
        names.append(f"v{i}")
        r = rng.random()
        if r < 0.15:
            a, b = rng.choice(names), rng.choice(names)
            lines.append(f"for (int j = 0; j < n; ++j) {{ {a} = {a} + {b}; }}")
        elif r < 0.25:
            lines.append(f"if (n > {i}) {{ x[{i}] = (float)({rng.choice(names)} * {rng.choice(names)}); }}")
        elif r < 0.35:
            lines.append(f"float *q{i} = x + {i}; q{i}[1] = (float){rng.choice(names)};")
        elif r < 0.5:
            # read in a loop before it is written there: live around the back edge
            a, b = rng.choice(names), rng.choice(names)
            lines.append(f"{t} w{i} = 0; for (int j = 0; j < n; ++j) {{ {t} u = ({t})x[j]; "
                         f"x[j] = (float)(u + w{i} + {a}); w{i} = {b}; }}")
            names.append(f"w{i}")
    uses = rng.sample(names, rng.randint(1, len(names)))
    lines.append("x[0] = (float)(" + " + ".join(uses) + ");")
    return "__global__ void k(float *x, int n) {\n" + "\n".join(lines) + "\n}\n"


def test_choose_spills_matches_the_reference_on_random_kernels():
    rng = random.Random(20261124)
    for _ in range(30):
        fn = isa.compile_source(_random_kernel(rng), "t.cu").kernel("k")
        for cap in _all_caps(fn):
            assert _same_spills(fn, cap)[0], cap


def test_choose_spills_breaks_ties_by_the_earlier_live_start_not_the_walk_order():
    # u and w free as much per use (1.5); w, first met after u, is live from
    # the loop's start (read before it is written there), so it starts first
    src = ("__global__ void k(float *x, int n) { float w; for (int j = 0; j < n; ++j) {"
           " float u = x[j]; x[2] = 1.0f; x[3] = 1.0f; x[j] = u + w * w * w; w = x[j + 1]; } }")
    fn = isa.compile_source(src, "t.cu").kernel("k")
    cap = register_demand(fn) - 1
    assert [v.name for v in choose_spills_reference(fn, cap)] == ["w"]
    assert [v.name for v in choose_spills(fn, cap)] == ["w"]


def test_choose_spills_analyses_the_pressure_once(monkeypatch):
    # one analysis however many values spill, not one per spill (a kernel with
    # thousands of live scalars took minutes to compile)
    import isa.register_spill as rs
    calls = []
    real = rs.register_pressure
    monkeypatch.setattr(rs, "register_pressure", lambda *a: calls.append(1) or real(*a))
    n = 100
    src = ("__global__ void k(int *p) { " + "".join(f"int v{i} = {i};" for i in range(n))
           + "p[0] = " + " + ".join(f"v{i}" for i in range(n)) + "; }")
    chosen = rs.choose_spills(isa.compile_source(src, "t.cu").kernel("k"), 40)
    assert len(chosen) > 50 and len(calls) == 1


def test_register_pressure_counts_the_live_variables_at_each_position():
    from isa.register_estimate import _intervals, register_pressure, walk
    for path in sorted(glob.glob(os.path.join(PROGRAMS, "*.cu"))):
        with open(path) as f:
            m = isa.compile_source(f.read(), path)
        for fn in m.kernels:
            w = walk(fn)
            ivs = _intervals(w)
            for p, regs in register_pressure(w, ivs).items():
                # live at p: inside [lo, hi], unless first written at p (then
                # it is the statement's result, among the temporaries)
                live = sum(w.weights[k] for k, (lo, hi, evs) in ivs.items()
                           if lo <= p <= hi and not (lo == p and evs[0] == (p, "def")))
                assert regs == BASE_REGISTERS + live + w.peak.get(p, 0), (fn.name, p)
