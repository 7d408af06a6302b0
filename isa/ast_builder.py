"""lark's parse tree -> isa.ast, with every node at the user's file:line:col."""
from __future__ import annotations

from typing import Optional

from lark import Token, Tree

from . import ast as A
from .diagnostics import CompileError
from .ir import Loc
from .token_scan import ListInitEqual, Tokens


class AstBuilder:
    """lark Tree -> isa.ast, with the user's locations."""

    def __init__(self, ts: Tokens):
        self.ts = ts
        self.tok_index = {id(t): i for i, t in enumerate(ts.toks)}
        self.tok_at = {t.start_pos: t for t in ts.toks}

    # positions
    def loc_tok(self, tok: Token) -> Loc:
        return self.ts.loc(tok)

    def loc(self, t) -> Loc:
        if isinstance(t, Token):
            return self.ts.loc(t)
        m = t.meta
        if not getattr(m, "empty", True):
            first = self.tok_at.get(m.start_pos)
            if first is not None:
                return self.ts.loc(first)
            return self.ts.pp.loc(m.line, m.column)
        first = _first_token(t)
        if first is not None:
            return self.ts.loc(first)
        return Loc(self.ts.pp.line_map[0][0] if self.ts.pp.line_map else "<source>", 1, 1)

    def err(self, msg: str, t) -> CompileError:
        loc = self.loc(t)
        return CompileError(msg, loc, self.ts.pp.source_line(loc.file, loc.line))

    # --------------------------------------------------------------- top
    def build(self, tree: Tree) -> A.TranslationUnit:
        items: list = []
        for ch in tree.children:
            self.external(ch, items, extern_c=False)
        loc = Loc(self.ts.pp.line_map[0][0], 1, 1) if self.ts.pp.line_map else Loc("<source>", 1, 1)
        return A.TranslationUnit(loc, items)

    def external(self, t, out: list, extern_c: bool) -> None:
        if t.data == "empty_external":
            return
        if t.data == "extern_block":
            s = str(t.children[0])
            if s != '"C"':
                raise self.err(f"unsupported linkage specification {s}", t.children[0])
            for ch in t.children[1:]:
                self.external(ch, out, extern_c=True)
            return
        if t.data == "function_def":
            specs = self.decl_specs(t.children[0])
            specs.extern_c = specs.extern_c or extern_c
            d = self.declarator(t.children[1])
            body = self.compound(t.children[2])
            out.append(A.FunctionDef(self.loc(t.children[1]), specs, d, body))
            return
        if t.data == "static_assert":
            out.append(self.static_assert(t))
            return
        if t.data == "declaration":
            decl = self.declaration(t)
            decl.specs.extern_c = decl.specs.extern_c or extern_c
            out.append(decl)
            return
        raise self.err("expected a declaration", t)

    # --------------------------------------------------------- declarations
    def declaration(self, t: Tree) -> A.Declaration:
        specs = self.decl_specs(t.children[0])
        items = []
        if len(t.children) > 1:
            for idt in t.children[1].children:
                d = self.declarator(idt.children[0])
                init = self.initializer(idt.children[1]) if len(idt.children) > 1 else None
                items.append(A.InitDeclarator(self.loc(idt), d, init))
        return A.Declaration(self.loc(t), specs, items)

    def initializer(self, t) -> A.Expr:
        if isinstance(t, Tree) and t.data == "init_list_braced":
            items = []
            if t.children:
                items = [self.initializer(c) for c in t.children[0].children
                         if not (isinstance(c, Token) and str(c) == ",")]
            return A.InitList(self.loc(t), items, self._direct_braces(t))
        return self.expr(t)

    def _direct_braces(self, t: Tree) -> bool:
        """Whether the braces of `t` follow a ListInitEqual (`T x{...}`)."""
        first = self.tok_at.get(t.meta.start_pos) if not getattr(t.meta, "empty", True) else None
        i = self.tok_index.get(id(first)) if first is not None else None
        return bool(i) and isinstance(self.ts.toks[i - 1], ListInitEqual)

    def decl_specs(self, t: Tree) -> A.DeclSpecs:
        specs = A.DeclSpecs(self.loc(t), [], set(), [], [])
        for s in t.children:
            kind = s.data if isinstance(s, Tree) else None
            if kind == "storage":
                word = str(s.children[0])
                if word == "extern" and len(s.children) > 1:
                    if str(s.children[1]) != '"C"':
                        raise self.err(f"unsupported linkage specification {s.children[1]}", s.children[1])
                    specs.extern_c = True
                    continue
                specs.storage.append(word)
            elif kind == "qualifier":
                w = str(s.children[0])
                specs.quals.add("restrict" if "restrict" in w else w)
            elif kind == "fn_spec":
                specs.fn_specs.append(str(s.children[0]))
            elif kind == "launch_bounds":
                specs.launch_bounds = [self.expr(c) for c in s.children]
            elif kind == "align_spec":
                body = [x for x in specs.types if isinstance(x, A.StructSpec) and x.members is not None]
                if body:    # `struct S { ... } __align__(N)`: the type's alignment, as GCC reads it
                    body[-1].align.append(self.expr(s.children[-1]))
                else:
                    specs.align = self.expr(s.children[-1])
            elif kind == "basic_type":
                specs.types.append((str(s.children[0]), self.loc(s)))
            elif kind == "typedef_name":
                specs.types.append(A.TypedefName(self.loc(s), str(s.children[0]),
                                                  getattr(s.children[0], "targs", None)))
            elif kind == "struct_spec":
                specs.types.append(self.struct_spec(s))
            elif kind == "enum_spec":
                specs.types.append(self.enum_spec(s))
            else:  # pragma: no cover - grammar and builder out of step
                raise self.err("unexpected declaration specifier", s)
        return specs

    def struct_spec(self, t: Tree) -> A.StructSpec:
        kw = str(t.children[0].children[0])
        rest = [c for c in t.children[1:] if not (isinstance(c, Tree) and c.data == "align_spec")]
        align = [self.expr(c.children[-1]) for c in t.children[1:]
                 if isinstance(c, Tree) and c.data == "align_spec"]
        tag = None
        if rest and isinstance(rest[0], Token):
            tag = str(rest[0])
            rest = rest[1:]
        members = None
        if self._has_body(t):
            members = []
            for m in rest:
                if not m.children:
                    continue
                if isinstance(m.children[0], Tree) and m.children[0].data == "static_assert":
                    members.append(self.static_assert(m.children[0]))
                    continue
                specs = self.decl_specs(m.children[0])
                items = [A.InitDeclarator(self.loc(d), self.declarator(d), None)
                         for d in m.children[1].children] if len(m.children) > 1 else []
                members.append(A.Declaration(self.loc(m), specs, items))
        return A.StructSpec(self.loc(t), kw, tag, members, align)

    def _has_body(self, t: Tree) -> bool:
        """Whether a struct/enum specifier has its `{ ... }` (the braces are
        filtered out of the tree; its text ends with '}' then)."""
        m = t.meta
        return not getattr(m, "empty", True) and self.ts.pp.text[m.end_pos - 1] == "}"

    def enum_spec(self, t: Tree) -> A.EnumSpec:
        rest = list(t.children)
        scoped = bool(rest) and isinstance(rest[0], Tree) and rest[0].data == "enum_key"
        rest = rest[1:] if scoped else rest
        base = None
        tag = None
        if rest and isinstance(rest[0], Token):
            tag = str(rest[0])
            rest = rest[1:]
        if rest and isinstance(rest[0], Tree) and rest[0].data == "enum_base":
            base = self.decl_specs(rest[0].children[0])
            rest = rest[1:]
        items = None
        if self._has_body(t):
            items = []
            for e in rest:
                if isinstance(e, Token):
                    continue
                val = self.expr(e.children[1]) if len(e.children) > 1 else None
                items.append(A.Enumerator(self.loc(e), str(e.children[0]), val))
        return A.EnumSpec(self.loc(t), tag, items, scoped, base)

    def declarator(self, t: Tree) -> A.Declarator:
        """Flatten pointer*/direct declarator into ops applied base-first."""
        assert t.data == "declarator"
        ptr_ops = []
        direct = None
        for c in t.children:
            if isinstance(c, Tree) and c.data == "pointer":
                ptr_ops.append(self.pointer_op(c))
            else:
                direct = c
        name, loc, dops = self.direct(direct)
        return A.Declarator(loc, name, ptr_ops + dops)

    def pointer_op(self, c: Tree) -> tuple:
        sym = str(c.children[0])
        if sym == "&&":
            raise self.err("rvalue references are not supported", c)
        quals = set()
        for q in c.children[1:]:
            w = str(q.children[0])
            quals.add("restrict" if "restrict" in w else w)
        return ("ref", quals) if sym == "&" else ("ptr", quals)

    def direct(self, t) -> tuple:
        """(name, loc, ops) for a direct declarator; ops base-first."""
        if t.data == "name_decl":
            tok = t.children[0]
            return str(tok), self.loc_tok(tok), []
        if t.data == "paren_decl":
            inner = self.declarator(t.children[0])
            return inner.name, inner.loc, inner.ops
        if t.data == "array_decl":
            name, loc, ops = self.direct(t.children[0])
            size = self.expr(t.children[1]) if len(t.children) > 1 else None
            # `a[2][3]`: the inner [2] came back in ops; the new [3] is closer
            # to the base type: base -> [3] -> [2]
            return name, loc, [("array", size)] + ops
        if t.data == "func_decl":
            name, loc, ops = self.direct(t.children[0])
            params = []
            if len(t.children) > 1:
                params = [self.param(p) for p in t.children[1].children]
            return name, loc, [("func", params)] + ops
        raise self.err("unsupported declarator", t)

    def param(self, p: Tree) -> A.Param:
        specs = self.decl_specs(p.children[0])
        if p.data == "abstract_param":
            ops = [self.pointer_op(c) for c in p.children[1:]]
            return A.Param(self.loc(p), specs, A.Declarator(self.loc(p), None, ops) if ops else None)
        default = self.expr(p.children[2]) if len(p.children) > 2 else None
        return A.Param(self.loc(p), specs, self.declarator(p.children[1]), default)

    def type_name(self, t: Tree) -> A.TypeName:
        specs = self.decl_specs(t.children[0])
        ops = []
        arrays = []
        for c in t.children[1:]:
            if c.data == "pointer":
                ops.append(self.pointer_op(c))
            else:
                arrays.append(("array", self.expr(c.children[0]) if c.children else None))
        return A.TypeName(self.loc(t), specs, ops + list(reversed(arrays)))

    # ---------------------------------------------------------- statements
    def compound(self, t: Tree) -> A.Compound:
        items = [self.stmt(c) for c in t.children]
        return A.Compound(self.loc(t) if t.children else self._meta_loc(t), items)

    def _meta_loc(self, t: Tree) -> Loc:
        return self.loc(t)

    def static_assert(self, t: Tree) -> A.StaticAssert:
        msg = "".join(str(s)[1:-1] for s in t.children[1:]) if len(t.children) > 1 else None
        return A.StaticAssert(self.loc(t), self.expr(t.children[0]), msg)

    def init_stmt(self, children: list) -> tuple:
        """(the init-statement of `if (init; cond)` / `switch (init; v)` or
        None, the remaining children)."""
        first = children[0]
        if not (isinstance(first, Tree) and first.data == "init_stmt"):
            return None, children
        inner = first.children[0]
        if isinstance(inner, Tree) and inner.data == "declaration":
            return A.DeclStmt(self.loc(inner), self.declaration(inner)), children[1:]
        return A.ExprStmt(self.loc(inner), self.expr(inner)), children[1:]

    def stmt(self, t) -> A.Stmt:
        d = t.data
        loc = self._meta_loc(t)
        if d == "static_assert":
            return self.static_assert(t)
        if d == "declaration":
            return A.DeclStmt(loc, self.declaration(t))
        if d == "compound_stmt":
            return A.Compound(loc, [self.stmt(c) for c in t.children])
        if d == "expr_stmt":
            return A.ExprStmt(loc, self.expr(t.children[0]) if t.children else None)
        if d == "if_stmt":
            init, c = self.init_stmt(t.children)
            return A.If(loc, self.expr(c[0]), self.stmt(c[1]), self.stmt(c[2]) if len(c) > 2 else None, init)
        if d == "while_stmt":
            return A.While(loc, self.expr(t.children[0]), self.stmt(t.children[1]))
        if d == "do_stmt":
            return A.DoWhile(loc, self.stmt(t.children[0]), self.expr(t.children[1]))
        if d == "for_stmt":
            c = t.children
            init = self.stmt(c[0])
            if isinstance(init, A.ExprStmt) and init.expr is None:
                init = None
            cond = self.expr(c[1].children[0]) if c[1].children else None
            step = self.expr(c[2].children[0]) if c[2].children else None
            return A.For(loc, init, cond, step, self.stmt(c[3]))
        if d == "switch_stmt":
            init, c = self.init_stmt(t.children)
            return A.Switch(loc, self.expr(c[0]), self.stmt(c[1]), init)
        if d == "case_label":
            return A.Case(loc, self.expr(t.children[0]), self.stmt(t.children[1]))
        if d == "default_label":
            return A.Default(loc, self.stmt(t.children[0]))
        if d == "break_stmt":
            return A.Break(loc)
        if d == "continue_stmt":
            return A.Continue(loc)
        if d == "return_stmt":
            return A.Return(loc, self.expr(t.children[0]) if t.children else None)
        if d == "goto_stmt":
            raise self.err("goto is not supported", t)
        if d == "labeled_stmt":
            raise self.err("labels and goto are not supported", t)
        raise self.err("expected a statement", t)

    # --------------------------------------------------------- expressions
    def expr(self, t) -> A.Expr:
        if isinstance(t, Token):
            return self.leaf(t)
        d = t.data
        c = t.children
        loc = self.loc(t)
        if d == "name":
            return A.Name(loc, str(c[0]), getattr(c[0], "targs", None))
        if d == "int_lit":
            return A.IntLit(loc, str(c[0]).replace("'", ""))
        if d == "float_lit":
            return A.FloatLit(loc, str(c[0]).replace("'", ""))
        if d == "char_lit":
            return A.CharLit(loc, str(c[0]))
        if d == "string_lit":
            return A.StringLit(loc, "".join(str(x) for x in c))
        if d == "true_lit":
            return A.BoolLit(loc, True)
        if d == "false_lit":
            return A.BoolLit(loc, False)
        if d == "null_lit":
            return A.NullLit(loc)
        if d == "lambda_expr":
            rest = [x for x in c if not (isinstance(x, Tree) and x.data == "lambda_capture")]
            params = [self.param(p) for p in rest[0].children] if len(rest) > 1 else []
            return A.Lambda(loc, params, self.compound(rest[-1]))
        if d == "comma":
            a = self.expr(c[0])
            items = a.items if isinstance(a, A.CommaExpr) else [a]
            return A.CommaExpr(loc, items + [self.expr(c[1])])
        if d == "assign":
            if len(c) == 2:
                return A.AssignOp(self._op_loc(t, "="), "=", self.expr(c[0]), self.expr(c[1]))
            return A.AssignOp(self.loc_tok(c[1]), str(c[1]), self.expr(c[0]), self.expr(c[2]))
        if d == "ternary":
            return A.Ternary(loc, self.expr(c[0]), self.expr(c[1]), self.expr(c[2]))
        if d == "logical_or":
            return A.LogicalOp(loc, "||", self.expr(c[0]), self.expr(c[1]))
        if d == "logical_and":
            return A.LogicalOp(loc, "&&", self.expr(c[0]), self.expr(c[1]))
        if d == "binop":
            return A.BinOp(self.loc_tok(c[1]), str(c[1]), self.expr(c[0]), self.expr(c[2]))
        if d == "cast_expr":
            return A.CastExpr(loc, self.type_name(c[0]), self.expr(c[1]))
        if d == "functional_cast":
            bt = c[0]
            if isinstance(bt, Token):   # T(x) with a typedef name
                specs = A.DeclSpecs(self.loc(bt), [], set(), [], [A.TypedefName(self.loc(bt), str(bt),
                                                                                 getattr(bt, "targs", None))])
            else:
                specs = A.DeclSpecs(self.loc(bt), [], set(), [], [(str(bt.children[0]), self.loc(bt))])
            tn = A.TypeName(self.loc(bt), specs, [])
            if len(c) < 2:     # T(): value-initialisation, as T{} (zero, or a zeroed struct)
                return A.ListInit(loc, tn, A.InitList(loc, [], True))
            return A.CastExpr(loc, tn, self.expr(c[1]))
        if d == "list_init_expr":
            bt = c[0]
            if isinstance(bt, Token):
                specs = A.DeclSpecs(self.loc(bt), [], set(), [], [A.TypedefName(self.loc(bt), str(bt),
                                                                              getattr(bt, "targs", None))])
            else:
                specs = A.DeclSpecs(self.loc(bt), [], set(), [], [(str(bt.children[0]), self.loc(bt))])
            items = [self.initializer(x) for x in c[1].children
                     if not (isinstance(x, Token) and str(x) == ",")] if len(c) > 1 else []
            return A.ListInit(loc, A.TypeName(self.loc(bt), specs, []), A.InitList(loc, items, True))
        if d in ("pre_inc", "pre_dec"):
            return A.UnaryOp(loc, "pre++" if d == "pre_inc" else "pre--", self.expr(c[0]))
        if d in ("post_inc", "post_dec"):
            return A.UnaryOp(self.loc(c[0]), "post++" if d == "post_inc" else "post--", self.expr(c[0]))
        if d == "addr_of":
            return A.UnaryOp(loc, "&", self.expr(c[1]))
        if d == "deref":
            return A.UnaryOp(loc, "*", self.expr(c[1]))
        if d == "unary_op":
            return A.UnaryOp(loc, str(c[0]), self.expr(c[1]))
        if d == "bit_not":
            return A.UnaryOp(loc, "~", self.expr(c[0]))
        if d == "log_not":
            return A.UnaryOp(loc, "!", self.expr(c[0]))
        if d == "sizeof_expr":
            return A.SizeofExpr(loc, self.expr(c[0]))
        if d == "sizeof_type":
            return A.SizeofType(loc, self.type_name(c[0]))
        if d == "alignof_type":
            return A.AlignofType(loc, self.type_name(c[0]))
        if d in ("new_expr", "delete_expr"):
            raise self.err("new and delete are not supported", t)
        if d == "index":
            return A.Index(loc, self.expr(c[0]), self.expr(c[1]))
        if d == "call":
            args = [self.expr(a) for a in c[1].children] if len(c) > 1 else []
            return A.CallExpr(loc, self.expr(c[0]), args)
        if d in ("member", "arrow"):
            return A.Member(self.loc_tok(c[1]), self.expr(c[0]), str(c[1]), d == "arrow")
        raise self.err("unsupported expression", t)

    def _op_loc(self, t: Tree, op: str) -> Loc:
        """Location of the operator token `op` between t's two operands."""
        first = _first_token(t.children[1]) if len(t.children) > 1 else None
        i = self.tok_index.get(id(first)) if first is not None else None
        if i is not None:
            i -= 1
            while i >= 0 and str(self.ts.toks[i]) == "(":
                i -= 1
            if i >= 0 and str(self.ts.toks[i]) == op:
                return self.ts.loc(self.ts.toks[i])
        return self.loc(t)

    def leaf(self, tok: Token) -> A.Expr:
        loc = self.loc_tok(tok)
        if tok.type == "IDENT":
            return A.Name(loc, str(tok), getattr(tok, "targs", None))
        if tok.type == "INT":
            return A.IntLit(loc, str(tok).replace("'", ""))
        if tok.type == "FLOAT":
            return A.FloatLit(loc, str(tok).replace("'", ""))
        if tok.type == "CHAR":
            return A.CharLit(loc, str(tok))
        if tok.type == "TYPE_NAME":
            raise self.err(f"unexpected type name '{tok}': expected an expression", tok)
        raise self.err(f"unexpected '{tok}'", tok)


def _first_token(t) -> Optional[Token]:
    if isinstance(t, Token):
        return t
    for c in t.children:
        f = _first_token(c)
        if f is not None:
            return f
    return None


def _last_token(t) -> Optional[Token]:
    if isinstance(t, Token):
        return t
    for c in reversed(t.children):
        f = _last_token(c)
        if f is not None:
            return f
    return None
