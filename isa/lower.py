"""Lowering of one function body to isa.ir: scopes, statements, local
declarations. Expressions are in expressions.py, brace initialisers in
initialisers.py, calls in calls.py; this class combines them."""
from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Optional

from . import ast as A
from . import ir
from .const_fold import fold
from .conversions import promote, const_value
from .declarations import QType
from .diagnostics import CompileError
from .conversion_functions import conversion_value, operand_value
from .expressions import ExpressionLowering
from .initialisers import InitialiserLowering
from .nesting import MAX_IR_DEPTH, too_deep
from .places import is_int, tname, strip_spaces, deep_of


class _Scope:
    def __init__(self, parent: Optional["_Scope"]):
        self.parent = parent
        self.names: dict = {}
        self.local_mark = 0         # the function's local bytes when the scope opened

    def lookup(self, name: str):
        s = self
        while s is not None:
            if name in s.names:
                return s.names[name]
            s = s.parent
        return None


class FunctionLowering(ExpressionLowering, InitialiserLowering):
    """Lowers one function body (or, with `for_constants`, constant expressions)."""

    def __init__(self, checker, info):
        from .typecheck import Sym
        self.Sym = Sym
        self.ck = checker
        self.info = info
        self.fn = info.fn if info is not None else None
        self.scope = _Scope(None)
        self.temps: list = []
        self.local_bytes = 0        # per-thread local variables of the open scopes, laid out as the JIT does
        self.addr_taken: set = set()
        self.loop_depth = 0
        self.switch_depth = 0
        self.const_only = False
        self.extra_lookup = None

    @classmethod
    def for_constants(cls, checker, scope_lookup) -> "FunctionLowering":
        low = cls(checker, None)
        low.const_only = True
        low.extra_lookup = scope_lookup
        return low

    # ----------------------------------------------------------- utilities
    def error(self, msg: str, loc: ir.Loc) -> CompileError:
        return self.ck.error(msg, loc)

    def lookup(self, name: str):
        sym = self.scope.lookup(name)
        if sym is None and self.extra_lookup is not None:
            sym = self.extra_lookup(name)
        if sym is None:
            sym = self.ck.lookup_global(name)
        if sym is None and "::" not in name and self.method_struct() is not None:
            # a static data member named bare in its struct's member function
            sym = self.ck.lookup_global(f"{self.method_struct().name}::{name}")
            sym = sym if sym is not None and sym.kind != "func" else None
        return sym

    def method_struct(self):
        """The struct whose member function is being lowered, or None."""
        if self.info is None or "::" not in self.fn.name:
            return None
        owner = self.fn.name.rsplit("::", 1)[0]
        t = self.ck.tags.get(owner) or self.ck.tags.get(owner.split("<", 1)[0])
        return t if isinstance(t, ir.StructType) else None

    def member_of_this(self, e: A.Name):
        """`x` inside a member function of a struct with member x: this->x."""
        st = self.method_struct()
        if st is None or self.scope.lookup(e.name) is not None:
            return None
        try:
            st.field(e.name)
        except KeyError:
            return None
        return A.Member(e.loc, A.Name(e.loc, "this"), e.name, True)

    def declare(self, name: str, sym, loc: ir.Loc) -> None:
        if name in self.scope.names:
            raise self.error(f"redefinition of '{name}'", loc)
        self.scope.names[name] = sym

    def push(self):
        self.scope = _Scope(self.scope)
        self.scope.local_mark = self.local_bytes

    def pop(self):
        # the scope's locals are dead: a later scope's take their memory (the JIT's
        # frame shares it, gpuemu/jit/storage.py, as ptxas does)
        self.local_bytes = self.scope.local_mark
        self.scope = self.scope.parent

    def builtin_out_pointers(self) -> frozenset:
        """The built-ins taking out-pointers (frexp, modf, sincos) whose name no
        user function or template shares."""
        from .float_parts import OUT_POINTER
        tps = self.ck.templates
        return frozenset(n for n in OUT_POINTER if n not in self.ck.overloads
                         and not (tps is not None and n in tps.defs))

    def temp(self, t: ir.Type, loc: ir.Loc, storage: str = "reg") -> ir.Var:
        """A compiler temporary, declared at the top of the function."""
        if self.const_only:
            raise self.error("expression is not a constant", loc)
        v = ir.Var(f"__tmp{len(self.temps)}", t, storage, loc)
        self.temps.append(v)
        return v

    def base_type(self, specs):
        saved = self.ck.local_scope
        self.ck.local_scope = None if self.const_only else self
        try:
            return self.ck.base_type(specs, self.lookup)
        finally:
            self.ck.local_scope = saved

    def type_of_name(self, tn: A.TypeName) -> QType:
        q = self.base_type(tn.specs)
        return self.ck.apply_declarator(q, A.Declarator(tn.loc, None, tn.ops), self.lookup)

    def count_local(self, name: str, t: ir.Type, loc: ir.Loc, align: int = 1) -> None:
        """Add a local variable to the thread's local frame; past the arch's
        limit (512 KB per thread on cc >= 2.0, Guide "Features and Technical
        Specifications") the declaration is an error. Variables of scopes that
        are never open at once share memory (ptxas, -arch=sm_90: 300000-byte
        arrays in the two branches of an if take "300000 bytes stack frame",
        two in one scope 600000)."""
        limit = self.ck.max_local_bytes
        size = max(int(t.size), 1)
        align = max(int(t.align), align, 1)
        self.local_bytes = (self.local_bytes + align - 1) // align * align + size
        if self.local_bytes <= limit:
            return
        what = f"{limit} bytes ({limit // 1024} KB) per thread"
        if size > limit:
            raise self.error(f"'{name}' needs {size} bytes of local memory per thread; the limit is {what}", loc)
        raise self.error(f"local variables of '{self.fn.name}' need {self.local_bytes} bytes per thread with "
                         f"'{name}'; the limit is {what}", loc)

    # ------------------------------------------------------------ function
    def lower(self) -> None:
        fdef = self.info.decl
        fn = self.fn
        _find_addr_taken(fdef.body, self.addr_taken, self.builtin_out_pointers())
        prologue = []
        self.push()
        owner = fn.name.split("::", 1)[0] if self.method_struct() is not None else ""
        _find_ref_args(fdef.body, self.ck, self.addr_taken, owner)
        for v, q, byref, ref in zip(fn.params, self.info.params_q, self.info.byref, self.info.refs):
            if v.name.startswith("<param"):
                continue
            if byref or ref:
                sym = self.Sym("var", v, q, v.loc)
                sym.byref = True
                self.declare(v.name, sym, v.loc)
                continue
            if v.name in self.addr_taken and not isinstance(v.type, (ir.StructType, ir.ArrayType)):
                # a parameter whose address is taken lives in local memory
                local = ir.Var(v.name, v.type, "local", v.loc, q.volatile)
                prologue.append(ir.Decl(v.loc, local))
                prologue.append(ir.ExprStmt(v.loc, ir.Store(v.type, v.loc, self.addr_of_var(local),
                                                            ir.VarRef(v.type, v.loc, v))))
                self.declare(v.name, self.Sym("var", local, q, v.loc), v.loc)
            else:
                self.declare(v.name, self.Sym("var", v, q, v.loc), v.loc)
        body = self.compound(fdef.body, new_scope=False)
        self.pop()
        decls = [ir.Decl(t.loc, t) for t in self.temps]
        body.stmts = decls + prologue + body.stmts
        deep = too_deep(body)
        if deep is not None:
            raise self.error(f"expression or statement nesting too deep (more than {MAX_IR_DEPTH} levels)", deep)
        fn.body = body
        # file-scope __shared__ variables used by this function
        used = set()
        _collect_vars(body, used)
        for v in self.ck.file_shared:
            if v in used and v not in fn.shared_vars:
                fn.shared_vars.append(v)

    # ---------------------------------------------------------- statements
    def compound(self, c: A.Compound, new_scope: bool = True) -> ir.Block:
        if new_scope:
            self.push()
        out = []
        for item in c.items:
            self.stmt(item, out)
        if new_scope:
            self.pop()
        return ir.Block(c.loc, out)

    def stmt_as_block(self, s: A.Stmt) -> ir.Stmt:
        out: list = []
        self.push()
        self.stmt(s, out)
        self.pop()
        if len(out) == 1:
            return out[0]
        return ir.Block(s.loc, out)

    def stmt(self, s: A.Stmt, out: list) -> None:
        if isinstance(s, (A.If, A.Switch)) and s.init is not None:
            # `if (init; cond)`: init, then the statement, in a scope of their own
            self.push()
            inner: list = []
            self.stmt(s.init, inner)
            self.stmt(replace(s, init=None), inner)
            self.pop()
            out.append(ir.Block(s.loc, inner))
            return
        if isinstance(s, A.Compound):
            out.append(self.compound(s))
        elif isinstance(s, A.DeclStmt):
            self.local_declaration(s.decl, out)
        elif isinstance(s, A.StaticAssert):
            self.ck.static_assert(s, self.lookup)
        elif isinstance(s, A.ExprStmt):
            if s.expr is not None:
                from .cooperative_groups import sync_statement
                generic = sync_statement(self, s.expr)
                out.append(generic if generic is not None else ir.ExprStmt(s.loc, self.effect(s.expr)))
        elif isinstance(s, A.If):
            c = self.condition(s.cond)
            then = self.stmt_as_block(s.then)
            other = self.stmt_as_block(s.other) if s.other is not None else None
            out.append(ir.If(s.loc, c, then, other))
        elif isinstance(s, A.While):
            c = self.condition(s.cond)
            self.loop_depth += 1
            body = self.stmt_as_block(s.body)
            self.loop_depth -= 1
            out.append(ir.Loop(s.loc, c, body))
        elif isinstance(s, A.DoWhile):
            self.loop_depth += 1
            body = self.stmt_as_block(s.body)
            self.loop_depth -= 1
            c = self.condition(s.cond)
            out.append(ir.Loop(s.loc, c, body, None, True))
        elif isinstance(s, A.For):
            self.push()
            inner: list = []
            if s.init is not None:
                self.stmt(s.init, inner)
            c = self.condition(s.cond) if s.cond is not None else None
            step = self.effect(s.step) if s.step is not None else None
            self.loop_depth += 1
            body = self.stmt_as_block(s.body)
            self.loop_depth -= 1
            self.pop()
            inner.append(ir.Loop(s.loc, c, body, step))
            if len(inner) == 1:
                out.append(inner[0])
            else:
                out.append(ir.Block(s.loc, inner))
        elif isinstance(s, A.Switch):
            out.append(self.switch(s))
        elif isinstance(s, (A.Case, A.Default)):
            raise self.error("case label outside a switch, or inside a nested block of it (not supported)",
                             s.loc)
        elif isinstance(s, A.Break):
            if self.loop_depth == 0 and self.switch_depth == 0:
                raise self.error("'break' statement not in a loop or switch", s.loc)
            out.append(ir.Break(s.loc))
        elif isinstance(s, A.Continue):
            if self.loop_depth == 0:
                raise self.error("'continue' statement not in a loop", s.loc)
            out.append(ir.Continue(s.loc))
        elif isinstance(s, A.Return):
            out.append(self.return_stmt(s))
        else:
            raise self.error("unsupported statement", s.loc)

    def return_stmt(self, s: A.Return):
        if self.info.ret_ref:     # T &f(): the address of the place returned
            if s.value is None:
                raise self.error(f"non-void function '{self.fn.name}' should return a value", s.loc)
            q = self.info.ret_q
            addr, _ = self.bind_reference(s.value, q.type, q.const, "the returned reference")
            if addr.type != self.fn.ret:
                addr = ir.Cast(self.fn.ret, s.value.loc, addr)
            return ir.Return(s.loc, addr)
        if self.info.sret is not None:
            t = self.info.sret
            if s.value is None:
                raise self.error(f"non-void function '{self.fn.name}' should return a value", s.loc)
            out = self.fn.params[-1]
            copy = self.struct_copy(ir.VarRef(out.type, s.loc, out), s.value, t, s.value.loc)
            return ir.Block(s.loc, [ir.ExprStmt(s.loc, copy), ir.Return(s.loc, None)])
        ret = self.fn.ret
        if s.value is None:
            if not isinstance(ret, ir.VoidType):
                raise self.error(f"non-void function '{self.fn.name}' should return a value", s.loc)
            return ir.Return(s.loc, None)
        if isinstance(ret, ir.VoidType):
            v = self.rvalue(s.value, allow_void=True)
            if isinstance(v.type, ir.VoidType):   # `return f();` with f void
                return ir.Block(s.loc, [ir.ExprStmt(s.loc, v), ir.Return(s.loc, None)])
            raise self.error(f"void function '{self.fn.name}' should not return a value", s.value.loc)
        v = conversion_value(self, s.value, ret, self.info.ret_q.pconst)
        v = self.convert(self.rvalue(s.value) if v is None else v, ret, s.value.loc, "return")
        return ir.Return(s.loc, v)

    def switch(self, s: A.Switch) -> ir.Switch:
        v = operand_value(self, s.value)
        scoped = ir.scoped_enum(v.type)
        v = self.unscoped(v)
        if not is_int(v.type):
            raise self.error(f"switch value must have integer type, not '{tname(v.type)}'", s.value.loc)
        t = promote(v.type)
        v = self.convert(v, t, s.value.loc)
        body: list = []
        cases: list = []
        seen = set()
        self.switch_depth += 1
        saved_loop = self.loop_depth
        self.push()
        items = s.body.items if isinstance(s.body, A.Compound) else [s.body]
        for item in items:
            while isinstance(item, (A.Case, A.Default)):
                if isinstance(item, A.Case):
                    # `case sq(2):` runs the constexpr function at compile time
                    low = FunctionLowering.for_constants(self.ck, self.lookup) \
                        if _calls_constexpr(self, item.value) else self
                    cv = low.rvalue(item.value)
                    if ir.scoped_enum(cv.type) != scoped:
                        raise self.error(f"case value of type '{tname(cv.type)}' in a switch on "
                                         f"'{scoped or tname(v.type)}'", item.value.loc)
                    cv = fold(self.convert(self.unscoped(cv), t, item.value.loc))
                    if cv is None or isinstance(cv, float):
                        raise self.error("case label must be an integer constant", item.value.loc)
                    if cv in seen:
                        raise self.error(f"duplicate case value {cv}", item.value.loc)
                    seen.add(cv)
                    cases.append((cv, len(body)))
                else:
                    if None in seen:
                        raise self.error("multiple default labels in one switch", item.loc)
                    seen.add(None)
                    cases.append((None, len(body)))
                item = item.stmt
            self.stmt(item, body)
        self.pop()
        self.loop_depth = saved_loop
        self.switch_depth -= 1
        return ir.Switch(s.loc, v, cases, body)

    def condition(self, e: A.Expr) -> ir.Expr:
        """`e` contextually converted to bool (a struct's `explicit operator bool()` too)."""
        v = conversion_value(self, e, ir.BOOL, False, direct=True)
        return self.to_bool(self.rvalue(e) if v is None else v, e.loc)

    # -------------------------------------------------------- declarations
    def local_declaration(self, d: A.Declaration, out: list) -> None:
        specs = d.specs
        storage = set(specs.storage)
        if "typedef" in storage:
            base = self.base_type(specs)
            for item in d.items:
                q = self.ck.apply_declarator(base, item.declarator, self.lookup)
                self.declare(item.declarator.name, self.Sym("typedef", None, q, item.loc), item.loc)
            return
        if not d.items:
            t = self.base_type(specs).type
            spec = next((x for x in specs.types if isinstance(x, A.StructSpec)), None)
            if isinstance(t, ir.StructType) and t.union and spec is not None and spec.tag is None \
                    and spec.members is not None:
                self.anonymous_union(specs, t, d.loc, out)
            return
        for bad in ("__global__", "__constant__", "__host__"):
            if bad in storage:
                raise self.error(f"'{bad}' is not allowed on a local variable", specs.loc)
        if "static" in storage and "__shared__" not in storage:
            raise self.error("static local variables are not supported", specs.loc)
        if "__device__" in storage and "__shared__" not in storage:
            raise self.error("'__device__' is not allowed on a local variable", specs.loc)
        if "extern" in storage and "__shared__" not in storage:
            raise self.error("extern local variables are not supported", specs.loc)
        if any(isinstance(t, tuple) and t[0] == "auto" for t in specs.types):
            for item in d.items:
                self.auto_variable(specs, item, out)
            return
        base = self.base_type(specs)
        for item in d.items:
            self.local_variable(specs, base, item, out)

    def anonymous_union(self, specs: A.DeclSpecs, t: ir.StructType, loc: ir.Loc, out: list) -> None:
        """`union { int i; float f; };` in a block: one unnamed union object
        whose members are names of the block ([class.union.anon]), each a
        reference to its member here."""
        hidden = f"__anonymous_union{len(self.temps)}_{loc.line}_{loc.col}"
        self.local_variable(specs, QType(t), A.InitDeclarator(loc, A.Declarator(loc, hidden, []), None), out)
        for name in ir.member_names(t):
            ref = A.Declarator(loc, name, [("ref", set())])
            self.local_reference(QType(t.field(name).type), A.InitDeclarator(
                loc, ref, A.Member(loc, A.Name(loc, hidden), name, False)), out)

    def auto_variable(self, specs: A.DeclSpecs, item: A.InitDeclarator, out: list) -> None:
        """`auto x = e;` (or C++17's `auto x{e};`): x has e's type (after
        decay), as C++ deduces it."""
        dcl = item.declarator
        if isinstance(item.init, A.InitList) and item.init.direct and len(item.init.items) == 1 and \
                not isinstance(item.init.items[0], A.InitList):
            item = A.InitDeclarator(item.loc, dcl, item.init.items[0])
        if len(specs.types) != 1 or dcl.ops or item.init is None or isinstance(item.init, A.InitList):
            raise self.error("auto is supported only as 'auto name = expression;' or 'auto name{expression};'",
                             dcl.loc)
        if "__shared__" in specs.storage:
            raise self.error("a __shared__ variable cannot be auto", dcl.loc)
        v = self.rvalue(item.init)
        t = v.type
        if isinstance(t, (ir.VoidType, ir.StructType)):
            raise self.error(f"auto cannot deduce a variable from a value of type '{tname(t)}'", item.init.loc)
        q = QType(t, "const" in specs.quals or "constexpr" in specs.storage, "volatile" in specs.quals,
                  *getattr(v, "pq", (False, False)), getattr(v, "group", None), deep_of(v))
        storage_kind = "local" if dcl.name in self.addr_taken else "reg"
        var = ir.Var(dcl.name, t, storage_kind, dcl.loc, q.volatile)
        sym = self.Sym("var", var, q, dcl.loc)
        if q.const and is_int(t) and isinstance(v, ir.Const):
            sym.value = v.value
        if storage_kind == "reg":
            out.append(ir.Decl(dcl.loc, var, v))
        else:
            out.append(ir.Decl(dcl.loc, var))
            out.append(ir.ExprStmt(item.init.loc, ir.Store(t, item.init.loc, self.addr_of_var(var), v)))
        self.declare(dcl.name, sym, dcl.loc)

    def bind_reference(self, init: A.Expr, ty, const: bool, what: str) -> tuple:
        """(address, lvalue) of the place a reference to `ty` (`what`, for
        messages) binds to: a variable or element of that very type."""
        try:
            lv = self.lvalue(init)
        except CompileError as err:
            if "assignable" not in err.message and not err.message.startswith("cannot assign to '"):
                raise
            lv = None
        if lv is None or lv.kind != "mem":
            raise self.error(f"cannot bind {what} to this value "
                             "(it needs a variable or an array element)", init.loc)
        if lv.type != ty and strip_spaces(lv.type) != strip_spaces(ty):
            raise self.error(f"cannot bind a reference to '{tname(ty)}' to a value of type "
                             f"'{tname(lv.type)}'", init.loc)
        if lv.const and not const:
            raise self.error(f"binding {what} to a const value drops const", init.loc)
        return self.typed_addr(lv.addr, ty, init.loc), lv

    def local_reference(self, base: QType, item: A.InitDeclarator, out: list) -> None:
        """`T &r = place;`: r is the place's address, read and written through."""
        dcl = item.declarator
        q = self.ck.apply_declarator(base, A.Declarator(dcl.loc, dcl.name, dcl.ops[:-1]), self.lookup)
        if item.init is None or isinstance(item.init, A.InitList):
            raise self.error(f"reference '{dcl.name}' must be initialised with a variable or element", dcl.loc)
        addr, lv = self.bind_reference(item.init, q.type, q.const, f"the reference '{dcl.name}'")
        var = ir.Var(dcl.name, addr.type, "reg", dcl.loc)
        out.append(ir.Decl(dcl.loc, var, addr))
        sym = self.Sym("var", var, QType(q.type, q.const or lv.const, q.volatile or lv.volatile,
                                         q.pconst, q.pvolatile, deep=q.deep), dcl.loc)
        sym.byref = True
        self.declare(dcl.name, sym, dcl.loc)

    def local_variable(self, specs: A.DeclSpecs, base: QType, item: A.InitDeclarator, out: list) -> None:
        saved = self.direct_init
        self.direct_init = isinstance(item.init, A.InitList) and item.init.direct
        try:
            self._local_variable(specs, base, item, out)
        finally:
            self.direct_init = saved

    def _local_variable(self, specs: A.DeclSpecs, base: QType, item: A.InitDeclarator, out: list) -> None:
        storage = set(specs.storage)
        dcl = item.declarator
        if dcl.ops and dcl.ops[-1][0] == "func":
            raise self.error("local function declarations are not supported", dcl.loc)
        if dcl.ops and dcl.ops[-1][0] == "ref":
            return self.local_reference(base, item, out)
        q = self.ck.apply_declarator(base, dcl, self.lookup)
        t = q.type
        name = dcl.name
        if isinstance(t, ir.VoidType):
            raise self.error(f"variable '{name}' has type void", dcl.loc)
        if "__shared__" in storage:
            if item.init is not None:
                raise self.error("__shared__ variables cannot have an initialiser", item.init.loc)
            extern = "extern" in storage
            if extern and not (isinstance(t, ir.ArrayType) and t.count is None):
                raise self.error("extern __shared__ must be an array of unknown size, like "
                                 "'extern __shared__ float s[]'", dcl.loc)
            if not extern and isinstance(t, ir.ArrayType) and t.count is None:
                raise self.error(f"__shared__ array '{name}' needs a size (or 'extern')", dcl.loc)
            var = ir.Var(name, t, "extern_shared" if extern else "shared", dcl.loc, q.volatile,
                         align=self.ck.align_value(specs.align, self.lookup))
            self.fn.shared_vars.append(var)
            self.declare(name, self.Sym("var", var, q, dcl.loc), dcl.loc)
            return
        if item.init is not None:
            item = A.InitDeclarator(item.loc, item.declarator, self.string_initialiser(t, item.init))
        if isinstance(t, ir.ArrayType) and t.count is None:
            if isinstance(item.init, A.InitList):
                t = ir.ArrayType(t.elem, self.init_list_length(t.elem, item.init))
                q = QType(t, q.const, q.volatile, q.pconst, q.pvolatile, deep=q.deep)
            else:
                raise self.error(f"array '{name}' needs a size", dcl.loc)
        if isinstance(t, (ir.ArrayType, ir.StructType)) or name in self.addr_taken:
            storage_kind = "local"
        else:
            storage_kind = "reg"
        align = self.ck.align_value(specs.align, self.lookup)
        if storage_kind == "local":
            self.count_local(name, t, dcl.loc, align)
        var = ir.Var(name, t, storage_kind, dcl.loc, q.volatile, align=align)
        if q.const and item.init is None:
            raise self.error(f"const variable '{name}' must be initialised", dcl.loc)
        # the name's scope starts at the end of its declarator (C11 6.2.1p7), before
        # the initialiser: 'int x = x;' reads the new x, uninitialised
        init = item.init
        if init is None:
            self.declare(name, self.Sym("var", var, q, dcl.loc), dcl.loc)
            out.append(ir.Decl(dcl.loc, var))
            return
        if storage_kind == "reg" and not isinstance(init, A.InitList):
            sym = self.Sym("var", var, q, dcl.loc)
            self.declare(name, sym, dcl.loc)
            v = conversion_value(self, init, t, q.pconst)     # T *p = SharedMemory<T>();
            low = self
            if "constexpr" in storage and _calls_constexpr(self, init):   # run at compile time
                low = FunctionLowering.for_constants(self.ck, self.lookup)
            v = self.convert(low.rvalue(init) if v is None else v, t, init.loc, "initialise")
            self.check_qual_drop(v, t, init.loc, q.pconst)
            if q.const and is_int(t) and isinstance(v, ir.Const):
                sym.value = v.value     # C++: a const int with a constant initialiser is a constant
            out.append(ir.Decl(dcl.loc, var, v))
            return
        if storage_kind == "reg":   # vector or scalar with braces
            self.declare(name, self.Sym("var", var, q, dcl.loc), dcl.loc)
            items = init.items
            if isinstance(t, ir.VectorType):
                if len(items) > t.count:
                    raise self.error("too many initialisers", init.loc)
                elems = [self.init_item(x, t.elem) for x in items]
                elems += [ir.Const(t.elem, init.loc, const_value(0, t.elem))] * (t.count - len(elems))
                out.append(ir.Decl(dcl.loc, var, ir.MakeVector(t, init.loc, elems)))
            else:
                if len(items) > 1:
                    raise self.error("too many initialisers for a scalar", init.loc)
                v = self.init_item(items[0], t) if items else self.zero(t, init.loc)
                out.append(ir.Decl(dcl.loc, var, v))
            return
        self.declare(name, self.Sym("var", var, q, dcl.loc), dcl.loc)
        out.append(ir.Decl(dcl.loc, var))
        base_addr = self.addr_of_var(var)
        if isinstance(t, ir.StructType) and not isinstance(init, A.InitList):
            out.append(ir.ExprStmt(init.loc, self.struct_copy(base_addr, init, t, init.loc)))
            return
        if isinstance(t, ir.ArrayType) and not isinstance(init, A.InitList):
            raise self.error("an array must be initialised with a brace-enclosed list", init.loc)
        if not isinstance(t, (ir.ArrayType, ir.StructType)):
            v = self.convert(self.rvalue(init), t, init.loc, "initialise") if not isinstance(init, A.InitList) \
                else (self.init_item(init.items[0], t) if init.items
                      else self.zero(t, init.loc))
            out.append(ir.ExprStmt(init.loc, ir.Store(t, init.loc, base_addr, v, var.volatile)))
            return
        # aggregate with a list: every scalar member stored, missing ones zero (C11 6.7.9p21)
        out += [ir.ExprStmt(s.loc, s) for s in self.aggregate_stores(t, base_addr, init)]


