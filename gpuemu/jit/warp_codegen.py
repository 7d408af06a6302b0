"""IR -> one native, resumable LLVM function per kernel that runs a whole warp.

Every per-thread value is a 32-lane vector; active masks are i32 bit sets
(bit i = lane i). Structured control flow keeps masks, ISPC style:

- if/else runs `then` under exec & cond and `else` under exec & ~cond,
  skipping a side whose mask is empty; lanes meet again after the statement;
- a loop runs while any lane is active; lanes whose condition fails or that
  `break` wait in the loop's exit mask, lanes that `continue` in its
  continue mask (they rejoin at the step);
- `return` removes lanes until the end of the (inlined) function;
- ?: && || evaluate each side under its own lanes (effects are masked);
- switch: lanes enter at their case label and fall through.

Resumable: the current mask (frame F_CUR), every register variable and every
construct's masks live in the frame, so a warp can stop between statements
and go on from a resume point: at __syncthreads (EV_BARRIER), when the trace
buffer has no room for the next statement's requests (EV_TRACE_FULL, the
statement then runs once after the drain), at a fault (EV_FAULT) and when
the back-edge budget is spent (EV_TIMEOUT).

Counting (native, per source line): warp_instructions counts every executed
operation node (Binary, Unary, Cast, PtrAdd, Load, Store, Intrinsic, Cond,
Logical, MemCopy, Extract, MakeVector), each if/switch/loop-test and each
return/break/continue, once per warp when at least one lane is active;
thread_instructions adds the active lanes. divergent_branches counts an if
or loop test that splits an active mask into two non-empty parts. A call of
a `one_instruction` function (a texture fetch) is one instruction and its
inlined body counts nothing (the texture unit's work; its loads still trace).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import llvmlite.ir as ll

from isa import ir
from isa.diagnostics import CompileError
from gpuemu.memory.trace import MemInstr
from isa.readonly_path import assigned_vars, is_readonly_load

from . import abi, alias_scopes
from .call_hoisting import hoist_calls
from .c_semantics import (bool_binary, cast, float_binary, int_binary, intrinsic, shift,
                          unary)
from .intrinsics_codegen import SYNC_RECORDED, IntrinsicsMixin
from .lane_types import (I1, I8, I32, I64, MASK_VEC, VOIDP, components,
                         is_bool, is_float_t, mem_ll, scalar_ll, slot_bytes, splat)
from .memory_access import get_helper
from .storage import Storage, escaping_scopes
from .tick_batch import TickBuilder
from .use_distance import use_distances

WARP = abi.WARP
FN_TYPE = ll.FunctionType(I32, [VOIDP, VOIDP])

SPIN_LIMIT = 256     # back edges with lanes waiting after a loop before it splits (ITS)

COUNTED = (ir.Binary, ir.Unary, ir.Cast, ir.PtrAdd, ir.Load, ir.Store, ir.Intrinsic,
           ir.Cond, ir.Logical, ir.MemCopy, ir.Extract, ir.MakeVector)

@dataclass
class _Breakable:
    kind: str          # 'loop' | 'switch'
    exit_slot: int
    cont_slot: int = -1


@dataclass
class _FnCtx:
    ret_lanes: int     # frame slot of lanes that returned (i32); -1 in the kernel
    ret_slot: int      # frame slot of the return value; -1 for void
    ret_type: object


def _copy_chunk(e: ir.MemCopy) -> int:
    """Bytes per access of a struct copy: the struct's alignment, at most 8."""
    pt = e.dst.type.pointee if isinstance(e.dst.type, ir.PointerType) else None
    al = min(getattr(pt, "align", 1) or 1, 8)
    while e.nbytes % al:
        al //= 2
    return max(al, 1)


