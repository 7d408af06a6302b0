"""Parse preprocessed kernel text into isa.ast (lark, LALR(1), grammar.lark).

Steps: lex the whole text with lark's lexer; token_scan.prepass names
unsupported constructs and retypes typedef/struct/enum names to TYPE_NAME;
the tokens are fed to lark's interactive LALR parser (syntax_errors.py turns
its errors into one CompileError sentence) and ast_builder.py turns the tree
into isa.ast.
"""
from __future__ import annotations

import os
from functools import lru_cache

import lark
from lark.exceptions import UnexpectedCharacters, UnexpectedToken, UnexpectedEOF

from . import ast as A
from .ast_builder import AstBuilder
from .diagnostics import CompileError
from .preprocessor import Preprocessed
from .syntax_errors import parse_error
from .token_scan import Tokens, prepass

_GRAMMAR = os.path.join(os.path.dirname(__file__), "grammar.lark")


@lru_cache(maxsize=1)
def _lark() -> lark.Lark:
    with open(_GRAMMAR, encoding="utf-8") as fh:
        return lark.Lark(fh.read(), parser="lalr", lexer="basic", propagate_positions=True,
                         maybe_placeholders=False, cache=True)


@lru_cache(maxsize=1)
def _terminal_text() -> dict:
    """Terminal name -> how a diagnostic spells it ("';'", "identifier")."""
    out = {"IDENT": "identifier", "TYPE_NAME": "type name", "INT": "integer literal",
           "FLOAT": "floating literal", "CHAR": "character literal", "STRING": "string literal",
           "$END": "end of input", "ASSIGN_OP": "'+='", "EQOP": "'=='", "RELOP": "'<'",
           "SHIFTOP": "'<<'", "DIVOP": "'/'"}
    for t in _lark().terminals:
        if t.name not in out and t.pattern.type == "str":
            out[t.name] = f"'{t.pattern.value}'"
    return out


def _in_number(text: str, pos: int) -> bool:
    """Whether text[pos] ends a number (`1'000'`, `1''0`: a misplaced separator)."""
    i = pos
    while i > 0 and (text[i - 1].isalnum() or text[i - 1] in "_'."):
        i -= 1
    return i < pos and text[i].isdigit()


def lex(pp: Preprocessed) -> list:
    try:
        return list(_lark().lex(pp.text))
    except UnexpectedCharacters as e:
        ch = pp.text[e.pos_in_stream] if e.pos_in_stream < len(pp.text) else "?"
        loc = pp.loc(e.line, e.column, ch)
        if ch == "'" and _in_number(pp.text, e.pos_in_stream):
            msg = "digit separator cannot appear here (only between two digits)"
        elif ch == "'":
            msg = "invalid character literal"
        elif ch == '"':
            msg = "missing terminating '\"' character"
        else:
            msg = f"unexpected character '{ch}'"
        raise CompileError(msg, loc, pp.source_line(loc.file, loc.line)) from None


def _feed(ts: Tokens, start: str, lk: lark.Lark) -> "lark.Tree":
    toks = ts.toks
    ip = lk.parse_interactive("", start=start) if start else lk.parse_interactive("")
    idx = 0
    try:
        for idx, tok in enumerate(toks):
            ip.feed_token(tok)
        idx = len(toks)
        return ip.feed_eof(toks[-1] if toks else None)
    except (UnexpectedToken, UnexpectedEOF) as e:
        raise parse_error(ts, e, idx, _terminal_text()) from None


@lru_cache(maxsize=1)
def _lark_fragments() -> lark.Lark:
    with open(_GRAMMAR, encoding="utf-8") as fh:
        return lark.Lark(fh.read(), parser="lalr", lexer="basic", propagate_positions=True,
                         maybe_placeholders=False, cache=True, start=["start", "targ_type", "targ_value"])


class Fragments:
    """Parses pieces of the token stream on their own: a template's function
    (with its type parameters as type names), template arguments."""

    def __init__(self, pp: Preprocessed, types: set):
        self.pp = pp
        self.types = types

    def function(self, toks: list, type_params: set) -> A.TranslationUnit:
        ts = Tokens(self.pp, [_fresh(t) for t in toks])
        prepass(ts, extra_types=self.types | set(type_params))
        return AstBuilder(ts).build(_feed(ts, "start", _lark_fragments()))

    def type_name(self, toks: list, type_params: set = frozenset(), pp=None) -> A.TypeName:
        ts = Tokens(pp or self.pp, [_fresh(t) for t in toks])
        prepass(ts, extra_types=self.types | set(type_params))
        tree = _feed(ts, "targ_type", _lark_fragments())
        return AstBuilder(ts).type_name(tree.children[0])

    def expr(self, toks: list, type_params: set = frozenset(), pp=None) -> A.Expr:
        ts = Tokens(pp or self.pp, [_fresh(t) for t in toks])
        prepass(ts, extra_types=self.types | set(type_params))
        tree = _feed(ts, "targ_value", _lark_fragments())
        return AstBuilder(ts).expr(tree.children[0])

    def is_type(self, toks: list, type_params: set = frozenset()) -> bool:
        """Whether template argument tokens spell a type (they start with a type word)."""
        if not toks:
            return False
        v = str(toks[0])
        return v in _TYPE_WORDS or v in self.types or v in type_params or \
            (toks[0].type == "TYPE_NAME")


_TYPE_WORDS = frozenset({"void", "char", "short", "int", "long", "float", "double", "signed", "unsigned", "bool",
                         "const", "volatile", "struct", "enum", "__int64"})


def _fresh(t):
    """A copy of a token (the pre-pass retypes tokens in place)."""
    from .cxx_tokens import TToken
    c = TToken.new_borrow_pos(t.type, str(t), t)
    c.targs = getattr(t, "targs", None)
    return c


def parse(pp: Preprocessed) -> A.TranslationUnit:
    """Parse the preprocessed text into a TranslationUnit, or raise CompileError.
    Function templates come back in `.templates`, unparsed (templates.py
    instantiates them)."""
    from .cxx_tokens import rewrite
    toks = lex(pp)
    ts = Tokens(pp, toks)
    rw = rewrite(ts)
    ts.toks = rw.toks
    types = prepass(ts)
    tree = _feed(ts, "", _lark())
    tu = AstBuilder(ts).build(tree)
    tu.templates = rw.templates
    tu.classes = rw.classes
    tu.requests = rw.requests
    tu.fragments = Fragments(pp, types)
    return tu
