"""Built-in functions: each lowers to the Intrinsic/IR the contract names."""
from __future__ import annotations

import math
import shutil
import subprocess

import numpy as np
import pytest

import gpuemu

from isa import ir
from isa.ir import BOOL, I32, U32, I64, F32, F64
from isa_ir_walk import compile_kernel, nodes, decl_init, compile_error


def intr(body: str, params: str = "float *f, int *i, unsigned *u, double *d") -> ir.Intrinsic:
    fn = compile_kernel(body, params)
    return nodes(fn.body, ir.Intrinsic)[0]


def test_syncthreads_is_void_intrinsic():
    x = intr("__syncthreads();")
    assert x.name == "syncthreads" and x.type == ir.VOID and x.args == []


def test_syncwarp_default_mask_is_all_lanes():
    x = intr("__syncwarp();")
    assert x.name == "syncwarp" and x.args[0].value == 0xFFFFFFFF and x.args[0].type == U32


def test_fences():
    fn = compile_kernel("__threadfence_block(); __threadfence(); __threadfence_system();")
    assert [x.name for x in nodes(fn.body, ir.Intrinsic)] == ["threadfence_block", "threadfence",
                                                              "threadfence_system"]


def test_atomic_add_statement_has_result_unused():
    x = intr("atomicAdd(i, 1);")
    assert x.name == "atomic_add" and x.result_used is False and x.type == I32


def test_atomic_add_value_used_keeps_result():
    x = intr("int old = atomicAdd(i, 1);")
    assert x.result_used is True


def test_atomic_add_float_converts_value_to_pointee():
    x = intr("atomicAdd(f, 1);")
    assert x.type == F32 and x.args[1].type == F32


def test_atomic_cas_has_three_arguments():
    x = intr("int o = atomicCAS(i, 0, 1);")
    assert x.name == "atomic_cas" and len(x.args) == 3


def test_atomic_on_shared_array_element():
    fn = compile_kernel("__shared__ unsigned h[64]; atomicAdd(&h[3], 1u);")
    x = nodes(fn.body, ir.Intrinsic)[0]
    assert x.args[0].type.space == "shared"


def test_atomic_inc_only_for_unsigned():
    e = compile_error("__global__ void k(int *p)\n{\n  atomicInc(p, 5);\n}\n")
    assert "'atomicInc' is not available for 'int'" in e.message


def test_atomic_with_void_cast_is_reduction():
    x = intr("(void)atomicMax(i, 3);")
    assert x.result_used is False and x.name == "atomic_max"


@pytest.mark.parametrize("call,name,third", [
    ("__shfl_sync(0xffffffff, v, 3)", "shfl", I32),
    ("__shfl_up_sync(0xffffffff, v, 1)", "shfl_up", U32),
    ("__shfl_down_sync(0xffffffff, v, 16)", "shfl_down", U32),
    ("__shfl_xor_sync(0xffffffff, v, 8)", "shfl_xor", I32),
])
def test_shuffles_have_default_width_32(call, name, third):
    x = intr(f"float v = f[0]; float r = {call};")
    assert x.name == name and x.type == F32 and x.args[2].type == third
    assert x.args[3].value == 32 and x.args[3].type == I32


def test_shuffle_with_width():
    x = intr("int r = __shfl_sync(0xffffffff, i[0], 0, 16);")
    assert x.args[3].value == 16 and x.type == I32


def test_shuffle_of_char_promotes_to_int():
    x = intr("char c = 1; int r = __shfl_sync(0xffffffff, c, 0);")
    assert x.type == I32


def test_ballot_takes_bool_predicate():
    x = intr("unsigned r = __ballot_sync(0xffffffff, i[0] > 3);")
    assert x.name == "ballot" and x.type == U32 and x.args[1].type == BOOL


def test_ballot_of_int_predicate_compares_with_zero():
    x = intr("unsigned r = __ballot_sync(0xffffffff, i[0]);")
    assert x.args[1].op == "ne"


def test_all_and_any_return_int():
    fn = compile_kernel("int a = __all_sync(0xffffffff, 1); int b = __any_sync(0xffffffff, 0);")
    assert [(x.name, x.type) for x in nodes(fn.body, ir.Intrinsic)] == [("all", I32), ("any", I32)]


def test_activemask():
    x = intr("unsigned r = __activemask();")
    assert x.name == "activemask" and x.type == U32


