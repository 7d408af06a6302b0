"""Function templates, instantiated in the front end (ISO C++ [temp]).

A template's tokens are parsed once (its type parameters read as type
names); each instantiation lowers that function again with the parameters
bound in a scope of their own: a type parameter is a typedef, a non-type
parameter a constant (so `if (blockSize >= 512)` and `__shared__ T
s[blockSize]` fold at compile time, as nvcc folds them). The instance is an
ordinary ir.Function named as CuPy's name expressions spell it:
`reduce6<float,256,true>`. Function templates of one name overload each
other and the non-templates of the name (overloads.py chooses; a later
template's instances are kept apart from the first's, `f<int>#1`). Instances come from template-ids in calls
(`warpReduce<T, 32>(v)`), from argument deduction (`maxOf(a, b)`, type
parameters only, [temp.deduct.call] for T, T*, const T*, T&), from explicit
instantiations (`template __global__ void k<float>(float *);`) and from the
API (`RawModule(name_expressions=[...])`, `get_function("k<float>")`).
"""
from __future__ import annotations

from typing import Optional

from . import ast as A
from . import ir
from .conversions import const_value
from .declarations import QType
from .diagnostics import CompileError
from .places import below, is_ptr, strip_spaces, tname

# EDG's (nvcc's) limit on instantiations in progress one inside another: the
# 201st is 'excessive recursion at instantiation of function'
MAX_PENDING_INSTANTIATIONS = 200


