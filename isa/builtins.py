"""CUDA's built-in types, variables and functions, as data.

Sources: CUDA C Programming Guide, "Built-in Vector Types" (sizes and
alignment), "Built-in Variables", "Synchronization Functions", "Warp Shuffle
Functions", "Warp Vote Functions", "Atomic Functions", and the CUDA Math API
(float/double overloads of the math functions in C++).
"""
from __future__ import annotations

from typing import Optional

from . import ir
from .ir import I8, U8, I16, U16, I32, U32, I64, U64, F32, F64

# ------------------------------------------------------------- vector types

_VEC_ELEMS = {"char": I8, "uchar": U8, "short": I16, "ushort": U16, "int": I32, "uint": U32,
              "long": I64, "ulong": U64, "longlong": I64, "ulonglong": U64, "float": F32,
              "double": F64}


def _vec_align(elem: ir.ScalarType, n: int) -> int:
    # Programming Guide, "Built-in Vector Types" (alignment table), as in
    # CUDA 13.0's vector_types.h: x1 and x3 align as the element; x2 as
    # 2*size; x4 as 4*size, at most 16 (the _32a variants below: 32).
    if n in (1, 3):
        return elem.size
    return min(elem.size * n, 16)


VECTOR_TYPES: dict = {}
for _b, _e in _VEC_ELEMS.items():
    for _n in (1, 2, 3, 4):
        VECTOR_TYPES[f"{_b}{_n}"] = ir.VectorType(_e, _n, f"{_b}{_n}", _vec_align(_e, _n))
VECTOR_TYPES["dim3"] = ir.VectorType(U32, 3, "dim3", 4)
for _b in ("long", "ulong", "longlong", "ulonglong", "double"):
    for _a in (16, 32):
        _nm = f"{_b}4_{_a}a"
        VECTOR_TYPES[_nm] = ir.VectorType(_VEC_ELEMS[_b], 4, _nm, _a)

# names that are plain typedefs of scalars, known without a header
SCALAR_TYPEDEFS: dict = {"size_t": ir.ULONG, "ptrdiff_t": ir.LONG, "ssize_t": ir.LONG,   # LP64, as glibc
                         "cudaTextureObject_t": U64}   # texture objects: isa/texture_fetch.py

# ------------------------------------------------------------- built-in vars

SPECIAL_VARS = {"threadIdx": "tid", "blockIdx": "ctaid", "blockDim": "ntid", "gridDim": "nctaid"}

# --------------------------------------------------------------- functions

# math functions by C name -> (IR name, fixed type or None for overloaded on
# float/double, number of args). fast-math intrinsics map to the same names.
_MATH1 = ["sqrt", "rsqrt", "cbrt", "exp", "exp2", "exp10", "expm1", "log", "log2", "log10",
          "log1p", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
          "floor", "ceil", "trunc", "round", "rint", "fabs", "nearbyint",
          "acosh", "asinh", "atanh", "erf", "erfc", "lgamma", "tgamma", "sinpi", "cospi", "rcbrt",
          "erfinv", "erfcinv", "normcdfinv", "erfcx", "normcdf", "cyl_bessel_i0", "cyl_bessel_i1",
          "j0", "j1", "y0", "y1"]
_MATH2 = ["pow", "atan2", "fmin", "fmax", "fmod", "hypot", "copysign", "fdim", "nextafter", "remainder"]

MATH: dict = {}
for _m in _MATH1:
    MATH[_m] = (_m, None, 1)
    MATH[_m + "f"] = (_m, F32, 1)
for _m in _MATH2:
    MATH[_m] = (_m, None, 2)
    MATH[_m + "f"] = (_m, F32, 2)
MATH["fma"] = ("fma", None, 3)
MATH["fmaf"] = ("fma", F32, 3)
MATH["nearbyint"] = ("rint", None, 1)
MATH["nearbyintf"] = ("rint", F32, 1)
for _fast, _name, _n in [("__expf", "exp", 1), ("__exp10f", "exp10", 1), ("__logf", "log", 1),
                         ("__log2f", "log2", 1), ("__log10f", "log10", 1), ("__powf", "pow", 2),
                         ("__sinf", "sin", 1), ("__cosf", "cos", 1), ("__tanf", "tan", 1),
                         ("__fdividef", "fdivide", 2), ("__saturatef", "saturate", 1),
                         ("__fsqrt_rn", "sqrt", 1), ("__frsqrt_rn", "rsqrt_rn", 1),
                         ("__fmaf_rn", "fma", 3),
                         ("exp2f", "exp2", 1), ("exp10f", "exp10", 1)]:
    MATH[_fast] = (_name, F32, _n)