@pytest.mark.parametrize("call,name,rtype", [
    ("__popc(u[0])", "popc", I32), ("__popcll(1ull)", "popcll", I32), ("__clz(i[0])", "clz", I32),
    ("__ffs(i[0])", "ffs", I32), ("__brev(u[0])", "brev", U32), ("__mul24(i[0], 3)", "mul24", I32),
    ("__umul24(u[0], 3u)", "umul24", U32), ("__mulhi(i[0], 7)", "mulhi", I32),
    ("__umulhi(u[0], 7u)", "umulhi", U32), ("__clzll(5ll)", "clzll", I32),
])
def test_bit_intrinsics(call, name, rtype):
    x = intr(f"long long r = {call};")
    assert x.name == name and x.type == rtype


@pytest.mark.parametrize("call,name,rtype", [
    ("__float_as_int(f[0])", "float_as_int", I32), ("__int_as_float(i[0])", "int_as_float", F32),
    ("__float_as_uint(f[0])", "float_as_uint", U32), ("__uint_as_float(u[0])", "uint_as_float", F32),
    ("__double_as_longlong(d[0])", "double_as_longlong", I64),
    ("__longlong_as_double(5ll)", "longlong_as_double", F64),
])
def test_reinterpret_intrinsics(call, name, rtype):
    x = intr(f"double r = {call};")
    assert x.name == name and x.type == rtype


@pytest.mark.parametrize("call,name,t", [
    ("sqrtf(f[0])", "sqrt", F32), ("sqrt(d[0])", "sqrt", F64), ("sqrt(f[0])", "sqrt", F32),
    ("rsqrtf(f[0])", "rsqrt", F32), ("expf(f[0])", "exp", F32), ("__expf(f[0])", "exp", F32),
    ("exp(d[0])", "exp", F64), ("logf(f[0])", "log", F32), ("__logf(f[0])", "log", F32),
    ("log2f(f[0])", "log2", F32), ("__log2f(f[0])", "log2", F32), ("powf(f[0], 2)", "pow", F32),
    ("__powf(f[0], 2)", "pow", F32), ("sinf(f[0])", "sin", F32), ("__sinf(f[0])", "sin", F32),
    ("cosf(f[0])", "cos", F32), ("__cosf(f[0])", "cos", F32), ("tanf(f[0])", "tan", F32),
    ("fabsf(f[0])", "fabs", F32), ("fabs(d[0])", "fabs", F64), ("floorf(f[0])", "floor", F32),
    ("ceilf(f[0])", "ceil", F32), ("truncf(f[0])", "trunc", F32), ("roundf(f[0])", "round", F32),
    ("fminf(f[0], 1)", "fmin", F32), ("fmaxf(f[0], 1)", "fmax", F32), ("fmodf(f[0], 2)", "fmod", F32),
    ("fmaf(f[0], 2, 3)", "fma", F32), ("__fdividef(f[0], 3)", "fdivide", F32),
    ("__saturatef(f[0])", "saturate", F32), ("atan2f(f[0], 1)", "atan2", F32), ("tanhf(f[0])", "tanh", F32),
    ("pow(d[0], 2)", "pow", F64),
])
def test_math_functions(call, name, t):
    x = intr(f"double r = {call};")
    assert x.name == name and x.type == t and all(a.type == t for a in x.args)


@pytest.mark.parametrize("call,name,t", [
    ("min(i[0], 3)", "min", I32), ("max(u[0], 3u)", "max", U32), ("min(i[0], u[0])", "min", U32),
    ("max(5ll, 3ll)", "max", I64), ("min(f[0], 1.0f)", "fmin", F32), ("max(d[0], 1.0)", "fmax", F64),
])
def test_min_max_overloads(call, name, t):
    x = intr(f"double r = {call};")
    assert x.name == name and x.type == t and x.args[0].type == x.args[1].type == t


def test_abs_of_int_and_float():
    fn = compile_kernel("int a = abs(i[0]); float b = abs(f[0]);", "float *f, int *i")
    assert [(x.name, x.type) for x in nodes(fn.body, ir.Intrinsic)] == [("abs", I32), ("fabs", F32)]


def test_ldg_is_plain_load():
    fn = compile_kernel("float r = __ldg(&p[3]);", "const float *p")
    e = decl_init(fn, "r")
    assert isinstance(e, ir.Load) and e.type == F32