def _mem_count(e) -> int:
    """Trace records an expression can produce (it is call-free)."""
    if e is None:
        return 0
    n = 0
    if isinstance(e, (ir.Load, ir.Store)):
        n = 1
    elif isinstance(e, ir.MemCopy):
        n = 2 * ((e.nbytes + _copy_chunk(e) - 1) // _copy_chunk(e))
    elif isinstance(e, ir.Intrinsic) and (e.name.startswith("atomic_") or e.name in SYNC_RECORDED):
        n = 1
    from .call_hoisting import children
    return n + sum(_mem_count(c) for c in children(e))


class WarpCodegen(IntrinsicsMixin):
    """Generates `warp_fn` for one kernel of an IR module."""

    def __init__(self, module: ir.Module, kernel: ir.Function, llmod: ll.Module,
                 fn_name: str = "warp_fn", its: bool = False):
        self.mod_ir = module
        self.kernel = kernel
        self.m = llmod
        self.fn = ll.Function(llmod, FN_TYPE, fn_name)
        self.fn.args[0].add_attribute("noalias")
        self.st = Storage()
        self.instrs: list = []
        self.resume: list = []          # basic blocks by resume id (id = index + 1)
        self.uncounted = 0              # > 0 inside a one-instruction function's body
        self.breakables: list = []
        self.fnctx = [_FnCtx(-1, -1, ir.VOID)]
        self.hoisted: dict = {}
        self.escaping: set = set()      # ids of scopes whose local memory is not shared (storage.escaping_scopes)
        self.use_dist: dict = {}        # id(load node) -> instructions before its first use
        self.globals_index = {id(g): i for i, g in enumerate(module.globals)}
        # Counter rows ("line slots"): a line of the main file is its own row;
        # a line of an #include'd file gets a row past them (line_files).
        self.main_file = module.filename
        self.main_rows = max(len(module.source.splitlines()), 1) + 2
        self.line_files: dict = {}     # slot -> (file, line)
        self._slot_of: dict = {}       # (file, line) -> slot
        self._drop_memo: dict = {}
        self.libm_used: set = set()
        self._written = None            # Vars the kernel assigns (isa/readonly_path.py)
        # independent thread scheduling (sm_70+): a loop that spins while
        # lanes wait after it splits the warp (EV_SPLIT); every mask the warp
        # restores is then limited to the lanes it owns (F_VALID)
        self.its = its

    # ================================================================ helpers
    @property
    def frame(self):
        return self.fn.args[0]

    @property
    def ctx(self):
        return self.fn.args[1]

    def fptr(self, off, t: ll.Type):
        off = off if isinstance(off, ll.Value) else ll.Constant(I64, off)
        return self.b.bitcast(self.b.gep(self.frame, [off]), t.as_pointer())

    def ctx_field(self, idx: int):
        return self.b.load(self.b.gep(self.ctx64, [ll.Constant(I32, idx)]))

    def ctx_store(self, idx: int, v):
        self.b.store(v, self.b.gep(self.ctx64, [ll.Constant(I32, idx)]))

    def load_i32(self, off):
        return self.b.load(self.fptr(off, I32))

    def store_i32(self, off, v):
        self.b.store(v, self.fptr(off, I32))

    def cur(self):
        return self.load_i32(abi.F_CUR)

    def set_cur(self, v):
        if self.its and not isinstance(v, ll.Constant):
            v = self.b.and_(v, self.load_i32(abi.F_VALID))
        self.store_i32(abi.F_CUR, v)

    def mvec(self, m):
        return self.b.bitcast(m, MASK_VEC)

    def mbits(self, v):
        return self.b.bitcast(v, I32)

    def new_block(self, name: str) -> ll.Block:
        return self.fn.append_basic_block(name)

    def if_nonzero(self, m, name: str):
        """Branch: return (then_bb, after_bb); builder positioned in then."""
        then_bb, after = self.new_block(name), self.new_block(name + "_end")
        self.b.cbranch(self.b.icmp_unsigned("!=", m, ll.Constant(I32, 0)), then_bb, after)
        self.b.position_at_end(then_bb)
        return then_bb, after

    def err(self, msg: str, node) -> CompileError:
        loc = getattr(node, "loc", ir.NOLOC)
        lines = self.mod_ir.source.splitlines()
        src = lines[loc.line - 1] if 0 < loc.line <= len(lines) else None
        return CompileError(msg, loc, src)

    @property
    def nlines(self) -> int:
        return self.main_rows + len(self.line_files)

    def line(self, node) -> int:
        """The counter row of node's source line (see line_files)."""
        loc = getattr(node, "loc", None)
        ln = getattr(loc, "line", 0) or 0
        if ln <= 0 or loc.file in (self.main_file, ir.NOLOC.file):
            return min(max(ln, 0), self.main_rows - 1)
        key = (loc.file, ln)
        if key not in self._slot_of:
            self._slot_of[key] = self.nlines
            self.line_files[self.nlines] = key
        return self._slot_of[key]

    # ------------------------------------------------------------ counters
    def tick(self, node, m, n: int = 1, column: int = 0):
        """warp/thread instruction counters of node's line, under mask m
        (added where the straight-line run ends: tick_batch.py)."""
        if n == 0 or self.uncounted:
            return
        self.b.tick(m, self.line(node), column, n)

    def count_divergence(self, node, taken, not_taken):
        if self.uncounted:
            return
        b = self.b
        both = b.and_(b.icmp_unsigned("!=", taken, ll.Constant(I32, 0)),
                      b.icmp_unsigned("!=", not_taken, ll.Constant(I32, 0)))
        ln = self.line(node)
        p = b.gep(self.counters, [ll.Constant(I64, ln * abi.N_LINE_COUNTERS + 2)])
        b.store(b.add(b.load(p), b.zext(both, I64)), p)

    # ------------------------------------------------------------- slots
    def slot_load(self, off: int, t):
        comps = components(t)
        vals = []
        for i, c in enumerate(comps):
            v = self.b.load(self.fptr(off + i * WARP * max(c.size, 1), ll.VectorType(mem_ll(c), WARP)))
            if is_bool(c):
                v = self.b.trunc(v, MASK_VEC)
            vals.append(v)
        return vals if isinstance(t, ir.VectorType) else vals[0]

    def slot_store(self, off: int, t, value, m=None):
        comps = components(t)
        vals = value if isinstance(t, ir.VectorType) else [value]
        mv = self.mvec(m) if m is not None else None
        for i, (c, v) in enumerate(zip(comps, vals)):
            vt = ll.VectorType(mem_ll(c), WARP)
            p = self.fptr(off + i * WARP * max(c.size, 1), vt)
            if is_bool(c):
                v = self.b.zext(v, vt)
            if mv is not None:
                v = self.b.select(mv, v, self.b.load(p))
            self.b.store(v, p)

    def mask_slot(self) -> int:
        return self.st.alloc_frame(4, 4)

    # ============================================================= building
    def build(self):
        k = self.kernel
        entry = self.fn.append_basic_block("entry")
        self.b = TickBuilder(entry)
        b = self.b
        self.ctx64 = b.bitcast(self.ctx, I64.as_pointer())
        self.counters = b.counters = b.inttoptr(self.ctx_field(abi.C_COUNTERS), I64.as_pointer())
        b.icount = lambda: self.fptr(abi.F_ICOUNT, I64)
        self.ptrbuf = b.alloca(ll.ArrayType(I64, WARP), name="ptrbuf")
        self.databuf = b.alloca(ll.ArrayType(I64, WARP * 2), name="databuf")
        self.auxbuf = b.alloca(ll.ArrayType(I64, WARP * 2), name="auxbuf")
        self.ptrbuf.align = self.databuf.align = self.auxbuf.align = 64
        self.fault_bb = self.new_block("fault")
        with b.goto_block(self.fault_bb):
            b.ret(ll.Constant(I32, abi.EV_FAULT))
        dispatch = b.block
        start = self.new_block("start")
        b.position_at_end(start)
        for v in k.shared_vars:
            if v.storage == "shared":
                self.st.shared_object(v)
        for v in k.shared_vars:
            if v.storage == "extern_shared":
                self.st.shared_object(v)
        self.init_warp()
        body = self.hoist(k)
        self.gen_stmt(body)
        self.finish_kernel()
        # the dispatch switch on the resume point
        b.position_at_end(dispatch)
        sw = b.switch(self.load_i32(abi.F_RESUME), start)
        for i, bb in enumerate(self.resume):
            sw.add_case(ll.Constant(I32, i + 1), bb)
        self.st.freeze()
        alias_scopes.tag(self.fn, self.frame, self.counters)
        return self

    def hoist(self, f: ir.Function) -> ir.Stmt:
        h = self.hoisted.get(id(f))
        if h is None:
            if f.body is None:
                raise self.err(f"function '{f.name}' is declared but never defined", f)
            h = hoist_calls(f.body)
            self.use_dist.update(use_distances(h))
            self.escaping |= escaping_scopes(h)
            self.hoisted[id(f)] = h
        return h

    def init_warp(self):
        """At resume point 0: thread indices per lane, the start mask and
        the kernel parameters copied into register slots."""
        b = self.b
        lane = ll.Constant(ll.VectorType(I32, WARP), list(range(WARP)))
        warp = self.load_i32(abi.F_WARP)
        first = b.mul(warp, ll.Constant(I32, WARP))
        lin = b.add(self.splat_val(first, I32), lane)
        nx1 = b.trunc(self.ctx_field(abi.C_NTID), I32)
        vt = ll.VectorType(I32, WARP)
        # a warp whose lanes all lie in the block's first row (every warp of a
        # 1D block): threadIdx.x is the lane's linear index, y and z are 0; else
        # divisions (scalar on x86: some 64 a warp, most of a small warp's time)
        in_row = b.icmp_unsigned("<", b.add(first, ll.Constant(I32, WARP - 1)), nx1)
        with b.if_else(in_row) as (row, other):
            with row:
                zero = ll.Constant(vt, [0] * WARP)
                for i, v in enumerate((lin, zero, zero)):
                    b.store(v, self.fptr(abi.F_TID + i * 128, vt))
            with other:
                nx = self.splat_val(nx1, I32)
                ny = self.splat_val(b.trunc(self.ctx_field(abi.C_NTID + 1), I32), I32)
                rest = b.udiv(lin, nx)
                for i, v in enumerate((b.urem(lin, nx), b.urem(rest, ny), b.udiv(rest, ny))):
                    b.store(v, self.fptr(abi.F_TID + i * 128, vt))
        self.set_cur(self.load_i32(abi.F_VALID))
        self.store_i32(abi.F_EXITED, ll.Constant(I32, 0))
        # kernel parameters
        params = b.inttoptr(self.ctx_field(abi.C_PARAMS), VOIDP)
        self.param_layout = []
        off = 0
        for p in self.kernel.params:
            t = p.type
            if isinstance(t, ir.ArrayType):
                raise self.err("array parameters are not supported", p)
            off = (off + t.align - 1) // t.align * t.align
            self.param_layout.append((p.name, t, off))
            src = b.gep(params, [ll.Constant(I64, off)])
            if p.storage == "local" or isinstance(t, ir.StructType):
                # struct by value: a copy in each lane's window, read as 'param'
                obj = self.st.local_object(p, space="param")
                loff = self.ctx_field(abi.C_LOCAL_OFF)
                stride = self.ctx_field(abi.C_LOCAL_STRIDE)
                memcpy = intrinsic(self.m, "llvm.memcpy.p0.p0.i64", ll.VoidType(),
                                   [VOIDP, VOIDP, I64, I1])
                for lanei in range(WARP):
                    d = b.add(loff, b.add(b.mul(stride, ll.Constant(I64, lanei)),
                                          ll.Constant(I64, obj.lo)))
                    b.call(memcpy, [b.gep(self.frame, [d]), src, ll.Constant(I64, t.size),
                                    ll.Constant(I1, 0)])
            else:
                comps = components(t)
                vals = []
                for i, c in enumerate(comps):
                    sv = b.load(b.bitcast(b.gep(src, [ll.Constant(I64, i * c.size)]),
                                          mem_ll(c).as_pointer()))
                    if is_bool(c):
                        sv = b.trunc(sv, I1)
                    vals.append(self.splat_val(sv, scalar_ll(c)))
                self.slot_store(self.st.reg_slot(p), t,
                                vals if isinstance(t, ir.VectorType) else vals[0])
            off += t.size
        self.param_bytes = off

    def splat_val(self, v, et: ll.Type):
        b = self.b
        vt = ll.VectorType(et, WARP)
        x = b.insert_element(ll.Constant(vt, ll.Undefined), v, ll.Constant(I32, 0))
        return b.shuffle_vector(x, ll.Constant(vt, ll.Undefined),
                                ll.Constant(ll.VectorType(I32, WARP), [0] * WARP))

    def finish_kernel(self):
        b = self.b
        self.store_i32(abi.F_EXITED, self.load_i32(abi.F_VALID))
        self.store_i32(abi.F_RESUME, ll.Constant(I32, 0x7fffffff))
        b.ret(ll.Constant(I32, abi.EV_EXIT))

    def new_resume(self, name: str) -> tuple:
        bb = self.new_block(name)
        self.resume.append(bb)
        return len(self.resume), bb

    def checkpoint(self, k: int, node):
        """Stop with EV_TRACE_FULL unless the trace has room for k records."""
        if k <= 0:
            return
        b = self.b
        rid, bb = self.new_resume("ckpt")
        b.branch(bb)
        b.position_at_end(bb)
        ln = self.ctx_field(abi.C_TRACE_LEN)
        cap = self.ctx_field(abi.C_TRACE_CAP)
        full = b.icmp_signed(">", b.add(ln, ll.Constant(I64, k)), cap)
        go = self.new_block("ckpt_go")
        stop = self.new_block("ckpt_stop")
        b.cbranch(full, stop, go)
        b.position_at_end(stop)
        self.store_i32(abi.F_RESUME, ll.Constant(I32, rid))
        b.ret(ll.Constant(I32, abi.EV_TRACE_FULL))
        b.position_at_end(go)

    # =========================================================== statements
    def may_drop(self, s) -> bool:
        """Can running s remove lanes from the current mask (break, continue,
        return), as seen by the statements after it?"""
        key = id(s)
        if key in self._drop_memo:
            return self._drop_memo[key]
        r = False
        if isinstance(s, (ir.Break, ir.Continue, ir.Return)):
            r = True
        elif isinstance(s, ir.Block):
            r = any(self.may_drop(x) for x in s.stmts)
        elif isinstance(s, ir.If):
            r = self.may_drop(s.then) or (s.other is not None and self.may_drop(s.other))
        elif isinstance(s, ir.Loop):
            r = self._has_return(s.body)
        elif isinstance(s, ir.Switch):
            r = any(self._has_return(x) or self._has_continue(x) for x in s.body)
        self._drop_memo[key] = r
        return r

    def _walk(self, s):
        yield s
        if isinstance(s, ir.Block):
            for x in s.stmts:
                yield from self._walk(x)
        elif isinstance(s, ir.If):
            yield from self._walk(s.then)
            if s.other is not None:
                yield from self._walk(s.other)
        elif isinstance(s, ir.Loop):
            yield from self._walk(s.body)
        elif isinstance(s, ir.Switch):
            for x in s.body:
                yield from self._walk(x)

    def _has_return(self, s) -> bool:
        return any(isinstance(x, ir.Return) for x in self._walk(s))

    def _has_continue(self, s) -> bool:
        # a continue inside a nested loop belongs to that loop
        if isinstance(s, ir.Continue):
            return True
        if isinstance(s, ir.Loop):
            return False
        if isinstance(s, ir.Block):
            return any(self._has_continue(x) for x in s.stmts)
        if isinstance(s, ir.If):
            return self._has_continue(s.then) or (s.other is not None and self._has_continue(s.other))
        if isinstance(s, ir.Switch):
            return any(self._has_continue(x) for x in s.body)
        return False

    def gen_stmts(self, stmts: list):
        b = self.b
        end = None
        for i, s in enumerate(stmts):
            self.gen_stmt(s)
            if i + 1 < len(stmts) and self.may_drop(s):
                if end is None:
                    end = self.new_block("blk_end")
                go = self.new_block("blk_go")
                b.cbranch(b.icmp_unsigned("==", self.cur(), ll.Constant(I32, 0)), end, go)
                b.position_at_end(go)
        if end is not None:
            b.branch(end)
            b.position_at_end(end)

    def gen_stmt(self, s):
        if isinstance(s, ir.Block):
            self.st.open_scope(len(self.fnctx))
            self.gen_stmts(s.stmts)
            return self.st.close_scope(id(s) in self.escaping)
        if isinstance(s, ir.ExprStmt):
            return self.gen_exprstmt(s)
        if isinstance(s, ir.Decl):
            return self.gen_decl(s)
        if isinstance(s, ir.If):
            return self.gen_if(s)
        if isinstance(s, ir.Loop):
            return self.gen_loop(s)
        if isinstance(s, ir.Break):
            return self.gen_break(s)
        if isinstance(s, ir.Continue):
            return self.gen_continue(s)
        if isinstance(s, ir.Return):
            return self.gen_return(s)
        if isinstance(s, ir.Switch):
            self.st.open_scope(len(self.fnctx))
            self.gen_switch(s)
            return self.st.close_scope(id(s) in self.escaping)
        raise self.err(f"unsupported statement {type(s).__name__}", s)

    def gen_exprstmt(self, s: ir.ExprStmt):
        e = s.expr
        if isinstance(e, ir.Intrinsic) and e.name == "syncthreads":
            return self.gen_barrier(e)
        if isinstance(e, ir.Call):
            return self.gen_call(e, None)
        if isinstance(e, ir.Assign) and isinstance(e.value, ir.Call):
            return self.gen_call(e.value, e.var)
        self.checkpoint(_mem_count(e), e)
        self.ev(e, self.cur())

    def gen_decl(self, s: ir.Decl):
        v = s.var
        if v.storage == "local":
            obj = self.st.local_object(v, depth=len(self.fnctx))
            if s.init is not None:     # an address-taken scalar with an initialiser
                if isinstance(v.type, (ir.StructType, ir.ArrayType)):
                    raise self.err("initialiser of a local struct or array given as a value", s)
                self.checkpoint(_mem_count(s.init) + 1, s.init)
                m = self.cur()
                val = self.ev(s.init, m)
                self.mem_store(splat(abi.tagged(obj.tag, obj.lo), I64), val, v.type, m, s, "local")
            return
        if v.storage in ("shared", "extern_shared"):
            self.st.shared_object(v)
            return
        off = self.st.reg_slot(v)
        if s.init is not None:
            self.checkpoint(_mem_count(s.init), s.init)
            m = self.cur()
            val = self.ev(s.init, m)
            self.slot_store(off, v.type, val, m)

    def gen_barrier(self, e):
        b = self.b
        m = self.cur()
        self.tick(e, m)
        self.tick(e, m, column=3)
        then_bb, after = self.if_nonzero(m, "bar")
        rid, res_bb = self.new_resume("bar_resume")
        self.store_i32(abi.F_EVENT_LINE, ll.Constant(I32, self.line(e)))
        self.store_i32(abi.F_RESUME, ll.Constant(I32, rid))
        b.ret(ll.Constant(I32, abi.EV_BARRIER))
        b.position_at_end(res_bb)
        self.store_i32(abi.F_EPOCH, b.add(self.load_i32(abi.F_EPOCH), ll.Constant(I32, 1)))
        b.branch(after)
        b.position_at_end(after)

    def gen_if(self, s: ir.If):
        b = self.b
        self.checkpoint(_mem_count(s.cond), s.cond)
        m = self.cur()
        c = self.mbits(self.ev(s.cond, m))
        t = b.and_(m, c)
        e = b.and_(m, b.not_(c))
        self.tick(s, m)
        self.count_divergence(s, t, e)
        e_slot, t_slot = self.mask_slot(), self.mask_slot()
        self.store_i32(e_slot, e)
        self.set_cur(t)
        _, after = self.if_nonzero(t, "then")
        self.gen_stmt(s.then)
        b.branch(after)
        b.position_at_end(after)
        self.store_i32(t_slot, self.cur())
        self.set_cur(self.load_i32(e_slot))
        if s.other is not None:
            _, after2 = self.if_nonzero(self.load_i32(e_slot), "else")
            self.gen_stmt(s.other)
            b.branch(after2)
            b.position_at_end(after2)
        self.set_cur(b.or_(self.cur(), self.load_i32(t_slot)))

    def gen_loop(self, s: ir.Loop):
        b = self.b
        x_slot, c_slot = self.mask_slot(), self.mask_slot()
        self.store_i32(x_slot, ll.Constant(I32, 0))
        spin_slot = self.mask_slot() if self.its else -1
        if self.its:
            self.store_i32(spin_slot, ll.Constant(I32, 0))
        header = self.new_block("loop_head")
        body_bb = self.new_block("loop_body")
        exit_bb = self.new_block("loop_exit")
        b.branch(body_bb if s.do_while else header)
        b.position_at_end(header)
        if s.cond is not None:
            self.checkpoint(_mem_count(s.cond), s.cond)
            m = self.cur()
            c = self.mbits(self.ev(s.cond, m))
            t = b.and_(m, c)
            out = b.and_(m, b.not_(c))
            self.tick(s, m)
            self.count_divergence(s, t, out)
            self.store_i32(x_slot, b.or_(self.load_i32(x_slot), out))
            self.set_cur(t)
        else:
            t = self.cur()
        b.cbranch(b.icmp_unsigned("==", t, ll.Constant(I32, 0)), exit_bb, body_bb)
        b.position_at_end(body_bb)
        self.store_i32(c_slot, ll.Constant(I32, 0))
        self.breakables.append(_Breakable("loop", x_slot, c_slot))
        self.gen_stmt(s.body)
        self.breakables.pop()
        self.set_cur(b.or_(self.cur(), self.load_i32(c_slot)))
        if s.step is not None:
            self.checkpoint(_mem_count(s.step), s.step)
            m = self.cur()
            _, after = self.if_nonzero(m, "step")
            self.ev(s.step, m)
            b.branch(after)
            b.position_at_end(after)
        # watchdog on the back edge
        cnt_p = self.fptr(abi.F_BACKEDGES, I64)
        n = b.add(b.load(cnt_p), ll.Constant(I64, 1))
        b.store(n, cnt_p)
        over = b.icmp_signed(">", n, self.ctx_field(abi.C_BUDGET))
        tmo = self.new_block("timeout")
        back = self.new_block("loop_back")
        b.cbranch(over, tmo, back)
        b.position_at_end(tmo)
        self.store_i32(abi.F_EVENT_LINE, ll.Constant(I32, self.line(s)))
        b.ret(ll.Constant(I32, abi.EV_TIMEOUT))
        b.position_at_end(back)
        yld = self.new_block("yield")
        go = self.new_block("no_yield")
        b.cbranch(b.icmp_unsigned("==", b.and_(n, ll.Constant(I64, abi.YIELD_EVERY - 1)),
                                  ll.Constant(I64, 0)), yld, go)
        b.position_at_end(yld)
        rid_y, yres = self.new_resume("yield_resume")
        self.store_i32(abi.F_RESUME, ll.Constant(I32, rid_y))
        b.ret(ll.Constant(I32, abi.EV_YIELD))
        b.position_at_end(yres)
        b.branch(go)
        b.position_at_end(go)
        if self.its:
            self.spin_split(s, x_slot, spin_slot, header, exit_bb)
        b.cbranch(b.icmp_unsigned("==", self.cur(), ll.Constant(I32, 0)), exit_bb, header)
        b.position_at_end(exit_bb)
        self.set_cur(self.load_i32(x_slot))

    def spin_split(self, s, x_slot: int, spin_slot: int, header, exit_bb):
        """Independent thread scheduling (CUDA C Programming Guide,
        "Independent Thread Scheduling"): lanes that left a loop need not
        wait for the ones still in it. After SPIN_LIMIT back edges in a row
        with lanes waiting after the loop, the warp returns EV_SPLIT: the
        machine copies the frame into a fragment owning those lanes, resuming
        after the loop, and this frame keeps the spinning lanes."""
        b = self.b
        parked = b.and_(self.load_i32(x_slot),
                        b.and_(self.load_i32(abi.F_VALID), b.not_(self.load_i32(abi.F_EXITED))))
        waiting = b.and_(b.icmp_unsigned("!=", parked, ll.Constant(I32, 0)),
                         b.icmp_unsigned("!=", self.cur(), ll.Constant(I32, 0)))
        n = b.select(waiting, b.add(self.load_i32(spin_slot), ll.Constant(I32, 1)), ll.Constant(I32, 0))
        self.store_i32(spin_slot, n)
        split = self.new_block("spin_split")
        go = self.new_block("spin_go")
        b.cbranch(b.icmp_signed(">", n, ll.Constant(I32, SPIN_LIMIT)), split, go)
        b.position_at_end(split)
        rid_h, head_bb = self.new_resume("spin_head")
        rid_x, exit_r = self.new_resume("spin_exit")
        self.store_i32(spin_slot, ll.Constant(I32, 0))
        self.store_i32(abi.F_SPLIT_MASK, parked)
        self.store_i32(abi.F_SPLIT_RESUME, ll.Constant(I32, rid_x))
        self.store_i32(abi.F_RESUME, ll.Constant(I32, rid_h))
        self.store_i32(abi.F_EVENT_LINE, ll.Constant(I32, self.line(s)))
        b.ret(ll.Constant(I32, abi.EV_SPLIT))
        b.position_at_end(head_bb)
        b.branch(header)
        b.position_at_end(exit_r)
        b.branch(exit_bb)
        b.position_at_end(go)

    def _target(self, kind: str, s):
        for br in reversed(self.breakables):
            if kind == "break" or br.kind == "loop":
                return br
        raise self.err(f"'{kind}' outside a loop or switch", s)

    def gen_break(self, s):
        br = self._target("break", s)
        m = self.cur()
        self.tick(s, m)
        self.store_i32(br.exit_slot, self.b.or_(self.load_i32(br.exit_slot), m))
        self.set_cur(ll.Constant(I32, 0))

    def gen_continue(self, s):
        br = self._target("continue", s)
        m = self.cur()
        self.tick(s, m)
        self.store_i32(br.cont_slot, self.b.or_(self.load_i32(br.cont_slot), m))
        self.set_cur(ll.Constant(I32, 0))

    def gen_return(self, s: ir.Return):
        b = self.b
        fc = self.fnctx[-1]
        if s.value is not None:
            self.checkpoint(_mem_count(s.value), s.value)
        m = self.cur()
        self.tick(s, m)
        if s.value is not None:
            v = self.ev(s.value, m)
            if fc.ret_slot >= 0:
                self.slot_store(fc.ret_slot, fc.ret_type, v, m)
        if fc.ret_lanes < 0:
            self.store_i32(abi.F_EXITED, b.or_(self.load_i32(abi.F_EXITED), m))
        else:
            self.store_i32(fc.ret_lanes, b.or_(self.load_i32(fc.ret_lanes), m))
        self.set_cur(ll.Constant(I32, 0))

    def gen_switch(self, s: ir.Switch):
        b = self.b
        self.checkpoint(_mem_count(s.value), s.value)
        m = self.cur()
        self.tick(s, m)
        v = self.ev(s.value, m)
        vt = s.value.type
        v_slot = self.st.alloc_frame(WARP * 8)
        self.slot_store(v_slot, vt, v)
        entry_slot, x_slot, any_slot = self.mask_slot(), self.mask_slot(), self.mask_slot()
        self.store_i32(entry_slot, m)
        self.store_i32(x_slot, ll.Constant(I32, 0))
        labels: dict = {}
        consts = []
        for val, idx in s.cases:
            labels.setdefault(idx, []).append(val)
            if val is not None:
                consts.append(val)
        et = scalar_ll(vt)
        anym = ll.Constant(I32, 0)
        for cv in consts:
            anym = b.or_(anym, self.mbits(b.icmp_unsigned("==", v, splat(cv, et))))
        self.store_i32(any_slot, b.and_(m, anym))
        self.set_cur(ll.Constant(I32, 0))
        self.breakables.append(_Breakable("switch", x_slot))

        def lanes_of(vals: list):
            """The entry lanes that jump to a label with these case values (None: default)."""
            vv = self.slot_load(v_slot, vt)
            em = self.load_i32(entry_slot)
            add = ll.Constant(I32, 0)
            for cv in vals:
                if cv is None:
                    add = b.or_(add, b.and_(em, b.not_(self.load_i32(any_slot))))
                else:
                    add = b.or_(add, b.and_(em, self.mbits(b.icmp_unsigned("==", vv, splat(cv, et)))))
            return add

        for i, st in enumerate(s.body):
            if i in labels:
                self.set_cur(b.or_(self.cur(), lanes_of(labels[i])))
            _, after = self.if_nonzero(self.cur(), "case")
            self.gen_stmt(st)
            b.branch(after)
            b.position_at_end(after)
        self.breakables.pop()
        # C11 6.8.4.2p5, C++ [stmt.switch]/5: with no matching case and no default label, no
        # part of the body runs and control goes on after the switch; so do lanes whose label
        # ends the body with no statement after it.
        tail = [cv for i, vals in labels.items() if i >= len(s.body) for cv in vals]
        if all(cv is not None for cv in (c for c, _ in s.cases)):
            tail.append(None)
        rest = self.load_i32(x_slot)
        if tail:
            rest = b.or_(rest, lanes_of(tail))
        self.set_cur(b.or_(self.cur(), rest))

    def gen_call(self, call: ir.Call, target: Optional[ir.Var]):
        """Inline a __device__ function at statement level."""
        b = self.b
        f = call.func
        body = self.hoist(f)
        self.checkpoint(sum(_mem_count(a) for a in call.args) + len(f.params), call)
        m = self.cur()
        self.tick(call, m)
        vals = [self.ev(a, m) for a in call.args]
        for p, v in zip(f.params, vals):
            if p.storage == "local":
                obj = self.st.local_object(p)
                ptr = splat(abi.tagged(obj.tag, obj.lo), I64)
                self.mem_store(ptr, v, p.type, m, call, "local")
            else:
                self.slot_store(self.st.reg_slot(p), p.type, v, m)
        rl = self.mask_slot()
        self.store_i32(rl, ll.Constant(I32, 0))
        rs = -1
        if not isinstance(f.ret, ir.VoidType):
            rs = self.st.alloc_frame(slot_bytes(f.ret))
        self.fnctx.append(_FnCtx(rl, rs, f.ret))
        saved = self.breakables
        self.breakables = []
        # a one-instruction function (texture fetch): the tick above was its
        # TEX instruction; its body counts nothing (memory requests still go)
        self.uncounted += f.one_instruction
        # the function's local objects keep their memory: every call uses the same ones
        self.st.open_scope(len(self.fnctx), pinned=True)
        self.gen_stmt(body)
        self.st.close_scope()
        self.uncounted -= f.one_instruction
        self.breakables = saved
        self.fnctx.pop()
        cur = b.or_(self.cur(), self.load_i32(rl))
        self.set_cur(cur)
        if target is not None:
            self.slot_store(self.st.reg_slot(target), target.type, self.slot_load(rs, f.ret), cur)

    # ========================================================== expressions
    def ev(self, e, m):
        """The lane vector of expression e, evaluated under mask m (i32)."""
        meth = getattr(self, "ev_" + type(e).__name__, None)
        if meth is None:
            raise self.err(f"unsupported expression {type(e).__name__}", e)
        v = meth(e, m)
        # counted once its operands are evaluated: the warp's instruction
        # stream (F_ICOUNT) then has each operation after its inputs, as the
        # GPU executes them (timing mode replays that order)
        if isinstance(e, COUNTED):
            self.tick(e, m)
        return v

    def ev_Const(self, e: ir.Const, m):
        t = e.type
        if isinstance(t, ir.VoidType):
            return None
        et = scalar_ll(t)
        v = e.value
        if is_bool(t):
            v = 1 if v else 0
        elif isinstance(et, ll.IntType):
            v = int(v) & ((1 << et.width) - 1)
            if v >= 1 << (et.width - 1):
                v -= 1 << et.width
        else:
            v = float(v)
        return splat(v, et)

    def ev_VarRef(self, e: ir.VarRef, m):
        v = e.var
        if v.storage not in ("reg", "param"):
            raise self.err(f"internal: VarRef to {v.storage} variable '{v.name}'", e)
        return self.slot_load(self.st.reg_slot(v), v.type)

    def ev_Assign(self, e: ir.Assign, m):
        v = self.ev(e.value, m)
        self.slot_store(self.st.reg_slot(e.var), e.var.type, v, m)
        return v

    def ev_GlobalRef(self, e: ir.GlobalRef, m):
        idx = self.globals_index.get(id(e.var))
        if idx is None:
            raise self.err(f"unknown symbol '{e.var.name}'", e)
        b = self.b
        tab = b.inttoptr(self.ctx_field(abi.C_SYMBOLS), I64.as_pointer())
        return self.splat_val(b.load(b.gep(tab, [ll.Constant(I64, idx)])), I64)

    def ev_AddrOf(self, e: ir.AddrOf, m):
        v = e.var
        if v.storage in ("shared", "extern_shared"):
            obj = self.st.shared_object(v)
            if obj.dynamic:
                # the dynamic region starts after all static arrays; its
                # offset is final only when the kernel is generated, so read it
                return self.splat_val(self.ctx_field(abi.C_DYN_SHARED), I64)
            return splat(abi.tagged(obj.tag, obj.lo), I64)
        if v.storage in ("local", "param"):
            obj = self.st.local_object(v)
            return splat(abi.tagged(obj.tag, obj.lo), I64)
        raise self.err(f"cannot take the address of '{v.name}'", e)

    def ev_Special(self, e: ir.Special, m):
        b = self.b
        n = e.name
        vt = ll.VectorType(I32, WARP)
        if n.startswith("tid."):
            i = "xyz".index(n[-1])
            return b.load(self.fptr(abi.F_TID + i * 128, vt))
        if n.startswith("ntid."):
            return self.splat_val(b.trunc(self.ctx_field(abi.C_NTID + "xyz".index(n[-1])), I32), I32)
        if n.startswith("nctaid."):
            return self.splat_val(b.trunc(self.ctx_field(abi.C_NCTAID + "xyz".index(n[-1])), I32), I32)
        if n.startswith("ctaid."):
            return self.splat_val(self.load_i32(abi.F_CTAID + 4 * "xyz".index(n[-1])), I32)
        if n == "warpsize":
            return splat(WARP, I32)
        if n == "laneid":
            return ll.Constant(vt, list(range(WARP)))
        raise self.err(f"unknown built-in '{n}'", e)

    def ev_Unary(self, e: ir.Unary, m):
        return unary(self.b, e.op, self.ev(e.a, m), e.a.type)

    def ev_Binary(self, e: ir.Binary, m):
        a = self.ev(e.a, m)
        bv = self.ev(e.b, m)
        t = e.a.type
        if isinstance(t, ir.PointerType):
            t = ir.U64
        if is_bool(t):
            return bool_binary(self.b, e.op, a, bv)
        if is_float_t(t):
            return float_binary(self.b, e.op, a, bv)
        if e.op in ("shl", "shr"):
            return shift(self.b, e.op, a, bv, t, e.b.type)
        return int_binary(self.b, e.op, a, bv, t)

    def ev_Logical(self, e: ir.Logical, m):
        b = self.b
        a = self.ev(e.a, m)
        ab = self.mbits(a)
        if e.op == "and":
            mb = b.and_(m, ab)
            bv = self.ev(e.b, mb)
            return b.and_(a, bv)
        mb = b.and_(m, b.not_(ab))
        bv = self.ev(e.b, mb)
        return b.or_(a, bv)

    def ev_Cond(self, e: ir.Cond, m):
        b = self.b
        c = self.ev(e.c, m)
        cb = self.mbits(c)
        va = self.ev(e.a, b.and_(m, cb))
        vb = self.ev(e.b, b.and_(m, b.not_(cb)))
        if isinstance(e.type, ir.VoidType) or va is None:
            return None
        if isinstance(e.type, ir.VectorType):
            return [b.select(c, x, y) for x, y in zip(va, vb)]
        return b.select(c, va, vb)

    def ev_Cast(self, e: ir.Cast, m):
        v = self.ev(e.a, m)
        if isinstance(e.type, ir.VoidType):
            return None
        if isinstance(e.type, ir.VectorType) or isinstance(e.a.type, ir.VectorType):
            if e.type == e.a.type:
                return v
            raise self.err("conversion between vector types", e)
        return cast(self.b, self.m, v, e.a.type, e.type)

    def ev_PtrAdd(self, e: ir.PtrAdd, m):
        p = self.ev(e.ptr, m)
        off = self.ev(e.offset, m)
        if off.type.element != I64:
            off = cast(self.b, self.m, off, e.offset.type, ir.I64)
        return self.b.add(p, off)

    def ev_Comma(self, e: ir.Comma, m):
        v = None
        for x in e.exprs:
            v = self.ev(x, m)
        return v

    def ev_Extract(self, e: ir.Extract, m):
        return self.ev(e.vec, m)[e.index]

    def ev_MakeVector(self, e: ir.MakeVector, m):
        return [self.ev(x, m) for x in e.elems]

    def ev_Call(self, e, m):
        raise self.err("internal: call left inside an expression", e)

    # ---------------------------------------------------------------- memory
    def _space(self, ptr_expr) -> str:
        t = ptr_expr.type
        return t.space if isinstance(t, ir.PointerType) else "generic"

    def new_instr(self, op: str, size: int, node, space: str) -> int:
        if self._written is None:
            self._written = assigned_vars(self.kernel.body)
        ins = MemInstr(len(self.instrs), op, size, self.line(node), space,
                       self.use_dist.get(id(node), 0),
                       readonly=op == "ld" and is_readonly_load(node, self._written),
                       spill=bool(getattr(node, "spill", False)),
                       texture=bool(getattr(node, "texture", False)),
                       volatile=op in ("ld", "st") and bool(getattr(node, "volatile", False)))
        self.instrs.append(ins)
        return ins.id

    def _call_helper(self, helper, ptr, m, iid, node):
        b = self.b
        b.store(ptr, b.bitcast(self.ptrbuf, ptr.type.as_pointer()))
        rc = b.call(helper, [self.ctx, self.frame, b.bitcast(self.ptrbuf, VOIDP), m,
                             b.bitcast(self.databuf, VOIDP), b.bitcast(self.auxbuf, VOIDP),
                             ll.Constant(I32, iid), ll.Constant(I32, self.line(node))])
        ok = self.new_block("mem_ok")
        b.cbranch(b.icmp_unsigned("!=", rc, ll.Constant(I32, 0)), self.fault_bb, ok)
        b.position_at_end(ok)

    def _access_type(self, t):
        """(LLVM element type, bytes, alignment) of one lane's access."""
        if isinstance(t, ir.VectorType):
            if t.count == 3:   # 12 bytes: an array keeps the 12-byte lane stride
                return ll.ArrayType(mem_ll(t.elem), 3), t.size, t.align
            return ll.IntType(t.size * 8), t.size, t.align
        if isinstance(t, (ir.StructType, ir.ArrayType)):
            raise TypeError(str(t))
        return mem_ll(t), max(t.size, 1), max(t.align, 1)

    def mem_load(self, ptr, t, m, node, space):
        b = self.b
        et, size, align = self._access_type(t)
        iid = self.new_instr("ld", size, node, space)
        self._call_helper(get_helper(self.m, "ld", et, size, align), ptr, m, iid, node)
        if isinstance(t, ir.VectorType):
            elem = mem_ll(t.elem)
            allv = b.load(b.bitcast(self.databuf, ll.VectorType(elem, WARP * t.count).as_pointer()))
            return [b.shuffle_vector(allv, ll.Constant(allv.type, ll.Undefined),
                                     ll.Constant(ll.VectorType(I32, WARP),
                                                 [lane * t.count + c for lane in range(WARP)]))
                    for c in range(t.count)]
        v = b.load(b.bitcast(self.databuf, ll.VectorType(et, WARP).as_pointer()))
        if is_bool(t):
            v = b.icmp_unsigned("!=", v, splat(0, I8))
        return v

    def mem_store(self, ptr, v, t, m, node, space):
        b = self.b
        et, size, align = self._access_type(t)
        iid = self.new_instr("st", size, node, space)
        if isinstance(t, ir.VectorType):
            elem = mem_ll(t.elem)
            vt = ll.VectorType(elem, WARP * t.count)
            # interleave components: lane l's component c goes to l*count + c
            inter = ll.Constant(vt, ll.Undefined)
            if t.count == 3:
                for lane in range(WARP):
                    for c in range(3):
                        x = b.extract_element(v[c], ll.Constant(I32, lane))
                        inter = b.insert_element(inter, x, ll.Constant(I32, lane * 3 + c))
            else:
                parts = list(v)
                while len(parts) > 1:   # concatenate: [c0 lanes, c1 lanes, ...]
                    nxt = []
                    for i in range(0, len(parts), 2):
                        x, y = parts[i], parts[i + 1]
                        n = x.type.count
                        nxt.append(b.shuffle_vector(x, y, ll.Constant(ll.VectorType(I32, 2 * n),
                                                                      list(range(2 * n)))))
                    parts = nxt
                cat = parts[0]
                perm = [(i % t.count) * WARP + i // t.count for i in range(WARP * t.count)]
                inter = b.shuffle_vector(cat, ll.Constant(cat.type, ll.Undefined),
                                         ll.Constant(ll.VectorType(I32, WARP * t.count), perm))
            b.store(inter, b.bitcast(self.databuf, vt.as_pointer()))
        else:
            if is_bool(t):
                v = b.zext(v, ll.VectorType(I8, WARP))
            b.store(v, b.bitcast(self.databuf, ll.VectorType(et, WARP).as_pointer()))
        self._call_helper(get_helper(self.m, "st", et, size, align), ptr, m, iid, node)

    def ev_Load(self, e: ir.Load, m):
        p = self.ev(e.addr, m)
        if isinstance(e.type, (ir.StructType, ir.ArrayType)):
            raise self.err("a struct or array value cannot be loaded as a whole here", e)
        return self.mem_load(p, e.type, m, e, self._space(e.addr))

    def ev_Store(self, e: ir.Store, m):
        p = self.ev(e.addr, m)
        v = self.ev(e.value, m)
        self.mem_store(p, v, e.value.type, m, e, self._space(e.addr))
        return v

    def ev_MemCopy(self, e: ir.MemCopy, m):
        """Struct copy: one load and one store per aligned chunk (a native
        loop for large structs), each a warp-wide request."""
        b = self.b
        d = self.ev(e.dst, m)
        src = self.ev(e.src, m)
        al = _copy_chunk(e)
        ct = {1: ir.U8, 2: ir.U16, 4: ir.U32, 8: ir.U64}[al]
        n = e.nbytes // al
        if n <= 16:
            for off in range(0, e.nbytes, al):
                o = splat(off, I64)
                v = self.mem_load(b.add(src, o), ct, m, e, self._space(e.src))
                self.mem_store(b.add(d, o), v, ct, m, e, self._space(e.dst))
            return None
        with b.goto_block(self.fn.entry_basic_block):
            b.position_at_start(self.fn.entry_basic_block)
            ctr = b.alloca(I64, name="copy_i")
        b.store(ll.Constant(I64, 0), ctr)
        dslot, sslot = self.st.alloc_frame(WARP * 8), self.st.alloc_frame(WARP * 8)
        vt = ll.VectorType(I64, WARP)
        b.store(d, self.fptr(dslot, vt))
        b.store(src, self.fptr(sslot, vt))
        body = self.new_block("copy_body")
        done = self.new_block("copy_done")
        b.branch(body)
        b.position_at_end(body)
        i = b.load(ctr)
        o = self.splat_val(b.mul(i, ll.Constant(I64, al)), I64)
        v = self.mem_load(b.add(b.load(self.fptr(sslot, vt)), o), ct, m, e, self._space(e.src))
        self.mem_store(b.add(b.load(self.fptr(dslot, vt)), o), v, ct, m, e, self._space(e.dst))
        # the two requests of every chunk share their MemInstr ids
        nxt = b.add(b.load(ctr), ll.Constant(I64, 1))
        b.store(nxt, ctr)
        b.cbranch(b.icmp_signed("<", nxt, ll.Constant(I64, n)), body, done)
        b.position_at_end(done)
        return None

