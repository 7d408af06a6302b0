"""C's rules as the type checker applies them: the IR shape of each rule."""
from __future__ import annotations

import shutil

import pytest

from isa import ir
from isa.ir import BOOL, I8, I32, U32, I64, U64, F32, F64
from isa_ir_walk import compile_kernel, nodes, stmts, decl_init, compile_error


def value_of(body: str, params: str = "", prelude: str = "") -> ir.Expr:
    """The IR of `r`'s initialiser in `auto`-free form: body ends with `T r = EXPR;`."""
    fn = compile_kernel(body, params, prelude)
    return unspace(decl_init(fn, "r"))


def unspace(e: ir.Expr) -> ir.Expr:
    """Drop a pointer cast that only changes the address space (global -> generic)."""
    while isinstance(e, ir.Cast) and isinstance(e.type, ir.PointerType) and \
            isinstance(e.a.type, ir.PointerType) and e.type.pointee == e.a.type.pointee:
        e = e.a
    return e


def test_unsigned_plus_int_is_u32_add_with_cast_of_int():
    e = value_of("unsigned u = 1; int i = 2; unsigned r = u + i;")
    assert isinstance(e, ir.Binary) and e.op == "add" and e.type == U32
    assert isinstance(e.b, ir.Cast) and e.b.type == U32 and e.b.a.type == I32


def test_char_plus_char_promotes_to_int():
    e = value_of("char c = 1; int r = c + c;")
    assert e.type == I32 and e.op == "add"
    assert all(isinstance(x, ir.Cast) and x.a.type == I8 for x in (e.a, e.b))


def test_f_suffixed_literal_is_float():
    e = value_of("float r = 1.5f;")
    assert isinstance(e, ir.Const) and e.type == F32 and e.value == 1.5


def test_unsuffixed_float_literal_is_double():
    fn = compile_kernel("double r = 0.1;")
    e = decl_init(fn, "r")
    assert e.type == F64 and e.value == 0.1


def test_float_plus_double_literal_computes_in_double():
    e = value_of("float f = 1.0f; float r = f * 2.0;")
    assert isinstance(e, ir.Cast) and e.type == F32
    assert e.a.type == F64 and e.a.op == "mul"


def test_index_of_float_pointer_is_load_at_byte_offset():
    e = value_of("float r = p[i];", "float *p, int i")
    assert isinstance(e, ir.Load) and e.type == F32
    assert isinstance(e.addr, ir.PtrAdd)
    off = e.addr.offset
    assert off.type == I64 and off.op == "mul" and off.b.value == 4
    assert isinstance(off.a, ir.Cast) and off.a.a.type == I32


def test_constant_index_folds_to_byte_offset():
    e = value_of("double r = p[3];", "double *p")
    assert isinstance(e.addr.offset, ir.Const) and e.addr.offset.value == 24


def test_comparison_is_bool_and_cast_to_int_when_used_as_int():
    e = value_of("int a = 1, b = 2; int r = a < b;")
    assert isinstance(e, ir.Cast) and e.type == I32
    assert e.a.type == BOOL and e.a.op == "lt"


def test_if_condition_on_int_becomes_ne_zero():
    fn = compile_kernel("int x = 3; if (x) x = 4;")
    c = nodes(fn.body, ir.If)[0].cond
    assert c.type == BOOL and c.op == "ne" and c.b.value == 0


def test_if_condition_on_pointer_compares_with_null():
    fn = compile_kernel("if (p) p[0] = 1;", "int *p")
    c = nodes(fn.body, ir.If)[0].cond
    assert c.op == "ne" and isinstance(c.b, ir.Cast) and isinstance(c.b.type, ir.PointerType)


def test_logical_and_has_bool_operands():
    e = value_of("int a = 1, b = 0; bool r = a && b;")
    assert isinstance(e, ir.Logical) and e.op == "and"
    assert e.a.type == BOOL and e.b.type == BOOL


def test_unsigned_int_mix_with_long_long_becomes_long_long():
    e = value_of("unsigned u = 1; long long l = 2; long long r = u + l;")
    assert e.type == I64 and isinstance(e.a, ir.Cast) and e.a.a.type == U32


def test_unsigned_long_long_wins_over_long_long():
    e = value_of("unsigned long long u = 1; long long l = 2; unsigned long long r = u + l;")
    assert e.type == U64


def test_constant_wraps_to_its_type():
    e = value_of("unsigned char r = 300;")
    assert isinstance(e, ir.Const) and e.value == 44


def test_negative_constant_to_unsigned_wraps():
    e = value_of("unsigned r = -1;")
    assert e.value == 0xFFFFFFFF and e.type == U32


def test_hex_literal_that_does_not_fit_int_is_unsigned():
    e = value_of("unsigned r = 0xffffffff;")
    assert e.type == U32 and e.value == 0xFFFFFFFF


def test_decimal_literal_that_does_not_fit_int_is_long_long():
    e = value_of("long long r = 3000000000;")
    assert e.type == I64 and e.value == 3000000000


def test_u_suffix_makes_unsigned_literal():
    fn = compile_kernel("unsigned x = 5; unsigned r = x + 1u;")
    e = decl_init(fn, "r")
    assert e.b.type == U32 and not isinstance(e.b, ir.Cast)


def test_char_literal_has_its_code():
    e = value_of("char r = 'A';")
    assert e.value == 65 and e.type == I8


def test_escaped_char_literal():
    e = value_of("char r = '\\n';")
    assert e.value == 10


