"""The C preprocessor step (pcpp), keeping every position true to the user's file.

pcpp expands macros, #if/#ifdef/#elif, #include; it writes `#line N "file"`
markers whenever the output drifts from the input, which we turn into a table
from output line to (file, line). Comments become blanks of the same width so
columns stay true; on lines a macro changed, columns are mapped back by finding
the token in the original line (see `Preprocessed.loc`).
"""
from __future__ import annotations

import io
import os
import re
from dataclasses import dataclass, field
from typing import Optional

from pcpp import Preprocessor
from pcpp.preprocessor import OutputDirective

from .conversions import char_literal_type, int_literal_type
from .diagnostics import CompileError
from .ir import Loc
from .system_headers import HEADERS, UNSUPPORTED_HEADERS

_VIRTUAL = "<cuda>"          # the include dir that holds system_headers.HEADERS
_LINE_RE = re.compile(r'^\s*#\s*line\s+(\d+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*$')
_DIRECTIVE_RE = re.compile(r'^\s*#\s*(\w+)')
_PRAGMA_OP = re.compile(r'\b_Pragma\s*\(\s*(?:L|u8|u|U)?"(?:[^"\\]|\\.)*"\s*\)')   # C99 6.10.9
# gcc's (and nvcc's) limit on #include nesting: a file that includes itself stops there
MAX_INCLUDE_DEPTH = 200
# the operators of an #if expression (C11 6.10.1: unary, binary and ?:)
_OPERATORS = frozenset("+ - * / % << >> < <= > >= == != & ^ | && || ? ! ~".split())


@dataclass
class Preprocessed:
    """Expanded text plus the map back to the user's files."""
    text: str                              # same number of lines as line_map
    line_map: list                         # out line (0-based) -> (file, line)
    file_lines: dict = field(default_factory=dict)  # file -> list of its lines
    out_lines: list = field(default_factory=list)

    def source_line(self, file: str, line: int) -> Optional[str]:
        lines = self.file_lines.get(file)
        if lines is None or not (1 <= line <= len(lines)):
            return None
        return lines[line - 1].rstrip("\r")

    def loc(self, out_line: int, out_col: int, token: str = "") -> Loc:
        """Map a 1-based position in the expanded text to the user's file.

        The column is exact where the line was not changed by a macro; else we
        look for `token` in the original line near the expanded column."""
        if not (1 <= out_line <= len(self.line_map)):
            f, ln = self.line_map[-1] if self.line_map else ("<source>", 1)
            return Loc(f, ln, 1)
        f, ln = self.line_map[out_line - 1]
        orig = self.source_line(f, ln)
        exp = self.out_lines[out_line - 1] if out_line - 1 < len(self.out_lines) else None
        col = out_col
        if orig is not None and exp is not None and orig.rstrip() != exp.rstrip():
            col = _map_column(orig, exp, out_col, token)
        return Loc(f, ln, max(col, 1))

    def error(self, message: str, out_line: int, out_col: int, token: str = "") -> CompileError:
        loc = self.loc(out_line, out_col, token)
        return CompileError(message, loc, self.source_line(loc.file, loc.line))


def _map_column(orig: str, exp: str, col: int, token: str) -> int:
    """Column in `orig` for column `col` of the macro-expanded line `exp`."""
    # same prefix: exact
    n = 0
    while n < min(len(orig), len(exp)) and orig[n] == exp[n]:
        n += 1
    if col - 1 < n:
        return col
    # same suffix: exact counted from the end
    m = 0
    while m < min(len(orig), len(exp)) - n and orig[-1 - m] == exp[-1 - m]:
        m += 1
    from_end = len(exp) - (col - 1)
    if 0 < from_end <= m:
        return len(orig) - from_end + 1
    if token:
        hits = [mm.start() for mm in re.finditer(re.escape(token), orig)]
        if hits:
            best = min(hits, key=lambda h: abs(h - (col - 1)))
            return best + 1
    return n + 1  # where the macro use starts


# a C++14 pp-number ([lex.ppnumber]): digit separators `'` join its digits
_PP_NUMBER = re.compile(r"\.?[0-9](?:'[0-9A-Za-z_]|[eEpP][+-]|[0-9A-Za-z_.])*")