def test_float2int_rn_rounds_then_casts():
    e = decl_init(compile_kernel("int r = __float2int_rn(f[0]);", "float *f"), "r")
    assert isinstance(e, ir.Cast) and e.type == I32 and e.a.name == "rint"


def test_builtin_inf():
    e = decl_init(compile_kernel("float r = INFINITY;", prelude="#include <math.h>"), "r")
    assert e.type == F32 and math.isinf(e.value)


def test_make_int2():
    e = decl_init(compile_kernel("int2 r = make_int2(1, 2);"), "r")
    assert isinstance(e, ir.MakeVector) and e.type.name == "int2" and e.type.align == 8


def test_wrong_argument_count_to_builtin():
    e = compile_error("__global__ void k(float *p)\n{\n  p[0] = sqrtf(1.0f, 2.0f);\n}\n")
    assert "too many arguments to function 'sqrtf'" in e.message


def test_unknown_function_is_undeclared():
    e = compile_error("__global__ void k(float *p)\n{\n  p[0] = frobnicate(1);\n}\n")
    assert e.message == "use of undeclared identifier 'frobnicate'" and (e.line, e.col) == (3, 10)


def test_math_on_pointer_is_error():
    e = compile_error("__global__ void k(float *p)\n{\n  p[0] = sqrtf(p);\n}\n")
    assert "sqrtf" in e.message


def test_math_function_of_integer_is_an_error_as_in_nvcc():
    e = compile_error("__global__ void k(double *p, int n)\n{\n  p[0] = sqrt(n);\n}\n")
    assert "'sqrt' with integer arguments calls a host function" in e.message


@pytest.mark.parametrize("call,t", [
    ("pow(i[0], 2)", F64), ("pow(2, 10)", F64), ("pow(f[0], 2)", F64), ("pow(2, f[0])", F64),
    ("pow(f[0], u[0])", F64), ("pow(f[0], d[0])", F64), ("pow(d[0], i[0])", F64), ("pow(f[0], f[1])", F32),
])
def test_pow_with_an_integer_argument_is_double_pow_as_in_nvcc(call, t):
    """CUDA declares std::pow's promoting template __device__: nvcc -ptx
    shows pow(int, int) and pow(float, int) calling the double pow."""
    x = intr(f"double r = {call};")
    assert x.name == "pow" and x.type == t and all(a.type == t for a in x.args)


def test_copysign_of_float_and_double_is_double_as_in_nvcc():
    x = intr("double r = copysign(f[0], d[0]);")
    assert x.name == "copysign" and x.type == F64 and all(a.type == F64 for a in x.args)


@pytest.mark.parametrize("call", ["fmax(f[0], 1)", "fmin(2, f[0])", "atan2(d[0], 1)", "fma(f[0], f[1], 2)",
                                  "copysign(f[0], 1)"])
def test_math_function_of_float_and_int_calls_a_host_function_as_in_nvcc(call):
    e = compile_error(f"__global__ void k(float *f, double *d)\n{{\n  d[0] = {call};\n}}\n")
    assert "calls a host function" in e.message and "'int'" in e.message and (e.line, e.col) == (3, 10)


def test_math_function_of_float_and_double_calls_a_host_function_as_in_nvcc():
    e = compile_error("__global__ void k(float *f, double *d)\n{\n  d[0] = fmax(f[0], d[0]);\n}\n")
    assert e.message.startswith("'fmax' with arguments of types 'float' and 'double' calls a host function")


@pytest.mark.parametrize("name", ["exp10", "rsqrt"])
def test_exp10_and_rsqrt_of_an_integer_are_ambiguous_as_in_nvcc(name):
    e = compile_error(f"__global__ void k(double *d, int n)\n{{\n  d[0] = {name}(n);\n}}\n")
    assert e.message.startswith(f"call to '{name}' with argument of type 'int' is ambiguous")


_CUDA_ONLY_CALLS = ["rcbrt(n)", "sinpi(n)", "cospi(n)", "erfinv(n)", "erfcinv(n)", "normcdf(n)", "normcdfinv(n)",
                    "erfcx(n)", "cyl_bessel_i0(n)", "cyl_bessel_i1(n)", "j0(n)", "j1(n)", "y0(n)", "y1(n)",
                    "jn(2, n)", "yn(2, n)"]