def test_shift_keeps_left_operand_type():
    e = value_of("unsigned char c = 1; long long n = 3; int r = c << n;")
    assert e.type == I32 and e.op == "shl" and e.b.type == I64


def test_signed_division_stays_signed():
    e = value_of("int a = -7, b = 2; int r = a / b;")
    assert e.op == "div" and e.type == I32


def test_pointer_plus_int_is_ptradd_scaled():
    e = value_of("int *r = p + n;", "int *p, int n")
    assert isinstance(e, ir.PtrAdd) and e.offset.b.value == 4


def test_int_plus_pointer_is_ptradd():
    e = value_of("short *r = 2 + p;", "short *p")
    assert isinstance(e, ir.PtrAdd) and e.offset.value == 4


def test_pointer_minus_int_negates_offset():
    e = value_of("float *r = p - n;", "float *p, int n")
    assert isinstance(e, ir.PtrAdd) and isinstance(e.offset, ir.Unary) and e.offset.op == "neg"


def test_pointer_difference_divides_by_element_size():
    e = value_of("long long r = q - p;", "double *p, double *q")
    assert e.op == "div" and e.b.value == 8 and e.type == I64
    assert e.a.op == "sub" and isinstance(e.a.a, ir.Cast) and e.a.a.type == I64


def test_pointer_comparison_is_bool():
    e = value_of("bool r = p < q;", "int *p, int *q")
    assert e.type == BOOL and e.op == "lt"


def test_array_decays_through_addrof():
    fn = compile_kernel("int a[4]; int *r = a;")
    e = decl_init(fn, "r")
    inner = e.a if isinstance(e, ir.Cast) else e
    assert isinstance(inner, ir.AddrOf) and inner.var.name == "a"
    assert inner.type.pointee == I32


def test_local_array_is_local_storage():
    fn = compile_kernel("float a[8]; a[0] = 1.0f;")
    d = [d for d in nodes(fn.body, ir.Decl) if d.var.name == "a"][0]
    assert d.var.storage == "local" and d.var.type == ir.ArrayType(F32, 8)


def test_scalar_is_reg_storage():
    fn = compile_kernel("int x = 1; x = x + 1;")
    assert [d for d in nodes(fn.body, ir.Decl) if d.var.name == "x"][0].var.storage == "reg"


def test_address_taken_scalar_is_local_storage():
    fn = compile_kernel("int x = 1; int *p = &x; *p = 2;")
    x = [d for d in nodes(fn.body, ir.Decl) if d.var.name == "x"][0].var
    assert x.storage == "local"
    assert any(isinstance(s.addr, ir.AddrOf) and s.addr.var is x for s in nodes(fn.body, ir.Store))


def test_kernel_params_are_param_storage():
    fn = compile_kernel("", "float *p, int n")
    assert [(v.name, v.storage) for v in fn.params] == [("p", "param"), ("n", "param")]


def test_kernel_pointer_params_point_to_global():
    fn = compile_kernel("", "float *p")
    assert fn.params[0].type == ir.PointerType(F32, "global")


def test_shared_arrays_in_declaration_order():
    fn = compile_kernel("__shared__ float a[32]; __shared__ int b[4][8]; a[0] = b[1][2];")
    assert [(v.name, v.storage) for v in fn.shared_vars] == [("a", "shared"), ("b", "shared")]
    assert fn.shared_vars[1].type == ir.ArrayType(ir.ArrayType(I32, 8), 4)


def test_two_dimensional_shared_index_offsets():
    fn = compile_kernel("__shared__ float t[32][33]; t[y][x] = 0.0f;", "int x, int y")
    st = nodes(fn.body, ir.Store)[0]
    outer = st.addr
    assert isinstance(outer, ir.PtrAdd) and outer.offset.b.value == 4
    row = nodes(outer.ptr, ir.PtrAdd)[0]
    assert row.offset.b.value == 33 * 4


def test_extern_shared_is_extern_shared_storage():
    fn = compile_kernel("extern __shared__ float s[]; s[0] = 1.0f;")
    assert fn.shared_vars[0].storage == "extern_shared"
    assert fn.shared_vars[0].type == ir.ArrayType(F32, None)


def test_shared_pointer_keeps_shared_space():
    fn = compile_kernel("__shared__ int s[4]; s[1] = 2;")
    st = nodes(fn.body, ir.Store)[0]
    assert st.addr.type.space == "shared"


def test_thread_index_is_special_u32():
    e = value_of("unsigned r = threadIdx.x;")
    assert isinstance(e, ir.Special) and e.name == "tid.x" and e.type == U32


def test_block_dims_map_to_ptx_names():
    fn = compile_kernel("unsigned r = blockIdx.y + blockDim.z + gridDim.x;")
    assert sorted(s.name for s in nodes(fn.body, ir.Special)) == ["ctaid.y", "nctaid.x", "ntid.z"]


def test_warpsize_is_i32_special():
    e = value_of("int r = warpSize;")
    assert isinstance(e, ir.Special) and e.name == "warpsize" and e.type == I32


@pytest.mark.parametrize("stmt", ["warpSize = 5;", "warpSize++;", "--warpSize;", "warpSize += 1;"])
def test_writing_warpsize_is_an_error_at_it(stmt):
    e = compile_error("__global__ void k() {\n  %s\n}" % stmt)
    assert e.message == "cannot assign to 'warpSize'" and (e.line, e.col) == (2, stmt.index("warpSize") + 3)


def test_address_of_warpsize_is_an_error_at_the_ampersand():
    e = compile_error("__global__ void k() {\n  const int *p = &warpSize;\n}")
    assert e.message == "cannot take the address of 'warpSize'" and (e.line, e.col) == (2, 18)


