"""The structured SIMT IR: what a kernel MEANS, with every C rule already applied.

This is the contract between the language (isa/: preprocessor, parser, type
checker, lowering) and the machine (gpuemu/jit). The front end produces it; the
JIT turns it into native warp functions. Nothing here knows about LLVM.

The IR is a typed, structured tree (it keeps if/loops/break/continue/return as
written, because the JIT needs the structure for active masks and
reconvergence). Every implicit C conversion is explicit (a `Cast` node), every
expression carries its final type, every node carries a source `Loc`.

Rules the front end guarantees (so the JIT never re-derives C semantics):
- Binary arithmetic operands already have the same type (the usual arithmetic
  conversions were applied with explicit Casts); comparisons yield `BOOL`.
- Conditions of if/while/for/?:/&&/||/! are `BOOL` (front end inserts `x != 0`).
- Pointer arithmetic is `PtrAdd(ptr, byte_offset)` with an i64 byte offset
  (already scaled by the element size); pointer difference is lowered to
  integer arithmetic on `Cast(ptr -> I64)` divided by the element size.
- Array-typed expressions decay explicitly via `AddrOf`; `a[i]` is
  `Load(PtrAdd(AddrOf(a), i*sizeof))` (or a `Store` for assignment).
- Compound assignment, ++/-- are lowered to `Assign`/`Store` with `Comma` and
  temporaries when the value is used; no node has hidden side effects except
  Assign, Store, Call and side-effecting Intrinsics.
- Device functions are kept as `Function`s and called with `Call`; the JIT
  inlines them (recursion is rejected by the front end).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Union


# ----------------------------------------------------------------- locations

@dataclass(frozen=True)
class Loc:
    """A position in the user's source, after preprocessing maps it back."""
    file: str
    line: int  # 1-based
    col: int   # 1-based

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


NOLOC = Loc("<builtin>", 0, 0)


# --------------------------------------------------------------------- types

@dataclass(frozen=True)
class ScalarType:
    """bool, integers of 8..64 bits (signed or not) and IEEE floats."""
    kind: str      # 'bool' | 'int' | 'float'
    bits: int      # 1 for bool (stored as 1 byte in memory), 8/16/32/64, 32/64
    signed: bool = True
    # C++ keeps 'long' apart from 'long long' and 'signed char' from 'char'
    # though they share a representation: only overloading sees this name
    # (overload_identity); equality, hashing and repr ignore it, so lowering
    # and the JIT see one type. Empty for 'char' and 'long long'.
    spelling: str = field(default="", compare=False, repr=False)

    @property
    def size(self) -> int:  # bytes in memory
        return 1 if self.kind == "bool" else self.bits // 8

    @property
    def align(self) -> int:
        return self.size

    def __str__(self) -> str:
        if self.kind == "bool":
            return "bool"
        if self.kind == "float":
            return "float" if self.bits == 32 else "double"
        return f"{'i' if self.signed else 'u'}{self.bits}"


@dataclass(frozen=True, eq=False)
class ScopedEnumType(ScalarType):
    """`enum class NAME : T` (C++11): the front end keeps its values apart
    from integers (no implicit conversion); it equals and hashes as its
    underlying integer type, so everything past the front end sees only that."""
    name: str = ""

    def __eq__(self, other) -> bool:
        return isinstance(other, ScalarType) and \
            (self.kind, self.bits, self.signed) == (other.kind, other.bits, other.signed)

    def __hash__(self) -> int:
        return hash(ScalarType(self.kind, self.bits, self.signed))

    @property
    def underlying(self) -> ScalarType:
        return ScalarType(self.kind, self.bits, self.signed)


def scoped_enum(t) -> Optional[str]:
    """The name of a scoped enum type, None for any other type."""
    return t.name if isinstance(t, ScopedEnumType) else None


BOOL = ScalarType("bool", 1, False)
I8, U8 = ScalarType("int", 8, True), ScalarType("int", 8, False)
I16, U16 = ScalarType("int", 16, True), ScalarType("int", 16, False)
I32, U32 = ScalarType("int", 32, True), ScalarType("int", 32, False)
I64, U64 = ScalarType("int", 64, True), ScalarType("int", 64, False)
F32, F64 = ScalarType("float", 32), ScalarType("float", 64)
SCHAR = ScalarType("int", 8, True, "signed char")
LONG, ULONG = ScalarType("int", 64, True, "long"), ScalarType("int", 64, False, "unsigned long")


