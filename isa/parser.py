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


def lex(pp: Preprocessed) -> list:
    try:
        return list(_lark().lex(pp.text))
    except UnexpectedCharacters as e:
        ch = pp.text[e.pos_in_stream] if e.pos_in_stream < len(pp.text) else "?"
        loc = pp.loc(e.line, e.column, ch)
        if ch == "'":
            msg = "invalid character literal"
        elif ch == '"':
            msg = "missing terminating '\"' character"
        else:
            msg = f"unexpected character '{ch}'"
        raise CompileError(msg, loc, pp.source_line(loc.file, loc.line)) from None


def parse(pp: Preprocessed) -> A.TranslationUnit:
    """Parse the preprocessed text into a TranslationUnit, or raise CompileError."""
    toks = lex(pp)
    ts = Tokens(pp, toks)
    prepass(ts)
    ip = _lark().parse_interactive("")
    idx = 0
    try:
        for idx, tok in enumerate(toks):
            ip.feed_token(tok)
        idx = len(toks)
        tree = ip.feed_eof(toks[-1] if toks else None)
    except (UnexpectedToken, UnexpectedEOF) as e:
        raise parse_error(ts, e, idx, _terminal_text()) from None
    return AstBuilder(ts).build(tree)