def test_compound_assignment_on_register_is_assign():
    fn = compile_kernel("int x = 1; x += 2;")
    s = stmts(fn)[-1].expr
    assert isinstance(s, ir.Assign) and s.value.op == "add"


def test_compound_assignment_to_memory_is_store_of_load():
    fn = compile_kernel("p[0] += 1.0f;", "float *p")
    s = stmts(fn)[-1].expr
    assert isinstance(s, ir.Store) and isinstance(s.value.a, ir.Load)


def test_compound_assignment_with_side_effect_address_uses_temporary():
    fn = compile_kernel("p[i++] += 1;", "int *p, int i")
    c = stmts(fn)[-1].expr
    assert isinstance(c, ir.Comma) and isinstance(c.exprs[0], ir.Assign)
    assert c.exprs[0].var.name.startswith("__tmp")


def test_post_increment_as_statement_needs_no_temporary():
    fn = compile_kernel("int i = 0; i++;")
    assert isinstance(stmts(fn)[-1].expr, ir.Assign)
    assert not [d for d in nodes(fn.body, ir.Decl) if d.var.name.startswith("__tmp")]


def test_post_increment_value_is_old_value_through_temporary():
    fn = compile_kernel("int i = 0; int r = i++;")
    e = decl_init(fn, "r")
    assert isinstance(e, ir.Comma) and isinstance(e.exprs[-1], ir.VarRef)
    assert e.exprs[-1].var.name.startswith("__tmp")


def test_pre_increment_of_pointer_adds_element_size():
    fn = compile_kernel("double *q = p; ++q;", "double *p")
    a = stmts(fn)[-1].expr
    assert isinstance(a, ir.Assign) and isinstance(a.value, ir.PtrAdd) and a.value.offset.value == 8


def test_char_increment_truncates_back_to_char():
    fn = compile_kernel("char c = 1; c++;")
    a = stmts(fn)[-1].expr
    assert isinstance(a.value, ir.Cast) and a.value.type == I8


def test_ternary_converts_both_sides_to_common_type():
    e = value_of("int a = 1; float r = a ? a : 2.5f;")
    cond = e if isinstance(e, ir.Cond) else e.a
    assert cond.type == F32 and cond.a.type == F32 and cond.c.type == BOOL


def test_comma_value_is_last():
    e = value_of("int a = 1; int r = (a = 2, a + 1);")
    assert isinstance(e, ir.Comma) and isinstance(e.exprs[0], ir.Assign)


def test_sizeof_type_is_u64_constant():
    e = value_of("unsigned long long r = sizeof(double);")
    assert isinstance(e, ir.Const) and e.value == 8 and e.type == U64


def test_sizeof_expression_does_not_evaluate_it():
    fn = compile_kernel("int i = 0; size_t r = sizeof(i++);")
    assert decl_init(fn, "r").value == 4
    assert len(nodes(fn.body, ir.Assign)) == 0


def test_sizeof_array_is_whole_array():
    e = value_of("float a[10]; size_t r = sizeof a;")
    assert e.value == 40


def test_sizeof_a_reference_is_the_size_of_the_referenced_type():
    # C++ [expr.sizeof]/2: applied to a reference, the size of the referenced type
    assert value_of("char c = 1; char &rc = c; size_t r = sizeof rc;").value == 1
    assert value_of("short s = 1; short &rs = s; size_t r = sizeof(rs);").value == 2


def test_cast_float_to_int_is_explicit_cast():
    e = value_of("float f = 2.5f; int r = (int)f;")
    assert isinstance(e, ir.Cast) and e.type == I32 and e.a.type == F32


def test_cast_between_pointer_types():
    e = value_of("int *r = (int *)p;", "float *p")
    assert isinstance(e, ir.Cast) and e.type.pointee == I32


def test_int_to_bool_conversion_is_ne_zero():
    e = value_of("int x = 5; bool r = x;")
    assert e.type == BOOL and e.op == "ne"


def test_bool_to_int_is_cast():
    e = value_of("bool b = true; int r = b;")
    assert isinstance(e, ir.Cast) and e.a.type == BOOL


def test_struct_member_is_load_at_field_offset():
    fn = compile_kernel("S s; s.b = 1.0f; float r = s.b;", prelude="struct S { int a; float b; };")
    e = decl_init(fn, "r")
    assert isinstance(e, ir.Load) and e.type == F32
    adds = nodes(e.addr, ir.PtrAdd)
    assert adds and adds[0].offset.value == 4


def test_struct_layout_pads_to_alignment():
    fn = compile_kernel("S s; s.d = 1.0;", prelude="struct S { char c; double d; int i; };")
    t = [d for d in nodes(fn.body, ir.Decl) if d.var.name == "s"][0].var.type
    assert [(f.name, f.offset) for f in t.fields] == [("c", 0), ("d", 8), ("i", 16)]
    assert t.size == 24 and t.align == 8


def test_struct_by_pointer_arrow():
    fn = compile_kernel("float r = p->b;", "S *p", prelude="struct S { int a; float b; };")
    e = decl_init(fn, "r")
    assert isinstance(e, ir.Load) and nodes(e.addr, ir.PtrAdd)[0].offset.value == 4


def test_struct_assignment_is_memcopy():
    fn = compile_kernel("S a, b; a.x = 1; b = a;", prelude="struct S { int x; int y[3]; };")
    mc = nodes(fn.body, ir.MemCopy)
    assert len(mc) == 1 and mc[0].nbytes == 16