def _call_refs(node: A.CallExpr, ck, struct: str) -> list:
    """Which arguments of a call bind to reference parameters. A member
    function (`obj.f(..)`, or `f(..)` inside a member function of `struct`)
    is `S::f(S *this, ..)` (cxx_tokens.py): its flags after `this`. The
    object's type is not known before lowering, so `obj.f` takes the flags of
    every struct's `f` (a variable wrongly kept in memory costs only speed)."""
    if isinstance(node.func, A.Member):
        suffix = "::" + node.func.name
        return _union_refs([i for key, infos in ck.overloads.items() if key.endswith(suffix) for i in infos], 1)
    if not isinstance(node.func, A.Name):
        return []
    name = node.func.name
    if ck.templates is not None and name in ck.templates.defs:
        refs = _union_refs(ck.overloads.get(name, []), 0)
        for td in ck.templates.overload_set(name):      # and those of each template of the name
            fdef = ck.templates.parsed(td)
            ps = fdef.declarator.ops[-1][1] if fdef.declarator.ops and fdef.declarator.ops[-1][0] == "func" else []
            refs = [a or b for a, b in itertools.zip_longest(refs, [
                p.declarator is not None and bool(p.declarator.ops) and p.declarator.ops[-1][0] == "ref"
                and "const" not in p.specs.quals for p in ps], fillvalue=False)]
        return refs
    if name in ck.overloads:
        return _union_refs(ck.overloads[name], 0)
    return _union_refs(ck.overloads.get(f"{struct}::{name}", []) if struct else [], 1)


