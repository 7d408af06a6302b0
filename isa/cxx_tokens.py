"""The thin layer of C++ that CUDA samples use, rewritten on the token stream
before parsing, with every token keeping the user's position.

- namespaces: `namespace n { ... }` is flattened (its names become file-scope
  names), `namespace cg = cooperative_groups;` is an alias, `using namespace
  cooperative_groups;` makes the bare cooperative-groups names visible;
  `n::f` is `f`, and `cg::name` / `cooperative_groups::name` becomes ONE
  token spelled `cg::name` that the checker knows (cooperative_groups.py);
- `operator +` becomes one name token `operator+` (operators.py);
- `static_cast<T>(e)`, `reinterpret_cast<T>(e)`, `const_cast<T>(e)` become
  the C cast `((T)(e))`;
- `template <...> <function definition>` is taken out of the stream and kept
  as a `TemplateDef` (its tokens), instantiated by the checker on demand
  (templates.py); `template __global__ void k<float>(float *);` (explicit
  instantiation) is kept as a request; `template <...> struct S { ... };`
  is kept as a `ClassTemplateDef` (class_templates.py instantiates it per
  argument list, `class_instance_tokens`), `template <> struct S<int> {..};`
  among its `specialisations`;
- a known template name followed by `<args>` becomes one token carrying the
  argument token lists in `.targs` (the C++ rule that a template name
  followed by `<` opens an argument list, ISO C++ [temp.names]).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from lark import Token

from .diagnostics import CompileError
from .token_scan import skip_align
from .unsupported import KEYWORDS as UNSUPPORTED_KEYWORDS
from .texture_fetch import FETCHES as TEXTURE_FETCHES   # tex2D<float>(...): built-in templates

CG = "cooperative_groups"
# the cooperative-groups names we provide (CUDA C Programming Guide,
# "Cooperative Groups"); types and templates among them
CG_TYPES = frozenset({"thread_block", "thread_block_tile", "coalesced_group", "thread_group", "grid_group"})
CG_TEMPLATES = frozenset({"thread_block_tile", "tiled_partition", "plus", "less", "greater", "bit_and",
                          "bit_or", "bit_xor"})
CG_NAMES = CG_TYPES | CG_TEMPLATES | frozenset({
    "this_thread_block", "coalesced_threads", "sync", "reduce", "this_grid", "inclusive_scan",
    "exclusive_scan"})
_CASTS = ("static_cast", "reinterpret_cast", "const_cast")
# words that can begin the type of a conversion function (`operator const T *()`)
_CONVERSION_WORDS = frozenset({"void", "char", "short", "int", "long", "float", "double", "signed", "unsigned",
                               "bool", "const", "volatile", "struct"})


def _is_kernel(toks: list) -> bool:
    """A function's tokens declare a __global__ one (before its parameter list)."""
    return any(str(x) == "__global__" for x in toks[:next((k for k, x in enumerate(toks) if str(x) == "("),
                                                          len(toks))])


def _decl_word(t: Token) -> bool:
    """A word of a declaration's specifiers (`const unsigned int`, `constexpr T`)."""
    return str(t) in _CONVERSION_WORDS or str(t) in ("constexpr", "static", "__device__") or t.type == "TYPE_NAME"


class TToken(Token):
    """A token the rewriter made; `targs` holds template argument token lists."""
    targs: Optional[list] = None
    static_member: bool = False     # '::n' after a template-id (namespaces(), template_ids())


_QUALIFIED_BY_TEMPLATE_ID = ("names qualified by a template-id ('S<int>::x': static member functions, nested "
                             "types, members defined outside their class) are not supported")


@dataclass
class TemplateParam:
    kind: str                 # 'type' | 'value'
    name: str
    type_toks: list           # the declared type of a value parameter
    default: Optional[list]   # default argument tokens
    tok: Token


@dataclass
class TemplateDef:
    """A function template: its parameters and the tokens of the function."""
    name: str
    params: list              # list[TemplateParam]
    toks: list                # the function definition, without `template <...>`
    tok: Token                # the `template` keyword (for diagnostics)
    ast: object = None        # the parsed FunctionDef, filled by the checker
    overloads: list = field(default_factory=list)   # of the first of a name: the later templates of it
    index: int = 0            # which template of its name (0: the first)


@dataclass
class ClassTemplateDef:
    """A class template: its parameters and the tokens `struct Name { ... };`
    (instantiated per argument list by class_templates.py)."""
    name: str
    params: list              # list[TemplateParam]
    toks: list                # `struct Name { ... };`
    tok: Token                # the `template` keyword (for diagnostics)
    args: Optional[list] = None   # a specialisation's argument tokens (`<bool, 1>`, partial: `<T *>`)
    specialisations: list = field(default_factory=list)   # of a class template: explicit and partial ones
    # of a class template: its static data members defined outside it (`template <class T> const int
    # S<T>::n = sizeof(T);`, `template <> const int S<char>::n = 7;`), each one of these with
    # `member` its name, `args` the class's arguments and `toks` the initialiser
    member_defs: list = field(default_factory=list)
    member: str = ""
    named: Optional[Token] = None     # a member definition's class name (`S` of `S<U *>::n`)