def test_array_of_structs_index_scales_by_struct_size():
    fn = compile_kernel("float r = p[i].b;", "S *p, int i", prelude="struct S { int a; float b; };")
    e = decl_init(fn, "r")
    scaled = [b for b in nodes(e, ir.Binary) if b.op == "mul"][0]
    assert scaled.b.value == 8


def test_struct_by_value_param_is_read_through_addrof():
    fn = compile_kernel("int r = s.a;", "S s", prelude="struct S { int a; int b; };")
    e = decl_init(fn, "r")
    assert isinstance(e, ir.Load) and nodes(e, ir.AddrOf)[0].var.storage == "param"


def test_local_array_initialiser_stores_every_element_with_zero_fill():
    fn = compile_kernel("int a[4] = {7, 8};")
    sts = nodes(fn.body, ir.Store)
    assert [s.value.value for s in sts] == [7, 8, 0, 0]


def test_two_dimensional_initialiser_with_brace_elision():
    fn = compile_kernel("int a[2][2] = {1, 2, 3};")
    assert [s.value.value for s in nodes(fn.body, ir.Store)] == [1, 2, 3, 0]


def test_array_size_from_initialiser():
    fn = compile_kernel("float a[] = {1, 2, 3};")
    assert [d for d in nodes(fn.body, ir.Decl) if d.var.name == "a"][0].var.type.count == 3


def test_struct_initialiser_list():
    fn = compile_kernel("S s = {1, 2.5f};", prelude="struct S { int a; float b; };")
    assert [s.value.value for s in nodes(fn.body, ir.Store)] == [1, 2.5]


def test_vector_type_sizes_and_alignment():
    fn = compile_kernel("float4 a; float2 b; float3 c; int4 d; double2 e;")
    vs = {d.var.name: d.var.type for d in nodes(fn.body, ir.Decl)}
    assert (vs["a"].size, vs["a"].align) == (16, 16)
    assert (vs["b"].size, vs["b"].align) == (8, 8)
    assert (vs["c"].size, vs["c"].align) == (12, 4)
    assert vs["d"].elem == I32 and vs["e"].align == 16


def test_make_float4_casts_elements():
    e = value_of("float4 r = make_float4(1, 2, 3.0, 4.0f);")
    assert isinstance(e, ir.MakeVector) and [x.type for x in e.elems] == [F32] * 4


def test_vector_member_read_is_extract():
    e = value_of("float4 v = make_float4(1, 2, 3, 4); float r = v.z;")
    assert isinstance(e, ir.Extract) and e.index == 2


def test_vector_load_from_pointer_is_one_access():
    e = value_of("float4 r = p[i];", "const float4 *p, int i")
    assert isinstance(e, ir.Load) and e.type.name == "float4" and e.addr.offset.b.value == 16


def test_vector_member_through_memory_is_scalar_load():
    e = value_of("float r = p[0].y;", "float4 *p")
    assert isinstance(e, ir.Load) and e.type == F32


def test_vector_member_assignment_rebuilds_register():
    fn = compile_kernel("float2 v = make_float2(0, 0); v.y = 3.0f;")
    a = nodes(stmts(fn)[-1], ir.Assign)[0]
    assert isinstance(a.value, ir.MakeVector)


def test_enum_constants_are_i32():
    e = value_of("int r = B;", prelude="enum E { A, B = 5, C };")
    assert isinstance(e, ir.Const) and e.value == 5 and e.type == I32


def test_typedef_names_a_type():
    e = value_of("real r = 1.0f;", prelude="typedef float real;")
    assert e.type == F32


def test_typedef_of_struct():
    fn = compile_kernel("P p; p.x = 1;", prelude="typedef struct { int x; } P;")
    assert isinstance([d for d in nodes(fn.body, ir.Decl) if d.var.name == "p"][0].var.type, ir.StructType)


def test_volatile_pointer_gives_volatile_load():
    e = value_of("volatile float *v = p; float r = v[1];", "float *p")
    assert isinstance(e, ir.Load) and e.volatile


def test_constant_global_with_initialiser_image():
    import struct
    import isa
    m = isa.compile_source("__constant__ float c[3] = {1.0f, 2.0f};\n__global__ void k(float *o) { o[0] = c[1]; }")
    g = m.globals[0]
    assert g.space == "constant" and g.init == struct.pack("<3f", 1.0, 2.0, 0.0)


def test_device_global_scalar_is_loaded_through_globalref():
    import isa
    m = isa.compile_source("__device__ int counter;\n__global__ void k(int *o) { o[0] = counter; }")
    e = nodes(m.kernel("k").body, ir.Load)[0]
    assert isinstance(e.addr, ir.GlobalRef) and m.globals[0].space == "global" and m.globals[0].init is None


def test_device_function_call():
    import isa
    m = isa.compile_source("__device__ float sq(float x) { return x * x; }\n"
                           "__global__ void k(float *o) { o[0] = sq(2); }")
    c = nodes(m.kernel("k").body, ir.Call)[0]
    assert c.func.name == "sq" and c.args[0].type == F32 and c.type == F32


def test_extern_c_kernel_keeps_plain_name():
    import isa
    m = isa.compile_source('extern "C" __global__ void vec(float *a) { a[0] = 1; }')
    assert m.kernel("vec").is_kernel


def test_extern_c_block():
    import isa
    m = isa.compile_source('extern "C" {\n__global__ void a(int *p) { p[0] = 1; }\n__global__ void b(int *p) {}\n}')
    assert [k.name for k in m.kernels] == ["a", "b"]


def test_launch_bounds_recorded():
    import isa
    m = isa.compile_source("__global__ void __launch_bounds__(256, 4) k(int *p) { }")
    assert m.kernel("k").launch_bounds == (256, 4)


