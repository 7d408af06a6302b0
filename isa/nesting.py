"""How deeply kernel code may nest, and where code that nests deeper is refused.

The front end and the JIT walk expressions and statements recursively (the
IR's repr, the cache key, is one such walk: three or four Python frames per
level). The front end raises the recursion limit to 20,000 frames
(frontend.ensure_recursion_limit); MAX_IR_DEPTH keeps every later walk inside
it: a function whose IR nests deeper is a CompileError at the statement where
the limit is crossed, so no RecursionError reaches the caller of a compile.
"""
from __future__ import annotations

from typing import Optional

from . import ir

# IR levels a function body may nest: 4 frames a level in the deepest walk
# (a statement list's repr) leaves 4,000 frames of the 20,000 to the caller
MAX_IR_DEPTH = 4000


def _children(node) -> list:
    """The IR expressions and statements directly under `node`."""
    out = []
    for v in vars(node).values():
        if isinstance(v, (ir.Expr, ir.Stmt)):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            for x in v:
                if isinstance(x, (ir.Expr, ir.Stmt)):
                    out.append(x)
                elif isinstance(x, tuple):      # a Switch's (value, index) cases hold none, but be general
                    out.extend(y for y in x if isinstance(y, (ir.Expr, ir.Stmt)))
    return out


def too_deep(body: ir.Stmt, limit: int = MAX_IR_DEPTH) -> Optional[ir.Loc]:
    """Where `body` first nests deeper than `limit` IR levels: the location of
    the innermost statement around the first node past the limit (None where
    it does not). Iterative: it must not recurse itself."""
    stack = [(body, 1, body.loc)]
    while stack:
        node, depth, where = stack.pop()
        if isinstance(node, ir.Stmt):
            where = node.loc
        if depth > limit:
            return where
        stack.extend((c, depth + 1, where) for c in _children(node))
    return None


def reached(tb, pp=None) -> Optional[ir.Loc]:
    """Where the compile that raised a RecursionError (traceback `tb`) had got
    to: the innermost statement a frame was working on, else the innermost
    node; syntax-tree nodes while lowering, parse trees (positions in `pp`, the
    preprocessed text) while building the syntax tree. None where no frame held one."""
    from lark import Tree
    from . import ast as A
    stmt = node = None
    while tb is not None:
        frame = tb.tb_frame
        for v in frame.f_locals.values():
            if isinstance(v, A.Stmt) and isinstance(v.loc, ir.Loc):
                stmt = v.loc
            elif isinstance(v, A.Node) and isinstance(v.loc, ir.Loc):
                node = v.loc
            elif isinstance(v, Tree) and pp is not None and getattr(v.meta, "line", None) is not None:
                loc = pp.loc(v.meta.line, v.meta.column)
                if frame.f_code.co_name == "stmt":      # ast_builder.AstBuilder.stmt
                    stmt = loc
                else:
                    node = loc
        tb = tb.tb_next
    return stmt or node