@dataclass
class Rewritten:
    toks: list
    templates: dict = field(default_factory=dict)    # name -> TemplateDef
    classes: dict = field(default_factory=dict)      # name -> ClassTemplateDef
    requests: list = field(default_factory=list)     # explicit instantiations: name tokens


def _new(kind: str, value: str, at: Token, targs=None) -> TToken:
    t = TToken.new_borrow_pos(kind, value, at)
    t.targs = targs
    return t


def _fresh_tok(t: Token) -> TToken:
    """A copy of a token (the pre-pass retypes tokens in place)."""
    return _new(t.type, str(t), t, getattr(t, "targs", None))


def _adjacent(a: Token, b: Token) -> bool:
    return a.end_pos == b.start_pos


def _is_scope(toks: list, i: int) -> bool:
    """toks[i], toks[i+1] spell '::'."""
    return i + 1 < len(toks) and str(toks[i]) == ":" and str(toks[i + 1]) == ":" and \
        _adjacent(toks[i], toks[i + 1])


def _match(toks: list, i: int, open_: str, close: str) -> int:
    """Index of the token closing the bracket at toks[i]."""
    depth = 0
    for j in range(i, len(toks)):
        v = str(toks[j])
        if v == open_:
            depth += 1
        elif v == close:
            depth -= 1
            if depth == 0:
                return j
    return -1


def match_angle(toks: list, i: int) -> int:
    """Index of the '>' closing the template argument list opened at toks[i]
    ('<'); a '>>' closes two lists (C++11). -1 when unclosed."""
    depth = 0
    paren = 0
    for j in range(i, len(toks)):
        v = str(toks[j])
        if v in ("(", "["):
            paren += 1
        elif v in (")", "]"):
            paren -= 1
            if paren < 0:
                return -1
        elif paren == 0:
            if v == "<":
                depth += 1
            elif v == ">":
                depth -= 1
            elif v == ">>":
                depth -= 2
            elif v in (";", "{", "}"):
                return -1
            if depth <= 0:
                return j if depth == 0 else -1
    return -1


def split_args(toks: list) -> list:
    """Split tokens at top-level commas."""
    out, cur, depth = [], [], 0
    for t in toks:
        v = str(t)
        if v in ("(", "[", "<", "{"):
            depth += 1
        elif v in (")", "]", ">", "}"):
            depth -= 1
        elif v == ">>":
            depth -= 2
        if v == "," and depth == 0:
            out.append(cur)
            cur = []
        else:
            cur.append(t)
    if cur or out:
        out.append(cur)
    return out