class _SeparatorLexer:
    """pcpp's lexer, with a number holding digit separators (1'000'000,
    0xFF'FF) read as ONE token: pcpp alone reads `'000'` as a character
    literal, or `'FF + N; ... '` as one, leaving macros inside unexpanded."""

    def __init__(self, lex, number_types: tuple):
        object.__setattr__(self, "_lex", lex)
        object.__setattr__(self, "_numbers", number_types)

    def __getattr__(self, name):
        return getattr(self._lex, name)

    def __setattr__(self, name, value):
        setattr(self._lex, name, value)

    def clone(self) -> "_SeparatorLexer":
        return _SeparatorLexer(self._lex.clone(), self._numbers)

    def token(self):
        tok = self._lex.token()
        if tok is not None and tok.type in self._numbers and \
                self._lex.lexdata.startswith("'", tok.lexpos + len(tok.value)):
            m = _PP_NUMBER.match(self._lex.lexdata, tok.lexpos)
            if m is not None and m.end() > tok.lexpos + len(tok.value):
                tok.value = m.group()
                self._lex.lexpos = m.end()
        return tok


class _PP(Preprocessor):
    """pcpp with errors raised as CompileError and our virtual system headers."""

    def __init__(self, file_lines: dict):
        super().__init__()
        self.lexer = _SeparatorLexer(self.lexer, (self.t_INTEGER, "CPP_FLOAT"))
        self.file_lines = file_lines
        self.line_directive = "#line"
        self.compress = 0
        self.pending = None                   # a CompileError found inside pcpp's evaluator
        self.conditionals: list = []          # [directive, seen #else] of each open #if, all files
        self.include_chain: list = []         # (file, line) of each #include being read
        self.evaluator = self.checked_evaluator(self.evaluator)

    def checked_evaluator(self, evaluate):
        """pcpp's #if evaluator, its literals first read by the compiler's own
        rules: a literal wider than 64 bits or a char escape past 0xff is an
        error (gcc: "integer constant is too large for its type"), a
        multi-character literal is gcc's int value."""
        def run(tokens, **kw):
            for t in tokens:
                try:
                    if t.type == self.t_INTEGER and t.value[:1].isdigit():
                        t.value = t.value.replace("'", "")     # digit separators
                        int_literal_type(t.value)
                    elif t.type == self.t_CHAR and t.value.startswith("'"):
                        t.value, t.type = f"{char_literal_type(t.value)[0]}L", self.t_INTEGER
                except OverflowError:
                    self.pending = self.directive_error(f"integer literal '{t.value}' is too large for any "
                                                        f"integer type")
                except ValueError as e:
                    if t.type == self.t_CHAR:
                        self.pending = self.directive_error(f"{e} in character literal {t.value}")
                if self.pending is not None:
                    raise self.pending      # pcpp reports it through on_error, which raises it as is
            return evaluate(tokens, **kw)
        return run

    def user_file(self, file: Optional[str]) -> str:
        """A file as the user named it: pcpp spells it relative to the working directory."""
        if not file:
            return "<source>"
        if file not in self.file_lines:
            key = _same_file_key(file)
            for name in self.file_lines:
                if _same_file_key(name) == key:
                    return name
        return file

    def _err(self, file, line, msg, find: Optional[re.Pattern] = None) -> CompileError:
        """An error on a line of a file: the caret where `find` first matches, else at its first character."""
        file = self.user_file(file)
        lines = self.file_lines.get(file)
        src = lines[line - 1].rstrip("\r") if lines and 1 <= line <= len(lines) else None
        col = 1
        if src is not None:
            col = len(src) - len(src.lstrip()) + 1
            m = find.search(src) if find is not None else None
            if m is not None:
                col = m.start() + 1
        return CompileError(msg, Loc(file, int(line or 1), col), src)

    def at_token(self, tok, msg: str) -> CompileError:
        """An error with the caret at a token of the user's text (pcpp's lexpos counts
        from the start of its file, whose lines it read right-stripped)."""
        err = self._err(tok.source, tok.lineno, msg)
        lines = self.file_lines.get(err.loc.file)
        if lines is None or err.source_line is None:
            return err
        col = tok.lexpos - sum(len(ln.rstrip()) + 1 for ln in lines[:tok.lineno - 1]) + 1
        if not 1 <= col <= len(err.source_line) or not err.source_line.startswith(str(tok.value), col - 1):
            return err
        return CompileError(msg, Loc(err.loc.file, err.loc.line, col), err.source_line)

    def on_error(self, file, line, msg):
        if self.pending is not None:
            raise self.pending
        d = self.lastdirective
        if msg.startswith("Could not evaluate expression") and d is not None and d.value in ("if", "elif"):
            raise self.expression_error(d.value, msg)
        if file not in self.file_lines and d is not None and d.source in self.file_lines:
            # pcpp's expression evaluator reports no position: the directive has it
            if msg.strip() == "Empty expression":
                raise self.directive_error(f"#{d.value} with no expression")
            raise self.directive_error(f"preprocessor: {msg.strip()}")
        raise self._err(file, line, _gcc_words(msg.strip()), _macro_call_column(msg))

    def expression_error(self, directive: str, msg: str) -> CompileError:
        """pcpp's evaluator refused the expanded #if/#elif operand: gcc's words
        where they are simple ("#if 1 + A" with A empty: "operator '+' has no
        right operand", the caret past the line; "#if (A)": "missing expression
        between '(' and ')'"; "division by zero in #if"), else the expanded text."""
        expanded = getattr(self, "condition_tokens", [])
        if "ZeroDivisionError" in msg:
            return self.directive_error(f"division by zero in #{directive}")
        toks = [t.value for t in expanded if t.type not in self.t_WS and t.type not in self.t_COMMENT]
        for i, v in enumerate(toks):
            nxt = toks[i + 1] if i + 1 < len(toks) else None
            if v == "(" and nxt == ")":
                return self.directive_error("missing expression between '(' and ')'")
            if v in _OPERATORS and nxt in (None, ")", ":"):
                return self.directive_error(f"operator '{v}' has no right operand", at_end=nxt is None)
        text = " ".join("".join(t.value for t in expanded).split())
        return self.directive_error(f"invalid #{directive} expression '{text}'")

    def directive_error(self, msg: str, at_end: bool = False) -> CompileError:
        """An error in the last directive, the caret where its operand is (or should be),
        or with `at_end` past the directive's last character, where gcc puts it."""
        d = self.lastdirective
        file, line = (d.source, d.lineno) if d is not None else ("<source>", 1)
        if at_end:
            lines = self.file_lines.get(file) or []
            while line < len(lines) and lines[line - 1].rstrip("\r").endswith("\\"):
                line += 1                   # a continued directive ends on its last line
        err = self._err(file, line, msg)
        src = err.source_line
        if at_end and src is not None:
            return CompileError(msg, Loc(err.loc.file, err.loc.line, len(src) + 1), src)
        if d is not None and src is not None:
            m = re.match(r"\s*#\s*" + re.escape(d.value) + r"\s*", src)
            if m:
                err = CompileError(msg, Loc(err.loc.file, err.loc.line, m.end() + 1), src)
        return err

    # gcc's words for a directive with its operand missing or malformed
    def check_macro_name(self, tokens, directive: str) -> None:
        if isinstance(tokens, str):
            return          # our own predefines and -D options (checked in _define_option)
        name = self.tokenstrip(list(tokens))
        if not name:
            raise self.directive_error(f"no macro name given in #{directive} directive")
        if name[0].type != self.t_ID:
            raise self.directive_error("macro names must be identifiers")

    def define(self, tokens):
        self.check_macro_name(tokens, "define")
        if not isinstance(tokens, str):
            self.check_function_macro(self.tokenstrip(list(tokens)))
        return super().define(tokens)

    def check_function_macro(self, toks: list) -> None:
        """gcc's checks of a function-like macro's parameters and body: a
        parameter named twice, '#' before no parameter, '##' at either end."""
        if len(toks) < 2 or toks[1].value != "(":
            return
        params: list = []
        i = 2
        while i < len(toks) and toks[i].value != ")":
            t = toks[i]
            if t.type == self.t_ID:
                if t.value in params:
                    raise self.at_token(t, f'duplicate macro parameter "{t.value}"')
                params.append(t.value)
            elif t.value.startswith("."):       # '...': variadic
                params.append("__VA_ARGS__")
            i += 1
        body = [t for t in toks[i + 1:] if t.type not in self.t_WS]
        if body and (body[0].value == "##" or body[-1].value == "##"):
            t = body[0] if body[0].value == "##" else body[-1]
            raise self.at_token(t, "'##' cannot appear at either end of a macro expansion")
        for a, b in zip(body, body[1:] + [None]):
            if a.value == "#" and (b is None or b.value not in params):
                raise self.at_token(a, "'#' is not followed by a macro parameter")

    def undef(self, tokens):
        self.check_macro_name(tokens, "undef")
        return super().undef(tokens)

    def include(self, tokens, original_line):
        if not self.tokenstrip(list(tokens)):
            raise self.directive_error('#include expects "FILENAME" or <FILENAME>')
        d = self.lastdirective
        here = (self.user_file(d.source), d.lineno) if d is not None else ("<source>", 1)
        if len(self.include_chain) >= MAX_INCLUDE_DEPTH:
            raise self.directive_error(f"#include nested too deeply (more than {MAX_INCLUDE_DEPTH} levels: "
                                       f"{_chain_text(self.include_chain + [here])})")
        return self.included(super().include(tokens, original_line), here)

    def included(self, tokens, here: tuple):
        """pcpp's #include token stream, `here` on the include chain while it is read."""
        self.include_chain.append(here)
        try:
            yield from tokens
        finally:
            self.include_chain.pop()

    def evalexpr(self, tokens):
        self.check_defined(self.tokenstrip(list(tokens)))
        self.expanding_condition = True
        try:
            return super().evalexpr(tokens)
        finally:
            self.expanding_condition = False

    def expand_macros(self, tokens, expanding_from=[]):
        """pcpp's expansion; an #if/#elif operand that expands to nothing is an
        error, as in gcc and nvcc ("#if with no expression", the caret at the
        line's end), where pcpp would read it as 0."""
        if not getattr(self, "expanding_condition", False):
            return super().expand_macros(tokens, expanding_from)
        self.expanding_condition = False        # the outermost expansion only
        out = super().expand_macros(tokens, expanding_from)
        self.condition_tokens = out
        if all(t.type in self.t_WS or t.type in self.t_COMMENT for t in out):
            raise self.directive_error(f"#{self.lastdirective.value} with no expression", at_end=True)
        return out

    def check_defined(self, toks: list) -> None:
        """gcc's errors for a malformed 'defined' operator in #if (pcpp reads it as 0)."""
        toks = [t for t in toks if t.type not in self.t_WS]
        for i, t in enumerate(toks):
            if t.value != "defined":
                continue
            nxt = toks[i + 1:i + 4]
            if nxt and nxt[0].value == "(":
                if len(nxt) < 2 or nxt[1].type != self.t_ID:
                    raise self.at_end_or(nxt[1:], 'operator "defined" requires an identifier')
                if len(nxt) < 3 or nxt[2].value != ")":
                    raise self.at_end_or(nxt[2:], "missing ')' after \"defined\"")
            elif not nxt or nxt[0].type != self.t_ID:
                raise self.at_end_or(nxt, 'operator "defined" requires an identifier')

    def at_end_or(self, toks: list, msg: str) -> CompileError:
        """The caret at the first of `toks`, or past the directive's end where there is none."""
        return self.at_token(toks[0], msg) if toks else self.directive_error(msg, at_end=True)

    def on_directive_handle(self, directive, toks, ifpassthru, precedingtoks):
        self.last_operand = self.tokenstrip(list(toks))
        self.track_conditional(directive)
        return super().on_directive_handle(directive, toks, ifpassthru, precedingtoks)

    def track_conditional(self, directive) -> None:
        """gcc's errors for #else/#elif/#endif out of place (pcpp lets '#elif'
        after '#else' through, and says 'Misplaced #endif'); skipped groups count."""
        name = directive.value
        if name in ("if", "ifdef", "ifndef"):
            self.conditionals.append([name, False])
        elif name in ("elif", "else", "endif"):
            if not self.conditionals:
                raise self.at_token(directive, f"#{name} without #if")
            if name == "endif":
                self.conditionals.pop()
            elif self.conditionals[-1][1]:
                raise self.at_token(directive, f"#{name} after #else")
            elif name == "else":
                self.conditionals[-1][1] = True

    def missing_operand(self) -> Optional[CompileError]:
        """pcpp indexes an enabled #if/#ifdef/#ifndef/#elif's first operand
        unchecked: an IndexError right after one with no operand is that."""
        d = self.lastdirective.value if self.lastdirective is not None else ""
        if getattr(self, "last_operand", None):
            return None
        if d in ("ifdef", "ifndef"):
            return self.directive_error(f"no macro name given in #{d} directive")
        if d in ("if", "elif"):
            return self.directive_error(f"#{d} with no expression")
        return None

    def on_file_open(self, is_system_include, includepath):
        norm = includepath.replace("\\", "/")
        marker = "/" + _VIRTUAL + "/"
        if marker in norm:
            name = norm.split(marker, 1)[1]
            if name in HEADERS:
                return io.StringIO(HEADERS[name])
            raise IOError(includepath)
        with open(includepath, "r", encoding="utf-8") as fh:
            text = without_bom(fh.read())
        self.file_lines.setdefault(includepath, text.split("\n"))
        check_comments(text, self.user_file(includepath))
        return io.StringIO(text)

    def on_include_not_found(self, is_malformed, is_system_include, curdir, includepath):
        d = self.lastdirective
        file, line = (d.source, d.lineno) if d is not None else ("<source>", 1)
        if is_malformed:
            raise self._err(file, line, f"malformed #include {includepath}")
        if includepath in UNSUPPORTED_HEADERS:
            raise self._err(file, line, UNSUPPORTED_HEADERS[includepath])
        kind = "system header" if is_system_include else "include file"
        raise self._err(file, line, f"{kind} '{includepath}' not found")

    def on_directive_unknown(self, directive, toks, ifpassthru, precedingtoks):
        if directive.value == "error":
            text = "".join(t.value for t in toks).strip()
            raise self._err(directive.source, directive.lineno, f"#error {text}")
        if directive.value == "warning":
            return True
        if directive.value == "pragma":
            return None   # passed through; the parser's input drops it
        raise self._err(directive.source, directive.lineno,
                        f"unknown preprocessor directive '#{directive.value}'")

    def on_comment(self, tok):
        # keep the comment's width (and its newlines) so columns stay true
        tok.value = re.sub(r"[^\n]", " ", tok.value)
        return True