@pytest.mark.parametrize("call", _CUDA_ONLY_CALLS)
def test_cuda_math_function_of_an_integer_is_ambiguous_as_in_nvcc(call):
    """CUDA declares these for float and double only (std:: has no template
    for them): an int argument is ambiguous; they were said to call
    'std::rcbrt's constexpr template', which does not exist."""
    e = compile_error(f"__global__ void k(double *d, int n)\n{{\n  d[0] = {call};\n}}\n")
    name = call.split("(")[0]
    assert e.message.startswith(f"call to '{name}' with argument of type 'int' is ambiguous")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on the PATH")
def test_nvcc_finds_each_cuda_math_function_of_an_integer_ambiguous(tmp_path):
    f = tmp_path / "k.cu"
    f.write_text("__global__ void k(double *d, int n)\n{\n"
                 + "".join(f"  d[{i}] = {c};\n" for i, c in enumerate(_CUDA_ONLY_CALLS)) + "}\n")
    out = subprocess.run(["nvcc", "-arch=sm_90", "-c", str(f), "-o", str(tmp_path / "k.o")],
                         capture_output=True, text=True)
    assert out.stderr.count("more than one instance of overloaded function") == len(_CUDA_ONLY_CALLS)


def test_min_of_float_and_int_is_ambiguous_as_in_nvcc():
    e = compile_error("__global__ void k(float *p)\n{\n  p[0] = min(p[1], 2);\n}\n")
    assert "is ambiguous" in e.message


# ------------------------------------------------- reference parameters (C++ [dcl.init.ref])

def outputs(src: str, n: int, *args) -> list:
    """Launch one thread of `k(int *o, args...)`; the n ints it writes to o."""
    o = np.full(n, -1, np.int32)
    gpuemu.RawModule(code=src).get_function("k")((1,), (1,), (o, *args))
    return o.tolist()


STRUCT_INC = r"""
struct S { int a[2]; int v; };
__device__ void inc(S &b) { b.a[0] += 5; b.v += 7; }
"""


def test_writes_through_a_struct_reference_reach_a_local_struct():
    src = STRUCT_INC + r"""
    __global__ void k(int *o) { S m; m.a[0] = 1; m.v = 10; inc(m); o[0] = m.a[0]; o[1] = m.v; }"""
    assert outputs(src, 2) == [6, 17]


def test_writes_through_a_struct_reference_reach_a_shared_struct():
    src = STRUCT_INC + r"""
    __global__ void k(int *o) { __shared__ S sh; sh.a[0] = 1; sh.v = 10; inc(sh); o[0] = sh.a[0]; o[1] = sh.v; }"""
    assert outputs(src, 2) == [6, 17]


def test_writes_through_a_struct_reference_reach_a_global_array_element():
    src = STRUCT_INC + "__global__ void k(int *o, S *g) { inc(g[1]); o[0] = g[1].a[0]; o[1] = g[1].v; }"
    g = np.array([0, 0, 0, 1, 2, 10], np.int32)
    assert outputs(src, 2, g) == [6, 17] and g.tolist() == [0, 0, 0, 6, 2, 17]


def test_a_struct_reference_passed_on_and_to_a_member_struct_writes_through():
    src = r"""
    struct In { int x; };
    struct S { In in; int v; };
    __device__ void setx(In &i) { i.x = 42; }
    __device__ void outer(S &s) { setx(s.in); s.v = s.in.x + 1; }
    __global__ void k(int *o) { S m; m.in.x = 0; m.v = 0; outer(m); o[0] = m.in.x; o[1] = m.v; }"""
    assert outputs(src, 2) == [42, 43]


def test_template_swap_of_struct_references_exchanges_the_callers_structs():
    src = r"""
    struct S { int v; };
    template <class T> __device__ void swp(T &a, T &b) { T t = a; a = b; b = t; }
    __global__ void k(int *o) { S a, b; a.v = 1; b.v = 2; swp(a, b); o[0] = a.v; o[1] = b.v; }"""
    assert outputs(src, 2) == [2, 1]


def test_struct_reference_parameter_of_a_member_function_writes_through():
    src = r"""
    struct S { int v; __device__ void give(S &o) { o.v += v; v = 0; } };
    __global__ void k(int *o) { S a, b; a.v = 3; b.v = 4; a.give(b); o[0] = a.v; o[1] = b.v; }"""
    assert outputs(src, 2) == [0, 7]