def _calls_constexpr(low, e) -> bool:
    """Whether expression `e` calls a constexpr function (by name)."""
    if isinstance(e, A.CallExpr) and isinstance(e.func, A.Name):
        sym = low.lookup(e.func.name)
        if sym is not None and sym.kind == "func" and any(i.constexpr for i in low.ck.overloads[e.func.name]):
            return True
    return isinstance(e, A.Node) and any(
        _calls_constexpr(low, x) for k, v in vars(e).items() if k != "loc"
        for x in (v if isinstance(v, list) else [v]) if isinstance(x, A.Node))


def _union_refs(infos: list, skip: int) -> list:
    """Which arguments bind to a reference parameter of any of the overloads
    `infos` (after `skip` leading ones: a member's `this`); the call is not
    resolved yet (a variable wrongly kept in memory costs only speed)."""
    refs: list = []
    for info in infos:
        refs = [a or b for a, b in itertools.zip_longest(refs, info.refs[skip:], fillvalue=False)]
    return refs


def _find_ref_args(node, ck, out: set, struct: str = "") -> None:
    """Names passed to reference parameters (they must live in memory);
    `struct`: the struct whose member function `node` is in, if any."""
    if isinstance(node, A.CallExpr):
        for r, a in zip(_call_refs(node, ck, struct), node.args):
            if r and isinstance(a, A.Name):
                out.add(a.name)
    if ck.operators:      # an operand bound to a free operator's reference parameter
        from .operators import operands
        op, args = operands(node)
        for r, a in zip(_union_refs(ck.overloads.get(f"operator{op}", []), 0) if op else [], args):
            if r and isinstance(a, A.Name):
                out.add(a.name)
    if isinstance(node, A.Declaration):
        for it in node.items:
            if it.declarator.ops and it.declarator.ops[-1][0] == "ref" and isinstance(it.init, A.Name):
                out.add(it.init.name)
    if isinstance(node, A.Node):
        for k, v in vars(node).items():
            if k == "loc":
                continue
            if isinstance(v, A.Node):
                _find_ref_args(v, ck, out, struct)
            elif isinstance(v, list):
                for x in v:
                    if isinstance(x, A.Node):
                        _find_ref_args(x, ck, out, struct)