def without_bom(text: str) -> str:
    """The text without a leading UTF-8 byte-order mark (editors on Windows
    write one; nvcc skips it), so that columns count from the first character."""
    return text[1:] if text.startswith("\ufeff") else text


# what can hold a '/*' that opens no comment: a comment, a string or a character
# literal; group 1 is a '/*' whose comment never closes
_COMMENT_SCAN = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|(/\*)', re.S)


def check_comments(text: str, file: str) -> None:
    """A '/*' comment left open to the end of `file` is gcc's 'unterminated
    comment' at its start (pcpp would read it as the operators '/' and '*')."""
    if "/*" not in text:
        return
    for m in _COMMENT_SCAN.finditer(text):
        if m.group(1) is not None:
            line = text.count("\n", 0, m.start()) + 1
            col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
            src = text.split("\n")[line - 1].rstrip("\r")
            raise CompileError("unterminated comment", Loc(file, line, col), src)


def _gcc_words(msg: str) -> str:
    """pcpp's message for an error in the words gcc uses."""
    m = re.match(r"Unterminated #\s*(\w+)", msg)
    if m:
        return f"unterminated #{m.group(1)}"
    m = re.match(r"Macro (\w+) requires (\d+) arguments but was passed (\d+)", msg)
    if m:
        name, want, got = m.group(1), int(m.group(2)), int(m.group(3))
        if got < want:
            return f'macro "{name}" requires {want} arguments, but only {got} given'
        return f'macro "{name}" passed {got} arguments, but takes just {want}'
    m = re.match(r"Macro (\w+) must have at least (\d+) arguments?", msg)
    if m:
        return f'macro "{m.group(1)}" requires at least {m.group(2)} arguments'
    if msg == "Missing ')' in macro arguments":
        return "missing ')' in macro parameter list"
    return f"preprocessor: {msg}"


