"""Calls of constexpr functions in constant expressions (ISO C++ [expr.const]):
`__device__ constexpr int sq(int x) { return x * x; }` makes `int a[sq(2)];`,
`get<sq(3)>()` and `case sq(2):` constants, as nvcc evaluates them.

The call is run at compile time: its scalar arguments are constants bound to
the parameters, and the body's statements are interpreted (declarations of
scalars, assignments, `if`, loops, `return`; C++14's relaxed constexpr),
each expression folded by the constant lowering (const_fold.py). A call whose
arguments or body are not constant is not a constant expression, as in C++.
Recursion is followed up to nvcc's depth (512); loops stop after 2^20 steps.
"""
from __future__ import annotations

from . import ast as A
from . import ir
from .const_fold import fold
from .conversions import const_value
from .declarations import QType
from .diagnostics import CompileError

MAX_DEPTH = 512           # EDG's default -constexpr-depth (nvcc: "constexpr evaluation depth")
MAX_STEPS = 1 << 20


class _Return(Exception):
    def __init__(self, value):
        self.value = value


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


def in_device_code(low) -> bool:
    """Whether a constant expression is evaluated inside a function body (where
    nvcc calls only __device__ constexpr functions, not __host__ ones)."""
    outer = getattr(low.extra_lookup, "__self__", None)
    return low.info is not None or getattr(outer, "info", None) is not None


def constexpr_call(low, info, e: A.CallExpr) -> ir.Const:
    """The value of a call of the constexpr function `info` (e's arguments
    lowered by `low`, a constant lowering)."""
    ck = low.ck
    name = info.fn.name
    if info.space == "host" and in_device_code(low):
        raise low.error(f"calling a constexpr __host__ function ('{name}') from device code is not allowed; "
                        "declare it __device__ constexpr (or __host__ __device__)", e.loc)
    ret = info.ret_q.type
    if info.sret is not None or info.ret_ref or not isinstance(ret, ir.ScalarType):
        raise low.error(f"a call of '{name}' is not a constant expression (gpuemu evaluates constexpr "
                        "functions returning integers, floats and bool)", e.loc)
    if getattr(ck, "unevaluated", 0):     # the operand of ?:, && or || not taken: its type only
        return ir.Const(ret, e.loc, const_value(0, ret))
    if not isinstance(info.decl, A.FunctionDef):
        raise low.error(f"constexpr function '{name}' is used before its definition", e.loc)
    params = info.fn.params[:len(info.params_q)]
    args = list(e.args)
    while len(args) < len(params) and info.defaults[len(args)] is not None:
        args.append(info.defaults[len(args)])
    if len(args) != len(params):
        raise low.error(f"wrong number of arguments to function '{name}' (expected {len(params)}, "
                        f"have {len(e.args)})", e.loc)
    from .typecheck import Sym
    env: dict = {}
    for a, p, q in zip(args, params, info.params_q):
        if not isinstance(q.type, ir.ScalarType):
            raise low.error(f"a call of '{name}' is not a constant expression (its parameter '{p.name}' is "
                            "not a scalar)", a.loc)
        env[p.name] = Sym("enum", _constant(low, low.convert(low.rvalue(a), q.type, a.loc, "pass"), a.loc),
                          QType(q.type, True), a.loc)
    depth = getattr(ck, "constexpr_depth", 0)
    if depth >= MAX_DEPTH:
        raise low.error(f"constexpr evaluation of '{name}' exceeds the depth of {MAX_DEPTH} calls", e.loc)
    ck.constexpr_depth = depth + 1
    run = _Run(ck, [env], e.loc, name)
    try:
        run.block(info.decl.body.items)
    except _Return as r:
        return ir.Const(ret, e.loc, fold(run.low().convert(r.value, ret, e.loc, "return")))
    finally:
        ck.constexpr_depth = depth
    raise low.error(f"constexpr function '{name}' ends without returning a value", e.loc)


def _constant(low, v: ir.Expr, loc):
    c = fold(v)
    if c is None:
        raise low.error("a function call is not a constant expression (an argument is not a constant)", loc)
    return c


