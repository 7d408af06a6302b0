"""Class templates, instantiated in the front end (ISO C++ [temp.class]).

`template <typename T, int N> struct Arr { T v[N]; __device__ T sum() const
{..} };` is kept as tokens (cxx_tokens.py); each distinct argument list
(`Arr<float, 4>`, defaults filled in) is one struct named as the instance is
spelled, `Arr<float,4>`, made once: its tokens are parsed again with the
parameters bound as function templates bind them (templates.py: a type
parameter a typedef, a non-type one a constant), the struct defined, and its
member functions declared as `Arr<float,4>::sum`. As in C++ ([temp.inst]/3),
a member function's body is instantiated only when it is called
(`ensure_lowered`), so a member that does not compile for some T is an
error only where it is used. An explicit specialisation (`template <>
struct Arr<bool, 1> {..};`) is made instead of the template for its
argument list, else a partial specialisation (`template <class T> struct
Arr<T *, 4> {..};`) whose arguments match it, with its own parameters bound
(`match_partial`). Errors inside an instance name it, as nvcc's "detected
during instantiation of ..." does.
"""
from __future__ import annotations

from typing import Optional

from . import ast as A
from . import ir
from .cxx_tokens import _new, class_instance_tokens
from .diagnostics import CompileError
from .specialisation_match import Patterns, from_term, matches, more_specialised, to_term
from .template_tokens import mentions, words


def _spelling(toks: list, names: dict) -> list:
    """Template argument tokens as words, template parameters renamed by
    `names` (a template-id's arguments nested)."""
    return [(names.get(str(t), str(t)), [_spelling(a, names) for a in getattr(t, "targs", None) or []])
            for t in toks]


def _member_def_of(md, body) -> Optional[dict]:
    """Where templated member definition `md` (`template <class U> const
    int S<U *>::n`) is one of `body`'s (the class template, or a partial
    specialisation): as many parameters, and its arguments those of body
    (the template's parameters in order; a specialisation's arguments)
    with the parameters renamed, the renaming (md's names -> body's);
    else None."""
    if len(md.params) != len(body.params):
        return None
    names = {p.name: q.name for p, q in zip(md.params, body.params)}
    own = [[(p.name, [])] for p in body.params] if body.args is None else \
        [_spelling(a, {}) for a in body.args]
    return names if [_spelling(a, names) for a in md.args] == own else None


def _renamed(toks: list, names: dict) -> list:
    """toks with the template parameters renamed by `names`, also inside
    template-ids' arguments."""
    out = []
    for k, t in enumerate(toks):
        targs = getattr(t, "targs", None)
        fresh = str(t) in names and (k == 0 or str(toks[k - 1]) not in (".", "->"))
        if fresh or targs:
            t = _new(t.type, names[str(t)] if fresh else str(t), t,
                     [_renamed(a, names) for a in targs] if targs is not None else None)
        out.append(t)
    return out


def static_member(low, e: A.Name) -> A.Name:
    """`S<int>::n` (one name 'S::n' with S's arguments, cxx_tokens.py) as the
    name of the instance's static data member, 'S<int>::n', made with its
    instance; `e` itself when it is not one."""
    cls, _, member = e.name.rpartition("::")
    tps = low.ck.templates
    if not cls or tps is None or cls not in tps.classes.defs:
        return e
    t = tps.classes.struct_type(A.TypedefName(e.loc, cls, e.targs), low.lookup)
    name = f"{t.name}::{member}"
    if low.ck.lookup_global(name) is None:
        raise low.error(f"no static data member '{member}' in '{t.name}'", e.loc)
    return A.Name(e.loc, name)