def _macro_call_column(msg: str) -> Optional[re.Pattern]:
    """Where on its line the macro call a pcpp message names starts."""
    m = re.match(r"Macro (\w+) (?:requires|must have)", msg)
    return re.compile(r"\b" + re.escape(m.group(1)) + r"\s*\(") if m else None


def _chain_text(chain: list) -> str:
    """An #include chain as 'a.cu:1 -> b.cuh:3 -> ...', cut after its first repeat."""
    out, seen = [], set()
    for file, line in chain:
        out.append(f"{os.path.basename(file)}:{line}")
        if (file, line) in seen:
            out.append("...")
            break
        seen.add((file, line))
    return " -> ".join(out)


def preprocess(text: str, filename: str = "<source>", include_dirs: tuple = (),
               defines: Optional[dict] = None, arch: Optional[int] = None) -> Preprocessed:
    """Run the C preprocessor over `text`; predefines __CUDACC__, __NVCC__ and
    __CUDA_ARCH__ (when `arch`, e.g. 900, is given, as nvcc does in its device pass)."""
    text = without_bom(text)
    file_lines: dict = {filename: text.split("\n")}
    check_comments(text, filename)
    pp = _PP(file_lines)
    pp.define("__CUDACC__ 1")
    pp.define("__NVCC__ 1")
    pp.define("__GPUEMU__ 1")
    if arch is not None:
        pp.define(f"__CUDA_ARCH__ {int(arch)}")
    for k, v in (defines or {}).items():
        _define_option(pp, str(k), v)
    for d in include_dirs:
        pp.add_path(str(d))
    pp.add_path(_VIRTUAL)
    try:
        pp.parse(text, filename)
        out = io.StringIO()
        pp.write(out)
    except CompileError:
        raise
    except IndexError as e:
        err = pp.missing_operand()
        if err is None:
            raise CompileError(f"preprocessor: {e}", Loc(filename, 1, 1), None) from None
        raise err from None
    except OutputDirective:  # pragma: no cover - pcpp internal control flow
        raise CompileError("preprocessor failed", Loc(filename, 1, 1), None)
    except Exception as e:  # pcpp bug or unexpected input: still one diagnostic
        raise CompileError(f"preprocessor: {e}", Loc(filename, 1, 1), None) from None
    return _line_table(out.getvalue(), filename, file_lines)