class _Run:
    """The interpreter of one call's body: scopes of constant-valued locals."""

    def __init__(self, ck, scopes: list, loc, name: str):
        self.ck = ck
        self.scopes = scopes
        self.loc = loc
        self.name = name
        self.steps = 0

    def lookup(self, name: str):
        for s in reversed(self.scopes):
            if name in s:
                return s[name]
        return None

    def low(self):
        from .lower import FunctionLowering
        return FunctionLowering.for_constants(self.ck, self.lookup)

    def value(self, e: A.Expr):
        low = self.low()
        c = fold(low.rvalue(e))
        if c is None:
            raise low.error(f"this expression in constexpr function '{self.name}' is not a constant", e.loc)
        return c

    def block(self, items: list) -> None:
        self.scopes.append({})
        try:
            for s in items:
                self.stmt(s)
        finally:
            self.scopes.pop()

    def stmt(self, s) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise self.ck.error(f"constexpr evaluation of '{self.name}' takes more than {MAX_STEPS} steps", s.loc)
        if isinstance(s, A.Compound):
            self.block(s.items)
        elif isinstance(s, A.DeclStmt):
            self.declaration(s.decl)
        elif isinstance(s, A.Declaration):
            self.declaration(s)
        elif isinstance(s, A.ExprStmt):
            if s.expr is not None:
                self.effect(s.expr)
        elif isinstance(s, A.Return):
            if s.value is None:
                raise self.ck.error(f"constexpr function '{self.name}' returns no value", s.loc)
            low = self.low()
            v = low.rvalue(s.value)
            if fold(v) is None:
                raise low.error(f"this expression in constexpr function '{self.name}' is not a constant",
                                s.value.loc)
            raise _Return(v)
        elif isinstance(s, A.If):
            branch = s.then if self.value(s.cond) else s.other
            if branch is not None:
                self.block([branch])
        elif isinstance(s, (A.While, A.DoWhile, A.For)):
            self.loop(s)
        elif isinstance(s, A.Break):
            raise _Break()
        elif isinstance(s, A.Continue):
            raise _Continue()
        else:
            raise self.ck.error(f"this statement is not supported in a constexpr evaluation of '{self.name}'",
                                s.loc)

    def loop(self, s) -> None:
        self.scopes.append({})
        try:
            if isinstance(s, A.For) and s.init is not None:
                self.stmt(s.init)
            first = isinstance(s, A.DoWhile)
            while first or s.cond is None or self.value(s.cond):
                first = False
                try:
                    self.block([s.body])
                except _Break:
                    break
                except _Continue:
                    pass
                if isinstance(s, A.For) and s.step is not None:
                    self.effect(s.step)
                self.steps += 1
                if self.steps > MAX_STEPS:
                    raise self.ck.error(f"constexpr evaluation of '{self.name}' takes more than {MAX_STEPS} steps",
                                        s.loc)
        finally:
            self.scopes.pop()

    def declaration(self, d: A.Declaration) -> None:
        from .typecheck import Sym
        low = self.low()
        base = low.base_type(d.specs)
        for item in d.items:
            q = self.ck.apply_declarator(base, item.declarator, self.lookup)
            if not isinstance(q.type, ir.ScalarType) or item.init is None or isinstance(item.init, A.InitList):
                raise self.ck.error(f"only initialised scalar variables are supported in a constexpr evaluation "
                                    f"of '{self.name}'", item.loc)
            v = _constant(low, low.convert(low.rvalue(item.init), q.type, item.init.loc, "initialise"),
                          item.init.loc)
            self.scopes[-1][item.declarator.name] = Sym("enum", v, QType(q.type, q.const), item.loc)

    def effect(self, e: A.Expr) -> None:
        """An assignment, ++ or -- of a local (a comma evaluates each)."""
        if isinstance(e, A.CommaExpr):
            for x in e.items:
                self.effect(x)
            return
        if isinstance(e, A.UnaryOp) and e.op in ("pre++", "pre--", "post++", "post--"):
            e = A.AssignOp(e.loc, e.op[-2] + "=", e.a, A.IntLit(e.loc, "1"))
        if not isinstance(e, A.AssignOp) or not isinstance(e.target, A.Name):
            self.value(e)       # an expression without effect on the locals
            return
        sym = self.lookup(e.target.name)
        if sym is None or sym.kind != "enum" or not any(e.target.name in s for s in self.scopes):
            raise self.ck.error(f"constexpr evaluation of '{self.name}' can assign only its own local variables",
                                e.loc)
        if sym.qtype.const:
            raise self.ck.error(f"cannot assign to const '{e.target.name}'", e.loc)
        new = e.value if e.op == "=" else A.BinOp(e.loc, e.op[:-1], e.target, e.value)
        low = self.low()
        sym.obj = _constant(low, low.convert(low.rvalue(new), sym.qtype.type, e.loc, "assign"), e.loc)