class ClassTemplates:
    """The class templates of one translation unit and their instances."""

    def __init__(self, templates, tu: A.TranslationUnit):
        self.tpl = templates            # templates.Templates: argument values, binding
        self.ck = templates.ck
        self.defs = dict(tu.classes or {})
        self.of_type: dict = {}         # StructType -> (ClassTemplateDef, argument values)
        self.pending: dict = {}         # member function's FuncInfo -> the scope binding its parameters
        self.parsed: dict = {}          # id(partial specialisation) -> its argument patterns
        for ctd in self.defs.values():
            self.check_member_defs(ctd)

    def check_member_defs(self, ctd) -> None:
        """Each templated definition of a static data member outside its class
        (`template <class U> const int S<U *>::n = 1;`) is one of the class
        template's or of one of its partial specialisations, by its parameter
        and argument lists ([temp.class.spec.mfunc]); nvcc: "template argument
        list must match the parameter list", "too many template parameters --
        does not match previous declaration" (else it was never used)."""
        bodies = [ctd] + [sp for sp in ctd.specialisations if sp.params]
        for md in ctd.member_defs:
            if not md.params or any(_member_def_of(md, body) is not None for body in bodies):
                continue
            tok = md.named or md.tok
            loc = self.ck.pp.loc(tok.line, tok.column, str(tok))
            named = f"{ctd.name}<{', '.join(words(a) for a in md.args)}>::{md.member}"
            if all(len(md.params) != len(body.params) for body in bodies):
                raise self.ck.error(f"'{named}' has {len(md.params)} template parameters, and neither class "
                                    f"template '{ctd.name}' nor a partial specialisation of it has as many", loc)
            raise self.ck.error(f"the template argument list of '{named}' matches neither the parameter list "
                                f"of class template '{ctd.name}' nor a partial specialisation of it", loc)

    def struct_type(self, o: A.TypedefName, scope_lookup) -> ir.StructType:
        """The instance a template-id names (`Arr<float, 4>`), made the first time."""
        from .templates import spell
        ctd = self.defs[o.name]
        vals = self.tpl.explicit_args(ctd, o.targs, scope_lookup, o.loc)
        vals = self.tpl.defaults(ctd, vals, o.loc)
        if len(vals) < len(ctd.params):
            raise self.ck.error(f"too few template arguments for class template '{ctd.name}'", o.loc)
        canon = f"{ctd.name}<{','.join(spell(v) for v in vals)}>"
        t = self.ck.tags.get(canon)
        if t is None:
            spec = next((sp for sp in ctd.specialisations if not sp.params and self.spec_name(ctd, sp) == canon),
                        None)
            if spec is None:
                spec, vals_used = self.partial(ctd, vals, canon, o.loc)
            else:
                vals_used = vals
            t = self.instantiate(spec or ctd, vals_used, canon, o.loc)
            self.of_type[t] = (ctd, vals)
        return t

    def partial(self, ctd, vals: list, canon: str, loc: ir.Loc) -> tuple:
        """(the partial specialisation whose arguments match `vals`, the values
        of its own parameters), or (None, vals) when none matches."""
        found = []
        for sp in ctd.specialisations:
            if sp.params:
                bound = self.match_partial(ctd, sp, vals, loc)
                if bound is not None:
                    found.append((sp, bound))
        if len(found) > 1:      # the more specialised ([temp.class.order])
            best = [f for f in found if all(g is f or more_specialised(self.patterns(f[0], loc), self.patterns(
                g[0], loc)) for g in found)]
            if len(best) != 1:
                raise self.ck.error(f"more than one partial specialisation of '{ctd.name}' matches '{canon}'", loc)
            found = best
        return found[0] if found else (None, vals)

    def match_partial(self, ctd, sp, vals: list, loc: ir.Loc):
        """The values of partial specialisation sp's parameters that make its
        arguments (`<const T *, N>`) those of the instance, `vals`; None when
        they do not match ([temp.class.spec.match], specialisation_match.py)."""
        if len(sp.args) != len(ctd.params):
            raise self.ck.error(f"the partial specialisation of '{ctd.name}' has {len(sp.args)} template "
                                f"arguments; '{ctd.name}' takes {len(ctd.params)}", loc)
        bound = matches(self.patterns(sp, loc), [to_term(v, self.of_type) for v in vals])
        if bound is None or any(p.name not in bound for p in sp.params):
            return None
        return [from_term(bound[p.name]) for p in sp.params]

    def patterns(self, sp, loc: ir.Loc) -> list:
        """Partial specialisation sp's arguments as patterns, parsed once."""
        got = self.parsed.get(id(sp))
        if got is None:
            unused = next((p for p in sp.params if not any(mentions(a, {p.name}) for a in sp.args)), None)
            if unused is not None:      # nvcc: "invalid partial specialization -- ... already fully specialized"
                raise self.ck.error(f"the partial specialisation '{sp.name}<{', '.join(words(a) for a in sp.args)}>' "
                                    f"does not use its template parameter '{unused.name}'",
                                    self.ck.pp.loc(unused.tok.line, unused.tok.column, str(unused.tok)))
            pats = Patterns(self, sp, loc)
            got = self.parsed[id(sp)] = [pats.argument(prm, toks, self.defs[sp.name])
                                         for prm, toks in zip(self.defs[sp.name].params, sp.args)]
        return got

    def spec_name(self, ctd, spec) -> str:
        """The instance an explicit specialisation (`template <> struct
        Arr<bool, 1> {..};`) stands for, by its arguments (defaults filled)."""
        from .templates import spell
        if not hasattr(spec, "canon"):
            loc = self.ck.pp.loc(spec.tok.line, spec.tok.column, str(spec.tok))
            self.tpl.stack.append({})
            try:
                vals = self.tpl.explicit_args(ctd, spec.args, self.ck.lookup_global, loc)
                vals = self.tpl.defaults(ctd, vals, loc)
            finally:
                self.tpl.stack.pop()
            if len(vals) < len(ctd.params):
                raise self.ck.error(f"too few template arguments for class template '{ctd.name}'", loc)
            spec.canon = f"{ctd.name}<{','.join(spell(v) for v in vals)}>"
        return spec.canon

    def instantiate(self, ctd, vals: list, canon: str, loc: ir.Loc) -> ir.StructType:
        from .token_scan import Tokens
        ck = self.ck
        # an explicit specialisation binds nothing, a partial one its own parameters
        scope = self.tpl.bind(ctd, vals, loc) if ctd.args is None or ctd.params else {}
        # declared first: the body may point to its own instance (`Arr<T, N> *next`)
        t = ck.tags[canon] = ir.StructType(canon, (), 0, 1, complete=False)
        frag = self.tpl.frag
        self.tpl.stack.append(scope)
        saved = ck.local_scope
        ck.local_scope = None
        try:
            toks = class_instance_tokens(Tokens(frag.pp, []), ctd, canon, self.member_inits(ctd, canon))
            tu = frag.function(toks, {p.name for p in ctd.params if p.kind == "type"})
            for item in tu.items:
                if isinstance(item, A.FunctionDef):
                    info = ck.function_def(item)
                    self.pending[info] = scope
                else:
                    ck.file_declaration(item)
        except CompileError as e:
            raise self.noted(e, canon, loc) from None
        finally:
            ck.local_scope = saved
            self.tpl.stack.pop()
        return t

    def member_inits(self, body, canon: str) -> dict:
        """The initialisers given outside the class to the static data members
        of instance `canon` made from `body` (the template or one of its
        specialisations): `template <class U> const int S<U>::n = sizeof(U);`
        for the template's (its parameters renamed to the body's), one with
        the arguments of a partial specialisation for that's, `template <>
        const int S<char>::n = 7;` (or, for an explicit specialisation's member,
        without `template <>`) for the instance S<char> alone, before the rest
        (which alone may replace an initialiser in the class, as in nvcc)."""
        inits: dict = {}
        for md in self.defs[body.name].member_defs:
            if not md.params:
                if self.spec_name(self.defs[body.name], md) == canon:
                    inits[md.member] = (md.toks, True)
                continue
            names = None if md.member in inits else _member_def_of(md, body)
            if names is not None:
                inits[md.member] = (_renamed(md.toks, names), False)
        return inits

    def ensure_lowered(self, info, loc: ir.Loc) -> None:
        """Instantiate a member function's body at its first call."""
        from .lower import FunctionLowering
        scope = self.pending.pop(info, None)
        if scope is None:
            return
        ck = self.ck
        self.tpl.stack.append(scope)
        saved = ck.local_scope
        ck.local_scope = None
        try:
            FunctionLowering(ck, info).lower()
        except CompileError as e:
            raise self.noted(e, info.fn.name, loc) from None
        finally:
            ck.local_scope = saved
            self.tpl.stack.pop()

    def deduce(self, low, td, pattern: A.TypedefName, d: A.Declarator, arg: A.Expr, known: dict) -> None:
        """Deduce td's parameters from a call argument whose parameter names a
        class template (`const Arr<T, N> &a`, `Arr<T, N> *p`): the argument's
        instance gives the values of the parameters named alone in the
        pattern's argument list ([temp.deduct.type]/8, forms `TT<T>`, `TT<i>`)."""
        ops = [o[0] for o in d.ops]
        at = low.type_only(arg)
        if ops in ([], ["ref"]):
            self.match(td, pattern.name, pattern.targs, at, known)
        elif ops in (["ptr"], ["ptr", "ref"]) and isinstance(at, (ir.PointerType, ir.ArrayType)):
            self.match(td, pattern.name, pattern.targs, at.pointee if isinstance(at, ir.PointerType)
                       else at.elem, known)

    def match(self, td, name: str, targs: list, t: ir.Type, known: dict) -> None:
        from .declarations import QType
        inst = self.of_type.get(t)
        if inst is None or inst[0].name != name:
            return
        for toks, v in zip(targs, inst[1]):
            if len(toks) != 1:
                continue
            tok = toks[0]
            inner = getattr(tok, "targs", None)
            if inner is not None:           # Arr<Arr<T, 2>, N>
                if str(tok) in self.defs and isinstance(v, QType):
                    self.match(td, str(tok), inner, v.type, known)
                continue
            p = next((p for p in td.params if p.name == str(tok)), None)
            if p is not None and p.name not in known and (p.kind == "type") == isinstance(v, QType):
                known[p.name] = v

    def noted(self, e: CompileError, what: str, loc: ir.Loc) -> CompileError:
        """e, naming the instantiation it happened in (as nvcc does)."""
        where = f"line {loc.line}" if loc.file == e.loc.file else f"{loc.file}:{loc.line}"
        return CompileError(f"{e.message} (detected during instantiation of '{what}' at {where})",
                            e.loc, e.source_line)