def overload_identity(t):
    """A type as overloading tells types apart ([over.load]): as `==` does,
    but 'long' is not 'long long', 'signed char' is not 'char', a scoped enum
    is not its underlying integer, and pointer address spaces do not count."""
    if isinstance(t, PointerType):
        return ("ptr", overload_identity(t.pointee))
    if isinstance(t, ArrayType):
        return ("array", overload_identity(t.elem), t.count)
    if isinstance(t, ScalarType):
        return (t.kind, t.bits, t.signed, t.spelling, scoped_enum(t))
    return t


@dataclass(frozen=True)
class VoidType:
    size = 0
    align = 1

    def __str__(self) -> str:
        return "void"


VOID = VoidType()

# Address spaces. 'generic' means "decided at run time from the address", as
# CUDA's generic pointers are; the front end may refine a pointer's space when
# it is statically known (e.g. the address of a __shared__ array) so the JIT
# can skip the run-time lookup.
SPACES = ("generic", "global", "shared", "local", "constant", "param")


@dataclass(frozen=True)
class PointerType:
    pointee: "Type"
    space: str = "generic"
    size = 8
    align = 8

    def __str__(self) -> str:
        return f"{self.pointee}*"


@dataclass(frozen=True)
class ArrayType:
    elem: "Type"
    count: Optional[int]  # None for `extern __shared__ T a[]`

    @property
    def size(self) -> int:
        return self.elem.size * (self.count or 0)

    @property
    def align(self) -> int:
        return self.elem.align

    def __str__(self) -> str:
        return f"{self.elem}[{self.count if self.count is not None else ''}]"


@dataclass(frozen=True)
class VectorType:
    """CUDA's built-in vector types (float2, float4, int2, int4, ...).

    Loaded and stored as ONE memory access of `size` bytes (LDG.E.128 for a
    float4), which is what the memory model must charge. Members x,y,z,w are
    read with `Extract`, built with `MakeVector`."""
    elem: ScalarType
    count: int          # 2, 3 or 4
    name: str           # 'float4'
    align_: int         # 8 for float2/int2, 16 for float4/int4, 4 for float3

    @property
    def size(self) -> int:
        return self.elem.size * self.count

    @property
    def align(self) -> int:
        return self.align_

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class StructField:
    name: str
    type: "Type"
    offset: int


ANONYMOUS_MEMBER = "<anonymous member"      # the name of an unnamed union or struct member


def member_names(t: "StructType") -> list:
    """The names of t's members, those of its anonymous members in their place."""
    out = []
    for f in t.fields:
        out += member_names(f.type) if f.name.startswith(ANONYMOUS_MEMBER) else [f.name]
    return out


@dataclass(eq=False)
class StructType:
    """A C struct with C layout (natural alignment, tail padding).

    Identity is the object: one StructType per struct definition, so a
    struct can point to itself (`struct Node { struct Node *next; }`). A
    struct only declared so far (`struct Node;` or a pointer to it) has
    `complete` False until its definition fills in fields, size and align.
    A union is one whose fields all sit at offset 0."""
    name: str
    fields: tuple  # tuple[StructField, ...]
    size: int
    align: int
    complete: bool = True
    union: bool = False

    def define(self, fields: tuple, size: int, align: int) -> None:
        """Complete a forward-declared struct in place."""
        self.fields, self.size, self.align, self.complete = fields, size, align, True

    def field(self, name: str) -> StructField:
        """The member `name`, also one of an anonymous union or struct member
        (C++ [class.union.anon]: its members are the enclosing struct's)."""
        for f in self.fields:
            if f.name == name:
                return f
        for f in self.fields:
            if f.name.startswith(ANONYMOUS_MEMBER) and isinstance(f.type, StructType):
                try:
                    inner = f.type.field(name)
                except KeyError:
                    continue
                return StructField(name, inner.type, f.offset + inner.offset)
        raise KeyError(name)

    def __str__(self) -> str:
        return f"{'union' if self.union else 'struct'} {self.name}"


Type = Union[ScalarType, VoidType, PointerType, ArrayType, VectorType, StructType]