class _Rewriter:
    def __init__(self, ts):
        self.ts = ts
        self.aliases: dict = {CG: CG}
        self.user_ns: set = set()
        self.using_cg = False
        self.methods_of: dict = {}      # struct tag -> names of its member functions
        self.enums: dict = {}           # enum tag -> whether it is scoped (enum class / enum struct)
        self.struct_tags: set = set()
        self.static_names: set = set()  # 'S::n' of the structs' static data members (methods())

    def err(self, msg: str, tok: Token) -> CompileError:
        return self.ts.error(msg, tok)

    # ------------------------------------------------ namespaces and '::'
    def namespaces(self, toks: list) -> list:
        out: list = []
        ns_stack: list = []         # brace depth at which each namespace opened
        depth = 0
        i = 0
        n = len(toks)
        while i < n:
            t = toks[i]
            v = str(t)
            if v == "namespace":
                j = i + 1
                name = str(toks[j]) if j < n and toks[j].type in ("IDENT", "TYPE_NAME") else None
                if name is not None:
                    j += 1
                if j < n and str(toks[j]) == "=" and name is not None:
                    k, target = self.qualified(toks, j + 1)
                    if not target:
                        raise self.err("expected a namespace name after '='", toks[min(j + 1, n - 1)])
                    if k >= n or str(toks[k]) != ";":
                        raise self.err("expected ';' after the namespace alias", toks[min(k, n - 1)])
                    head = target[0]
                    if head not in self.aliases and head not in self.user_ns:
                        raise self.err(f"unknown namespace '{'::'.join(target)}'", toks[j + 1])
                    self.aliases[name] = self.aliases.get(head, head)
                    i = k + 1
                    continue
                if j < n and str(toks[j]) == "{":
                    if name is not None:
                        self.user_ns.add(name)
                    depth += 1
                    ns_stack.append(depth)
                    i = j + 1
                    continue
                raise self.err("expected '{' or '=' after the namespace name", toks[min(j, n - 1)])
            if v == "enum":
                j = i + 2 if i + 1 < n and str(toks[i + 1]) in ("class", "struct") else i + 1
                if j < n and toks[j].type in ("IDENT", "TYPE_NAME"):
                    self.enums[str(toks[j])] = j == i + 2
            tag = skip_align(toks, i + 1) if v == "struct" and not (out and str(out[-1]) == "enum") else n
            if tag < n and toks[tag].type in ("IDENT", "TYPE_NAME"):
                self.struct_tags.add(str(toks[tag]))
            if v == "using" and i + 2 < n and toks[i + 1].type in ("IDENT", "TYPE_NAME") and \
                    str(toks[i + 2]) == "=":
                i = self.alias_declaration(toks, i, out)
                continue
            if v == "using":
                k = i + 1
                is_ns = k < n and str(toks[k]) == "namespace"
                if is_ns:
                    k += 1
                k, target = self.qualified(toks, k)
                if k >= n or str(toks[k]) != ";":
                    raise self.err("'using' is supported only as 'using namespace N;' or 'using N::name;'", t)
                head = target[0] if target else ""
                if head == "std":
                    raise self.err("the C++ standard library is not supported", toks[i + 1])
                if is_ns and self.aliases.get(head) == CG:
                    self.using_cg = True
                i = k + 1
                continue
            if v == "{":
                depth += 1
            elif v == "}":
                if ns_stack and ns_stack[-1] == depth:
                    ns_stack.pop()
                    depth -= 1
                    i += 1
                    continue
                depth -= 1
            if (t.type in ("IDENT", "TYPE_NAME") and _is_scope(toks, i + 1)) or \
                    (_is_scope(toks, i) and (not out or str(out[-1]) not in (")",)) and i + 2 < n
                     and toks[i + 2].type in ("IDENT", "TYPE_NAME")):
                if _is_scope(toks, i) and out and str(out[-1]) in (">", ">>") and _adjacent(out[-1], t):
                    if i + 2 < n and toks[i + 2].type == "IDENT" and not (
                            i + 3 < n and str(toks[i + 3]) in ("(", ":", "<")):
                        # S<int>::n, a static data member: template_ids() joins it to its template-id
                        out.append(_new("IDENT", "::" + str(toks[i + 2]), toks[i + 2]))
                        out[-1].static_member = True
                        i += 3
                        continue
                    raise self.err(_QUALIFIED_BY_TEMPLATE_ID, t)
                k, parts = self.qualified(toks, i)
                if len(parts) == 2 and parts[0] in self.struct_tags and not (k < n and str(toks[k]) == "("):
                    out.append(_new("IDENT", "::".join(parts), t))     # S::n, a static data member
                else:
                    out.append(self.resolve(parts, t))
                i = k
                continue
            out.append(t)
            i += 1
        return out

    def alias_declaration(self, toks: list, i: int, out: list) -> int:
        """`using N = type-id;` (C++11) is `typedef type-id' N;`: the name goes
        before the array bounds (`using A = int[4];` -> `typedef int A[4];`).
        Appends the rewritten tokens (through namespaces() for `a::b` names)
        to `out`; returns the index after the ';'."""
        n = len(toks)
        k = i + 3
        depth = 0
        while k < n and not (depth == 0 and str(toks[k]) == ";"):
            depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(str(toks[k]), 0)
            k += 1
        if k >= n:
            raise self.err("expected ';' after the alias declaration", toks[i])
        body = toks[i + 3:k]
        if not body:
            raise self.err("expected a type after '='", toks[i + 2])
        if any(str(x) == "(" for x in body):
            raise self.err("alias declarations of function types are not supported", toks[i])
        cut = next((j for j, x in enumerate(body) if str(x) == "["), len(body))
        name = _new("IDENT", str(toks[i + 1]), toks[i + 1])
        out += self.namespaces([_new("TYPEDEF", "typedef", toks[i])] + body[:cut] + [name] + body[cut:] +
                               [toks[k]])
        return k + 1

    def qualified(self, toks: list, i: int) -> tuple:
        """Parse `a::b::c` (or `::c`) from toks[i]: (next index, parts)."""
        parts = []
        n = len(toks)
        if _is_scope(toks, i):
            i += 2
        while i < n and toks[i].type in ("IDENT", "TYPE_NAME"):
            parts.append(str(toks[i]))
            if _is_scope(toks, i + 1):
                i += 3
            else:
                i += 1
                break
        return i, parts

    def resolve(self, parts: list, at: Token) -> Token:
        if not parts:
            raise self.err("expected a name after '::'", at)
        if len(parts) == 1:
            return _new("IDENT", parts[0], at)
        head = self.aliases.get(parts[0], parts[0])
        if head == "std":
            raise self.err("the C++ standard library is not supported", at)
        if head == CG:
            if len(parts) != 2 or parts[1] not in CG_NAMES:
                raise self.err(f"'{'::'.join(parts)}' is not part of the cooperative groups we support "
                               f"(this_thread_block, tiled_partition, coalesced_threads, sync, reduce, ...)", at)
            return _new("TYPE_NAME" if parts[1] in CG_TYPES else "IDENT", "cg::" + parts[1], at)
        inner = parts
        while len(inner) > 2 and inner[0] in self.user_ns:
            inner = inner[1:]
        if len(inner) == 2 and inner[0] in self.enums:
            # E::A: a scoped enum's enumerator keeps its qualified name, which the
            # checker declares; a plain enum's is the bare name (C++11 allows both)
            return _new("IDENT", "::".join(inner) if self.enums[inner[0]] else inner[1], at)
        if parts[0] in self.user_ns:
            return _new("IDENT", parts[-1], at)
        if parts[0] in self.struct_tags:
            raise self.err("member functions are supported only when defined inside their struct", at)
        raise self.err(f"unknown namespace '{parts[0]}' (only namespaces defined in this file, "
                       f"std and cooperative_groups are known)", at)

    def bare_cg(self, toks: list) -> list:
        """After `using namespace cooperative_groups;`: bare cg names."""
        if not self.using_cg:
            return toks
        defined = {str(toks[i + 1]) for i in range(len(toks) - 2)
                   if toks[i + 1].type == "IDENT" and str(toks[i + 2]) == "(" and
                   (toks[i].type == "TYPE_NAME" or str(toks[i]) in ("void", "int", "float", "*", "double",
                                                                    "unsigned", "bool", "long", "char"))}
        out = []
        for i, t in enumerate(toks):
            v = str(t)
            prev = str(toks[i - 1]) if i else ""
            if t.type in ("IDENT", "TYPE_NAME") and v in CG_NAMES and v not in defined and \
                    prev not in (".", "->", "struct", "enum"):
                t = _new("TYPE_NAME" if v in CG_TYPES else "IDENT", "cg::" + v, t)
            out.append(t)
        return out

    # ---------------------------------------------------------- operators
    def operators(self, toks: list) -> list:
        """`operator +` (`operator[]`, `operator<<=`, ...) becomes one name
        token 'operator+' (operators.py); operators we do not route to the
        user's function are refused here, at the keyword."""
        from .operators import SUPPORTED, REFUSED
        out: list = []
        skip = 0
        for i, t in enumerate(toks):
            if skip:
                skip -= 1
                continue
            if str(t) != "operator":
                out.append(t)
                continue
            after = [str(x) for x in toks[i + 1:i + 3]]
            op = "".join(after) if after in (["[", "]"], ["(", ")"]) else (after[0] if after else "")
            if op in REFUSED:
                raise self.err(REFUSED[op], t)
            if op not in SUPPORTED:
                if i + 1 < len(toks) and (toks[i + 1].type in ("IDENT", "TYPE_NAME") or
                                          str(toks[i + 1]) in _CONVERSION_WORDS):
                    out.append(t)       # a conversion function `operator T *()` (struct_body)
                    continue
                raise self.err("conversion operators (operator T()) are not supported", t)
            out.append(_new("IDENT", "operator" + op, t))
            skip = 2 if op in ("[]", "()") else 1
        return out

    # ---------------------------------------------------------- C++ casts
    def casts(self, toks: list) -> list:
        out: list = []
        i = 0
        n = len(toks)
        while i < n:
            t = toks[i]
            v = str(t)
            if v in _CASTS:
                if i + 1 >= n or str(toks[i + 1]) != "<":
                    raise self.err(f"expected '<' after '{v}'", t)
                close = match_angle(toks, i + 1)
                if close < 0 or close + 1 >= n or str(toks[close + 1]) != "(" or str(toks[close]) != ">":
                    raise self.err(f"expected '{v}<type>(expression)'", t)
                end = _match(toks, close + 1, "(", ")")
                if end < 0:
                    raise self.err(f"unclosed '(' after '{v}<...>'", toks[close + 1])
                inner = self.casts(toks[close + 2:end])
                ty = toks[i + 2:close]
                out += [_new("LPAR", "(", t), _new("LPAR", "(", t)] + ty + [_new("RPAR", ")", toks[close])] + \
                       [_new("LPAR", "(", toks[close + 1])] + inner + [_new("RPAR", ")", toks[end]),
                                                                      _new("RPAR", ")", toks[end])]
                i = end + 1
                continue
            out.append(t)
            i += 1
        return out

    # ----------------------------------------------------------- templates
    def templates(self, toks: list, rw: Rewritten) -> list:
        out: list = []
        i = 0
        n = len(toks)
        while i < n:
            t = toks[i]
            if str(t) != "template":
                if getattr(t, "static_member", False) and i + 1 < n and str(toks[i + 1]) == "=":
                    # `const int S<int>::n = 5;`: the member of S's explicit specialisation
                    k = len(out)
                    while k and str(out[k - 1]) not in (";", "{", "}"):
                        k -= 1
                    semi = next((j for j in range(i, n) if str(toks[j]) == ";"), n - 1)
                    depth = sum((str(x) == "{") - (str(x) == "}") for x in out[:k])
                    if depth == 0 and self.member_definition(out[k:] + toks[i:semi + 1], 0, [], t, rw) is not None:
                        del out[k:]
                        i = semi + 1
                        continue
                out.append(t)
                i += 1
                continue
            if i + 1 < n and str(toks[i + 1]) == "<":
                close = match_angle(toks, i + 1)
                if close < 0 or str(toks[close]) != ">":
                    raise self.err("unclosed template parameter list", toks[i + 1])
                params = self.template_params(toks[i + 2:close], t)
                start = close + 1
                if start < n and str(toks[start]) in ("struct", "class", "union"):
                    i = self.class_template(toks, start, params, t, rw)
                    continue
                semi = next((k for k in range(start, n) if str(toks[k]) in (";", "{", "(", "=")), n)
                if semi < n and str(toks[semi]) in (";", "=") and any(getattr(x, "static_member", False)
                                                                      for x in toks[start:semi]):
                    if str(toks[semi]) == "=":      # `template <class T> const int S<T>::n = sizeof(T);`
                        end = self.member_definition(toks, start, params, t, rw)
                        if end is None:
                            raise self.err("expected a class template's static data member before '='",
                                           toks[semi])
                        i = end + 1
                        continue
                    i = semi + 1        # `template <class T> const int S<T>::n;`: defined in its class
                    continue
                if not params:
                    raise self.err("explicit specialisations of function templates (template <>) are not supported",
                                   t)
                if start < n and str(toks[start]) in ("using", "typedef"):
                    raise self.err("alias templates are not supported (function templates are)", toks[start])
                end, name = self.function_extent(toks, start, t)
                body = toks[start:end + 1]
                if str(body[-1]) == ";":      # a declaration: the definition must follow
                    i = end + 1
                    continue
                if name in rw.templates:       # an overloaded function template (overloads.py)
                    first = rw.templates[name]
                    if _is_kernel(first.toks) or _is_kernel(body):
                        raise self.err(f"overloading the __global__ function template '{name}' is not supported "
                                       f"(get_function finds a kernel by its name alone)", t)
                    first.overloads.append(TemplateDef(name, params, body, t, index=len(first.overloads) + 1))
                else:
                    rw.templates[name] = TemplateDef(name, params, body, t)
                i = end + 1
                continue
            # explicit instantiation: template __global__ void k<float>(float *);
            j = i + 1
            while j < n and str(toks[j]) != ";":
                j += 1
            decl = toks[i + 1:j]
            for k in range(len(decl) - 1):
                if decl[k].type in ("IDENT", "TYPE_NAME") and str(decl[k + 1]) == "<":
                    close = match_angle(decl, k + 1)
                    if close > 0:
                        rw.requests.append(decl[k:close + 1])
                        break
            else:
                raise self.err("explicit instantiation needs template arguments: template void f<int>(int);", t)
            i = j + 1
        return out

    def member_definition(self, toks: list, start: int, params: list, at: Token, rw: Rewritten):
        """`const int S<T>::n = init;` from toks[start]: kept among S's
        member_defs (class_templates.member_inits puts the initialiser on the
        member's declaration in the instance); the index of its ';', or None
        when toks[start:] is not one (its words, a class template's id, '::n =')."""
        n = len(toks)
        m = next((k for k in range(start, n) if getattr(toks[k], "static_member", False)), None)
        c = next((c for c in range(start, m or start) if str(toks[c]) in rw.classes and c + 1 < m and
                  str(toks[c + 1]) == "<" and match_angle(toks, c + 1) == m - 1), None)
        if c is None or c == start or not all(_decl_word(x) for x in toks[start:c]) or m + 1 >= n or \
                str(toks[m + 1]) != "=":
            return None
        end = next((k for k in range(m, n) if str(toks[k]) == ";"), None)
        if end is None:
            raise self.err("expected ';' after the static data member's initialiser", toks[-1])
        close = toks[m - 1]
        args = toks[c + 2:m - 1] + ([_new("RELOP", ">", close)] if str(close) == ">>" else [])
        rw.classes[str(toks[c])].member_defs.append(
            ClassTemplateDef(str(toks[c]), params, toks[m + 2:end], at, args, member=str(toks[m])[2:],
                             named=toks[c]))
        return end

    def class_template(self, toks: list, start: int, params: list, at: Token, rw: Rewritten) -> int:
        """Keep `template <...> struct Name { ... };` as a ClassTemplateDef;
        returns the index after it. A declaration alone (`struct Name;`)
        declares nothing we need."""
        n = len(toks)
        key = toks[start]
        j = start + 1
        if j >= n or toks[j].type not in ("IDENT", "TYPE_NAME"):
            raise self.err("a class template needs a name", key)
        name = str(toks[j])
        j += 1
        args = None
        if j < n and str(toks[j]) == "<":       # a specialisation, partial when it has params
            close = match_angle(toks, j)
            if close < 0:
                raise self.err(f"unclosed template argument list of '{name}'", toks[j])
            if name not in rw.classes:
                raise self.err(f"{'partial' if params else 'explicit'} specialisation of '{name}' before its "
                               f"class template", toks[start + 1])
            args = toks[j + 1:close] + ([_new("RELOP", ">", toks[close])] if str(toks[close]) == ">>" else [])
            j = close + 1
        elif not params:
            raise self.err(f"expected the template arguments of the explicit specialisation: "
                           f"'template <> struct {name}<...>'", toks[j])
        if j < n and str(toks[j]) == ";":
            return j + 1
        if j < n and str(toks[j]) == ":":
            raise self.err("inheritance is not supported", toks[j])
        if j >= n or str(toks[j]) != "{":
            raise self.err(f"expected '{{' after 'struct {name}'", toks[min(j, n - 1)])
        end = _match(toks, j, "{", "}")
        if end < 0:
            raise self.err("expected '}' at end of input", toks[-1])
        if end + 1 >= n or str(toks[end + 1]) != ";":
            raise self.err(f"expected ';' after the class template '{name}'", toks[end])
        inner = next((x for x in toks[j:end] if str(x) == "template"), None)
        if inner is not None:
            raise self.err("member templates are not supported", inner)
        body = [toks[start], toks[start + 1]] + toks[j:end + 2]    # struct Name { ... };
        if args is not None:
            rw.classes[name].specialisations.append(ClassTemplateDef(name, params, body, at, args))
            return end + 2
        if name in rw.classes or name in rw.templates:
            raise self.err(f"redefinition of template '{name}'", at)
        rw.classes[name] = ClassTemplateDef(name, params, body, at)
        return end + 2

    def template_params(self, toks: list, at: Token) -> list:
        params = []
        for p in split_args(toks):
            if not p:
                raise self.err("empty template parameter", at)
            default = None
            for k, x in enumerate(p):
                if str(x) == "=":
                    default, p = p[k + 1:], p[:k]
                    break
            if not p:
                raise self.err("template parameter without a name", at)
            name_tok = p[-1]
            if name_tok.type not in ("IDENT", "TYPE_NAME"):
                raise self.err("template parameter without a name", name_tok)
            if str(p[0]) in ("typename", "class"):
                if len(p) != 2:
                    raise self.err("template template parameters are not supported", p[0])
                params.append(TemplateParam("type", str(name_tok), [], default, name_tok))
            elif str(p[0]) == "template":
                raise self.err("template template parameters are not supported", p[0])
            else:
                if any(str(x) == "..." or str(x) == "." for x in p):
                    raise self.err("variadic templates are not supported", p[0])
                params.append(TemplateParam("value", str(name_tok), p[:-1], default, name_tok))
        return params

    def function_extent(self, toks: list, start: int, at: Token) -> tuple:
        """(index of the function's closing '}' or ';', its name)."""
        n = len(toks)
        j = start
        name = None
        depth = 0
        while j < n:
            v = str(toks[j])
            if v in ("__launch_bounds__", "__align__") and j + 1 < n and str(toks[j + 1]) == "(":
                j = _match(toks, j + 1, "(", ")") + 1
                continue
            if v == "(" and depth == 0 and name is None:
                if j == start or toks[j - 1].type not in ("IDENT", "TYPE_NAME"):
                    raise self.err("only function templates are supported", at)
                name = str(toks[j - 1])
                j = _match(toks, j, "(", ")")
                if j < 0:
                    raise self.err("unclosed '(' in the template's parameter list", at)
                j += 1
                continue
            if name is not None and v == ";":
                return j, name
            if name is not None and v == "{":
                end = _match(toks, j, "{", "}")
                if end < 0:
                    raise self.err("expected '}' at end of input", toks[-1])
                return end, name
            if v in (";", "{") and name is None:
                raise self.err("only function templates are supported (class, variable and alias "
                               "templates are not)", at)
            j += 1
        raise self.err("unexpected end of input in a template", at)

    # ------------------------------------------------------ member functions
    def methods(self, toks: list) -> list:
        """Member functions defined in a struct become free functions named
        'S::f' after the struct's declaration, with a first parameter
        `S *this` (`const S *this` for a const member function); the checker
        resolves members and calls (typecheck.py)."""
        out: list = []
        i = 0
        n = len(toks)
        while i < n:
            t = toks[i]
            tag = skip_align(toks, i + 1)
            if str(t) in ("struct", "class", "union") and (i == 0 or str(toks[i - 1]) != "enum") and tag + 1 < n and toks[tag].type in ("IDENT", "TYPE_NAME"):
                j = tag + 1
                if str(toks[j]) == ":":
                    raise self.err("inheritance is not supported", toks[j])
                if str(toks[j]) == "{":
                    end = _match(toks, j, "{", "}")
                    if end < 0:
                        raise self.err("expected '}' at end of input", toks[-1])
                    name = toks[tag]
                    body, funcs, statics = self.struct_body(toks[j + 1:end], name)
                    at = len(out) - (1 if out and str(out[-1]) == "typedef" else 0)
                    out[at:at] = statics        # before the struct: its members' sizes may name them
                    out += toks[i:j + 1] + body
                    k = end
                    while k < n and str(toks[k]) != ";":
                        k += 1
                    out += toks[end:k + 1] + funcs
                    self.static_names.update(str(x) for x in statics if str(x).startswith(f"{name}::"))
                    i = k + 1
                    continue
            if str(t) in self.static_names and i + 1 < n and str(toks[i + 1]) == ";" and out and \
                    _decl_word(out[-1]):
                # `const int S::n;`, the definition of a static member its class initialises
                while out and _decl_word(out[-1]):
                    out.pop()
                i += 2
                continue
            out.append(t)
            i += 1
        return out

    def struct_body(self, toks: list, name: Token) -> tuple:
        keep: list = []
        funcs: list = []
        protos: list = []
        statics: list = []
        i = 0
        n = len(toks)
        while i < n:
            j = i
            paren = None
            while j < n and str(toks[j]) not in (";", "{"):
                if str(toks[j]) == "(" and paren is None:
                    paren = j
                    j = _match(toks, j, "(", ")")
                    if j < 0:
                        raise self.err("unclosed '('", toks[paren])
                j += 1
            if j >= n:
                keep += toks[i:]
                break
            if str(toks[j]) == ";" and any(str(x) == "static" for x in toks[i:j]) and \
                    (paren is None or any(str(x) == "=" for x in toks[i:paren])):
                statics += self.static_member(toks[i:j + 1], name)
                i = j + 1
                continue
            if str(toks[j]) == ";" and paren is not None and toks[paren - 1].type == "IDENT" and \
                    str(toks[paren - 1]) not in ("__align__", "alignas") and \
                    not any(str(x) in UNSUPPORTED_KEYWORDS for x in toks[i:j]):   # those named by token_scan
                raise self.err("member functions are supported only when defined inside their struct",
                               toks[paren - 1])
            if str(toks[j]) == ";" or paren is None:
                if str(toks[j]) == "{":     # a nested struct or union body
                    end = _match(toks, j, "{", "}")
                    keep += toks[i:end + 1]
                    i = end + 1
                    continue
                keep += toks[i:j + 1]
                i = j + 1
                continue
            # a member function: specs name ( params ) [const] { body }
            end = _match(toks, j, "{", "}")
            fname = toks[paren - 1]
            specs = list(toks[i:paren - 1])
            op = next((k for k in range(i, paren) if str(toks[k]) == "operator"), None)
            if op is not None and op + 1 < paren and (toks[op + 1].type in ("IDENT", "TYPE_NAME") or
                                                      str(toks[op + 1]) in _CONVERSION_WORDS):
                # a conversion function `operator T *()`: 'S::operator T *' returning T *
                # (conversion_functions.py calls it)
                # an `explicit` one is named 'S::explicit operator T', which only a cast
                # or a condition calls
                explicit = any(str(x) == "explicit" for x in toks[i:op])
                specs = [x for x in toks[i:op] if str(x) != "explicit"] + list(toks[op + 1:paren])
                fname = _new("IDENT", "explicit " * explicit + "operator " +
                             " ".join(str(x) for x in toks[op + 1:paren]), toks[op])
            elif str(fname) == "operator" or (paren >= 2 and str(toks[paren - 2]) == "operator"):
                raise self.err("operator overloading is not supported", fname)
            if str(fname) == str(name) or (paren >= 2 and str(toks[paren - 2]) == "~"):
                raise self.err(f"constructors and destructors are not supported (struct '{name}')", fname)
            if any(str(x) in ("virtual", "static") for x in toks[i:paren]):
                w = next(x for x in toks[i:paren] if str(x) in ("virtual", "static"))
                raise self.err("virtual functions are not supported" if str(w) == "virtual"
                               else "static member functions are not supported", w)
            close = _match(toks, paren, "(", ")")
            if not any(str(x) == "__device__" for x in specs):
                raise self.err("a member function used in device code needs __device__", fname)
            params = toks[paren + 1:close]
            after = [x for x in toks[close + 1:j] if str(x) != "const"]
            if after:
                raise self.err("unexpected tokens after the member function's parameter list", after[0])
            this = [_new("TYPE_NAME", str(name), fname), _new("STAR", "*", fname), _new("IDENT", "this", fname)]
            if any(str(x) == "const" for x in toks[close + 1:j]):   # a const member function
                this.insert(0, _new("CONST", "const", fname))
            if params and not (len(params) == 1 and str(params[0]) == "void"):
                this.append(_new("COMMA", ",", fname))
            else:
                params = []
            head = specs + [_new("IDENT", f"{name}::{fname}", fname), toks[paren]] + this + params + [toks[close]]
            # every member function is declared before the first body, so that a
            # body may call one defined later in the class (C++ [class.mem]p7)
            protos += [_fresh_tok(x) for x in head] + [_new("SEMICOLON", ";", toks[close])]
            funcs += head + toks[j:end + 1]
            self.methods_of.setdefault(str(name), set()).add(str(fname))
            i = end + 1
        if statics:     # the bare name in a data member's declaration (int v[n];) or another's value is S::n
            names = {str(t) for t in statics if str(t).startswith(f"{name}::")}
            keep, statics = ([_new("IDENT", f"{name}::{x}", x) if x.type == "IDENT" and f"{name}::{x}" in names and
                              (k == 0 or str(part[k - 1]) not in (".", "->")) else x for k, x in enumerate(part)]
                             for part in (keep, statics))
        return keep, protos + funcs, statics

    def static_member(self, toks: list, name: Token) -> list:
        """`static const int n = 3;` (or constexpr) in struct S: the file-scope
        constant `const int S::n = 3;` after the struct, which `S::n`, `S<int>::n`
        and the bare `n` in S's member functions name (lower.py)."""
        eq = next((k for k, x in enumerate(toks) if str(x) in ("=", "{")), None)
        if eq is None and "const" in [str(x) for x in toks] and "__device__" not in [str(x) for x in toks]:
            return []       # `static const int n;`: defined after the class, `const int S::n = 3;`
        if not any(str(x) in ("const", "constexpr") for x in toks) or eq is None or eq == 0:
            w = next(x for x in toks if str(x) == "static")
            raise self.err("static data members are supported only as constants with an initialiser "
                           "(static const int n = 3; or static constexpr)", w)
        decl = toks[eq - 1]
        if decl.type != "IDENT":
            raise self.err("expected the static data member's name before its initialiser", decl)
        member = _new("IDENT", f"{name}::{decl}", decl)
        return [x for x in toks[:eq - 1] if str(x) != "static"] + [member] + list(toks[eq:])

    # ------------------------------------------------------ template-ids
    def template_ids(self, toks: list, names, classes=frozenset(), own: str = "") -> list:
        """Template-ids as single tokens; a class template's is a TYPE_NAME.
        `own`: the class template whose body this is (its bare name there is
        the injected class name, [temp.local])."""
        out: list = []
        i = 0
        n = len(toks)
        while i < n:
            t = toks[i]
            v = str(t)
            prev = str(toks[i - 1]) if i else ""
            if t.type in ("IDENT", "TYPE_NAME") and i + 1 < n and str(toks[i + 1]) == "<" and \
                    prev not in (".", "->") and (v in names or v in classes or v in TEXTURE_FETCHES
                                                 or (v.startswith("cg::") and v[4:] in CG_TEMPLATES)):
                close = match_angle(toks, i + 1)
                if close < 0:
                    raise self.err(f"unclosed template argument list of '{v}'", toks[i + 1])
                inner = toks[i + 2:close]
                if str(toks[close]) == ">>":   # `A<B<int>>`: the inner list closes here too
                    inner = inner + [_new("RELOP", ">", toks[close])]
                args = [self.template_ids(a, names, classes, own) for a in split_args(inner)]
                if v in classes and close + 1 < n and getattr(toks[close + 1], "static_member", False):
                    # S<int>::n: one name 'S::n' with S's arguments (class_templates.static_member)
                    out.append(_new("IDENT", v + str(toks[close + 1]), t, args))
                    i = close + 2
                    continue
                tid = _new("TYPE_NAME" if v in classes else t.type, v, t, args)
                out.append(tid)
                i = close + 1
                continue
            if getattr(t, "static_member", False):
                raise self.err(_QUALIFIED_BY_TEMPLATE_ID, t)
            if v in classes and v != own and t.type in ("IDENT", "TYPE_NAME") and \
                    prev not in (".", "->", "struct"):
                raise self.err(f"argument list for class template '{v}' is missing", t)
            out.append(t)
            i += 1
        return out