def test_sizeof_a_reference_or_struct_parameter_is_the_size_of_its_object():
    src = r"""
    struct S { int v; int w[2]; };
    __device__ int of_ref(char &c) { return sizeof c; }
    __device__ int of_struct_ref(S &s) { return sizeof s; }
    __device__ int of_struct(S s) { return sizeof(s); }
    __global__ void k(int *o) { char c = 0; S m; o[0] = of_ref(c); o[1] = of_struct_ref(m); o[2] = of_struct(m); }"""
    assert outputs(src, 3) == [1, 12, 12]


def test_template_argument_deduced_from_a_reference_is_the_referenced_type():
    # C++ [temp.deduct.call]/3 via [expr.type]/1: an expression of type T& has type T
    src = r"""
    template <typename T> __device__ T twice(T x) { return x + x; }
    template <typename T> __device__ int size_of(T x) { return sizeof(x); }
    __global__ void k(int *o) { int v = 5; int &r = v; char c = 1; char &rc = c;
                                o[0] = twice(r); o[1] = size_of(rc); o[2] = v; }"""
    assert outputs(src, 3) == [10, 1, 5]


def test_member_function_called_through_a_struct_reference():
    src = r"""
    struct S { int v; __device__ void add(int x) { v += x; } };
    __device__ void bump(S &p) { p.add(2); }
    __global__ void k(int *o, S *g) { S &r = g[0]; r.add(1); bump(g[1]); o[0] = r.v; }"""
    g = np.array([10, 20], np.int32)
    assert outputs(src, 1, g) == [11] and g.tolist() == [11, 22]


def test_a_built_in_s_name_overloaded_by_argument_count_calls_the_user_function(tmp_path):
    # helper_math.h's scalar make_<vec>: one argument, where the built-in takes one per component
    from isa_ir_walk import run
    src = "inline __host__ __device__ float2 make_float2(float s) { return make_float2(s, s); }\n" \
          "inline __host__ __device__ int2 make_int2(int s) { return make_int2(s, s); }\n" \
          "__global__ void k(int *o) { float2 a = make_float2(1.5f); int2 b = make_int2(3);\n" \
          "  o[0] = (int)(a.x + a.y); o[1] = b.x * 10 + b.y; }\n"
    assert list(run(src, tmp_path))[:2] == [3, 33]


def test_a_call_with_the_built_in_s_argument_count_still_calls_the_built_in(tmp_path):
    from isa_ir_walk import run
    src = "__device__ int2 make_int2(int s) { return make_int2(s + 100, s + 100); }\n" \
          "__device__ int max(int a, int b, int c) { return -1; }\n" \
          "__global__ void k(int *o) { int2 c = make_int2(1, 2); o[0] = c.x * 10 + c.y;\n" \
          "  o[1] = max(4, 9); o[2] = max(4, 9, 5); }\n"
    assert list(run(src, tmp_path))[:3] == [12, 9, -1]


def test_a_built_in_exact_match_beats_a_user_function_template_of_its_name(tmp_path):
    # [over.match.best]: a non-template as good as a template instance wins (nvcc -ptx: max.s32, max.f32)
    from isa_ir_walk import run
    src = "template <typename T> __device__ T max(T a, T b) { return (a > b ? a : b) + 1000; }\n" \
          "template <typename T> __device__ T min(T a, T b) { return (a < b ? a : b) + 1000; }\n" \
          "__global__ void k(int *o) { o[0] = max(1, 2); o[1] = (int)(max(1.5f, 2.5f) * 2);\n" \
          "  o[2] = (int)min(5LL, 2LL) + (int)min(7u, 3u) * 10; o[3] = max<int>(3, 4); }\n"
    assert list(run(src, tmp_path)) == [2, 5, 32, 1004]


def test_a_user_function_template_beats_a_built_in_that_needs_a_promotion(tmp_path):
    from isa_ir_walk import run
    src = "template <typename T> __device__ T max(T a, T b) { return (a > b ? a : b) + 1000; }\n" \
          "__global__ void k(int *o) { short s = 3; o[threadIdx.x] = max(s, s); }\n"
    assert list(run(src, tmp_path)) == [1003] * 4


# ------------------------------------------ the float taken apart (isa/float_parts.py)