def test_launch_bounds_single_argument():
    import isa
    m = isa.compile_source("__global__ void __launch_bounds__(128) k(int *p) { }")
    assert m.kernel("k").launch_bounds == (128, None)


@pytest.mark.parametrize("bound", ["0", "-5"])
def test_launch_bounds_max_threads_not_positive_is_left_out(bound):
    # nvcc -arch=sm_90 compiles it silently and writes no .maxntid
    import isa
    m = isa.compile_source(f"__global__ void __launch_bounds__({bound}, 2) k(int *p) {{ }}")
    assert m.kernel("k").launch_bounds == (0, 2)


def test_launch_bounds_negative_min_blocks_is_left_out():
    # nvcc -arch=sm_90 compiles it silently and writes no .minnctapersm
    import isa
    assert isa.compile_source("__global__ void __launch_bounds__(256, -1) k(int *p) { }").kernel("k").launch_bounds == (256, 0)


def test_launch_bounds_arguments_are_read_as_32_bit_ints():
    # nvcc: __launch_bounds__(4294967552, 4294967298) is .maxntid 256, .minnctapersm 2
    import isa
    m = isa.compile_source("__global__ void __launch_bounds__(4294967552, 4294967298) k(int *p) { }")
    assert m.kernel("k").launch_bounds == (256, 2)


def test_launch_bounds_above_the_block_limit_is_accepted():
    # nvcc -arch=sm_90 compiles __launch_bounds__(2048) without a warning (.maxntid 2048);
    # only a launch of more than 1024 threads is refused, by the block limit
    import isa
    assert isa.compile_source("__global__ void __launch_bounds__(2048) k(int *p) { }").kernel("k").launch_bounds == (2048, None)


def test_launch_bounds_negative_max_blocks_per_cluster_is_diagnostic():
    # nvcc: "error: max blocks per cluster must not be negative"
    e = compile_error("__global__ void __launch_bounds__(256, 2, -1) k(int *p) { }\n", arch=900)
    assert e.message == "max blocks per cluster must not be negative" and e.col == 43


def test_launch_bounds_max_blocks_per_cluster_past_int_is_diagnostic():
    # nvcc: "error: max blocks per cluster is too large"
    e = compile_error("__global__ void __launch_bounds__(256, 2, 2147483648) k(int *p) { }\n", arch=900)
    assert e.message == "max blocks per cluster is too large"


def test_launch_bounds_max_blocks_per_cluster_before_sm_90_is_diagnostic():
    # nvcc -arch=sm_80: "error: cannot specify max blocks per cluster for this GPU architecture"
    e = compile_error("__global__ void __launch_bounds__(256, 2, 4) k(int *p) { }\n", arch=800)
    assert e.message == "cannot specify max blocks per cluster for this GPU architecture"


def test_launch_bounds_max_blocks_per_cluster_on_sm_90_is_accepted():
    import isa
    assert isa.compile_source("__global__ void __launch_bounds__(256, 2, 4) k(int *p) { }",
                              arch=900).kernel("k").launch_bounds == (256, 2)


def test_launch_bounds_min_blocks_may_be_zero():
    import isa
    assert isa.compile_source("__global__ void __launch_bounds__(256, 0) k(int *p) { }").kernel("k").launch_bounds == (256, 0)


def test_launch_bounds_argument_must_be_an_integer():
    e = compile_error("__global__ void __launch_bounds__(1.5) k(int *p) { }\n")
    assert e.message == "a __launch_bounds__ argument must be an integer constant expression" and e.col == 35


def test_switch_cases_index_flat_body():
    fn = compile_kernel("int r = 0; switch (x) { case 1: r = 1; case 2: r = 2; break; default: r = 3; }", "int x")
    sw = nodes(fn.body, ir.Switch)[0]
    assert sw.cases == [(1, 0), (2, 1), (None, 3)]
    assert isinstance(sw.body[2], ir.Break)


def test_for_loop_has_step_and_scope():
    fn = compile_kernel("for (int i = 0; i < n; i++) p[i] = 0;", "int *p, int n")
    loop = nodes(fn.body, ir.Loop)[0]
    assert loop.cond.type == BOOL and isinstance(loop.step, ir.Assign) and not loop.do_while


def test_do_while_loop():
    fn = compile_kernel("int i = 0; do { i++; } while (i < 3);")
    assert nodes(fn.body, ir.Loop)[0].do_while


def test_infinite_for_has_no_condition():
    fn = compile_kernel("for (;;) { break; }")
    assert nodes(fn.body, ir.Loop)[0].cond is None


def test_host_const_int_usable_as_constant():
    fn = compile_kernel("__shared__ float s[N]; s[0] = 1;", prelude="const int N = 64;")
    assert fn.shared_vars[0].type.count == 64


def test_locations_point_at_user_source():
    fn = compile_kernel("int x = 1;\n  p[x] = 2;", "int *p")
    st = nodes(fn.body, ir.Store)[0]
    assert st.loc.line == 5