def is_integer(t: Type) -> bool:
    return isinstance(t, ScalarType) and t.kind == "int"


def is_float(t: Type) -> bool:
    return isinstance(t, ScalarType) and t.kind == "float"


# ----------------------------------------------------------------- variables

@dataclass(eq=False)
class Var:
    """A variable. Identity is the object (eq=False), not the name.

    storage:
      'reg'    per-thread value of scalar/pointer/vector type, never addressed
      'local'  per-thread memory (local arrays, structs, any var whose address
               is taken): the JIT gives each thread its own copy
      'shared' a __shared__ array/variable of the block (static)
      'extern_shared'  `extern __shared__ T name[]` (the dynamic region)
      'param'  a kernel parameter (read like 'reg'; structs by value: 'local')
    """
    name: str
    type: Type
    storage: str
    loc: Loc = NOLOC
    volatile: bool = False
    readonly: bool = False   # a `const T *__restrict__` kernel parameter (read-only data path)
    align: int = 1           # `alignas(N)` / `__align__(N)` on the declaration (the type's own counts too)


@dataclass(eq=False)
class GlobalVar:
    """A file-scope __constant__ or __device__ variable (or array)."""
    name: str
    type: Type
    space: str            # 'constant' | 'global'
    init: Optional[bytes]  # little-endian initial image, None = zeros
    loc: Loc = NOLOC
    align: int = 1        # `alignas(N)` / `__align__(N)` on the declaration


# --------------------------------------------------------------- expressions

@dataclass(eq=False)
class Expr:
    type: Type
    loc: Loc


@dataclass(eq=False)
class Const(Expr):
    value: Union[int, float, bool]  # ints already wrapped to the type's range


@dataclass(eq=False)
class VarRef(Expr):
    """Value of a 'reg' or 'param' variable (scalar/pointer/vector)."""
    var: Var


@dataclass(eq=False)
class GlobalRef(Expr):
    """Address of a GlobalVar: type is PointerType(var.type, var.space)."""
    var: GlobalVar


@dataclass(eq=False)
class AddrOf(Expr):
    """Address of a memory-resident Var ('local', 'shared', 'extern_shared',
    struct 'param'). Type: PointerType(var.type or elem, space)."""
    var: Var


@dataclass(eq=False)
class Load(Expr):
    """Read `type` (scalar, pointer or vector: one access) from `addr`."""
    addr: Expr
    volatile: bool = False
    readonly: bool = False   # through the read-only (texture) data cache: __ldg / const __restrict__
    spill: bool = False      # a register spilled to local memory (isa/register_spill.py)
    texture: bool = False    # a texel fetch (isa/texture_fetch.py)


@dataclass(eq=False)
class Unary(Expr):
    op: str  # 'neg' | 'bitnot' | 'lnot' (operand BOOL)
    a: Expr


BINARY_OPS = ("add", "sub", "mul", "div", "rem", "shl", "shr", "and", "or",
              "xor", "eq", "ne", "lt", "le", "gt", "ge")


@dataclass(eq=False)
class Binary(Expr):
    """a OP b; a and b have the same type. Signedness of div/rem/shr/compare
    comes from that type. For shl/shr b may be any integer type (the JIT
    clamps the count as PTX does). Comparisons have type BOOL."""
    op: str
    a: Expr
    b: Expr


@dataclass(eq=False)
class Logical(Expr):
    """Short-circuit && / || on BOOL operands; b runs only where needed."""
    op: str  # 'and' | 'or'
    a: Expr
    b: Expr


@dataclass(eq=False)
class Cond(Expr):
    """c ? a : b — each lane evaluates only its own side."""
    c: Expr
    a: Expr
    b: Expr


@dataclass(eq=False)
class Cast(Expr):
    """Convert `a` to `type`: int<->int (trunc/extend by a's signedness),
    int<->float (float->int saturates, NaN->0, as cvt.rzi on the GPU),
    float<->float, ptr<->int, ptr<->ptr, anything->BOOL (!= 0)."""
    a: Expr


@dataclass(eq=False)
class PtrAdd(Expr):
    """ptr + offset bytes (offset: I64). Keeps the pointer's provenance."""
    ptr: Expr
    offset: Expr


