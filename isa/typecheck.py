"""Type checking and lowering: isa.ast -> isa.ir, applying C's rules.

Everything isa/ir.py's docstring promises is made here: explicit Casts, BOOL
conditions, PtrAdd with byte offsets, array decay via AddrOf, Load/Store,
++/--/compound assignment via Assign/Store/Comma with temporaries, storage
classes of Vars. The module-level part (declarations, functions, globals,
recursion check) is `Checker`; statements and expressions of one function are
`FunctionLowering` in lower.py.
"""
from __future__ import annotations

import dataclasses

from typing import Optional

from . import ast as A
from . import ir
from .builtins import VECTOR_TYPES, SCALAR_TYPEDEFS, arity_apart, is_builtin_function
from .const_fold import fold, pack
from .conversions import const_value
from .declarations import QType, scalar_from_words, struct_layout, union_layout
from .diagnostics import CompileError
from .preprocessor import Preprocessed
from .places import tname
from .readonly_path import readonly_param

# the largest object size: nvcc (EDG) refuses an array type past a size_t ("array
# is too large"), the host compiler a variable past a ptrdiff_t ("size .. of array
# 'g' exceeds maximum object size '9223372036854775807'")
MAX_SIZE_T = 2 ** 64 - 1
MAX_OBJECT_SIZE = 2 ** 63 - 1


class Sym:
    """A name in scope: kind 'var' | 'global' | 'func' | 'enum' | 'typedef'."""
    __slots__ = ("kind", "obj", "qtype", "loc", "value", "byref")

    def __init__(self, kind: str, obj, qtype: Optional[QType] = None, loc: Optional[ir.Loc] = None):
        self.kind = kind
        self.obj = obj
        self.qtype = qtype
        self.loc = loc
        self.value = None   # for a const variable with a constant initialiser
        self.byref = False  # a struct parameter held by address (obj is the pointer Var)


class FuncInfo:
    """A function's signature and IR object; `space` is 'global' | 'device' | 'host'."""

    def __init__(self, fn: ir.Function, space: str, params_q: list, ret_q: QType, decl: A.Node):
        self.fn = fn
        self.space = space
        self.params_q = params_q
        self.ret_q = ret_q
        self.decl = decl
        self.defined = False
        self.byref: list = [False] * len(params_q)   # struct params passed by address
        self.refs: list = [False] * len(params_q)    # reference params (T &): the caller passes an address
        self.declared_refs: list = [False] * len(params_q)   # T & and const T & as declared (overloads.py)
        self.defaults: list = [None] * len(params_q)  # default arguments (A.Expr or None)
        self.sret: Optional[ir.Type] = None          # struct result via hidden '__ret' param
        self.ret_ref = False                         # returns T & (as a pointer to the place)
        self.constexpr = False                       # evaluated in constant expressions (constexpr_eval.py)


