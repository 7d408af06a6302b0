"""The syntax tree of a kernel source, as written (no C rules applied yet).

Every node has `loc`, the user's file:line:col (after the preprocessor's
positions were mapped back). The type checker (isa/typecheck.py) turns this
into isa.ir.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from .ir import Loc


@dataclass(eq=False)
class Node:
    loc: Loc


# ----------------------------------------------------------- declarations

@dataclass(eq=False)
class DeclSpecs(Node):
    storage: list           # 'static', 'extern', 'typedef', '__shared__', ...
    quals: set              # 'const', 'volatile', 'restrict'
    fn_specs: list          # 'inline', '__forceinline__', ...
    types: list             # words ('unsigned', 'int'), StructSpec, EnumSpec, TypedefName
    launch_bounds: Optional[list] = None   # [Expr, Expr?]
    extern_c: bool = False
    align: Optional["Expr"] = None


@dataclass(eq=False)
class TypedefName(Node):
    name: str
    targs: Optional[list] = None    # template argument token lists (cg::thread_block_tile<32>)


@dataclass(eq=False)
class StructSpec(Node):
    kind: str                   # 'struct' | 'union' | 'class'
    tag: Optional[str]
    members: Optional[list]     # list[Declaration] or None for a reference
    align: list = field(default_factory=list)   # __align__(N) / alignas(N) of the type (Exprs)


@dataclass(eq=False)
class Enumerator(Node):
    name: str
    value: Optional["Expr"]


@dataclass(eq=False)
class EnumSpec(Node):
    tag: Optional[str]
    items: Optional[list]       # list[Enumerator] or None
    scoped: bool = False        # `enum class` / `enum struct` (C++11)
    base: Optional[DeclSpecs] = None   # `enum E : unsigned char`: the underlying type


@dataclass(eq=False)
class Param(Node):
    specs: DeclSpecs
    declarator: Optional["Declarator"]   # None when unnamed
    default: Optional["Expr"] = None     # default argument


@dataclass(eq=False)
class Declarator(Node):
    """`name` with derivations applied to the base type in order, e.g.
    `int *a[4]` is ops [('ptr', quals), ('array', Expr)]: base -> pointer ->
    array of 4. Ops: ('ptr', set) ('ref',) ('array', Expr|None)
    ('func', list[Param])."""
    name: Optional[str]
    ops: list = field(default_factory=list)


@dataclass(eq=False)
class InitDeclarator(Node):
    declarator: Declarator
    init: Optional["Expr"]    # an Expr or InitList


@dataclass(eq=False)
class Declaration(Node):
    specs: DeclSpecs
    items: list               # list[InitDeclarator]


@dataclass(eq=False)
class FunctionDef(Node):
    specs: DeclSpecs
    declarator: Declarator
    body: "Compound"


@dataclass(eq=False)
class TypeName(Node):
    specs: DeclSpecs
    ops: list                 # as Declarator.ops


@dataclass(eq=False)
class TranslationUnit(Node):
    items: list               # Declaration | FunctionDef
    templates: dict = field(default_factory=dict)   # name -> cxx_tokens.TemplateDef
    classes: dict = field(default_factory=dict)     # name -> cxx_tokens.ClassTemplateDef
    requests: list = field(default_factory=list)    # explicit instantiations (token lists)
    fragments: object = None  # parser.Fragments: parses template bodies and arguments


# ------------------------------------------------------------ expressions

@dataclass(eq=False)
class Expr(Node):
    pass


@dataclass(eq=False)
class Name(Expr):
    name: str
    targs: Optional[list] = None    # template argument token lists (f<float, 4>)


@dataclass(eq=False)
class IntLit(Expr):
    text: str


@dataclass(eq=False)
class FloatLit(Expr):
    text: str


@dataclass(eq=False)
class CharLit(Expr):
    text: str


@dataclass(eq=False)
class StringLit(Expr):
    text: str


@dataclass(eq=False)
class BoolLit(Expr):
    value: bool


@dataclass(eq=False)
class NullLit(Expr):
    pass


@dataclass(eq=False)
class BinOp(Expr):
    op: str                   # C spelling: '+', '<<', '==', ...
    a: Expr
    b: Expr


@dataclass(eq=False)
class LogicalOp(Expr):
    op: str                   # '&&' | '||'
    a: Expr
    b: Expr


@dataclass(eq=False)
class AssignOp(Expr):
    op: str                   # '=', '+=', ...
    target: Expr
    value: Expr


@dataclass(eq=False)
class Ternary(Expr):
    c: Expr
    a: Expr
    b: Expr


@dataclass(eq=False)
class UnaryOp(Expr):
    op: str    # '-', '+', '~', '!', '*', '&', 'pre++', 'pre--', 'post++', 'post--', 'new', 'delete'
    a: Expr


@dataclass(eq=False)
class CastExpr(Expr):
    type_name: TypeName
    a: Expr


@dataclass(eq=False)
class SizeofType(Expr):
    type_name: TypeName


@dataclass(eq=False)
class AlignofType(Expr):
    type_name: TypeName


@dataclass(eq=False)
class SizeofExpr(Expr):
    a: Expr


@dataclass(eq=False)
class Index(Expr):
    a: Expr
    index: Expr


@dataclass(eq=False)
class CallExpr(Expr):
    func: Expr
    args: list


@dataclass(eq=False)
class Member(Expr):
    a: Expr
    name: str
    arrow: bool


@dataclass(eq=False)
class Lambda(Expr):
    """`[](T a, T b) { ... }`: only as the operator of cg::reduce or a scan."""
    params: list              # list[Param]
    body: "Compound"


@dataclass(eq=False)
class CommaExpr(Expr):
    items: list


@dataclass(eq=False)
class InitList(Expr):
    items: list
    direct: bool = False        # `T x{...}` / `T{...}`: no narrowing conversions (C++ [dcl.init.list])


@dataclass(eq=False)
class ListInit(Expr):
    """`T{...}`: a temporary of type T list-initialised."""
    type_name: TypeName
    init: InitList


# ------------------------------------------------------------- statements

@dataclass(eq=False)
class Stmt(Node):
    pass


@dataclass(eq=False)
class Compound(Stmt):
    items: list               # Stmt | Declaration
    end: Optional[Loc] = None


@dataclass(eq=False)
class ExprStmt(Stmt):
    expr: Optional[Expr]


@dataclass(eq=False)
class StaticAssert(Stmt):
    """`static_assert(cond, "message")` (at file, struct or block scope)."""
    cond: "Expr"
    message: Optional[str]


@dataclass(eq=False)
class DeclStmt(Stmt):
    decl: Declaration


@dataclass(eq=False)
class If(Stmt):
    cond: Expr
    then: Stmt
    other: Optional[Stmt]
    init: Optional[Stmt] = None     # C++17 `if (init; cond)`: in scope for both branches


@dataclass(eq=False)
class While(Stmt):
    cond: Expr
    body: Stmt


@dataclass(eq=False)
class DoWhile(Stmt):
    body: Stmt
    cond: Expr


@dataclass(eq=False)
class For(Stmt):
    init: Optional[Stmt]      # DeclStmt | ExprStmt | None
    cond: Optional[Expr]
    step: Optional[Expr]
    body: Stmt


@dataclass(eq=False)
class Switch(Stmt):
    value: Expr
    body: Stmt
    init: Optional[Stmt] = None     # C++17 `switch (init; value)`


@dataclass(eq=False)
class Case(Stmt):
    value: Expr
    stmt: Stmt


@dataclass(eq=False)
class Default(Stmt):
    stmt: Stmt


@dataclass(eq=False)
class Break(Stmt):
    pass


@dataclass(eq=False)
class Continue(Stmt):
    pass


@dataclass(eq=False)
class Return(Stmt):
    value: Optional[Expr]


@dataclass(eq=False)
class Unsupported(Stmt):
    """A statement we parse only to reject (goto, labels)."""
    what: str