@pytest.mark.parametrize("src,msg", [
    ("int r = y;", "use of undeclared identifier 'y'"),
    ("const int c = 1; c = 2;", "cannot assign to a const variable"),
    ("int *q = 5;", "cannot convert 'int' to 'int *' without a cast"),
    ("float f = 1; int r = f % 2;", "invalid operands to binary '%'"),
    ("break;", "'break' statement not in a loop or switch"),
    ("continue;", "'continue' statement not in a loop"),
    ("int a[4]; int b[4]; a = b;", "cannot assign to an array"),
    ("int x; x.y = 1;", "is not a struct"),
    ("int a[0];", "array size must be positive"),
    ("int n = 3; int a[n];", "array size must be an integer constant expression"),
    ("return 1;", "void function 'k' should not return a value"),
    ("int x = 1; int x = 2;", "redefinition of 'x'"),
])
def test_type_errors_are_one_sentence(src, msg):
    e = compile_error(f"__global__ void k()\n{{\n{src}\n}}\n")
    assert msg in e.message and e.line == 3


def test_pointer_to_const_cannot_be_written():
    e = compile_error("__global__ void k(const float *p)\n{\n  p[0] = 1.0f;\n}\n")
    assert e.message == "cannot assign to a const variable" and e.line == 3


def test_too_few_arguments_names_the_function():
    e = compile_error("__device__ int f(int a, int b) { return a + b; }\n__global__ void k(int *p) { p[0] = f(1); }\n")
    assert "too few arguments to function 'f'" in e.message and e.line == 2


def test_too_many_arguments_names_the_function():
    e = compile_error("__device__ int f(int a) { return a; }\n__global__ void k(int *p) { p[0] = f(1, 2); }\n")
    assert "too many arguments to function 'f'" in e.message


def test_recursion_is_rejected():
    e = compile_error("__device__ int f(int n) { return n ? f(n - 1) : 0; }\n__global__ void k(int *p) { p[0] = f(3); }\n")
    assert e.message == "recursion is not supported" and e.line == 1


def test_mutual_recursion_is_rejected():
    e = compile_error("__device__ int g(int n);\n__device__ int f(int n) { return g(n); }\n"
                      "__device__ int g(int n) { return f(n); }\n__global__ void k(int *p) { p[0] = f(3); }\n")
    assert e.message == "recursion is not supported"


def test_calling_host_function_from_kernel_is_error():
    e = compile_error("int h(int x) { return x; }\n__global__ void k(int *p) { p[0] = h(1); }\n")
    assert "__host__ function ('h')" in e.message


def test_global_function_must_return_void():
    e = compile_error("__global__ int k() { return 0; }\n")
    assert e.message == "a __global__ function must return void"


def test_file_scope_plain_variable_needs_space():
    e = compile_error("float table[4];\n__global__ void k() {}\n")
    assert "must be __device__ or __constant__" in e.message


HOST_CONST_FLOATS = ("const float g = 6.f;\nconst double h = 2.5;\n"
                     "extern \"C\" __global__ void k(float *o) { o[threadIdx.x] = g * threadIdx.x + (float)h; }\n")


def test_a_host_const_float_initialised_by_a_constant_is_its_value_in_device_code():
    # CUDA C++ Programming Guide, "Const-qualified variables": a host const scalar (not long
    # double, not volatile) initialised with a constant expression may be read in device code
    import numpy as np
    import gpuemu
    o = np.zeros(4, np.float32)
    gpuemu.RawModule(code=HOST_CONST_FLOATS).get_function("k")((1,), (4,), (o,))
    assert np.array_equal(o, np.float32(6) * np.arange(4, dtype=np.float32) + np.float32(2.5))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on the PATH")
def test_the_host_const_float_kernel_compiles_with_nvcc(tmp_path):
    from conftest import nvcc_cubin
    src = tmp_path / "host_const.cu"
    src.write_text(HOST_CONST_FLOATS)
    nvcc_cubin(shutil.which("nvcc"), src, tmp_path)


@pytest.mark.parametrize("src, refusal", [
    # volatile: not usable at all; its address: not, the value only (as nvcc: "undefined in device code")
    ("const volatile float g = 6.f;\n__global__ void k(float *o) { o[0] = g; }\n",
     "must be __device__ or __constant__"),
    ("const float g = 6.f;\n__global__ void k(const float **o) { *o = &g; }\n", "address"),
])
def test_a_host_const_float_s_address_or_a_volatile_one_is_refused_in_device_code(src, refusal):
    assert refusal in compile_error(src).message


def test_struct_param_of_device_function_is_passed_by_address_of_a_copy():
    import isa
    m = isa.compile_source("struct P { float x, y; };\n__device__ float sum(P p) { return p.x + p.y; }\n"
                           "__global__ void k(float *o) { P a; a.x = 1; a.y = 2; o[0] = sum(a); }")
    sum_fn = [f for f in m.functions if f.name == "sum"][0]
    assert sum_fn.params[0].type == ir.PointerType(sum_fn.params[0].type.pointee, "local")
    call = nodes(m.kernel("k").body, ir.Call)[0]
    arg = call.args[0]
    assert isinstance(arg, ir.Comma) and isinstance(arg.exprs[0], ir.MemCopy)
    assert arg.exprs[0].dst.var.storage == "local" and arg.exprs[0].dst.var is not None


def test_struct_result_goes_through_hidden_pointer_parameter():
    import isa
    m = isa.compile_source("struct P { float x, y; };\n__device__ P mk(float a) { P p; p.x = a; p.y = a; return p; }\n"
                           "__global__ void k(float *o) { P b = mk(2); o[0] = b.y; }")
    mk = [f for f in m.functions if f.name == "mk"][0]
    assert mk.ret == ir.VOID and mk.params[-1].name == "__ret"
    ret_copy = nodes(mk.body, ir.MemCopy)[0]
    assert isinstance(ret_copy.dst, ir.VarRef) and ret_copy.dst.var is mk.params[-1]
    call = nodes(m.kernel("k").body, ir.Call)[0]
    assert len(call.args) == 2 and isinstance(call.args[1], ir.AddrOf)