def test_ldexp_of_a_float_with_a_long_exponent_is_the_float_overload(tmp_path):
    from isa_ir_walk import nvcc_accepts
    src = "__global__ void k(float *f, long n) { f[0] = ldexp(f[1], n); f[2] = scalbln(f[3], n); }"
    nvcc_accepts(src, tmp_path)
    x = [i for i in nodes(compile_kernel("f[0] = ldexp(f[1], 5L); f[2] = scalbln(f[3], 5L);", "float *f").body,
                          ir.Intrinsic) if i.name == "ldexp"]
    assert [(i.type, i.args[1].type) for i in x] == [(F32, I32), (F32, ir.LONG)]


def test_float_part_of_an_integer_is_refused_as_nvcc_refuses_it(tmp_path):
    """ldexp(1, 2), frexp(3, &e), ilogb(3), logb(3): std's integer templates,
    constexpr host functions (nvcc: 'calling a constexpr __host__
    function("ldexp") from a __global__ function("k") is not allowed')."""
    from isa_ir_walk import refused
    for call in ("o[0] = ldexp(1, 2);", "int e; o[0] = frexp(3, &e);", "o[0] = ilogb(3);", "o[0] = logb(3u);"):
        name = call.split("(")[0].split()[-1]
        msg = refused(f"#include <cmath>\n__global__ void k(double *o)\n{{ {call} }}\n", tmp_path)
        assert msg.startswith(f'calling a constexpr __host__ function("{name}") from a __global__ function("k") '
                              "is not allowed"), msg
    e = compile_error("__device__ double f(int n) { return ldexp(n, 2); }\n"
                      "__global__ void k(double *o) { o[0] = f(1); }\n")
    assert (e.line, e.col) == (1, 37) and 'from a __device__ function("f")' in e.message


def test_frexp_needs_a_pointer_to_int_as_nvcc_says(tmp_path):
    from isa_ir_walk import refused
    msg = refused("__global__ void k(float *o) { long l; o[0] = frexpf(o[1], &l); }", tmp_path)
    assert msg == 'argument of type "long *" is incompatible with parameter of type "int *"'
    msg = refused("__global__ void k(float *o) { unsigned u; o[0] = frexp(o[1], &u); }", tmp_path)
    assert msg.startswith('no instance of overloaded function "frexp" matches the argument list')
    msg = refused("__global__ void k(float *o) { const float c = 1; o[0] = modff(o[1], &c); }", tmp_path)
    assert msg == 'argument of type "const float *" is incompatible with parameter of type "float *"'


def test_modf_overload_follows_its_pointer(tmp_path):
    """modf(3, &d) with a double d is the double modf; modf(1.0, &f) with a
    float f the float one (the double modf takes no float *)."""
    from isa_ir_walk import nvcc_accepts
    body = "double d; float g; o[0] = modf(3, &d) + d; o[1] = modf(1.0, &g) + g;"
    nvcc_accepts("__global__ void k(double *o) { " + body + " }", tmp_path)
    x = [i for i in nodes(compile_kernel(body, "double *o").body, ir.Intrinsic) if i.name == "modf"]
    assert [i.type for i in x] == [F64, F32]


def test_frexp_of_a_local_writes_the_variable_itself():
    """`int e; frexpf(x, &e)` assigns e (a register), stores nothing; `&e`
    taken elsewhere keeps e in local memory and frexp stores to it."""
    fn = compile_kernel("int e; o[0] = frexpf(o[1], &e) + e;", "float *o")
    assert [d.var.storage for d in nodes(fn.body, ir.Decl) if d.var.name == "e"] == ["reg"]
    assert len(nodes(fn.body, ir.Store)) == 1
    fn = compile_kernel("int e; int *p = &e; o[0] = frexpf(o[1], &e) + *p;", "float *o")
    assert [d.var.storage for d in nodes(fn.body, ir.Decl) if d.var.name == "e"] == ["local"]
    assert len(nodes(fn.body, ir.Store)) == 2


# ------------------------------------------ isnan & co. of an integer (std's host templates)