def _define_option(pp: _PP, name: str, value) -> None:
    """A -D option (NAME, NAME=VALUE or NAME(args)=VALUE); its diagnostics name
    the option, as gcc's "<command-line>" ones do, not a source line."""
    opt = f"-D{name}" + (f"={value}" if value not in (None, "1") else "")

    def bad(msg: str) -> CompileError:
        return CompileError(f"command-line option {opt}: {msg}", Loc("<command-line>", 1, 3), opt)
    if not name:
        raise bad("no macro name given")
    if not re.fullmatch(r"[A-Za-z_]\w*(\([\w\s,.]*\))?", name):
        raise bad("macro names must be identifiers")
    try:
        pp.define(f"{name} {value}" if value is not None else f"{name} 1")   # NAME=: empty
    except CompileError as e:
        raise bad(e.message.replace("preprocessor: ", "")) from None


def _same_file_key(name: str) -> str:
    try:
        return os.path.normcase(os.path.abspath(name))
    except (TypeError, ValueError):  # pragma: no cover - odd names
        return name


def _line_table(out: str, filename: str, file_lines: dict) -> Preprocessed:
    lines = out.split("\n")
    cur_file, cur_line = filename, 1
    # pcpp may spell a file differently in its #line markers (absolute or
    # relative); report every file as the user named it
    known = {_same_file_key(f): f for f in file_lines}
    known[_same_file_key(filename)] = filename
    kept: list = []
    mapping: list = []
    for raw in lines:
        m = _LINE_RE.match(raw)
        if m:
            cur_line = int(m.group(1))
            if m.group(2) is not None:
                cur_file = m.group(2).replace("\\\\", "\\")
                if cur_file not in file_lines:
                    cur_file = known.get(_same_file_key(cur_file), cur_file)
            kept.append("")
            mapping.append((cur_file, max(cur_line - 1, 1)))
            continue
        d = _DIRECTIVE_RE.match(raw)
        if d and d.group(1) == "pragma":
            raw = ""  # #pragma unroll etc.: hints only
        elif "_Pragma" in raw:     # the operator form, blanked to its width
            raw = _PRAGMA_OP.sub(lambda m: " " * len(m.group()), raw)
        kept.append(raw)
        mapping.append((cur_file, cur_line))
        cur_line += 1
    return Preprocessed("\n".join(kept), mapping, file_lines, kept)
