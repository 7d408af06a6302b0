"""User-defined operators (ISO C++ [over.oper]) on structs and CUDA's vector types.

`V operator+(const V &o) const` in struct V is the member function
'V::operator+' (cxx_tokens.py spells `operator +` as one name), `__device__
float2 operator*(float2 a, float s)` a free function 'operator*'. An
expression whose operand is a struct or vector (`a + b`, `-a`, `a += b`,
`a == b`, `v[i]`) calls the best of the member operators of the left
operand's struct and the free operators of that name ([over.match.oper]),
resolved as any overloaded call (overloads.py); with none declared the
operator keeps its built-in meaning (on a struct, an error). Operators on
built-in types alone are never looked up, as C++ has it.
"""
from __future__ import annotations

from typing import Optional

from . import ast as A
from . import ir
from .overloads import Candidate, Param, choose, describe, params_of
from .places import strip_spaces

# operators that may be overloaded here; their expressions call the user's function
SUPPORTED = frozenset({"+", "-", "*", "/", "%", "^", "&", "|", "~", "!", "<", ">", "<=", ">=", "==", "!=",
                       "<<", ">>", "+=", "-=", "*=", "/=", "%=", "^=", "&=", "|=", "<<=", ">>=", "[]",
                       "++", "--"})
UNARY = frozenset({"-", "+", "~", "!"})
REFUSED = {
    "=": "a user-defined operator= is not supported (a struct is assigned member by member)",
    "()": "operator() is not supported",
    "->": "operator-> is not supported",
    "&&": "overloading operator&& is not supported",
    "||": "overloading operator|| is not supported",
    ",": "overloading the comma operator is not supported",
    "new": "new and delete are not supported",
    "delete": "new and delete are not supported",
}


def operator_name(name: str) -> Optional[str]:
    """The operator of a function name ('V::operator+=' -> '+='), or None."""
    base = name.rsplit("::", 1)[-1]
    return base[8:] if base.startswith("operator") and base[8:] in SUPPORTED else None


def has_class_param(info) -> bool:
    """Whether a function takes a struct or vector (by value or reference)."""
    return any(isinstance(strip_spaces(q.type), (ir.StructType, ir.VectorType)) for q in info.params_q)


def check_declaration(ck, name: str, info, loc) -> None:
    """Refuse operator functions whose calls gpuemu would not route to them."""
    op = operator_name(name)
    if op is None:
        return
    member = "::" in name
    total = len(info.params_q)       # operands, the object of a member included
    if not member and not has_class_param(info):
        raise ck.error(f"'{name}' needs a parameter of struct or vector type "
                       "(operators on enums are not supported)", loc)
    if op == "[]" and not member:
        raise ck.error("'operator[]' must be a member function", loc)
    if op in ("++", "--"):      # prefix: the object alone; postfix: and a dummy int
        if total == 1 or (total == 2 and info.params_q[1].type == ir.I32 and not info.declared_refs[1]):
            return
        raise ck.error(f"'{name}' must take no parameter (prefix) or one int (postfix) besides its object", loc)
    if (total == 1 and op in UNARY) or (total == 2 and op not in ("~", "!")):
        return
    if total == 1 and op in ("&", "*"):
        raise ck.error(f"overloading unary operator{op} is not supported", loc)
    raise ck.error(f"'{name}' has the wrong number of parameters for operator{op}", loc)


def operands(node) -> tuple:
    """(operator, operand expressions) of an expression that may call a user
    operator, or (None, [])."""
    if isinstance(node, A.BinOp):
        return node.op, [node.a, node.b]
    if isinstance(node, A.AssignOp) and node.op != "=":
        return node.op, [node.target, node.value]
    if isinstance(node, A.UnaryOp) and node.op in UNARY:
        return node.op, [node.a]
    if isinstance(node, A.UnaryOp) and node.op in ("pre++", "pre--"):
        return node.op[3:], [node.a]
    if isinstance(node, A.UnaryOp) and node.op in ("post++", "post--"):    # x++ calls operator++(int)
        return node.op[4:], [node.a, A.IntLit(node.loc, "0")]
    if isinstance(node, A.Index):
        return "[]", [node.a, node.index]
    return None, []


def operator_call(low, op: str, args: list, loc, want_place: bool = False):
    """The call of the user's operator `op` on `args`, or None when no operand
    is a struct or vector or no operator of that name fits its struct."""
    from .calls import _device_call
    name = "operator" + op
    if not any(_maybe_class(low, a) for a in args):
        return None
    kinds = [describe(low, a) for a in args]
    types = [strip_spaces(k.type) for k in kinds]
    if not any(isinstance(t, (ir.StructType, ir.VectorType)) for t in types):
        return None
    cands = []
    if isinstance(types[0], ir.StructType):
        for info in low.ck.overloads.get(f"{types[0].name}::{name}", []):
            ps = params_of(info)
            # the implicit object parameter: a reference to the struct (const for a const member)
            cands.append(Candidate(info, [Param(types[0], False, True, ps[0].pconst, implicit=True)] + ps[1:],
                                   member=True))
    cands += [Candidate(info, params_of(info)) for info in low.ck.overloads.get(name, [])]
    if not cands:
        return None
    best = choose(low, name, cands, args, loc, described=kinds)
    call_args = [A.UnaryOp(args[0].loc, "&", args[0])] + args[1:] if best.member else list(args)
    return _device_call(low, best.info, A.CallExpr(loc, A.Name(loc, name), call_args), want_place)


_LITERALS = (A.IntLit, A.FloatLit, A.CharLit, A.BoolLit, A.NullLit, A.StringLit, A.SizeofExpr, A.SizeofType)


def _maybe_class(low, e: A.Expr) -> bool:
    """Whether `e` may have struct or vector type, told from its shape and
    its variables' types without lowering it (an operator on ints, however
    long the chain, is not looked up); kept per node."""
    cache = low.__dict__.setdefault("maybe_class", {})    # AST nodes and scopes hash by identity
    key = (e, low.scope)
    if key in cache:
        return cache[key]
    if isinstance(e, _LITERALS):
        r = False
    elif isinstance(e, A.Name):
        sym = low.lookup(e.name)
        t = sym.qtype.type if sym is not None and sym.qtype is not None else None
        while isinstance(t, (ir.ArrayType, ir.PointerType)):    # its elements may be
            t = t.elem if isinstance(t, ir.ArrayType) else t.pointee
        r = t is None or isinstance(t, (ir.StructType, ir.VectorType))
    elif isinstance(e, A.CastExpr):
        tn = e.type_name
        r = not tn.ops and any(not isinstance(t, tuple) for t in tn.specs.types)
    elif isinstance(e, (A.BinOp, A.AssignOp, A.UnaryOp, A.Index, A.Ternary, A.CommaExpr)):
        r = any(_maybe_class(low, x) for x in _children(e))
    else:
        r = True
    cache[key] = r
    return r


def _children(e: A.Expr) -> list:
    out = []
    for v in vars(e).values():
        if isinstance(v, A.Expr):
            out.append(v)
        elif isinstance(v, list):
            out += [x for x in v if isinstance(x, A.Expr)]
    return out