def rewrite(ts) -> Rewritten:
    """Apply the C++ rewrites to ts.toks; returns the new token list, the
    function templates and explicit instantiation requests."""
    r = _Rewriter(ts)
    toks = r.namespaces(r.operators(ts.toks))
    toks = r.bare_cg(toks)
    toks = r.casts(toks)
    rw = Rewritten([])
    toks = r.templates(toks, rw)
    toks = r.methods(toks)
    names = set(rw.templates)
    classes = set(rw.classes)
    rw.toks = r.template_ids(toks, names, classes)
    for td in [f for ft in rw.templates.values() for f in [ft] + ft.overloads] + \
            [c for ct in rw.classes.values() for c in [ct] + ct.specialisations]:
        td.toks = r.template_ids(td.toks, names, classes, td.name if isinstance(td, ClassTemplateDef) else "")
        if getattr(td, "args", None) is not None:
            td.args = [r.template_ids(a, names, classes) for a in split_args(td.args)]
        for md in getattr(td, "member_defs", ()):
            md.toks = r.template_ids(md.toks, names, classes)
            md.args = [r.template_ids(a, names, classes) for a in split_args(md.args)]
        for p in td.params:
            if p.default:
                p.default = r.template_ids(p.default, names, classes)
    rw.requests = [r.template_ids(q, names, classes) for q in rw.requests]
    return rw


