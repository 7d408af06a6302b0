"""One-sentence diagnostics for lark's parse errors: the expected-token set
plus a look at the tokens of the statement ("expected ';' after expression",
"expected ')' before '{'", "default arguments are not supported")."""
from __future__ import annotations

from .diagnostics import CompileError
from .ir import Loc
from .token_scan import Tokens


# tokens that can end an expression (by type, or by spelling for keywords,
# whose terminal names lark makes up)
_VALUE_END = {"IDENT", "INT", "FLOAT", "CHAR", "STRING"}
_VALUE_END_WORDS = {")", "]", "++", "--", "true", "false", "nullptr"}


def parse_error(ts: Tokens, e: Exception, idx: int, names: dict) -> CompileError:
    toks = ts.toks
    tok = getattr(e, "token", None)
    expected = set(getattr(e, "expected", None) or getattr(e, "accepts", None) or ())
    prev = toks[idx - 1] if 0 < idx <= len(toks) else None
    if tok is None or tok.type == "$END":
        last = toks[-1] if toks else None
        if last is None:
            return CompileError("expected a declaration", Loc(ts.pp.line_map[0][0] if ts.pp.line_map else "<source>", 1, 1), None)
        if "RBRACE" in expected:
            return ts.error_after("expected '}' at end of input", last)
        if "SEMICOLON" in expected:
            return ts.error_after("expected ';' at end of input", last)
        return ts.error_after("unexpected end of input", last)
    val = str(tok)
    if tok.type == "TYPE_NAME" and "IDENT" in expected:
        return ts.error(f"'{val}' is a type name; a variable or function name is expected here", tok)
    start = _statement_start(toks, idx)
    opened = _unclosed(toks, start, idx)
    special = _cxx_construct(toks, idx, start, opened)
    if special is not None:
        return ts.error(special, tok)
    if opened and opened[-1] == "(" and "RPAR" in expected:
        return ts.error(f"expected ')' before '{val}'", tok)
    if opened and opened[-1] == "[" and "RSQB" in expected:
        return ts.error(f"expected ']' before '{val}'", tok)
    if "SEMICOLON" in expected and prev is not None and not opened:
        if prev.type == "RBRACE" or str(prev) == "}":
            return ts.error_after("expected ';' after struct or enum definition", prev)
        if _starts_declaration(toks, start):
            return ts.error_after("expected ';' at end of declaration", prev)
        if prev.type in _VALUE_END or str(prev) in _VALUE_END_WORDS:
            return ts.error_after("expected ';' after expression", prev)
    if expected == {"RPAR"} or ("RPAR" in expected and "SEMICOLON" not in expected and len(expected) <= 4
                                 and "IDENT" not in expected):
        return ts.error(f"expected ')' before '{val}'", tok)
    if "RSQB" in expected and len(expected) <= 3:
        return ts.error(f"expected ']' before '{val}'", tok)
    if "COLON" in expected and len(expected) <= 3:
        return ts.error(f"expected ':' before '{val}'", tok)
    if "IDENT" in expected and ("LPAR" in expected or "STAR" in expected) and "INT" not in expected:
        return ts.error(f"expected an identifier before '{val}'", tok)
    if "INT" in expected and "IDENT" in expected:
        return ts.error(f"expected an expression before '{val}'", tok)
    if "LPAR" in expected and len(expected) == 1:
        return ts.error(f"expected '(' before '{val}'", tok)
    if val in ("}",):
        return ts.error("expected a statement before '}'", tok)
    if tok.type == "IDENT" and prev is not None and prev.type == "IDENT":
        return ts.error(f"unknown type name '{prev}'", prev)
    shown = sorted(names.get(x, x) for x in expected)
    if 0 < len(shown) <= 3:
        return ts.error(f"expected {' or '.join(shown)} before '{val}'", tok)
    return ts.error(f"unexpected '{val}'", tok)


_DECL_WORDS = {"void", "char", "short", "int", "long", "float", "double", "signed", "unsigned", "bool",
               "const", "volatile", "static", "extern", "__shared__", "__constant__", "__device__",
               "__global__", "__host__", "struct", "enum", "typedef", "register", "inline",
               "__forceinline__", "__noinline__", "constexpr"}


def _statement_start(toks: list, idx: int) -> int:
    """Index of the first token of the statement that holds toks[idx]."""
    depth = 0
    i = idx - 1
    while i >= 0:
        v = str(toks[i])
        if v in (")", "]"):
            depth += 1
        elif v in ("(", "["):
            if depth == 0:
                # inside a for(...) header: its pieces are statements too
                pass
            else:
                depth -= 1
        elif depth == 0 and v in (";", "{", "}"):
            return i + 1
        i -= 1
    return 0


def _unclosed(toks: list, start: int, idx: int) -> list:
    stack = []
    for t in toks[start:idx]:
        v = str(t)
        if v in ("(", "["):
            stack.append(v)
        elif v in (")", "]") and stack:
            stack.pop()
    return stack


def _in_struct_body(toks: list, idx: int) -> bool:
    """Whether toks[idx] sits directly inside `struct X { ... }`."""
    depth = 0
    for i in range(idx - 1, -1, -1):
        v = str(toks[i])
        if v == "}":
            depth += 1
        elif v == "{":
            if depth == 0:
                j = i - 1
                if j >= 0 and toks[j].type in ("IDENT", "TYPE_NAME"):
                    j -= 1
                return j >= 0 and str(toks[j]) in ("struct", "union", "class")
            depth -= 1
    return False


def _cxx_construct(toks: list, idx: int, start: int, opened: list):
    """Name a C++ construct that caused a syntax error, or None."""
    tok = toks[idx] if idx < len(toks) else None
    prev = toks[idx - 1] if idx > 0 else None
    if tok is None or prev is None:
        return None
    val, pv = str(tok), str(prev)
    if _in_struct_body(toks, idx):
        if val == "{" and pv in (")", "const"):
            return "member functions are not supported (use a __device__ function taking a pointer)"
        if val == ")" and pv == "(":
            return "constructors and member functions are not supported"
        if val == "=" or val == ":":
            return "default member initialisers and bit-fields are not supported"
    if val == "=" and opened and opened[-1] == "(" and _starts_declaration(toks, start):
        return "default arguments are not supported"
    if val == "=" and opened and opened[-1] == "(":
        k = idx - 1
        while k >= 0 and str(toks[k]) not in ("(", ","):
            k -= 1
        if k > 0 and (toks[k + 1].type == "TYPE_NAME" or str(toks[k + 1]) in _DECL_WORDS):
            return "default arguments are not supported"
    if val == ":" and opened and opened[-1] == "(" and start < len(toks) and str(toks[start]) == "for":
        return "range-based for loops are not supported"
    if idx == start + 3 and toks[start].type == "IDENT" and str(toks[start + 1]) == "*" \
            and toks[start + 2].type == "IDENT" and val in ("=", ",", "["):
        return f"unknown type name '{toks[start]}'"
    nxt = toks[idx + 1] if idx + 1 < len(toks) else None
    if tok.type == "IDENT" and nxt is not None and (nxt.type == "IDENT" or str(nxt) in ("*", "&")):
        return f"unknown type name '{val}'"
    if opened and opened[-1] == "(" and pv == "(" and idx >= 2 and toks[idx - 2].type == "IDENT" \
            and _starts_declaration(toks, start) and start < idx - 2:
        return "direct initialisation 'T x(...)' is not supported; write 'T x = ...'"
    return None


def _starts_declaration(toks: list, start: int) -> bool:
    return start < len(toks) and (toks[start].type == "TYPE_NAME" or str(toks[start]) in _DECL_WORDS)