class Checker:
    """Module-level checking and lowering."""

    def __init__(self, pp: Preprocessed, source: str, filename: str, max_local_bytes: int,
                 arch: Optional[int] = None):
        self.pp = pp
        self.arch = arch                          # __CUDA_ARCH__ (900), None when not given
        self.max_local_bytes = max_local_bytes    # per thread, per function
        self.source = source
        self.filename = filename
        self.globals_scope: dict = {}
        self.tags: dict = {}                # struct/enum tag -> ir type
        self.member_quals: dict = {}        # (StructType, member) -> its (pq, deep) (QType's)
        self.functions: list = []
        self.func_info: dict = {}           # unique key ('f', then 'f#2' for its overloads) -> FuncInfo
        self.overloads: dict = {}           # name ('f', 'S::f') -> its FuncInfos, in declaration order
        self.operators: set = set()         # 'operator+' etc. declared as members or free functions
        self.globals: list = []
        self.file_shared: list = []         # file-scope __shared__ Vars
        self.anon = 0
        self.local_scope = None             # the FunctionLowering being run, if any
        self.templates = None               # templates.Templates, set by check()
        self.strings: list = []             # printf formats and %s strings (ir.Module.strings)

    # ------------------------------------------------------------ diagnostics
    def error(self, msg: str, loc: ir.Loc) -> CompileError:
        return CompileError(msg, loc, self.pp.source_line(loc.file, loc.line))

    # ------------------------------------------------------------------ types
    def base_type(self, specs: A.DeclSpecs, scope_lookup) -> QType:
        """The type named by declaration specifiers."""
        words = []
        others = []
        for t in specs.types:
            if isinstance(t, tuple):
                words.append(t)
            else:
                others.append(t)
        quals = specs.quals
        if others:
            if words or len(others) > 1:
                raise self.error("cannot combine these type specifiers", specs.loc)
            o = others[0]
            if isinstance(o, A.StructSpec):
                t = self.struct_type(o, scope_lookup)
            elif isinstance(o, A.EnumSpec):
                t = self.enum_type(o, scope_lookup)
            else:
                q = self.typedef_type(o, scope_lookup)
                return QType(q.type, q.const or "const" in quals or "constexpr" in specs.storage,
                             q.volatile or "volatile" in quals, q.pconst, q.pvolatile, q.group, q.deep)
        else:
            if not words:
                raise self.error("a type specifier is required (C++ has no implicit int)", specs.loc)
            names = [w for w, _ in words]
            if "auto" in names:
                raise self.error("auto type deduction is not supported", words[0][1])
            if names.count("long") > 1 and "double" in names:
                raise self.error("long double is not supported", words[0][1])
            if "long" in names and "double" in names:
                raise self.error("long double is not supported", words[0][1])
            t = scalar_from_words(names)
            if t is None:
                raise self.error(f"invalid type '{' '.join(names)}'", words[0][1])
        return QType(t, "const" in quals or "constexpr" in specs.storage, "volatile" in quals)

    def typedef_type(self, o: A.TypedefName, scope_lookup) -> QType:
        if o.name.startswith("cg::"):
            from .cooperative_groups import group_type
            return group_type(self, o, scope_lookup)
        if o.targs is not None and self.templates is not None and o.name in self.templates.classes.defs:
            return QType(self.templates.classes.struct_type(o, scope_lookup))
        sym = scope_lookup(o.name)
        if sym is not None and sym.kind == "typedef":
            return sym.qtype
        if o.name in self.tags:
            return QType(self.tags[o.name])
        if o.name in VECTOR_TYPES and o.name != "dim3":
            return QType(VECTOR_TYPES[o.name])
        if o.name in SCALAR_TYPEDEFS:
            return QType(SCALAR_TYPEDEFS[o.name])
        if o.name in ("dim3", "uint3"):
            raise self.error(f"'{o.name}' is a host-side type; use threadIdx.x etc. in kernels", o.loc)
        raise self.error(f"unknown type name '{o.name}'", o.loc)

    def struct_type(self, s: A.StructSpec, scope_lookup) -> ir.Type:
        if s.kind == "class":
            raise self.error("classes are not supported", s.loc)
        if s.members is None:
            t = self.tags.get(s.tag)
            if t is None:  # a forward reference: usable behind a pointer
                t = self.tags[s.tag] = ir.StructType(s.tag, (), 0, 1, complete=False, union=s.kind == "union")
            if not isinstance(t, ir.StructType):
                raise self.error(f"'{s.tag}' is not a struct", s.loc)
            return t
        members = []
        quals = {}
        seen = set()
        for d in s.members:
            if isinstance(d, A.StaticAssert):
                self.static_assert(d, scope_lookup)
                continue
            base = self.base_type(d.specs, scope_lookup)
            if d.specs.storage:
                raise self.error(f"'{d.specs.storage[0]}' is not allowed on a struct member", d.loc)
            if not d.items:
                self.anonymous_member(d, base.type, members, quals, seen, scope_lookup)
                continue
            for item in d.items:
                q = self.apply_declarator(base, item.declarator, scope_lookup)
                name = item.declarator.name
                if isinstance(q.type, ir.VoidType):
                    raise self.error(f"member '{name}' has type void", item.loc)
                if isinstance(q.type, ir.ArrayType) and q.type.count is None:
                    raise self.error("flexible array members are not supported", item.loc)
                if name in seen:
                    raise self.error(f"duplicate member '{name}'", item.loc)
                seen.add(name)
                members.append((name, q.type, self.align_value(d.specs.align, scope_lookup)))
                quals[name] = ((q.pconst, q.pvolatile), q.deep)
        if s.tag is None:
            self.anon += 1
        name = s.tag or f"<anonymous {self.anon}>"
        layout = union_layout if s.kind == "union" else struct_layout
        t = layout(name, members, max([self.align_value(a, scope_lookup) for a in s.align], default=1))
        if s.tag is not None:
            old = self.tags.get(s.tag)
            if isinstance(old, ir.StructType) and not old.complete:
                old.define(t.fields, t.size, t.align)
                t = old
            elif old is not None:
                raise self.error(f"redefinition of struct '{s.tag}'", s.loc)
            self.tags[s.tag] = t
        self.member_quals.update(((t, n), q) for n, q in quals.items())
        return t

    def static_assert(self, sa: A.StaticAssert, scope_lookup) -> None:
        """A false `static_assert` is a CompileError at it, with its message."""
        from .lower import FunctionLowering
        low = FunctionLowering.for_constants(self, scope_lookup)
        try:
            v = fold(low.convert(low.rvalue(sa.cond), ir.BOOL, sa.cond.loc, explicit=True))
        except CompileError as err:
            if "constant" not in err.message:
                raise
            v = None
        if v is None:
            raise self.error("the condition of a static_assert must be a constant expression", sa.cond.loc)
        if not v:
            raise self.error("static assertion failed" + (f": {sa.message}" if sa.message else ""), sa.loc)

    def anonymous_member(self, d: A.Declaration, t: ir.Type, members: list, quals: dict, seen: set,
                         scope_lookup) -> None:
        """A member declaration without a name: an unnamed union or struct is
        a member whose own members are the enclosing struct's ([class.union.anon]);
        a named one (`struct T { ... };`) declares only its type."""
        if any(isinstance(x, A.EnumSpec) for x in d.specs.types):
            raise self.error("enums defined inside a struct are not supported (their enumerators "
                             "are the struct's members, S::A)", d.loc)
        spec = next((x for x in d.specs.types if isinstance(x, A.StructSpec)), None)
        if spec is None or not isinstance(t, ir.StructType):
            raise self.error("declaration does not declare anything", d.loc)
        if spec.tag is not None:
            return
        inner = {n: q for (st, n), q in self.member_quals.items() if st is t}
        for n in inner:
            if n in seen:
                raise self.error(f"duplicate member '{n}'", d.loc)
        seen.update(inner)
        quals.update(inner)
        members.append((f"{ir.ANONYMOUS_MEMBER} {len(members)}>", t, self.align_value(d.specs.align, scope_lookup)))

    def align_value(self, e: Optional[A.Expr], scope_lookup) -> int:
        """The N of `__align__(N)` / `alignas(N)` (1 when absent or 0, which
        C++ ignores); N must be a power of two, as nvcc requires."""
        if e is None:
            return 1
        n = self.const_int(e, scope_lookup, "an alignment")
        if n < 0 or n & (n - 1):
            raise self.error(f"invalid alignment {n}: __align__ and alignas need a power of two", e.loc)
        return max(n, 1)

    def enum_type(self, e: A.EnumSpec, scope_lookup) -> ir.Type:
        if e.items is None:
            if e.tag not in self.tags:
                raise self.error(f"unknown enum '{e.tag}'", e.loc)
            return self.tags[e.tag]
        under = ir.I32
        if e.base is not None:
            under = self.base_type(e.base, scope_lookup).type
            if not isinstance(under, ir.ScalarType) or under.kind == "float" or ir.scoped_enum(under):
                raise self.error(f"the underlying type of an enum must be an integer type, not '{tname(under)}'",
                                 e.base.loc)
        # a scoped enum is a type of its own; an unscoped one is its underlying integer type
        t = ir.ScopedEnumType(under.kind, under.bits, under.signed, name=e.tag) if e.scoped else under
        value = 0
        for it in e.items:
            if it.value is not None:
                v = self.const_int(it.value, scope_lookup, "an enumerator value")
                value = v
            if (e.scoped or e.base is not None) and const_value(value, under) != value:
                raise self.error(f"enumerator value {value} is outside the range of the underlying type "
                                 f"'{tname(under)}'", it.loc)
            self.define_enum_constant(f"{e.tag}::{it.name}" if e.scoped else it.name, value, it.loc, t)
            value += 1
        if e.tag is not None:
            self.tags[e.tag] = t
        return t

    def define_enum_constant(self, name: str, value: int, loc: ir.Loc, t: ir.ScalarType = ir.I32) -> None:
        # enum constants (I32 for a plain enum) live in the scope of the enum's
        # declaration (a function's block while one is lowered)
        sym = Sym("enum", const_value(value, t), QType(t), loc)
        if self.local_scope is not None:
            self.local_scope.declare(name, sym, loc)
        else:
            if name in self.globals_scope:
                raise self.error(f"redefinition of '{name}'", loc)
            self.globals_scope[name] = sym

    def apply_declarator(self, base: QType, d: Optional[A.Declarator], scope_lookup,
                         param: bool = False) -> QType:
        """Apply a declarator's ops (base-first) to `base`."""
        q = base
        if d is None:
            return q
        for op in d.ops:
            if op[0] == "ptr":
                q = q.pointer_to(op[1])
            elif op[0] == "array":
                if isinstance(q.type, ir.VoidType):
                    raise self.error("array of void", d.loc)
                if op[1] is None:
                    n = None
                else:
                    n = self.const_int(op[1], scope_lookup, "the array size")
                    if n <= 0:
                        raise self.error(f"array size must be positive, not {n}", op[1].loc)
                q = QType(ir.ArrayType(q.type, n), q.const, q.volatile, q.const, q.volatile,
                          deep=((q.pconst, q.pvolatile),) + q.deep)
                if q.type.size > MAX_SIZE_T:     # nvcc (EDG): its size must fit a size_t
                    raise self.error(f"array is too large ({q.type.size} bytes; "
                                     f"the limit is {MAX_SIZE_T})", op[1].loc)
            elif op[0] == "func":
                raise self.error("function pointers and function types are not supported here", d.loc)
            elif op[0] == "ref":
                raise self.error("references are supported only as function parameters and local variables",
                                 d.loc)
        inner = q.type
        while isinstance(inner, ir.ArrayType):
            inner = inner.elem
        if isinstance(inner, ir.StructType) and not inner.complete:
            raise self.error(f"incomplete struct '{inner.name}': define it before use", d.loc)
        return q

    def const_int(self, e: A.Expr, scope_lookup, what: str, enum: Optional[str] = None) -> int:
        """The value of an integer constant expression; with `enum`, of a
        constant of that scoped enum instead (a template argument for one)."""
        from .lower import FunctionLowering
        low = FunctionLowering.for_constants(self, scope_lookup)
        try:
            r = low.rvalue(e)
            v = fold(r) if ir.scoped_enum(r.type) == enum else None   # a scoped enum is no integer
        except CompileError as err:
            if "constant" not in err.message:
                raise
            v = None
        if v is None or isinstance(v, float):
            kind = f"a constant of type '{enum}'" if enum else "an integer constant expression"
            raise self.error(f"{what} must be {kind}", e.loc)
        return int(v)

    def launch_bounds(self, vals: list, exprs: list) -> Optional[tuple]:
        """(maxThreadsPerBlock, minBlocksPerMultiprocessor) as nvcc passes them to ptxas.

        CUDA C Programming Guide, "Launch Bounds": the first two become PTX .maxntid
        and .minnctapersm. nvcc 13.0 (sm_90) reads them as 32-bit ints and leaves one
        that is not positive out of the PTX without a word (`__launch_bounds__(0)`,
        `(-1)` and `(256, -1)` compile; `(4294967552)` is .maxntid 256); 0 stands for
        one left out, as everywhere the bounds are read. maxBlocksPerCluster is
        checked, not kept: nvcc refuses it negative ("max blocks per cluster must not
        be negative"), past 2^31 - 1 ("max blocks per cluster is too large") and
        before sm_90 ("cannot specify max blocks per cluster for this GPU architecture")."""
        if len(vals) > 2:
            if self.arch is not None and self.arch < 900:
                raise self.error("cannot specify max blocks per cluster for this GPU architecture", exprs[2].loc)
            if vals[2] < 0:
                raise self.error("max blocks per cluster must not be negative", exprs[2].loc)
            if vals[2] > 0x7FFFFFFF:
                raise self.error("max blocks per cluster is too large", exprs[2].loc)
        kept = [max((v + 2 ** 31) % 2 ** 32 - 2 ** 31, 0) for v in vals[:2]]
        return kept[0], (kept[1] if len(kept) > 1 else None)

    def lookup_global(self, name: str) -> Optional[Sym]:
        if self.templates is not None and self.templates.stack:
            sym = self.templates.lookup(name)
            if sym is not None:
                return sym
        return self.globals_scope.get(name)

    # ------------------------------------------------------------------ module
    def check(self, tu: A.TranslationUnit) -> ir.Module:
        from .lower import FunctionLowering
        from .templates import Templates
        self.templates = Templates(self, tu)
        # in source order, as C++ does: a body sees only what is declared above it
        for item in tu.items:
            if isinstance(item, A.FunctionDef):
                info = self.function_def(item)
                if info.space != "host":
                    FunctionLowering(self, info).lower()
            elif isinstance(item, A.StaticAssert):
                self.static_assert(item, self.lookup_global)
            else:
                self.file_declaration(item)
        for req in tu.requests:    # explicit instantiations
            loc = self.pp.loc(req[0].line, req[0].column, str(req[0]))
            self.templates.by_tokens(req[:1], loc)
        self.check_calls()
        fns = [i.fn for i in self.func_info.values() if i.space != "host"]
        return ir.Module(fns, self.globals, self.source, self.filename, self.instantiate_name, self.strings)

    def string_id(self, s: str) -> int:
        """Index of a string in the module's string table (ir.Module.strings)."""
        if s not in self.strings:
            self.strings.append(s)
        return self.strings.index(s)

    def instantiate_name(self, module: ir.Module, text: str) -> str:
        """Instantiate a kernel template from a name expression such as
        'reduce6<float, 256, true>' (CuPy's name_expressions); returns the
        instance's name, as get_function finds it."""
        from .cxx_tokens import rewrite_name
        from .parser import lex
        from .preprocessor import preprocess
        from .token_scan import Tokens
        pp = preprocess(text, "<name expression>")
        ts = Tokens(pp, lex(pp))
        toks = rewrite_name(ts, set(self.templates.defs), set(self.templates.classes.defs))
        loc = ir.Loc("<name expression>", 1, 1)
        if len(toks) == 1 and not getattr(toks[0], "targs", None) and str(toks[0]) not in self.templates.defs:
            return str(toks[0])
        if not toks or str(toks[0]) not in self.templates.defs:
            raise CompileError(f"'{text}' names no function template of this module", loc, text)
        try:
            info = self.templates.by_tokens(toks, loc, pp)
            self.check_calls()
        except CompileError:
            raise
        except Exception as e:  # a front-end bug must still read as one diagnostic
            raise CompileError(f"internal error instantiating '{text}' ({type(e).__name__}: {e})", loc, text) from e
        module.functions[:] = [i.fn for i in self.func_info.values() if i.space != "host"]
        return info.fn.name

    def function_signature(self, specs: A.DeclSpecs, d: A.Declarator, node: A.Node) -> FuncInfo:
        if not d.ops or d.ops[-1][0] != "func":
            raise self.error("expected a function declarator", d.loc)
        storage = set(specs.storage)
        for bad in ("__shared__", "__constant__", "typedef"):
            if bad in storage:
                raise self.error(f"'{bad}' cannot be applied to a function", specs.loc)
        if "__global__" in storage:
            space = "global"
            if "__host__" in storage or "__device__" in storage:
                raise self.error("__global__ cannot be combined with __host__ or __device__", specs.loc)
        elif "__device__" in storage:
            space = "device"
        else:
            space = "host"
        base = self.base_type(specs, self.lookup_global)
        ret_ops = d.ops[:-1]
        ret_ref = bool(ret_ops) and ret_ops[-1][0] == "ref"
        if ret_ref:
            ret_ops = ret_ops[:-1]
        if any(o[0] == "ref" for o in ret_ops):
            raise self.error("pointers to references are not allowed", d.loc)
        ret = self.apply_declarator(base, A.Declarator(d.loc, d.name, ret_ops), self.lookup_global)
        if isinstance(ret.type, ir.ArrayType):
            raise self.error("a function cannot return an array", d.loc)
        if space == "global" and (ret_ref or not isinstance(ret.type, ir.VoidType)):
            raise self.error("a __global__ function must return void", d.loc)
        params = d.ops[-1][1]
        if len(params) == 1 and params[0].declarator is None and \
                self.base_type(params[0].specs, self.lookup_global).type == ir.VOID:
            params = []
        pvars = []
        pqs = []
        byrefs = []
        names = set()
        refs = []
        declared_refs = []
        defaults = []
        for i, p in enumerate(params):
            pbase = self.base_type(p.specs, self.lookup_global)
            pdecl = p.declarator
            is_ref = pdecl is not None and bool(pdecl.ops) and pdecl.ops[-1][0] == "ref"
            if pdecl is not None and any(o[0] == "ref" for o in pdecl.ops[:-1]):
                raise self.error("pointers to references are not allowed", p.loc)
            if is_ref:
                pdecl = A.Declarator(pdecl.loc, pdecl.name, pdecl.ops[:-1])
            pq = self.apply_declarator(pbase, pdecl, self.lookup_global, param=True)
            if is_ref and space == "global":
                raise self.error("a __global__ function cannot take a reference parameter", p.loc)
            declared_refs.append(is_ref)
            if is_ref and pq.const:
                is_ref = False    # const T&: the value itself (a struct: a copy, byref below)
            defaults.append(p.default)
            if isinstance(pq.type, ir.ArrayType):   # array parameters are pointers (C11 6.7.6.3p7)
                pq = QType(ir.PointerType(pq.type.elem), False, False, pq.pconst, pq.pvolatile, deep=pq.deep)
            if isinstance(pq.type, ir.VoidType):
                raise self.error("a parameter cannot have type void", p.loc)
            t = pq.type
            if space == "global" and isinstance(t, ir.PointerType):
                t = ir.PointerType(t.pointee, "global")
                pq = QType(t, pq.const, pq.volatile, pq.pconst, pq.pvolatile, deep=pq.deep)
            name = p.declarator.name if p.declarator is not None and p.declarator.name else f"<param {i}>"
            if name in names:
                raise self.error(f"redefinition of parameter '{name}'", p.loc)
            names.add(name)
            byref = space != "global" and isinstance(t, ir.StructType) and not is_ref
            if is_ref:
                t = ir.PointerType(t)
            if byref:
                # a struct by value into an inlined device function: the caller
                # copies it to a local temporary and passes its address
                t = ir.PointerType(t, "local")
            pvars.append(ir.Var(name, t, "param", p.loc,
                                readonly=readonly_param(pq.pconst, p.declarator, space == "global")))
            pqs.append(pq)
            byrefs.append(byref)
            refs.append(is_ref)
        ret_t = ret.type
        sret = None
        if ret_ref:
            if isinstance(ret_t, ir.VoidType):
                raise self.error("a reference to void is not allowed", d.loc)
            ret_t = ir.PointerType(ret_t)
        elif space != "global" and isinstance(ret_t, ir.StructType):
            # a struct result is written through a hidden last parameter
            sret = ret_t
            pvars.append(ir.Var("__ret", ir.PointerType(ret_t, "local"), "param", d.loc))
            ret_t = ir.VOID
        lb = None
        if specs.launch_bounds:
            if space != "global":
                raise self.error("__launch_bounds__ applies only to __global__ functions", specs.loc)
            vals = [self.const_int(e, self.lookup_global, "a __launch_bounds__ argument")
                    for e in specs.launch_bounds]
            lb = self.launch_bounds(vals, specs.launch_bounds)
        fn = ir.Function(d.name, pvars, ret_t, None, space == "global", d.loc, lb)
        info = FuncInfo(fn, space, pqs, ret, node)
        info.byref = byrefs
        info.refs = refs
        info.declared_refs = declared_refs
        info.defaults = defaults
        info.sret = sret
        info.ret_ref = ret_ref
        info.constexpr = "constexpr" in specs.storage
        return info

    def function_def(self, f: A.FunctionDef) -> FuncInfo:
        info = self.declare_function(f.specs, f.declarator, f)
        if info.defined:
            raise self.error(f"redefinition of '{info.fn.name}'", f.declarator.loc)
        info.defined = True
        info.decl = f
        info.fn.loc = f.declarator.loc
        return info

    def declare_function(self, specs: A.DeclSpecs, d: A.Declarator, node: A.Node) -> FuncInfo:
        new = self.function_signature(specs, d, node)
        same = self.overloads.get(d.name, [])
        old = next((o for o in same if _signature_key(o) == _signature_key(new)), None)
        if old is not None:
            if old.fn.ret != new.fn.ret or old.ret_q.pconst != new.ret_q.pconst or old.sret != new.sret:
                raise self.error("cannot overload functions distinguished by return type alone", d.loc)
            if old.space != new.space:
                raise self.error(f"conflicting declaration of '{d.name}' (__global__, __device__ and "
                                 "__host__ differ)", d.loc)
            if isinstance(node, A.FunctionDef):
                old.fn.params = new.fn.params      # the definition's parameter names
                old.params_q = new.params_q
                old.byref = new.byref
                old.refs = new.refs
                old.declared_refs = new.declared_refs
                old.defaults = [a if a is not None else b for a, b in zip(new.defaults, old.defaults)]
                if new.fn.launch_bounds:
                    old.fn.launch_bounds = new.fn.launch_bounds
            return old
        from .operators import check_declaration, operator_name, has_class_param
        if is_builtin_function(d.name) and not has_class_param(new) and not arity_apart(
                d.name, sum(1 for x in new.defaults if x is None), len(new.params_q)):
            raise self.error(f"'{d.name}' is a CUDA built-in function and cannot be redefined "
                             "(an overload of it needs a struct or vector parameter)", d.loc)
        if operator_name(d.name) is not None:
            check_declaration(self, d.name, new, d.loc)
            self.operators.add(d.name.rsplit("::", 1)[-1])
        if same:
            if new.space == "global" or any(o.space == "global" for o in same):
                raise self.error(f"overloading the __global__ function '{d.name}' is not supported "
                                 "(get_function finds a kernel by its name alone)", d.loc)
            self.overloads[d.name].append(new)
            self.func_info[f"{d.name}#{len(same)}"] = new
            return new
        sym = self.globals_scope.get(d.name)
        if sym is not None:
            raise self.error(f"redefinition of '{d.name}' as a function", d.loc)
        self.func_info[d.name] = new
        self.overloads[d.name] = [new]
        if not is_builtin_function(d.name):     # calls of a built-in's overloads: calls.lower_call
            self.globals_scope[d.name] = Sym("func", new, None, d.loc)
        return new

    def file_declaration(self, decl: A.Declaration) -> None:
        specs = decl.specs
        storage = set(specs.storage)
        if "typedef" in storage:
            base = self.base_type(specs, self.lookup_global)
            for item in decl.items:
                q = self.apply_declarator(base, item.declarator, self.lookup_global)
                self.globals_scope[item.declarator.name] = Sym("typedef", None, q, item.loc)
            return
        if not decl.items:
            fwd = [t for t in specs.types if isinstance(t, A.StructSpec) and t.members is None]
            if not fwd:     # `struct S;` alone declares nothing we need
                t = self.base_type(specs, self.lookup_global).type   # struct/enum definition
                anon = [s for s in specs.types if isinstance(s, A.StructSpec) and s.tag is None]
                if isinstance(t, ir.StructType) and t.union and anon:
                    raise self.error("anonymous unions at file scope are not supported (nvcc: their members "
                                     "cannot be accessed in __device__ and __global__ functions)", anon[0].loc)
            return
        for item in decl.items:
            d = item.declarator
            if d.ops and d.ops[-1][0] == "func":
                if item.init is not None:
                    raise self.error("a function declaration cannot have an initialiser", item.loc)
                self.declare_function(specs, d, decl)
                continue
            self.file_variable(specs, item)

    def file_variable(self, specs: A.DeclSpecs, item: A.InitDeclarator) -> None:
        storage = set(specs.storage)
        d = item.declarator
        base = self.base_type(specs, self.lookup_global)
        q = self.apply_declarator(base, d, self.lookup_global)
        if d.name in self.globals_scope and self.globals_scope[d.name].kind != "global":
            raise self.error(f"redefinition of '{d.name}'", d.loc)
        if "__shared__" in storage:
            if item.init is not None:
                raise self.error("__shared__ variables cannot have an initialiser", item.loc)
            extern = "extern" in storage
            t = q.type
            if extern and not (isinstance(t, ir.ArrayType) and t.count is None):
                raise self.error("extern __shared__ must be an array of unknown size, like 'extern __shared__ float s[]'", d.loc)
            var = ir.Var(d.name, t, "extern_shared" if extern else "shared", d.loc, q.volatile,
                         align=self.align_value(specs.align, self.lookup_global))
            self.file_shared.append(var)
            self.globals_scope[d.name] = Sym("var", var, q, d.loc)
            return
        if "__constant__" in storage:
            space = "constant"
            # the object is read-only: a pointer variable itself (float *const),
            # an array its elements; what a pointer points at keeps its own const
            q = dataclasses.replace(q, const=True,
                                    pconst=q.pconst if isinstance(q.type, ir.PointerType) else True)
        elif "__device__" in storage:
            space = "global"
        else:
            # a host const scalar initialised with a constant expression is usable
            # in device code as its value, its address not (CUDA C++ Programming
            # Guide, "Const-qualified variables": scalar types other than long
            # double, not volatile); nothing else is
            if q.const and not q.volatile and item.init is not None and isinstance(q.type, ir.ScalarType):
                from .lower import FunctionLowering
                low = FunctionLowering.for_constants(self, self.lookup_global)
                v = fold(low.convert(low.rvalue(item.init), q.type, item.init.loc, "initialise"))
                if v is not None:
                    self.globals_scope[d.name] = Sym("enum", v, QType(q.type, True), d.loc)
                    return
            raise self.error(
                f"file-scope variable '{d.name}' must be __device__ or __constant__ to be used by kernels",
                d.loc)
        if item.init is not None:
            from .lower import FunctionLowering
            init = FunctionLowering.for_constants(self, self.lookup_global).string_initialiser(q.type, item.init)
            item = A.InitDeclarator(item.loc, item.declarator, init)
        if isinstance(q.type, ir.ArrayType) and q.type.count is None:
            if isinstance(item.init, A.InitList):
                from .lower import FunctionLowering
                n = FunctionLowering.for_constants(self, self.lookup_global).init_list_length(q.type.elem, item.init)
                q = QType(ir.ArrayType(q.type.elem, n), q.const, q.volatile, q.pconst, q.pvolatile, deep=q.deep)
            else:
                raise self.error(f"array '{d.name}' needs a size", d.loc)
        init = None
        if item.init is not None:
            init = self.init_image(q.type, item.init)
        old = self.globals_scope.get(d.name)
        if old is not None:
            gv = old.obj
            if gv.type != q.type or gv.space != space:
                raise self.error(f"conflicting declaration of '{d.name}'", d.loc)
            if init is not None:
                if gv.init is not None:
                    raise self.error(f"redefinition of '{d.name}'", d.loc)
                gv.init = init
            return
        if q.type.size > MAX_OBJECT_SIZE:
            raise self.error(f"size {q.type.size} of '{d.name}' exceeds the maximum object size "
                             f"{MAX_OBJECT_SIZE}", d.loc)
        gv = ir.GlobalVar(d.name, q.type, space, init, d.loc, self.align_value(specs.align, self.lookup_global))
        self.globals.append(gv)
        self.globals_scope[d.name] = Sym("global", gv, q, d.loc)

    def init_image(self, t: ir.Type, init: A.Expr) -> bytes:
        """Little-endian image of a file-scope variable's initialiser."""
        from .lower import FunctionLowering
        low = FunctionLowering.for_constants(self, self.lookup_global)
        low.direct_init = isinstance(init, A.InitList) and init.direct
        image = bytearray(t.size)
        for offset, st, e in low.flatten_init(t, init):
            v = fold(e)
            if v is None:
                raise self.error("the initialiser of a __device__ or __constant__ variable must be a constant", e.loc)
            if isinstance(st, ir.PointerType):
                if v != 0:
                    raise self.error("pointer initialisers other than 0 are not supported", e.loc)
                st = ir.U64
            image[offset:offset + st.size] = pack(v, st)
        return bytes(image)

    # ------------------------------------------------------------- call graph
    def check_calls(self) -> None:
        """Reject recursion reachable from a kernel (the JIT inlines device
        functions) and calls of host functions from device code."""
        graph: dict = {}
        for info in self.func_info.values():
            fn = info.fn
            graph[fn] = []
            if fn.body is not None:
                _collect_calls(fn.body, graph[fn])
        state: dict = {}

        def visit(fn, stack):
            state[fn] = 1
            for call in graph.get(fn, []):
                g = call.func
                if state.get(g) == 1:
                    raise self.error("recursion is not supported", call.loc)
                if state.get(g) is None:
                    visit(g, stack + [g])
            state[fn] = 2

        for fn in graph:    # from the kernels: an uncalled recursive function is never inlined
            if fn.is_kernel and state.get(fn) is None:      # (a constexpr one is run at compile time)
                visit(fn, [fn])
        for info in self.func_info.values():
            fn = info.fn
            for call in graph.get(fn, []):
                if call.func.body is None:
                    raise self.error(f"function '{call.func.name}' is declared but never defined", call.loc)
        # a kernel owns the __shared__ variables of the device functions it
        # calls (they are inlined into it): append them in first-call order
        for info in self.func_info.values():
            if info.space != "global":
                continue
            k = info.fn
            seen = {k}
            order = []

            def walk(f):
                for call in graph.get(f, []):
                    g = call.func
                    if g not in seen:
                        seen.add(g)
                        order.append(g)
                        walk(g)
            walk(k)
            for g in order:
                for v in g.shared_vars:
                    if v not in k.shared_vars:
                        k.shared_vars.append(v)


def _signature_key(info: FuncInfo) -> tuple:
    """What tells overloads apart: each parameter's type, pointee constness and
    reference kind (a by-value parameter's own const is not part of it)."""
    return tuple((ir.overload_identity(q.type), q.pconst, q.deep, r, r and q.const)
                 for q, r in zip(info.params_q, info.declared_refs))


def _collect_calls(node, out: list) -> None:
    """All ir.Call nodes under `node` (a statement or expression)."""
    if isinstance(node, ir.Call):
        out.append(node)
    if isinstance(node, (ir.Expr, ir.Stmt)):
        for k, v in vars(node).items():
            if k in ("type", "loc", "var", "func"):
                continue
            if isinstance(v, (ir.Expr, ir.Stmt)):
                _collect_calls(v, out)
            elif isinstance(v, list):
                for x in v:
                    if isinstance(x, (ir.Expr, ir.Stmt)):
                        _collect_calls(x, out)
                    elif isinstance(x, tuple):
                        for y in x:
                            if isinstance(y, (ir.Expr, ir.Stmt)):
                                _collect_calls(y, out)
