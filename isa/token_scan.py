"""The token pre-pass before parsing: names unsupported constructs at their
position (unsupported.py), and turns the IDENT tokens of names declared by
typedef/struct/enum into TYPE_NAME (C's "lexer hack", done ahead of the
parser because LALR reads one token past a declaration before reducing it)."""
from __future__ import annotations

from lark import Token

from . import unsupported as U
from .diagnostics import CompileError
from .ir import Loc
from .preprocessor import Preprocessed

# Names that are types without any declaration, as with nvcc (which includes
# cuda_runtime.h implicitly): vector types and size_t & co.
VECTOR_NAMES = tuple(
    f"{b}{n}" for b in ("char", "uchar", "short", "ushort", "int", "uint", "long", "ulong",
                        "longlong", "ulonglong", "float", "double") for n in (1, 2, 3, 4))
VECTOR_NAMES += tuple(f"{b}4_{a}a" for b in ("long", "ulong", "longlong", "ulonglong", "double") for a in (16, 32))
BUILTIN_TYPE_NAMES = frozenset(VECTOR_NAMES + ("size_t", "ptrdiff_t", "dim3", "uint3", "ssize_t",
                                                "cudaTextureObject_t"))


class Tokens:
    """The token list with the user's positions."""

    def __init__(self, pp: Preprocessed, toks: list):
        self.pp = pp
        self.toks = toks

    def loc(self, tok: Token) -> Loc:
        return self.pp.loc(tok.line, tok.column, str(tok))

    def error(self, msg: str, tok: Token) -> CompileError:
        loc = self.loc(tok)
        return CompileError(msg, loc, self.pp.source_line(loc.file, loc.line))

    def error_after(self, msg: str, tok: Token) -> CompileError:
        """Diagnostic just after `tok` (where a missing ';' belongs)."""
        loc = self.pp.loc(tok.end_line, tok.end_column, "")
        if self.pp.loc(tok.line, tok.column, str(tok)).col != self.pp.loc(tok.line, tok.column).col:
            base = self.pp.loc(tok.line, tok.column, str(tok))
            loc = Loc(base.file, base.line, base.col + len(str(tok)))
        return CompileError(msg, loc, self.pp.source_line(loc.file, loc.line))


def skip_align(toks: list, j: int) -> int:
    """Index after any `__align__(N)` / `alignas(N)` starting at toks[j]
    (they may stand between `struct` and its tag)."""
    while j + 1 < len(toks) and str(toks[j]) in ("__align__", "alignas") and str(toks[j + 1]) == "(":
        depth = 0
        for k in range(j + 1, len(toks)):
            depth += {"(": 1, ")": -1}.get(str(toks[k]), 0)
            if depth == 0:
                break
        j = k + 1
    return j


class ListInitEqual(Token):
    """The '=' put before the braces of a direct-list-initialisation
    `T x{...}` (parsed as `T x = {...}`); its InitList is marked `direct`,
    where C++ refuses narrowing conversions ([dcl.init.list]p3)."""


_DECL_SPEC_END = frozenset({"void", "char", "short", "int", "long", "float", "double", "signed", "unsigned",
                            "bool", "_Bool", "__int64", "auto", "*", "&", ",", "const", "volatile",
                            "__restrict__"})


def _declarator_brace(toks: list, i: int) -> bool:
    """toks[i] is '{' right after a declarator name (`x{`, `a[3]{`) that
    follows a type or another declarator."""
    j = i - 1
    while j >= 0 and str(toks[j]) == "]":
        depth = 0
        while j >= 0:
            depth += {"]": 1, "[": -1}.get(str(toks[j]), 0)
            if depth == 0:
                break
            j -= 1
        j -= 1
    if j < 1 or toks[j].type != "IDENT":
        return False
    p = toks[j - 1]
    return p.type == "TYPE_NAME" or str(p) in _DECL_SPEC_END


def direct_list_init(toks: list) -> list:
    """`T x{...}` -> `T x = {...}`, the '=' a ListInitEqual."""
    out = []
    for i, t in enumerate(toks):
        if str(t) == "{" and _declarator_brace(toks, i):
            out.append(ListInitEqual.new_borrow_pos("EQUAL", "=", t))
        out.append(t)
    return out


def prepass(ts: Tokens, extra_types=frozenset()) -> set:
    """Name unsupported constructs; retype typedef/struct/enum names (and
    `extra_types`). Returns the set of type names."""
    toks = ts.toks
    types = set(BUILTIN_TYPE_NAMES) | set(extra_types)
    n = len(toks)
    # unsupported constructs
    for i, t in enumerate(toks):
        v = str(t)
        prev = toks[i - 1] if i else None
        nxt = toks[i + 1] if i + 1 < n else None
        member = prev is not None and str(prev) in (".", "->")
        if v in U.KEYWORDS and not member and not (v == "class" and prev is not None and str(prev) == "enum"):
            raise ts.error(U.KEYWORDS[v], t)
        if t.type == "IDENT" and not member:
            if v in U.CALLS and nxt is not None and str(nxt) == "(":
                raise ts.error(U.CALLS[v], t)
            if v in U.NAMES and (v.endswith("_t") or v == "cooperative_groups" or (
                    nxt is not None and (nxt.type == "IDENT" or str(nxt) in ("<", "<<", ":")))):
                raise ts.error(U.NAMES[v], t)
        if nxt is not None and nxt.start_pos == t.end_pos:
            pair = v + str(nxt)
            if pair == "::":
                raise ts.error(U.PUNCT["::"], t)
            if pair == "<<<" or (v == "<<" and str(nxt).startswith("<")):
                raise ts.error(U.PUNCT["<<<"], t)
            if v == "." and str(nxt) == "." and i + 2 < n and str(toks[i + 2]) == ".":
                raise ts.error(U.PUNCT["..."], t)
    # typedef names: the last identifier at depth 0 before each ',' or ';'
    # (that token itself stays an IDENT: it is the declarator's name)
    declared: set = set()
    i = 0
    while i < n:
        t = toks[i]
        v = str(t)
        if v in ("struct", "enum", "union", "class"):
            j = skip_align(toks, i + 1)
            if j < n and toks[j].type == "IDENT":
                types.add(str(toks[j]))
        if v == "typedef":
            depth = 0
            last = None
            last_tok = None
            j = i + 1
            while j < n:
                w = str(toks[j])
                if w in ("{", "(", "["):
                    depth += 1
                elif w in ("}", ")", "]"):
                    depth -= 1
                elif depth == 0 and toks[j].type == "IDENT":
                    last = str(toks[j])
                    last_tok = j
                elif depth == 0 and w in (",", ";"):
                    if last:
                        types.add(last)
                        declared.add(last_tok)
                    last = None
                    if w == ";":
                        break
                elif depth == 1 and toks[j].type == "IDENT" and str(toks[j - 1]) == "*":
                    last = str(toks[j])  # typedef T (*name)(...)
                    last_tok = j
                j += 1
        i += 1
    for k, t in enumerate(toks):
        if t.type == "IDENT" and str(t) in types and k not in declared:
            t.type = "TYPE_NAME"
    ts.toks = direct_list_init(toks)
    return types