@pytest.mark.parametrize("call", ["isnan(3)", "isinf(true)", "isfinite(3LL)", "signbit(3u)", "isnan('a')"])
def test_classification_of_an_integer_is_refused_as_nvcc_refuses_it(call, tmp_path):
    """nvcc: 'calling a constexpr __host__ function("isnan") from a __global__
    function("k") is not allowed' (libstdc++'s integer overloads); it ran
    as isnan((double)3) before."""
    from isa_ir_walk import refused
    name = call.split("(")[0]
    msg = refused(f"#include <cmath>\n__global__ void k(int *o)\n{{\n  o[0] = {call};\n}}\n", tmp_path)
    assert msg.startswith(f'calling a constexpr __host__ function("{name}") from a __global__ function("k") '
                          "is not allowed"), msg
    e = compile_error(f"__global__ void k(int *o)\n{{\n  o[0] = {call};\n}}\n")
    assert (e.line, e.col) == (3, 10) and e.source_line.strip() == f"o[0] = {call};"


def test_classification_of_float_and_double_is_bool(tmp_path):
    from isa_ir_walk import nvcc_accepts
    body = "o[0] = sizeof(isnan(f[0])) + sizeof(signbit(d[0]));"
    nvcc_accepts("__global__ void k(int *o, float *f, double *d) { " + body + " }", tmp_path)
    x = [i for i in nodes(compile_kernel("o[0] = isnan(f[0]) + signbit(d[0]);", "int *o, float *f, double *d").body,
                          ir.Intrinsic)]
    assert [(i.name, i.type, i.args[0].type) for i in x] == [("isnan", BOOL, F32), ("signbit", BOOL, F64)]


def test_signbit_reads_the_sign_bit_of_zeros_and_nans():
    """signbit(-0.0) and signbit(-NaN) are true, signbit(+0.0), (+NaN) false."""
    src = r"""
    extern "C" __global__ void k(const float *x, const double *d, int *o) {
        int t = threadIdx.x;
        o[t] = signbit(x[t]) + 2 * signbit(d[t]);
    }"""
    neg_nan, neg_nan_d = np.uint32(0xFFC00000).view(np.float32), np.uint64(0xFFF8000000000000).view(np.float64)
    x = np.array([-0.0, 0.0, np.nan, neg_nan, -1.0, np.inf, -np.inf, 2.0 ** -149] * 4, np.float32)
    d = np.array([-0.0, 0.0, np.nan, neg_nan_d, -1.0, np.inf, -np.inf, -2.0 ** -1074] * 4)
    o = np.zeros(32, np.int32)
    gpuemu.RawModule(code=src).get_function("k")((1,), (32,), (x, d, o))
    assert list(o[:8]) == [3, 0, 0, 3, 3, 0, 3, 2]


# ------------------------------------------ lrint & co. (isa/integer_rounding.py)

def test_lrint_gives_long_and_llrint_long_long(tmp_path):
    from isa_ir_walk import nvcc_accepts
    body = "long a = lrint(d[0]); long long b = llroundf(f[0]); d[1] = a + b + lround(f[1]) + llrint(d[2]);"
    nvcc_accepts("__global__ void k(float *f, double *d) { " + body + " }", tmp_path)
    casts = [c for c in nodes(compile_kernel(body, "float *f, double *d").body, ir.Cast)
             if isinstance(c.a, ir.Intrinsic) and c.a.name in ("rint", "round")]
    assert [(c.type.spelling, c.a.name, c.a.type) for c in casts] == [
        ("long", "rint", F64), (I64.spelling, "round", F32), ("long", "round", F32), (I64.spelling, "rint", F64)]


def test_lround_of_an_integer_is_refused_as_nvcc_refuses_it(tmp_path):
    from isa_ir_walk import refused
    msg = refused("#include <cmath>\n__global__ void k(long *o) { o[0] = lround(3); }\n", tmp_path)
    assert msg.startswith('calling a constexpr __host__ function("lround") from a __global__ function("k")')


def test_sincos_pointers_must_agree(tmp_path):
    from isa_ir_walk import refused
    msg = refused("__global__ void k(float *o) { float s; double c; sincos(o[0], &s, &c); }", tmp_path)
    assert msg.startswith('no instance of overloaded function "sincos" matches the argument list'), msg


def test_nan_of_a_tag_that_is_not_a_literal_is_named_unsupported(tmp_path):
    from isa_ir_walk import nvcc_accepts
    src = "__global__ void k(float *o, const char *tag)\n{\n  o[0] = nanf(tag);\n}\n"
    nvcc_accepts(src, tmp_path)
    e = compile_error(src)
    assert e.message.startswith("'nanf' with a tag that is not a string literal is not supported")
    assert (e.line, e.col) == (3, 15)