def test_member_of_struct_result():
    import isa
    m = isa.compile_source("struct P { float x, y; };\n__device__ P mk(float a) { P p; p.x = a; p.y = a; return p; }\n"
                           "__global__ void k(float *o) { o[0] = mk(2).y; }")
    ld = [l for l in nodes(m.kernel("k").body, ir.Load) if l.type == F32][0]
    assert nodes(ld.addr, ir.Call)


def test_address_taken_param_is_copied_to_local():
    fn = compile_kernel("int *q = &n; *q = 3; p[0] = n;", "int *p, int n")
    copies = [d for d in nodes(fn.body, ir.Decl) if d.var.name == "n"]
    assert copies and copies[0].var.storage == "local"


def test_const_pointee_cannot_be_dropped_implicitly():
    e = compile_error("__global__ void k(const float *p)\n{\n  float *q = p;\n}\n")
    assert "discards const" in e.message and e.line == 3


@pytest.mark.parametrize("decl", ["const float *p[2];", "__shared__ const float *p[2];",
                                  "const float *p[2][2]; const float **q = p[1];"])
def test_an_array_element_pointer_to_const_takes_a_pointer_to_const(decl):
    fn = compile_kernel(f"{decl} p[1][0] = a; o[0] = p[1][0][0];" if "[2][2]" in decl else
                        f"{decl} p[0] = a; o[0] = p[0][0];", "float *o, const float *a")
    assert nodes(fn.body, ir.Store)


def test_a_struct_member_pointer_to_const_takes_a_pointer_to_const():
    fn = compile_kernel("V v; v.d = a; V *pv = &v; pv->d = a; o[0] = v.d[0];", "float *o, const float *a",
                        "struct V { const float *d; };")
    assert nodes(fn.body, ir.Store)


def test_the_pointee_of_a_pointer_to_pointer_to_const_takes_a_pointer_to_const():
    fn = compile_kernel("const float *q; const float **pp = &q; *pp = a; o[0] = q[0];", "float *o, const float *a")
    assert nodes(fn.body, ir.Store)


@pytest.mark.parametrize("decl, read", [
    ("const float *p[2]; p[0] = a;", "p[0]"),
    ("V v; v.d = a;", "v.d"),
    ("const float **pp = &a;", "*pp"),
])
def test_an_element_member_or_pointee_pointer_to_const_keeps_its_const(decl, read):
    e = compile_error(f"struct V {{ const float *d; }};\n__global__ void k(const float *a)\n{{\n  {decl}\n"
                      f"  float *x = {read};\n}}\n")
    assert "discards const" in e.message and e.line == 5


def test_writing_through_an_element_pointer_to_const_is_refused():
    e = compile_error("__global__ void k(const float *a)\n{\n  const float *p[2]; p[0] = a;\n  p[0][0] = 1;\n}\n")
    assert e.message == "cannot assign to a const variable" and e.line == 4


def test_explicit_cast_may_drop_const():
    fn = compile_kernel("float *q = (float *)p; q[0] = 1.0f;", "const float *p")
    assert nodes(fn.body, ir.Store)


def test_typedef_functional_cast():
    e = value_of("size_t r = size_t(n) * 4;", "int n")
    assert e.type == U64 and isinstance(e.a, ir.Cast) and e.a.a.type == I32


def test_local_const_int_is_a_constant_for_array_sizes():
    fn = compile_kernel("const int N = 6; float a[N]; a[0] = 1;")
    assert [d for d in nodes(fn.body, ir.Decl) if d.var.name == "a"][0].var.type.count == 6


def test_local_enum_constants_are_scoped_to_the_block():
    import isa
    m = isa.compile_source("__global__ void k(int *p) { { enum { A = 3 }; p[0] = A; } { enum { A = 4 }; p[1] = A; } }")
    assert [s.value.value for s in nodes(m.kernel("k").body, ir.Store)] == [3, 4]


def test_shared_variables_of_called_device_functions_belong_to_the_kernel():
    import isa
    m = isa.compile_source("__device__ int f(int i) { __shared__ int buf[64]; buf[i] = i; return buf[63 - i]; }\n"
                           "__global__ void k(int *p) { __shared__ float mine[8]; p[0] = f(1) + mine[0]; }")
    assert [v.name for v in m.kernel("k").shared_vars] == ["mine", "buf"]


def test_writing_constant_memory_is_an_error():
    e = compile_error("__constant__ float c[4];\n__global__ void k()\n{\n  c[1] = 2.0f;\n}\n")
    assert e.message == "cannot write to __constant__ memory from device code" and e.line == 4


def test_function_must_be_declared_before_use():
    e = compile_error("__global__ void k(int *p)\n{\n  p[0] = f(1);\n}\n__device__ int f(int x) { return x; }\n")
    assert e.message == "use of undeclared identifier 'f'" and e.line == 3


def test_prototype_allows_later_definition():
    import isa
    m = isa.compile_source("__device__ int f(int);\n__global__ void k(int *p) { p[0] = f(1); }\n"
                           "__device__ int f(int x) { return x + 1; }\n")
    call = nodes(m.kernel("k").body, ir.Call)[0]
    assert call.func.body is not None and call.func.params[0].name == "x"


def test_global_variable_must_be_declared_before_use():
    e = compile_error("__global__ void k(int *p)\n{\n  p[0] = g;\n}\n__device__ int g;\n")
    assert e.message == "use of undeclared identifier 'g'"


