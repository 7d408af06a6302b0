"""Which partial specialisation of a class template an argument list takes,
and which of two is the more specialised (ISO C++ [temp.class.spec.match],
[temp.class.order]).

A template argument is a term: a value (an integer or bool) or a type
`Ty(const, volatile, node)`, node one of ("leaf", ir type), ("ptr", Ty),
("array", element Ty, count), ("inst", class template, argument terms, ir
type) for a class template's instance, ("param", name) for a type parameter
of a partial specialisation. An array's qualifiers are its element's, as in
C++ ([basic.type.qualifier]/3). A partial specialisation's arguments (`<const
T *>`, `<T[N]>`, `<W<T>, 4>`) parse to such terms (`patterns`), with Param
for a value parameter; `match` binds the parameters so that the patterns
become the instance's arguments. Ordering is C++'s: the first is more
specialised when the second's patterns match the first's with the first's
parameters taken as unique (Opaque) types and values, and not the other way.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import ir
from .cxx_tokens import TemplateParam
from .declarations import QType
from .places import strip_spaces
from .template_tokens import mentions, words

_CV = ("const", "volatile")


@dataclass(frozen=True)
class Ty:
    const: bool
    volatile: bool
    node: tuple


@dataclass(frozen=True)
class Param:
    """A value parameter in a pattern (`N` of `<T, N>`, `<T[N]>`)."""
    name: str


@dataclass(frozen=True)
class Opaque:
    """A parameter of the specialisation ordered against, as a unique value."""
    name: str


def _peel(q: QType) -> QType:
    """The pointee (or element) of pointer or array type q, with its qualifiers."""
    inner = q.type.pointee if isinstance(q.type, ir.PointerType) else q.type.elem
    below = q.deep[0] if q.deep else (False, False)
    return QType(inner, q.pconst, q.pvolatile, below[0], below[1], deep=q.deep[1:])


def to_term(v, of_type: dict):
    """A template argument's value (QType or integer) as a term."""
    if not isinstance(v, QType):
        return v
    t = v.type
    if isinstance(t, ir.PointerType):
        return Ty(v.const, v.volatile, ("ptr", to_term(_peel(v), of_type)))
    if isinstance(t, ir.ArrayType):
        return Ty(False, False, ("array", to_term(_peel(v), of_type), t.count))
    inst = of_type.get(t)
    if inst is not None:
        return Ty(v.const, v.volatile, ("inst", inst[0].name, tuple(to_term(x, of_type) for x in inst[1]), t))
    return Ty(v.const, v.volatile, ("leaf", strip_spaces(t)))


def from_term(term):
    """A term without parameters as a template argument's value."""
    if not isinstance(term, Ty):
        return term
    kind = term.node[0]
    if kind in ("leaf", "inst"):
        return QType(term.node[-1], term.const, term.volatile)
    inner = from_term(term.node[1])
    if kind == "ptr":
        return inner.pointer_to({q for q, on in zip(_CV, (term.const, term.volatile)) if on})
    return QType(ir.ArrayType(inner.type, term.node[2]), inner.const, inner.volatile, inner.const, inner.volatile,
                 deep=((inner.pconst, inner.pvolatile),) + inner.deep)


def opaque(term):
    """A pattern with its parameters as unique types and values."""
    if isinstance(term, Param):
        return Opaque(term.name)
    if not isinstance(term, Ty):
        return term
    node = term.node
    if node[0] == "param":
        node = ("opaque", node[1])
    elif node[0] == "ptr":
        node = ("ptr", opaque(node[1]))
    elif node[0] == "array":
        node = ("array", opaque(node[1]), opaque(node[2]))
    elif node[0] == "inst":
        node = ("inst", node[1], tuple(opaque(a) for a in node[2]), None)
    return Ty(term.const, term.volatile, node)


def match(pattern, target, bound: dict) -> bool:
    """Bind the parameters in `pattern` (in `bound`, consistently) so that it
    is `target`; False when no binding does."""
    if isinstance(pattern, Param):
        return bound.setdefault(pattern.name, target) == target
    if not isinstance(pattern, Ty):
        return not isinstance(target, (Ty, Opaque)) and type(pattern) is type(target) and pattern == target
    if not isinstance(target, Ty):
        return False
    node, tnode = pattern.node, target.node
    if node[0] == "param":      # `const T` takes `const int` with T = int, not `int`
        if (pattern.const and not target.const) or (pattern.volatile and not target.volatile):
            return False
        x = Ty(target.const and not pattern.const, target.volatile and not pattern.volatile, tnode)
        return bound.setdefault(node[1], x) == x
    if (pattern.const, pattern.volatile) != (target.const, target.volatile) or node[0] != tnode[0]:
        return False
    if node[0] == "leaf":
        return node[1] == tnode[1]
    if node[0] == "ptr":
        return match(node[1], tnode[1], bound)
    if node[0] == "array":
        return match(node[1], tnode[1], bound) and match(node[2], tnode[2], bound)
    if node[0] == "inst":       # W<T> against W<int>: the arguments given ([temp.deduct.type]/8)
        return node[1] == tnode[1] and all(match(p, t, bound) for p, t in zip(node[2], tnode[2]))
    return False                # an opaque type matches only a parameter