def rewrite_name(ts, names, classes=frozenset()) -> list:
    """A name expression ('reduce6<float, 256, true>') as rewritten tokens."""
    r = _Rewriter(ts)
    toks = r.namespaces(ts.toks)
    return r.template_ids(toks, names, classes)


def class_instance_tokens(ts, ctd: ClassTemplateDef, canon: str, inits: Optional[dict] = None) -> list:
    """The tokens of one instance of a class template: `struct <canon> {..};`
    with the injected class name (the bare template name in its body) spelled
    canon, and member functions as free functions `canon::f` (methods()).
    `inits`: static data member name -> (its initialiser given outside the
    class, whether it may replace one in the class) (class_templates.member_inits),
    put on its declaration."""
    toks = list(ctd.toks)
    out = [toks[0], _new("IDENT", canon, toks[1])]
    for k, t in enumerate(toks[2:], 2):
        if str(t) == ctd.name and getattr(t, "targs", None) is None and str(toks[k - 1]) not in (".", "->"):
            t = _new("TYPE_NAME", canon, t)
        out.append(t)
    if inits:
        out = _initialised(out, inits, ts)
    return _Rewriter(ts).methods(out)


def _initialised(toks: list, inits: dict, ts) -> list:
    """toks (`struct S { static const int n; };`) with each static data
    member named in `inits` declared `static const int n = <init>;` last in
    the class, as its definition follows the class (its value may name the
    class's other static members)."""
    out: list = []
    last: list = []
    depth = 0
    stmt = 0                # where the statement at depth 1 began in out
    for t in toks:
        v = str(t)
        if v == ";" and depth == 1 and any(str(x) == "static" for x in out[stmt:]):
            eq = next((k for k in range(stmt, len(out)) if str(out[k]) in ("=", "{")), len(out))
            name = str(out[eq - 1])
            if name in inits and eq > stmt:
                init, replaces = inits[name]
                if eq < len(out) and not replaces and init:
                    raise ts.error(f"static data member '{name}' has already been initialised in its class", init[0])
                last += out[stmt:eq] + [_new("EQUAL", "=", t)] + list(init) + [t]
                del out[stmt:]
                continue
        if v == "}" and depth == 1:
            out += last
        out.append(t)
        if v in ("{", "}"):
            depth += 1 if v == "{" else -1
        if v in ("{", "}", ";") and depth == 1:
            stmt = len(out)
    return out