def spell(v) -> str:
    """A template argument as the instance's name spells it."""
    if isinstance(v, QType):
        return _spell_type(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _pointee_quals(low, arg: A.Expr) -> tuple:
    """((const, volatile) of a pointer argument's pointee, those below it)."""
    from .places import deep_of, pq_of
    saved = len(low.temps)
    try:
        v = low.rvalue(arg)
    finally:
        del low.temps[saved:]
    return pq_of(v), deep_of(v)


def _spell_type(q: QType) -> str:
    """A type argument with its qualifiers at every level: `const int*`,
    `int*const`, `const char [2]`; a class template's instance `Arr<float,4>`."""
    t = q.type
    if isinstance(t, (ir.PointerType, ir.ArrayType)):
        below = q.deep[0] if q.deep else (False, False)
        inner = _spell_type(QType(t.pointee if isinstance(t, ir.PointerType) else t.elem, q.pconst, q.pvolatile,
                                  below[0], below[1], deep=q.deep[1:]))
        if isinstance(t, ir.ArrayType):
            return f"{inner} [{t.count if t.count is not None else ''}]"
        return inner + "*" + "const" * q.const + "volatile" * q.volatile
    s = tname(t)
    if s.startswith("struct ") and "<" in s:    # a class template's instance: Arr<float,4>
        s = s[len("struct "):]
    return "const " * q.const + "volatile " * q.volatile + s


def param_forms(td) -> list:
    """Per function parameter of template `td`, its form as partial ordering
    compares it (overloads.more_specialised): (a template type parameter?,
    the base type's spelling, pointer depth, pointee const)."""
    fdef = td.ast     # parsed (Templates.parsed)
    ps = fdef.declarator.ops[-1][1] if fdef.declarator.ops and fdef.declarator.ops[-1][0] == "func" else []
    tparams = {p.name for p in td.params if p.kind == "type"}
    forms = []
    for p in ps:
        words = [t.name if isinstance(t, A.TypedefName) else str(t) for t in p.specs.types]
        ty = [t for t in p.specs.types if isinstance(t, A.TypedefName)]
        tparam = len(ty) == 1 and ty[0].targs is None and ty[0].name in tparams
        ops = [o[0] for o in (p.declarator.ops if p.declarator is not None else [])]
        forms.append((tparam, " ".join(words), ops.count("ptr"), "const" in p.specs.quals and "ptr" in ops))
    return forms


class Templates:
    """The function templates of one translation unit and their instances."""

    def __init__(self, checker, tu: A.TranslationUnit):
        self.ck = checker
        self.defs = dict(tu.templates or {})
        self.frag = tu.fragments
        self.instances: dict = {}       # canonical name -> FuncInfo
        self.stack: list = []           # scopes binding the parameters being instantiated
        self.pending = 0                # function template instances being lowered, one inside another
        from .class_templates import ClassTemplates
        self.classes = ClassTemplates(self, tu)

    # ------------------------------------------------------------- lookup
    def overload_set(self, name: str) -> list:
        """The function templates named `name`, in the order written (overloads.py
        picks among them and the non-templates of the name)."""
        td = self.defs.get(name)
        return [] if td is None else [td] + td.overloads

    def lookup(self, name: str):
        return self.stack[-1].get(name) if self.stack else None

    def type_params_in_scope(self) -> set:
        return {n for n, s in self.stack[-1].items() if s.kind == "typedef"} if self.stack else set()

    def error(self, msg: str, loc: ir.Loc) -> CompileError:
        return self.ck.error(msg, loc)

    def parsed(self, td):
        if td.ast is None:
            tu = self.frag.function(td.toks, {p.name for p in td.params if p.kind == "type"})
            if not tu.items or not isinstance(tu.items[0], A.FunctionDef):
                raise self.ck.error(f"template '{td.name}' is not a function definition", self.ck.pp.loc(td.tok.line, td.tok.column, str(td.tok)))
            td.ast = tu.items[0]
        return td.ast

    # -------------------------------------------------------- arguments
    def explicit_args(self, td, targs: list, scope_lookup, loc, pp=None) -> list:
        """Values of explicit template arguments (QType or int/bool)."""
        if len(targs) > len(td.params):
            raise self.error(f"too many template arguments for '{td.name}' (it takes {len(td.params)})", loc)
        tps = self.type_params_in_scope()
        return [self.arg_value(p, toks, scope_lookup, tps, loc, pp, td) for p, toks in zip(td.params, targs)]

    def arg_value(self, p, toks, scope_lookup, tps, loc, pp=None, td=None):
        from .lower import FunctionLowering
        if not toks:
            raise self.error(f"empty template argument for '{p.name}'", loc)
        if p.kind == "type":
            tn = self.frag.type_name(toks, tps, pp)
            low = FunctionLowering.for_constants(self.ck, scope_lookup)
            q = low.type_of_name(tn)
            return QType(q.type, q.const, q.volatile, q.pconst, q.pvolatile, deep=q.deep)
        e = self.frag.expr(toks, tps, pp)
        enum = self.scoped_enum_param(td, p)
        if enum is not None:        # template <A a>: an enumerator of A, none of another type
            return self.ck.const_int(e, scope_lookup, f"template argument '{p.name}'", enum)
        v = self.ck.const_int(e, scope_lookup, f"template argument '{p.name}'")
        return bool(v) if "bool" in [str(t) for t in p.type_toks] else v

    def scoped_enum_param(self, td, p) -> Optional[str]:
        """The scoped enum a value parameter's type names, if it names one."""
        if td is None:
            return None
        try:
            return ir.scoped_enum(self.value_type(td, p, {}))
        except CompileError:        # a type naming an earlier parameter: not an enum
            return None

    def value_type(self, td, p, scope: dict) -> ir.Type:
        from .lower import FunctionLowering
        tn = self.frag.type_name(p.type_toks, {q.name for q in td.params if q.kind == "type"})
        self.stack.append(scope)
        try:
            low = FunctionLowering.for_constants(self.ck, self.ck.lookup_global)
            return low.type_of_name(tn).type
        finally:
            self.stack.pop()

    def defaults(self, td, vals: list, loc) -> list:
        """Fill parameters after the given ones from their defaults."""
        vals = list(vals)
        for p in td.params[len(vals):]:
            if p.default is None:
                break
            scope = self.bind(td, vals, loc)
            self.stack.append(scope)
            try:
                vals.append(self.arg_value(p, p.default, self.ck.lookup_global, self.type_params_in_scope(), loc,
                                           td=td))
            finally:
                self.stack.pop()
        return vals

    def bind(self, td, vals: list, loc) -> dict:
        from .typecheck import Sym
        scope: dict = {}
        for p, v in zip(td.params, vals):
            if p.kind == "type":
                if not isinstance(v, QType):
                    raise self.error(f"template parameter '{p.name}' of '{td.name}' needs a type", loc)
                scope[p.name] = Sym("typedef", None, v, loc)
            else:
                if isinstance(v, QType):
                    raise self.error(f"template parameter '{p.name}' of '{td.name}' needs a value, not a type", loc)
                t = self.value_type(td, p, scope)
                if not isinstance(t, ir.ScalarType):
                    raise self.error(f"template parameter '{p.name}' must have an integer or bool type", loc)
                scope[p.name] = Sym("enum", const_value(v, t), QType(t, True), loc)
        return scope

    # ------------------------------------------------------- deduction
    def deduce(self, low, td, vals: list, args: list, loc) -> list:
        """Deduce the remaining type parameters from call arguments."""
        fdef = self.parsed(td)
        params = fdef.declarator.ops[-1][1] if fdef.declarator.ops and fdef.declarator.ops[-1][0] == "func" else []
        known = {p.name: v for p, v in zip(td.params, vals)}
        for prm, arg in zip(params, args):
            ty = [t for t in prm.specs.types if isinstance(t, A.TypedefName)]
            if len(ty) != 1:
                continue
            d = prm.declarator or A.Declarator(loc, None)     # an unnamed parameter: g(T)
            name = ty[0].name
            if ty[0].targs is not None and name in self.classes.defs:
                self.classes.deduce(low, td, ty[0], d, arg, known)
                continue
            tp = next((p for p in td.params if p.name == name and p.kind == "type"), None)
            if tp is None or name in known:
                continue
            ops = [o[0] for o in d.ops]
            at = low.type_only(arg)
            if isinstance(at, ir.ArrayType):
                at = ir.PointerType(at.elem)
            pq, deep = _pointee_quals(low, arg) if is_ptr(at) else ((False, False), ())
            if ops in ([], ["ref"]):        # g(T p) of a const int *: T = const int * ([temp.deduct.call]/2)
                known[name] = QType(strip_spaces(at), False, False, pq[0], pq[1], deep=deep)
            elif ops in (["ptr"], ["ptr", "ref"]) and is_ptr(at):   # h(T *p) of it: T = const int
                quals = prm.specs.quals     # h(const T *p): T = int
                low_pq, low_deep = below(deep)
                known[name] = QType(strip_spaces(at.pointee), pq[0] and "const" not in quals,
                                    pq[1] and "volatile" not in quals, low_pq[0], low_pq[1], deep=low_deep)
        out = []
        for p in td.params:
            if p.name in known:
                out.append(known[p.name])
            else:
                break
        out = self.defaults(td, out, loc)
        if len(out) < len(td.params):
            missing = td.params[len(out)].name
            raise self.error(f"cannot deduce template argument '{missing}' of '{td.name}'; "
                             f"give it explicitly ({td.name}<...>(...))", loc)
        return out

    # ---------------------------------------------------- instantiation
    def instantiate(self, td, vals: list, loc):
        """The FuncInfo of td<vals...>, lowering it the first time."""
        from .lower import FunctionLowering
        canon = f"{td.name}<{','.join(spell(v) for v in vals)}>"
        key = canon if not td.index else f"{canon}#{td.index}"    # a later template of the name
        info = self.instances.get(key)
        if info is not None:
            return info
        if self.pending >= MAX_PENDING_INSTANTIATIONS:
            raise self.error(f"excessive recursion at instantiation of function '{canon}' (more than "
                             f"{MAX_PENDING_INSTANTIATIONS} nested instantiations)", loc)
        fdef = self.parsed(td)
        scope = self.bind(td, vals, loc)
        self.stack.append(scope)
        self.pending += 1
        try:
            d = fdef.declarator
            f2 = A.FunctionDef(fdef.loc, fdef.specs, A.Declarator(d.loc, canon, d.ops), fdef.body)
            saved = self.ck.local_scope
            self.ck.local_scope = None
            try:
                info = self.ck.function_def(f2)
                self.instances[key] = info
                if info.space != "host":
                    FunctionLowering(self.ck, info).lower()
            finally:
                self.ck.local_scope = saved
        finally:
            self.stack.pop()
            self.pending -= 1
        return info

    def for_call(self, low, name: A.Name, args: list, loc):
        """The instance a call `name<targs>(args)` or `name(args)` calls."""
        td = self.defs[name.name]
        vals = self.explicit_args(td, name.targs or [], low.lookup, loc)
        if len(vals) < len(td.params):
            vals = self.deduce(low, td, vals, args, loc)
        if len(vals) < len(td.params):
            raise self.error(f"cannot deduce template argument '{td.params[len(vals)].name}' of '{td.name}'; "
                             f"give it explicitly ({td.name}<...>(...))", loc)
        return self.instantiate(td, vals, loc)

    def by_tokens(self, toks: list, loc, pp=None):
        """Instantiate from a name expression's tokens (one template-id)."""
        if len(toks) != 1 or str(toks[0]) not in self.defs:
            raise self.error("expected a template name with its arguments, like 'k<float, 256>'", loc)
        td = self.defs[str(toks[0])]
        vals = self.explicit_args(td, getattr(toks[0], "targs", None) or [], self.ck.lookup_global, loc, pp)
        vals = self.defaults(td, vals, loc)
        if len(vals) < len(td.params):
            raise self.error(f"too few template arguments for '{td.name}'", loc)
        return self.instantiate(td, vals, loc)
