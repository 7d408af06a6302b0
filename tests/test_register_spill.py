"""Register spilling (isa/register_spill.py): values beyond the cap live in
local memory, and their loads and stores are charged as local accesses."""
import numpy as np

import gpuemu
import isa
from gpuemu.arch import get_preset
from isa.register_estimate import register_demand
from isa.register_spill import apply_register_cap, choose_spills, spill_kernel

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