# float arithmetic rounded toward zero, +inf or -inf (CUDA Math API, "Single
# Precision Intrinsics"), exactly as the GPU: gpuemu/jit/intrinsics_codegen.py
for _op, _n in (("fadd", 2), ("fsub", 2), ("fmul", 2), ("fmaf", 3), ("fdiv", 2), ("frcp", 1), ("fsqrt", 1)):
    for _r in ("rz", "ru", "rd"):
        MATH[f"__{_op}_{_r}"] = (f"{_op}_{_r}", F32, _n)
MATH["__fmaf_ieee_rn"] = ("fma", F32, 3)
for _r in ("rz", "ru", "rd"):
    MATH[f"__fmaf_ieee_{_r}"] = MATH["__fmaf_" + _r]      # the same without -ftz
# and double (CUDA Math API, "Double Precision Intrinsics"): gpuemu/jit/directed_f64.py
for _op, _n in (("dadd", 2), ("dsub", 2), ("dmul", 2), ("fma", 3), ("ddiv", 2), ("drcp", 1), ("dsqrt", 1)):
    for _r in ("rz", "ru", "rd"):
        MATH[f"__{_op}_{_r}"] = (f"{_op}_{_r}", F64, _n)
MATH["__fma_rn"] = ("fma", F64, 3)
MATH["__dsqrt_rn"] = ("sqrt", F64, 1)
# sqrt(a^2 + b^2 ...) and its reciprocal (gpuemu/jit/norms.py): plain functions, not overloaded
for _n, _k in (("norm3d", 3), ("norm4d", 4), ("rnorm3d", 3), ("rnorm4d", 4), ("rhypot", 2)):
    _ir = "rnorm" if _n.startswith("r") else "norm"
    MATH[_n] = (_ir, F64, _k)
    MATH[_n + "f"] = (_ir, F32, _k)
MATH["rsqrt"] = ("rsqrt", None, 1)
MATH["rsqrtf"] = ("rsqrt", F32, 1)

# isnan & co: C++ overloads returning bool
CLASSIFY = {"isnan": "isnan", "isinf": "isinf", "isfinite": "isfinite",
            "__isnanf": "isnan", "__isinff": "isinf", "__finitef": "isfinite",
            "__isnan": "isnan", "__isinf": "isinf", "__finite": "isfinite", "signbit": "signbit"}

# the float taken apart (isa/float_parts.py): name -> (kind, fixed type or None
# for overloaded on float/double); a kind's parameters after x: ldexp (int n),
# scalbln (long n), frexp (int *exp), modf (T *iptr), ilogb and logb none;
# sincos (T *s, T *c) writes sin and cos through its two pointers, sincospi sinpi and cospi;
# remquo (T y, int *quo) is remainder(x, y) and quo the quotient's low 3 bits with its sign
FLOAT_PARTS: dict = {}
for _n, _k in (("ldexp", "ldexp"), ("scalbn", "ldexp"), ("scalbln", "scalbln"), ("frexp", "frexp"),
               ("modf", "modf"), ("ilogb", "ilogb"), ("logb", "logb"), ("sincos", "sincos"),
               ("sincospi", "sincospi"), ("remquo", "remquo")):
    FLOAT_PARTS[_n] = (_k, None)
    FLOAT_PARTS[_n + "f"] = (_k, F32)
FLOAT_PART_ARITY = {"ldexp": 2, "scalbln": 2, "frexp": 2, "modf": 2, "ilogb": 1, "logb": 1, "sincos": 3, "sincospi": 3, "remquo": 3}

# CUDA's own math functions, with no std:: template for integers: an integer
# argument is ambiguous between their float and double overloads (nvcc: "more
# than one instance of overloaded function")
NO_STD_TEMPLATE = frozenset({"exp10", "rsqrt", "rcbrt", "sinpi", "cospi", "erfinv", "erfcinv", "normcdf",
                             "normcdfinv", "erfcx", "cyl_bessel_i0", "cyl_bessel_i1", "j0", "j1", "y0", "y1",
                             "jn", "yn"})

# Bessel functions of integer order n: name -> (IR name, fixed type or None for
# overloaded on x's float/double); (int n, T x), as CUDA's jn(int, double), jnf(int, float)
INTEGER_ORDER = {"jn": ("jn", None), "jnf": ("jn", F32), "yn": ("yn", None), "ynf": ("yn", F32)}

