"""Frame, shared and local layout of a kernel (jit/storage.py)."""
from __future__ import annotations

from isa import ir

from gpuemu.jit import abi
from gpuemu.jit.storage import Storage


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