@dataclass(eq=False)
class Assign(Expr):
    """var = value for a 'reg' Var; the expression's value is `value`."""
    var: Var
    value: Expr


@dataclass(eq=False)
class Store(Expr):
    """*addr = value (one access of value.type); value of expression = value."""
    addr: Expr
    value: Expr
    volatile: bool = False
    spill: bool = False      # a register spilled to local memory (isa/register_spill.py)


@dataclass(eq=False)
class MemCopy(Expr):
    """Struct assignment: copy `nbytes` from src to dst (type VOID)."""
    dst: Expr
    src: Expr
    nbytes: int


@dataclass(eq=False)
class Comma(Expr):
    """Evaluate all in order; value is the last's."""
    exprs: list


@dataclass(eq=False)
class Extract(Expr):
    """Member `index` of a VectorType value."""
    vec: Expr
    index: int


@dataclass(eq=False)
class MakeVector(Expr):
    """make_float4(a, b, c, d) etc.; elems already cast to the elem type."""
    elems: list


@dataclass(eq=False)
class Call(Expr):
    """Call of a __device__ function (inlined by the JIT)."""
    func: "Function"
    args: list


@dataclass(eq=False)
class Special(Expr):
    """Built-in registers: 'tid.x', 'tid.y', 'tid.z', 'ntid.x' (blockDim),
    'ctaid.x' (blockIdx), 'nctaid.x' (gridDim) and .y/.z, 'warpsize',
    'laneid'. Type U32 (as CUDA's uint3 members), warpsize I32."""
    name: str


# Intrinsics, by name (args already converted to the types listed):
#  barriers/fences (type VOID):
#    'syncthreads'()  'syncwarp'(mask U32)
#    'threadfence_block'() 'threadfence'() 'threadfence_system'()
#  warp (width I32 is warpSize when not given):
#    'shfl'(mask U32, v T, srcLane I32, width I32) -> T
#    'shfl_up'(mask, v, delta U32, width) -> T, 'shfl_down'(...), 'shfl_xor'(mask, v, laneMask I32, width)
#    T is any 32- or 64-bit scalar type
#    'ballot'(mask U32, pred BOOL) -> U32; 'all'(mask, pred) -> I32; 'any'(mask, pred) -> I32
#    'activemask'() -> U32
#  atomics: 'atomic_add' | 'atomic_sub' | 'atomic_exch' | 'atomic_min' | 'atomic_max'
#           | 'atomic_and' | 'atomic_or' | 'atomic_xor' | 'atomic_inc' | 'atomic_dec'
#           (ptr, val) -> T (the old value); 'atomic_cas'(ptr, compare, val) -> T
#           `result_used` attribute tells the memory model atomic vs reduction.
#  bit ops: 'popc', 'popcll', 'clz', 'clzll', 'ffs', 'ffsll', 'brev', 'brevll',
#           'mul24', 'umul24', 'mulhi', 'umulhi', 'mul64hi', 'umul64hi',
#           'sad', 'usad', 'byte_perm'
#  reinterpret: 'float_as_int', 'int_as_float', 'float_as_uint', 'uint_as_float',
#           'double_as_longlong', 'longlong_as_double'
#  math (float or double by the type): 'sqrt', 'rsqrt', 'cbrt', 'exp', 'exp2', 'exp10', 'expm1', 'log',
#           'log2', 'log10', 'log1p', 'sin', 'cos', 'tan', 'asin', 'acos', 'atan', 'atan2',
#           'sinh', 'cosh', 'tanh', 'pow', 'fabs', 'floor', 'ceil', 'trunc', 'round',
#           'rint', 'fmin', 'fmax', 'fmod', 'fma', 'hypot', 'copysign', 'saturate',
#           'acosh', 'asinh', 'atanh', 'erf', 'erfc', 'lgamma', 'tgamma', 'fdim', 'nextafter', 'remainder',
#           'erfinv', 'erfcinv', 'normcdfinv', 'erfcx', 'normcdf', 'cyl_bessel_i0', 'cyl_bessel_i1',
#           'j0', 'j1', 'y0', 'y1', 'jn'(n I32, x), 'yn'(n I32, x),
#           'norm'(a, b[, c[, d]]) sqrt of the sum of squares, 'rnorm'(...) its reciprocal,
#           'fdivide' (fast division), 'isnan', 'isinf', 'isfinite', 'signbit' (-> BOOL/I32)
#           'ldexp'(x, n I32 or I64), 'frexp'(x) the significand, 'frexp_exp'(x) -> I32,
#           'modf'(x) the fractional part, 'ilogb'(x) -> I32, 'logb'(x)
#           fast-math intrinsics (__expf ...) map to the same names.
#  directed rounding (rz, ru, rd): float 'fadd_rz', 'fsub_', 'fmul_', 'fmaf_', 'fdiv_', 'frcp_',
#           'fsqrt_'; double 'dadd_rz', 'dsub_', 'dmul_', 'fma_', 'ddiv_', 'drcp_', 'dsqrt_'
#  integer: 'min', 'max' (same-type args; signedness from the type), 'abs'
#  'printf'(format id I32, args: I64/U64 (ints, %s ids, pointers), F64) -> I32: one entry per lane
#  'assert'(cond BOOL, text I64: string id of the condition's source) -> VOID: a lane whose
#           cond is false stops the kernel (KernelError 'assert')
@dataclass(eq=False)
class Intrinsic(Expr):
    name: str
    args: list
    result_used: bool = True