def _find_addr_taken(node, out: set, out_pointers: frozenset = frozenset()) -> None:
    """Names used under unary '&' (their variables must live in memory),
    but for `&v` passed as an out-pointer of the built-ins `out_pointers`
    (frexp, modf, sincos, remquo: isa/float_parts.py writes v itself)."""
    if isinstance(node, A.CallExpr) and isinstance(node.func, A.Name) and node.func.name in out_pointers \
            and len(node.args) in (2, 3):
        for i, a in enumerate(node.args):
            taken = i > 0 and isinstance(a, A.UnaryOp) and a.op == "&"     # remquo: x, y, &q
            _find_addr_taken(a.a if taken else a, out, out_pointers)
        return
    if isinstance(node, A.UnaryOp) and node.op == "&":
        base = node.a
        while isinstance(base, (A.Member, A.Index)):
            if isinstance(base, A.Member) and base.arrow:
                break
            if isinstance(base, A.Index):
                break
            base = base.a
        if isinstance(base, A.Name):
            out.add(base.name)
    if isinstance(node, A.Node):
        for k, v in vars(node).items():
            if k == "loc":
                continue
            if isinstance(v, A.Node):
                _find_addr_taken(v, out, out_pointers)
            elif isinstance(v, list):
                for x in v:
                    if isinstance(x, A.Node):
                        _find_addr_taken(x, out, out_pointers)


def _collect_vars(node, out: set) -> None:
    if isinstance(node, (ir.VarRef, ir.AddrOf, ir.Assign)):
        out.add(node.var)
    if isinstance(node, (ir.Expr, ir.Stmt)):
        for k, v in vars(node).items():
            if k in ("type", "loc", "var", "func"):
                continue
            if isinstance(v, (ir.Expr, ir.Stmt)):
                _collect_vars(v, out)
            elif isinstance(v, list):
                for x in v:
                    if isinstance(x, (ir.Expr, ir.Stmt)):
                        _collect_vars(x, out)