def matches(patterns: list, targets: list) -> dict | None:
    """The binding that makes `patterns` the argument list `targets`, or None."""
    bound: dict = {}
    return bound if all(match(p, t, bound) for p, t in zip(patterns, targets)) else None


def more_specialised(p1: list, p2: list) -> bool:
    """Partial specialisation with argument patterns p1 is more specialised
    than one with p2 ([temp.class.order])."""
    return matches(p2, [opaque(t) for t in p1]) is not None and matches(p1, [opaque(t) for t in p2]) is None


class Patterns:
    """Parses a partial specialisation's argument tokens into patterns."""

    def __init__(self, cts, sp, loc: ir.Loc):
        self.cts = cts          # class_templates.ClassTemplates
        self.sp = sp
        self.loc = loc
        self.names = {p.name: p for p in sp.params}

    def unsupported(self, toks: list):
        written = words(toks)
        return self.cts.ck.error(f"this form of partial specialisation argument ('{written}') is not supported "
                                 f"(T, const T *, T **, T[N], a class template's instance W<T>, or a fixed type "
                                 f"or value)", self.loc)

    def fixed(self, prm, toks: list, td):
        tpl = self.cts.tpl
        tpl.stack.append({})
        try:
            return to_term(tpl.arg_value(prm, toks, self.cts.ck.lookup_global, set(), self.loc, td=td),
                           self.cts.of_type)
        finally:
            tpl.stack.pop()

    def argument(self, prm, toks: list, td):
        """The pattern of one argument `toks` for parameter prm of template td."""
        if not mentions(toks, self.names):
            return self.fixed(prm, toks, td)
        if prm.kind == "value":
            p = self.names.get(str(toks[0]))
            if len(toks) != 1 or p is None or p.kind != "value":
                raise self.unsupported(toks)
            return Param(p.name)
        return self.type(toks)

    def default(self, prm, w, whole: list):
        """The pattern of W's parameter prm left out of `W<T>`: its default
        argument (W<T> stands for W<T, 2> where W is `template <class T, int N
        = 2>`, so it does not match W<int, 3>). A default naming W's other
        parameters is not supported here."""
        if not prm.default:
            raise self.cts.ck.error(f"too few template arguments for class template '{w.name}' in "
                                    f"'{words(whole)}'", self.loc)
        if mentions(prm.default, {p.name for p in w.params}):
            raise self.unsupported(whole)
        return self.fixed(prm, prm.default, w)

    def type(self, toks: list) -> Ty:
        """`cv head cv (* cv)* ([N])*`, head a type parameter, a class
        template's instance or fixed type words."""
        n = len(toks)
        i = 0
        cv = set()
        while i < n and str(toks[i]) in _CV:
            cv.add(str(toks[i]))
            i += 1
        j = i
        while j < n and str(toks[j]) not in ("*", "[") and not (j > i and str(toks[j]) in _CV):
            j += 1
        head = toks[i:j]
        if not head:
            raise self.unsupported(toks)
        word = str(head[0])
        targs = getattr(head[0], "targs", None)
        if len(head) == 1 and word in self.names and self.names[word].kind == "type":
            node = ("param", word)
        elif len(head) == 1 and targs is not None and word in self.cts.defs:
            w = self.cts.defs[word]
            if len(targs) > len(w.params):
                raise self.unsupported(toks)
            node = ("inst", word, tuple(self.argument(p, a, w) for p, a in zip(w.params, targs))
                    + tuple(self.default(p, w, toks) for p in w.params[len(targs):]), None)
        else:
            if mentions(head, self.names):
                raise self.unsupported(toks)
            base = self.fixed(TemplateParam("type", "", [], None, head[0]), head, None)
            cv |= {q for q, on in zip(_CV, (base.const, base.volatile)) if on}
            node = base.node
        while j < n and str(toks[j]) in _CV:
            cv.add(str(toks[j]))
            j += 1
        term = Ty("const" in cv, "volatile" in cv, node)
        while j < n and str(toks[j]) == "*":
            j += 1
            cv = set()
            while j < n and str(toks[j]) in _CV:
                cv.add(str(toks[j]))
                j += 1
            term = Ty("const" in cv, "volatile" in cv, ("ptr", term))
        dims = []
        while j < n and str(toks[j]) == "[":
            k = next((k for k in range(j + 1, n) if str(toks[k]) == "]"), None)
            if k is None or k == j + 1:
                raise self.unsupported(toks)
            dims.append(self.bound(toks[j + 1:k], toks))
            j = k + 1
        if j != n:
            raise self.unsupported(toks)
        for d in reversed(dims):        # T[A][B]: an array of A arrays of B T
            term = Ty(False, False, ("array", term, d))
        return term

    def bound(self, toks: list, whole: list):
        """An array bound: a value parameter or a constant."""
        p = self.names.get(str(toks[0]))
        if p is not None:
            if len(toks) != 1 or p.kind != "value":
                raise self.unsupported(whole)
            return Param(p.name)
        if mentions(toks, self.names):
            raise self.unsupported(whole)
        ck, tpl = self.cts.ck, self.cts.tpl
        tpl.stack.append({})
        try:
            return ck.const_int(tpl.frag.expr(toks), ck.lookup_global, "the array bound")
        finally:
            tpl.stack.pop()