# ---------------------------------------------------------------- statements

@dataclass(eq=False)
class Stmt:
    loc: Loc


@dataclass(eq=False)
class ExprStmt(Stmt):
    expr: Expr


@dataclass(eq=False)
class Block(Stmt):
    stmts: list


@dataclass(eq=False)
class Decl(Stmt):
    """Introduce a variable; `init` (may be None) is evaluated and assigned.
    For 'local' arrays/structs with initialiser lists the front end emits
    Stores after the Decl instead of `init`."""
    var: Var
    init: Optional[Expr] = None


@dataclass(eq=False)
class If(Stmt):
    cond: Expr
    then: Stmt
    other: Optional[Stmt] = None


@dataclass(eq=False)
class Loop(Stmt):
    """All C loops. Runs: [body first if do-while]; while cond: body; step.
    `continue` jumps to `step`. cond None means `for(;;)`."""
    cond: Optional[Expr]
    body: Stmt
    step: Optional[Expr] = None
    do_while: bool = False


@dataclass(eq=False)
class Break(Stmt):
    pass


@dataclass(eq=False)
class Continue(Stmt):
    pass


@dataclass(eq=False)
class Return(Stmt):
    value: Optional[Expr] = None


@dataclass(eq=False)
class Switch(Stmt):
    """switch(value) { case ...: }. `cases` is a list of (int constant or
    None for default, index into body stmts where that label sits); `body`
    is the flat statement list; `break` leaves the switch."""
    value: Expr
    cases: list
    body: list


# ------------------------------------------------------------------- program

@dataclass(eq=False)
class Function:
    name: str                 # the plain C name ('transpose')
    params: list              # list[Var] (storage 'param')
    ret: Type
    body: Optional[Block]     # None for a declaration without definition
    is_kernel: bool = False
    loc: Loc = NOLOC
    launch_bounds: Optional[tuple] = None  # (maxThreads, minBlocks or None)
    shared_vars: list = field(default_factory=list)  # Vars with storage 'shared'/'extern_shared', declaration order
    # a call of it is ONE warp instruction and its body costs none: a texture
    # fetch's inlined prelude (isa/texture_fetch.py), the GPU's TEX instruction
    one_instruction: bool = False


@dataclass(eq=False)
class Module:
    functions: list           # list[Function]
    globals: list             # list[GlobalVar]
    source: str               # the user's original text (for reports)
    filename: str
    # instantiate(module, 'k<float, 256>') -> 'k<float,256>': instantiates a
    # kernel template on demand (set by the front end; None without templates)
    instantiate: Optional[object] = field(default=None, repr=False, compare=False)
    # strings of printf formats and %s arguments; Intrinsic 'printf' args are
    # (Const I32 format id, values...), a %s value a Const I64 string id
    strings: list = field(default_factory=list, repr=False, compare=False)

    def kernel(self, name: str) -> Function:
        for f in self.functions:
            if f.is_kernel and f.name == name:
                return f
        raise KeyError(name)

    @property
    def kernels(self) -> list:
        return [f for f in self.functions if f.is_kernel]