# CUDA math functions outside the IR's intrinsic set: named as unsupported (none left)
UNSUPPORTED_MATH: frozenset = frozenset()
# lrint & co.: a float rounded to a long (isa/integer_rounding.py)
ROUND_TO_INTEGER = frozenset(p + n + s for p in ("", "l") for n in ("lrint", "lround") for s in ("", "f"))

# bit-level integer intrinsics: name -> (IR name, arg types, result type)
BITOPS: dict = {
    "__popc": ("popc", [U32], I32), "__popcll": ("popcll", [U64], I32),
    "__clz": ("clz", [I32], I32), "__clzll": ("clzll", [I64], I32),
    "__ffs": ("ffs", [I32], I32), "__ffsll": ("ffsll", [I64], I32),
    "__brev": ("brev", [U32], U32), "__brevll": ("brevll", [U64], U64),
    "__mul24": ("mul24", [I32, I32], I32), "__umul24": ("umul24", [U32, U32], U32),
    "__mulhi": ("mulhi", [I32, I32], I32), "__umulhi": ("umulhi", [U32, U32], U32),
    "__mul64hi": ("mul64hi", [I64, I64], I64), "__umul64hi": ("umul64hi", [U64, U64], U64),
    "__sad": ("sad", [I32, I32, U32], U32), "__usad": ("usad", [U32, U32, U32], U32),
    "__byte_perm": ("byte_perm", [U32, U32, U32], U32),
}

REINTERPRET: dict = {
    "__float_as_int": ("float_as_int", F32, I32), "__int_as_float": ("int_as_float", I32, F32),
    "__float_as_uint": ("float_as_uint", F32, U32), "__uint_as_float": ("uint_as_float", U32, F32),
    "__double_as_longlong": ("double_as_longlong", F64, I64),
    "__longlong_as_double": ("longlong_as_double", I64, F64),
}

# conversion intrinsics: name -> (from, to, rounding) ; rounding picks a math
# function applied before the cast: rn -> rint, rd -> floor, ru -> ceil, rz -> none
CONVERSIONS: dict = {}
for _to_name, _to in [("int", I32), ("uint", U32), ("ll", I64), ("ull", U64)]:
    for _r in ("rn", "rz", "rd", "ru"):
        CONVERSIONS[f"__float2{_to_name}_{_r}"] = (F32, _to, _r)
        CONVERSIONS[f"__double2{_to_name}_{_r}"] = (F64, _to, _r)
for _from_name, _from in [("int", I32), ("uint", U32), ("ll", I64), ("ull", U64)]:
    CONVERSIONS[f"__{_from_name}2float_rn"] = (_from, F32, "")
    CONVERSIONS[f"__{_from_name}2double_rn"] = (_from, F64, "")
CONVERSIONS["__double2float_rn"] = (F64, F32, "")
CONVERSIONS["__float2double"] = (F32, F64, "")

# arithmetic with rounding mode: same as the plain operator (no contraction)
ROUNDED_ARITH = {"__fadd_rn": "+", "__fsub_rn": "-", "__fmul_rn": "*", "__fdiv_rn": "/",
                 "__dadd_rn": "+", "__dsub_rn": "-", "__dmul_rn": "*", "__ddiv_rn": "/"}

ATOMICS = {"atomicAdd": "atomic_add", "atomicSub": "atomic_sub", "atomicExch": "atomic_exch",
           "atomicMin": "atomic_min", "atomicMax": "atomic_max", "atomicAnd": "atomic_and",
           "atomicOr": "atomic_or", "atomicXor": "atomic_xor", "atomicInc": "atomic_inc",
           "atomicDec": "atomic_dec", "atomicCAS": "atomic_cas"}
for _k, _v in list(ATOMICS.items()):
    ATOMICS[_k + "_block"] = _v
    ATOMICS[_k + "_system"] = _v

# The types CUDA has each atomic for (Programming Guide, "Atomic Functions").
ATOMIC_TYPES = {
    "atomic_add": (I32, U32, U64, F32, F64),
    "atomic_sub": (I32, U32),
    "atomic_exch": (I32, U32, U64, F32),
    "atomic_min": (I32, U32, I64, U64),
    "atomic_max": (I32, U32, I64, U64),
    "atomic_and": (I32, U32, U64),
    "atomic_or": (I32, U32, U64),
    "atomic_xor": (I32, U32, U64),
    "atomic_inc": (U32,),
    "atomic_dec": (U32,),
    "atomic_cas": (I32, U32, U64, I16, U16),
}

SHUFFLES = {"__shfl_sync": "shfl", "__shfl_up_sync": "shfl_up", "__shfl_down_sync": "shfl_down",
            "__shfl_xor_sync": "shfl_xor"}
