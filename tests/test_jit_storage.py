"""Frame, shared and local layout of a kernel (jit/storage.py)."""
from __future__ import annotations

from isa import ir

from gpuemu.jit import abi
from gpuemu.jit.storage import Storage, escaping_scopes


def _var(name, t, storage):
    return ir.Var(name, t, storage)


def test_static_shared_arrays_in_declaration_order_with_natural_alignment():
    st = Storage()
    a = st.shared_object(_var("a", ir.ArrayType(ir.I8, 3), "shared"))
    b = st.shared_object(_var("b", ir.ArrayType(ir.F64, 2), "shared"))
    c = st.shared_object(_var("c", ir.ArrayType(ir.I16, 5), "shared"))
    assert (a.lo, a.hi) == (0, 3)
    assert (b.lo, b.hi) == (8, 24)
    assert (c.lo, c.hi) == (24, 34)
    assert st.static_shared == 34


def test_dynamic_shared_starts_after_static_aligned_to_16():
    st = Storage()
    st.shared_object(_var("a", ir.ArrayType(ir.F32, 5), "shared"))
    d1 = st.shared_object(_var("d1", ir.ArrayType(ir.F32, None), "extern_shared"))
    d2 = st.shared_object(_var("d2", ir.ArrayType(ir.I32, None), "extern_shared"))
    st.freeze()
    assert d1 is d2 and d1.dynamic
    assert st.dynamic_offset == 32 and d1.lo == 32


def test_each_object_gets_its_own_static_tag():
    st = Storage()
    s = st.shared_object(_var("s", ir.ArrayType(ir.F32, 4), "shared"))
    loc = st.local_object(_var("l", ir.ArrayType(ir.I32, 4), "local"))
    assert s.tag == abi.FIRST_STATIC_TAG and loc.tag == abi.FIRST_STATIC_TAG + 1


def test_local_window_is_naturally_aligned_and_frame_holds_32_windows():
    st = Storage()
    x = st.local_object(_var("x", ir.ArrayType(ir.I8, 3), "local"))
    y = st.local_object(_var("y", ir.ArrayType(ir.F64, 2), "local"))
    assert (x.lo, y.lo) == (0, 8)
    assert st.local_stride == 32
    assert st.frame_bytes == st.local_offset + 32 * st.local_stride
    assert st.local_offset % 64 == 0 and st.local_offset >= abi.HEADER_BYTES


def test_register_slots_do_not_overlap():
    st = Storage()
    a = st.reg_slot(_var("a", ir.F64, "reg"))
    b = st.reg_slot(_var("b", ir.I32, "reg"))
    assert a >= abi.HEADER_BYTES and b >= a + 32 * 8
    assert st.reg_slot(_var("a2", ir.I32, "reg")) >= b + 32 * 4


def _array(name, n):
    return _var(name, ir.ArrayType(ir.I8, n), "local")


def test_sibling_scopes_share_local_memory():
    st = Storage()
    st.open_scope(1)
    st.local_object(_array("x", 8), depth=1)
    st.open_scope(1)
    a = st.local_object(_array("a", 300), depth=1)
    st.close_scope()
    st.open_scope(1)
    b = st.local_object(_array("b", 100), depth=1)
    st.close_scope()
    c = st.local_object(_array("c", 4), depth=1)
    st.close_scope()
    assert (a.lo, b.lo, c.lo) == (8, 8, 8)
    assert st.local_stride == 320      # 8 + 300, rounded up to 16


def test_a_scope_whose_object_is_used_after_it_keeps_its_memory():
    st = Storage()
    st.open_scope(1)
    st.local_object(_array("a", 32), depth=1)
    st.close_scope(keep=True)
    assert st.local_object(_array("b", 8), depth=1).lo == 32


def test_an_inlined_functions_objects_keep_the_memory_of_the_callers_scopes():
    st = Storage()
    st.open_scope(1)
    st.open_scope(2, pinned=True)          # the call's body
    st.open_scope(2)
    f = st.local_object(_array("f", 16), depth=2)
    st.close_scope()
    st.close_scope()
    st.close_scope()
    assert st.local_object(_array("x", 8), depth=1).lo == f.hi


def test_escaping_scopes_names_a_block_whose_local_is_used_after_it():
    v = _var("a", ir.ArrayType(ir.I32, 4), "local")
    inner = ir.Block(ir.NOLOC, [ir.Decl(ir.NOLOC, v)])
    use = ir.ExprStmt(ir.NOLOC, ir.AddrOf(ir.PointerType(ir.I32, "local"), ir.NOLOC, v))
    body = ir.Block(ir.NOLOC, [inner, use])
    assert escaping_scopes(body) == {id(inner)}
    assert escaping_scopes(ir.Block(ir.NOLOC, [ir.Block(ir.NOLOC, [ir.Decl(ir.NOLOC, v), use])])) == set()


SIBLINGS = r"""
extern "C" __global__ void k(char *o, int c, int n)
{
    if (c) { char a[300000]; for (int i = 0; i < n; i++) a[i] = o[i]; o[0] = a[n / 2]; }
    else { char b[300000]; for (int i = 0; i < n; i++) b[i] = o[i] + 1; o[1] = b[n / 3]; }
}
"""


def test_kernel_with_big_arrays_in_both_branches_runs_in_one_frame():
    import numpy as np
    import gpuemu
    k = gpuemu.RawModule(code=SIBLINGS).get_function("k")
    assert k.compiled.meta.local_stride == 300000       # ptxas: "300000 bytes stack frame"
    for c, want in ((1, [5, 1]), (0, [0, 4])):
        o = np.arange(64, dtype=np.int8)
        k(1, 32, (o, np.int32(c), np.int32(10)))
        assert list(o[:2]) == want


INLINED = r"""
__device__ int f(int i) { int r[2]; r[0] = i; r[1] = 2 * i; return r[0] + r[1]; }
__device__ int g(int i) { int s[2]; s[0] = 100; s[1] = 200; int t = f(i); return s[0] + s[1] + t; }
extern "C" __global__ void k(int *o, int c)
{
    int x = f(1);
    if (c) { int a[4]; a[threadIdx.x % 4] = 7; x += a[threadIdx.x % 4] + f(3); }
    else { int b[4]; b[threadIdx.x % 4] = 9; x += b[threadIdx.x % 4] + g(4); }
    int w[2]; w[0] = g(5); w[1] = f(6);
    o[threadIdx.x] = x * 10000 + w[0] + w[1];
}
"""


def test_a_later_call_of_an_inlined_function_overwrites_no_live_object():
    # f's r is met first in the kernel; g's s must not take its memory, since g calls f
    import numpy as np
    import gpuemu
    k = gpuemu.RawModule(code=INLINED).get_function("k")
    f = lambda i: 3 * i         # noqa: E731
    g = lambda i: 300 + f(i)    # noqa: E731
    for c in (0, 1):
        o = np.zeros(32, np.int32)
        k(1, 32, (o, np.int32(c)))
        x = f(1) + ((7 + f(3)) if c else (9 + g(4)))
        assert (o == x * 10000 + g(5) + f(6)).all()