def test_prototype_without_definition_is_an_error_when_called():
    e = compile_error("__device__ int f(int);\n__global__ void k(int *p)\n{\n  p[0] = f(1);\n}\n")
    assert "declared but never defined" in e.message and e.line == 4


def test_three_dimensional_local_array_offsets():
    fn = compile_kernel("int a[2][3][4]; a[1][2][3] = 5;")
    st = nodes(fn.body, ir.Store)[-1]
    offsets = [p.offset.value for p in nodes(st.addr, ir.PtrAdd)]
    assert sum(offsets) == (1 * 12 + 2 * 4 + 3) * 4


def test_chained_assignment():
    fn = compile_kernel("int a, b; a = b = 7;")
    outer = stmts(fn)[-1].expr
    assert isinstance(outer, ir.Assign) and isinstance(outer.value, ir.Assign) and outer.value.value.value == 7


def test_nested_struct_member_offsets():
    fn = compile_kernel("Outer o; o.in.y = 1.0f;",
                        prelude="struct Inner { float x, y; };\nstruct Outer { int tag; Inner in; };")
    st = nodes(fn.body, ir.Store)[-1]
    assert sum(p.offset.value for p in nodes(st.addr, ir.PtrAdd)) == 8


def test_short_circuit_right_side_keeps_side_effect():
    fn = compile_kernel("if (i < n && p[i++] > 0) p[0] = 1;", "int *p, int i, int n")
    lg = nodes(fn.body, ir.Logical)[0]
    assert nodes(lg.b, ir.Assign) and not nodes(lg.a, ir.Assign)


def test_struct_from_conditional_copies_from_selected_address():
    fn = compile_kernel("S a, b; a.x = 1; b.x = 2; S r = n ? a : b;", "int n", prelude="struct S { int x; };")
    mc = nodes(fn.body, ir.MemCopy)[0]
    assert isinstance(mc.src, ir.Cond) and mc.src.c.type == BOOL


def test_struct_may_point_to_itself():
    fn = compile_kernel("Node n; n.next = &n;", prelude="struct Node { int v; struct Node *next; };")
    node = [d for d in nodes(fn, ir.Decl) if d.var.name == "n"][0].var.type
    assert node.field("next").type.pointee is node


def test_value_of_forward_declared_struct_is_an_error():
    e = compile_error("struct N; __global__ void k() { struct N x; }")
    assert "incomplete struct 'N'" in e.message


def test_struct_redefinition_is_an_error():
    e = compile_error("struct N { int a; }; struct N { int a; };")
    assert "redefinition of struct 'N'" in e.message


@pytest.mark.parametrize("where", ["__device__ char g[1 << 30][1 << 30][1 << 30];\n__global__ void k() { }",
                                   "__global__ void k(unsigned long long *a) {\n"
                                   "  a[0] = sizeof(char[1 << 30][1 << 30][1 << 30]); }",
                                   "typedef char T[1 << 30][1 << 30][1 << 30];"])
def test_array_past_a_size_t_is_too_large_like_nvcc(where):
    e = compile_error(where)
    assert e.message == "array is too large (1237940039285380274899124224 bytes; the limit is 18446744073709551615)"


def test_array_just_under_a_size_t_has_its_size():
    e = value_of("unsigned long long r = sizeof(char[1LL << 62][3]);")
    assert isinstance(e, ir.Const) and e.value == 3 << 62


def test_device_variable_past_the_largest_object_is_an_error_at_its_name():
    # the host compiler: "size '9223372036854775808' of array 'g' exceeds maximum object size"
    e = compile_error("__device__ char g[1LL << 62][2];")
    assert e.message == "size 9223372036854775808 of 'g' exceeds the maximum object size 9223372036854775807"
    assert (e.line, e.col) == (1, 17)


def test_variable_named_in_its_own_initialiser_is_the_new_uninitialised_one(tmp_path):
    # C11 6.2.1p7: its scope starts at the end of its declarator; nvcc compiles it (a read
    # of an uninitialised value), so the inner y's initialiser reads the inner y, not the outer 2
    from isa_ir_walk import nvcc_accepts
    body = "int y = 2; { int y = y + 5; p[1] = y; } p[0] = y;"
    nvcc_accepts("__global__ void k(int *p) { %s }" % body, tmp_path)
    fn = compile_kernel(body, "int *p")
    outer, inner = [d for d in nodes(fn.body, ir.Decl) if d.var.name == "y"]
    assert [r.var for r in nodes(inner.init, ir.VarRef)] == [inner.var]


def test_self_initialised_variable_is_not_undeclared():
    fn = compile_kernel("int x = x; p[0] = x;", "int *p")
    d = [d for d in nodes(fn.body, ir.Decl) if d.var.name == "x"][0]
    assert isinstance(d.init, ir.VarRef) and d.init.var is d.var


def test_a_constant_pointer_variable_is_const_itself_not_what_it_points_at():
    # '__constant__ float *p;' is 'float *const' (nvcc compiles the store through it)
    import numpy as np
    import gpuemu
    m = gpuemu.RawModule(code="__constant__ float *cptr;\n"
                              "__global__ void k(float v) { float *d = cptr; d[threadIdx.x] = v; }")
    out = gpuemu.zeros(4, np.float32)
    m.get_global("cptr").set(np.array([out.ptr], np.uint64))
    m.get_function("k")(1, 4, (np.float32(3),))
    assert out.get().tolist() == [3.0] * 4


def test_a_constant_pointer_variable_itself_cannot_be_assigned():
    e = compile_error("__constant__ float *cptr;\n__global__ void k(float *q) { cptr = q; }")
    assert "__constant__" in e.message or "const" in e.message