# third argument's type per shuffle (Programming Guide, "Warp Shuffle Functions")
SHUFFLE_ARG3 = {"shfl": I32, "shfl_up": U32, "shfl_down": U32, "shfl_xor": I32}

VOTES = {"__ballot_sync": ("ballot", U32), "__all_sync": ("all", I32), "__any_sync": ("any", I32)}

FENCES = {"__syncthreads": "syncthreads", "__threadfence_block": "threadfence_block",
          "__threadfence": "threadfence", "__threadfence_system": "threadfence_system"}

# read-only / cache-hinted loads and stores: plain memory accesses here
LOADS = ("__ldg", "__ldcg", "__ldca", "__ldcs", "__ldlu", "__ldcv")
STORES = ("__stcg", "__stcs", "__stwb", "__stwt")

# legacy warp functions without _sync: removed from CUDA for sm_70+
LEGACY = {"__shfl": "__shfl_sync", "__shfl_up": "__shfl_up_sync", "__shfl_down": "__shfl_down_sync",
          "__shfl_xor": "__shfl_xor_sync", "__ballot": "__ballot_sync", "__all": "__all_sync",
          "__any": "__any_sync"}


def vector_make_name(name: str) -> Optional[ir.VectorType]:
    """make_float4 -> float4's VectorType."""
    if name.startswith("make_"):
        return VECTOR_TYPES.get(name[5:])
    return None


def builtin_arities(name: str) -> Optional[frozenset]:
    """How many arguments the built-in `name` takes (each of its signatures),
    where one user overload of another count may stand beside it
    (helper_math.h's `make_float2(float s)`); None where not tabled."""
    vec = vector_make_name(name)
    if vec is not None:
        return frozenset({vec.count})
    if name in MATH:
        return frozenset({MATH[name][2]})
    if name in FLOAT_PARTS:
        return frozenset({FLOAT_PART_ARITY[FLOAT_PARTS[name][0]]})
    if name in ROUND_TO_INTEGER or name in ("nan", "nanf"):
        return frozenset({1})
    if name in INTEGER_ORDER:
        return frozenset({2})
    if name in BITOPS:
        return frozenset({len(BITOPS[name][1])})
    if name in CLASSIFY or name in REINTERPRET or name in CONVERSIONS or name in ("abs", "labs", "llabs"):
        return frozenset({1})
    if name in ROUNDED_ARITH or name in ("min", "max", "umin", "umax", "llmin", "llmax", "ullmin", "ullmax"):
        return frozenset({2})
    return None


def exact_signatures(name: str) -> list:
    """The parameter types of each of the built-in `name`'s signatures, for
    the names a user function template may share (min, max and the math
    functions): a non-template matching a call exactly beats a template
    instance ([over.match.best]). Empty where not tabled."""
    from .ir import LONG, ULONG
    if name in ("min", "max"):
        ints = [(I32, U32), (LONG, ULONG), (I64, U64)]
        sigs = [(t, t) for pair in ints for t in pair] + [(F32, F32), (F64, F64), (F32, F64), (F64, F32)]
        return sigs + [(a, b) for s, u in ints for a, b in ((s, u), (u, s))]
    if name in MATH:
        _, t, n = MATH[name]
        return [(t,) * n] if t is not None else [(F32,) * n, (F64,) * n]
    return []


def arity_apart(name: str, fewest: int, most: int) -> bool:
    """Whether a function of `name` taking `fewest`..`most` arguments is told
    apart from every built-in signature of that name by its count alone."""
    counts = builtin_arities(name)
    return counts is not None and not any(fewest <= n <= most for n in counts)


def is_builtin_function(name: str) -> bool:
    return (name in MATH or name in CLASSIFY or name in BITOPS or name in REINTERPRET
            or name in CONVERSIONS or name in ROUNDED_ARITH or name in ATOMICS
            or name in SHUFFLES or name in VOTES or name in FENCES or name in LOADS
            or name in STORES or name in LEGACY or vector_make_name(name) is not None
            or name in UNSUPPORTED_MATH or name in FLOAT_PARTS or name in ROUND_TO_INTEGER or name in INTEGER_ORDER
            or name in ("nan", "nanf")
            or name in ("printf", "assert", "__syncwarp", "__activemask", "min", "max", "abs", "llabs", "labs",
                        "umin", "umax", "llmin", "llmax", "ullmin", "ullmax", "__builtin_inff",
                        "__builtin_inf", "__builtin_nanf", "__builtin_nan",
                        "__syncthreads_count", "__syncthreads_and", "__syncthreads_or"))
