"""Code generation for intrinsics: warp shuffles and votes, fences, atomics,
bit manipulation and math, as a mixin of WarpCodegen.

Shuffles follow PTX shfl.sync (PTX ISA, "shfl.sync"): with width w the warp
is split into segments of w lanes; a source lane outside the lane's segment
(up, down, xor) gives the lane its own value, as the CUDA C Programming Guide
("Warp Shuffle Functions") says. A source lane that is not active gives that
lane's register value as it stands (its last assigned value); CUDA leaves it
undefined. Votes and ballots: each lane votes over the active lanes of its own
mask argument (cooperative-groups tiles of one warp pass different masks).
"""
from __future__ import annotations

import llvmlite.ir as ll

from isa import ir

from . import abi
from .c_semantics import intrinsic, vname
from .directed_f64 import DIRECTED_F64, DirectedF64
from .lane_math import LaneOps
from . import float_parts, norms, pi_trig, rcbrt, special_functions
from .lane_types import F32, I1, I32, I64, is_bool, is_float_t, scalar_ll, splat
from .memory_access import get_helper

WARP = abi.WARP

# Warp-sync operations recorded in the trace in check mode (abi.SYNC_SPACE).
SYNC_RECORDED = frozenset({"syncwarp", "shfl", "shfl_up", "shfl_down", "shfl_xor",
                           "ballot", "all", "any", "threadfence", "threadfence_system"})

# libm names for math intrinsics that have no LLVM instruction (float, double)
LIBM = {n: (n + "f", n) for n in (
    "cbrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos",
    "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "pow", "fmod", "hypot")}
LIBM["exp10"] = ("exp10f", "exp10")
# exact in glibc as on the GPU (IEEE 754 / C99)
LIBM.update({n: (n + "f", n) for n in ("fdim", "nextafter", "remainder", "remquo")})
# float forms computed by the double function and rounded once, within
# 0.5 ulp + 2^-29 ulp (CUDA Math API bounds: acoshf 4 ulp, asinhf 3, atanhf 3,
# erff 2, erfcf 4, lgammaf 6, tgammaf 5); double forms are glibc's (its
# documented x86_64 worst cases are within CUDA's double bounds)
VIA_DOUBLE = frozenset({"acosh", "asinh", "atanh", "erf", "erfc", "lgamma", "tgamma"})
LIBM.update({n: (n, n) for n in VIA_DOUBLE})
# double functions gpuemu/jit/special_functions.py calls (for j0 & co. of both types)
LIBM.update({n: (n, n) for n in ("j0", "j1", "y0", "y1", "jn", "yn")})
# float arithmetic in a directed rounding mode (CUDA Math API, "Single Precision
# Intrinsics": __fadd_rz & co.), IR name -> operand count; see _directed
DIRECTED = {f"{op}_{mode}": n for op, n in (("fadd", 2), ("fsub", 2), ("fmul", 2), ("fmaf", 3),
                                            ("fdiv", 2), ("frcp", 1), ("fsqrt", 1))
            for mode in ("rz", "ru", "rd")}
# ldexp & co. (gpuemu/jit/float_parts.py): frexp and frexp_exp give its two
# results, modf the fractional part (the integral part is 'trunc')
FLOAT_PARTS = ("ldexp", "frexp", "frexp_exp", "modf", "ilogb", "logb")
LLVM_MATH = {"sqrt": "sqrt", "fabs": "fabs", "floor": "floor", "ceil": "ceil", "trunc": "trunc",
             "round": "round", "rint": "rint", "fmin": "minnum", "fmax": "maxnum",
             "fma": "fma", "copysign": "copysign"}


class IntrinsicsMixin:
    """ev_Intrinsic and its helpers; needs WarpCodegen's builder and state."""

    # ------------------------------------------------------------ intrinsics
    def ev_Intrinsic(self, e: ir.Intrinsic, m):
        name = e.name
        if name.startswith("atomic_"):
            return self.atomic(e, m)
        if name in ("syncthreads",):
            raise self.err("__syncthreads() must be a statement of its own", e)
        meth = getattr(self, "in_" + name, None)
        if meth is not None:
            return meth(e, m)
        if name in DIRECTED:
            return self._directed(e, m)
        if name in DIRECTED_F64:
            return DirectedF64(self.b, self.m).emit(name, self.args(e, m))
        if name in FLOAT_PARTS:
            return self._float_parts(e, m)
        if name in ("norm", "rnorm"):
            return norms.norm(self.b, self.m, self.args(e, m), name == "rnorm")
        if name == "remquo_quo":
            return self._remquo_quo(e, m)
        if name == "rcbrt":
            return rcbrt.rcbrt(self.b, self.m, self.args(e, m)[0], self.libm_used)
        if name in ("sinpi", "cospi"):
            return pi_trig.pi_trig(self.b, self.m, self.args(e, m)[0], name == "cospi", self.libm_used)
        if name in special_functions.FUNCTIONS or name in special_functions.INTEGER_ORDER:
            return self._special(name, *self.args(e, m)[::-1])
        if name in LLVM_MATH or name in LIBM or name in ("rsqrt", "rsqrt_rn", "saturate", "fdivide",
                                                           "isnan", "isinf", "isfinite", "signbit"):
            return self.math(e, m)
        raise self.err(f"the intrinsic '{name}' is not supported", e)

    def args(self, e, m):
        return [self.ev(a, m) for a in e.args]

    def _special(self, name: str, x, *n):
        """gpuemu/jit/special_functions.py in double; float lanes rounded once.
        jn and yn take the order n before x."""
        b = self.b
        single = x.type.element == F32
        t = b.fpext(x, ll.VectorType(ll.DoubleType(), WARP)) if single else x
        o = LaneOps(b, self.m, self.libm_used)
        r = special_functions.INTEGER_ORDER[name](o, n[0], t) if n else special_functions.FUNCTIONS[name](o, t)
        return b.fptrunc(r, x.type) if single else r

    def in_syncwarp(self, e, m):
        mask = self.args(e, m)[0] if e.args else splat(-1, I32)
        b = self.b
        self.store_i32(abi.F_WSYNC, b.add(self.load_i32(abi.F_WSYNC), ll.Constant(I32, 1)))
        self.sync_record(e, m, mask, None)
        return None

    def in_assert(self, e, m):
        """assert(cond): the first lane whose cond is false stops the warp
        with fault kind 3 (the machine raises KernelError kind 'assert')."""
        b = self.b
        cond = self.ev(e.args[0], m)
        bad = b.and_(m, b.xor(self.mbits(cond), ll.Constant(I32, -1)))
        fail, ok = self.new_block("assert_fail"), self.new_block("assert_ok")
        b.cbranch(b.icmp_unsigned("!=", bad, ll.Constant(I32, 0)), fail, ok)
        b.position_at_end(fail)
        lane = b.call(intrinsic(self.m, "llvm.cttz.i32", I32, [I32, I1]), [bad, ll.Constant(I1, 0)])
        text = e.args[1].value if len(e.args) > 1 else -1     # the condition's string id
        for idx, v in ((abi.C_FAULT_KIND, 3), (abi.C_FAULT_ADDR, text), (abi.C_FAULT_SPACE, -1),
                       (abi.C_FAULT_INSTR, -1), (abi.C_FAULT_TAG, 0), (abi.C_FAULT_LINE, self.line(e))):
            self.ctx_store(idx, ll.Constant(I64, v))
        self.ctx_store(abi.C_FAULT_LANE, b.zext(lane, I64))
        b.branch(self.fault_bb)
        b.position_at_end(ok)
        return None

    def in_printf(self, e, m):
        """printf: one entry per active lane, in lane order, appended to the
        launch's buffer (ctx C_PRINTF): [nwords, block, thread in block,
        format id, args as 64-bit words]; entries that do not fit are dropped
        (CUDA's fixed-size FIFO drops them too)."""
        b = self.b
        v64 = ll.VectorType(I64, WARP)
        words = []
        for a, v in zip(e.args, self.args(e, m)):
            t = a.type
            if is_float_t(t):
                if t.bits == 32:
                    v = b.fpext(v, ll.VectorType(ll.DoubleType(), WARP))
                v = b.bitcast(v, v64)
            elif is_bool(t):
                v = b.zext(v, v64)
            elif isinstance(t, ir.ScalarType) and t.bits < 64:
                v = b.sext(v, v64) if t.signed else b.zext(v, v64)
            words.append(v)
        n = len(words)
        with b.goto_entry_block():
            arr = b.alloca(ll.ArrayType(I64, WARP * n), name="printf_args")
        for k, v in enumerate(words):
            b.store(v, b.bitcast(b.gep(arr, [ll.Constant(I32, 0), ll.Constant(I32, k * WARP)]), v64.as_pointer()))
        buf = b.inttoptr(self.ctx_field(abi.C_PRINTF), I64.as_pointer())
        cap = self.ctx_field(abi.C_PRINTF_CAP)
        rec = n + 3
        blk = b.zext(self.load_i32(abi.F_BLOCK), I64)
        base_tid = b.zext(b.mul(self.load_i32(abi.F_WARP), ll.Constant(I32, WARP)), I64)
        pre = b.block
        loop, body, nxt, done = (self.new_block(x) for x in ("printf_lane", "printf_write", "printf_next",
                                                              "printf_done"))
        b.branch(loop)
        b.position_at_end(loop)
        lane = b.phi(I32)
        lane.add_incoming(ll.Constant(I32, 0), pre)
        on = b.icmp_unsigned("!=", b.and_(b.lshr(m, lane), ll.Constant(I32, 1)), ll.Constant(I32, 0))
        pos = self.ctx_field(abi.C_PRINTF_LEN)
        fits = b.icmp_signed("<=", b.add(pos, ll.Constant(I64, rec)), cap)
        b.cbranch(b.and_(on, fits), body, nxt)
        b.position_at_end(body)
        head = [ll.Constant(I64, rec), blk, b.add(base_tid, b.zext(lane, I64))]
        for k, w in enumerate(head):
            b.store(w, b.gep(buf, [b.add(pos, ll.Constant(I64, k))]))
        for k in range(n):
            w = b.load(b.gep(arr, [ll.Constant(I32, 0), b.add(lane, ll.Constant(I32, k * WARP))]))
            b.store(w, b.gep(buf, [b.add(pos, ll.Constant(I64, 3 + k))]))
        self.ctx_store(abi.C_PRINTF_LEN, b.add(pos, ll.Constant(I64, rec)))
        b.branch(nxt)
        b.position_at_end(nxt)
        lane2 = b.add(lane, ll.Constant(I32, 1))
        lane.add_incoming(lane2, nxt)
        b.cbranch(b.icmp_unsigned("<", lane2, ll.Constant(I32, WARP)), loop, done)
        b.position_at_end(done)
        return splat(n - 1, I32)

    def sync_record(self, e, m, maskv, srcv):
        """In check mode, one trace record for a warp-sync operation: the
        active lanes, per lane the mask argument (addr bits 32-63) and the
        source lane of a shuffle (bits 0-31, -1 for none); see abi."""
        b = self.b
        iid = self.new_instr("sync_" + e.name, 0, e, "sync")
        trace = self.ctx_field(abi.C_TRACE)
        on = b.and_(b.icmp_signed("!=", self.ctx_field(abi.C_CHECK), ll.Constant(I64, 0)),
                    b.icmp_signed("!=", trace, ll.Constant(I64, 0)))
        with b.if_then(on):
            tlen = self.ctx_field(abi.C_TRACE_LEN)
            rec = b.add(trace, b.mul(tlen, ll.Constant(I64, abi.TRACE_RECORD_BYTES)))
            recp = b.inttoptr(rec, I32.as_pointer())
            fields = (ll.Constant(I32, iid), m, ll.Constant(I32, abi.SYNC_SPACE),
                      self.load_i32(abi.F_BLOCK), self.load_i32(abi.F_WARP), self.load_i32(abi.F_SM))
            for i, v in enumerate(fields):
                b.store(v, b.gep(recp, [ll.Constant(I32, i)]))
            ep = b.load(self.fptr(abi.F_EPOCH, I64))
            b.store(ep, b.inttoptr(b.add(rec, ll.Constant(I64, abi.TRACE_EPOCH_OFFSET)),
                                   I64.as_pointer()))
            vt = ll.VectorType(I64, WARP)
            if maskv.type.element != I32:
                maskv = b.trunc(maskv, ll.VectorType(I32, WARP)) if maskv.type.element.width > 32 \
                    else b.zext(maskv, ll.VectorType(I32, WARP))
            hi = b.shl(b.zext(maskv, vt), splat(32, I64))
            lo = b.zext(srcv if srcv is not None else splat(-1, I32), vt)
            addr_off = abi.TRACE_DTYPE.fields["addr"][1]
            b.store(b.or_(hi, lo), b.inttoptr(b.add(rec, ll.Constant(I64, addr_off)), vt.as_pointer()))
            self.ctx_store(abi.C_TRACE_LEN, b.add(tlen, ll.Constant(I64, 1)))

    def _fence(self, e, m):
        self.tick(e, m, column=4)
        return None

    def in_threadfence(self, e, m):
        """A fence, recorded in check mode: racecheck orders global accesses
        across blocks by a device-wide fence then a strong write of a flag,
        and shared accesses across a block's warps by a fence of any scope
        (__threadfence_block too) then a strong write."""
        self.sync_record(e, m, splat(0, I32), None)
        return self._fence(e, m)

    in_threadfence_block = in_threadfence_system = in_threadfence

    def in_activemask(self, e, m):
        return self.splat_val(m, I32)

    def in_ballot(self, e, m):
        # each lane votes over the lanes of its own mask (tiles of a warp
        # pass different masks: cooperative_groups.py)
        b = self.b
        mask, pred = self.args(e, m)
        self.sync_record(e, m, mask, None)
        bits = b.and_(self.mbits(pred), m)
        return b.and_(self.splat_val(bits, I32), mask)

    def _vote(self, e, m, want_all: bool):
        b = self.b
        mask, pred = self.args(e, m)
        self.sync_record(e, m, mask, None)
        grp = b.and_(self.splat_val(m, I32), mask)
        yes = b.and_(self.splat_val(self.mbits(pred), I32), grp)
        r = b.icmp_unsigned("==", yes, grp) if want_all else b.icmp_unsigned("!=", yes, splat(0, I32))
        return b.zext(r, ll.VectorType(scalar_ll(e.type), WARP)) if not is_bool(e.type) else r

    def uniform(self, v, m):
        """The value of v in the first active lane (warp-uniform operands)."""
        b = self.b
        first = b.call(intrinsic(self.m, "llvm.cttz.i32", I32, [I32, I1]),
                       [b.or_(m, ll.Constant(I32, -0x80000000)), ll.Constant(I1, 0)])
        return b.extract_element(v, first)

    def in_all(self, e, m):
        return self._vote(e, m, True)

    def in_any(self, e, m):
        return self._vote(e, m, False)

    def _shuffle(self, e, m, mode: str):
        """PTX shfl.sync semantics (PTX ISA, "shfl.sync"): with width w the
        warp is split into segments of w lanes; a source lane outside the
        lane's segment (up/down/xor) gives the lane its own value. A source
        lane that is not active gives that lane's register value as it
        stands (its last assigned value); CUDA leaves it undefined."""
        b = self.b
        mask, v, sel, width = self.args(e, m)
        vt = ll.VectorType(I32, WARP)
        lane = ll.Constant(vt, list(range(WARP)))
        if sel.type.element != I32:
            sel = b.trunc(sel, vt) if sel.type.element.width > 32 else b.zext(sel, vt)
        if width.type.element != I32:
            width = b.trunc(width, vt) if width.type.element.width > 32 else b.sext(width, vt)
        segmask = b.and_(b.sub(splat(WARP, I32), width), splat(31, I32))  # c[12:8]
        minlane = b.and_(lane, segmask)
        notseg = b.xor(segmask, splat(-1, I32))
        if mode == "up":
            maxlane = minlane
            j = b.sub(lane, b.and_(sel, splat(31, I32)))   # bval = b[4:0], as for down/xor/idx
            ok = b.icmp_signed(">=", j, maxlane)
        else:
            maxlane = b.or_(minlane, b.and_(splat(31, I32), notseg))
            if mode == "down":
                j = b.add(lane, b.and_(sel, splat(31, I32)))
            elif mode == "xor":
                j = b.xor(lane, b.and_(sel, splat(31, I32)))
            else:
                j = b.or_(minlane, b.and_(b.and_(sel, splat(31, I32)), notseg))
            ok = b.icmp_signed("<=", j, maxlane)
        j = b.select(ok, j, lane)
        self.sync_record(e, m, mask, j)
        return self._permute(v, j)

    def _permute(self, v, j):
        b = self.b
        out = ll.Constant(v.type, ll.Undefined)
        for lanei in range(WARP):
            src = b.extract_element(j, ll.Constant(I32, lanei))
            out = b.insert_element(out, b.extract_element(v, src), ll.Constant(I32, lanei))
        return out

    def in_shfl(self, e, m):
        return self._shuffle(e, m, "idx")

    def in_shfl_up(self, e, m):
        return self._shuffle(e, m, "up")

    def in_shfl_down(self, e, m):
        return self._shuffle(e, m, "down")

    def in_shfl_xor(self, e, m):
        return self._shuffle(e, m, "xor")

    def atomic(self, e, m):
        b = self.b
        op = e.name[len("atomic_"):]
        vals = self.args(e, m)
        ptr = vals[0]
        if op == "cas":
            cmp, val = vals[1], vals[2]
        else:
            cmp, val = None, vals[1]
        t = e.type
        et, size, align = self._access_type(t)
        kind = "atom" if e.result_used else "red"
        iid = self.new_instr(kind, size, e, self._space(e.args[0]))
        vt = ll.VectorType(et, WARP)
        b.store(val, b.bitcast(self.databuf, vt.as_pointer()))
        if cmp is not None:
            b.store(cmp, b.bitcast(self.auxbuf, vt.as_pointer()))
        h = get_helper(self.m, "atom", et, size, align, op, is_float_t(t),
                       bool(getattr(t, "signed", False)))
        self._call_helper(h, ptr, m, iid, e)
        return b.load(b.bitcast(self.databuf, vt.as_pointer()))

    # bit manipulation ------------------------------------------------------
    def _res(self, v, e):
        """Fit an integer result vector to e's type."""
        b = self.b
        want = scalar_ll(e.type)
        have = v.type.element
        if have == want:
            return v
        vt = ll.VectorType(want, WARP)
        if is_bool(e.type):
            return b.icmp_unsigned("!=", v, splat(0, have))
        if isinstance(want, ll.IntType) and isinstance(have, ll.IntType):
            return b.trunc(v, vt) if have.width > want.width else b.zext(v, vt)
        return v

    def _bitop(self, e, m, llname):
        v = self.args(e, m)[0]
        et = v.type.element
        if llname == "ctpop" or llname == "bitreverse":
            r = self.b.call(intrinsic(self.m, f"llvm.{llname}.{vname(et)}", v.type, [v.type]), [v])
        else:
            r = self.b.call(intrinsic(self.m, f"llvm.{llname}.{vname(et)}", v.type, [v.type, I1]),
                            [v, ll.Constant(I1, 0)])
        return self._res(r, e)

    def in_popc(self, e, m):
        return self._bitop(e, m, "ctpop")

    in_popcll = in_popc

    def in_clz(self, e, m):
        return self._bitop(e, m, "ctlz")

    in_clzll = in_clz

    def in_brev(self, e, m):
        return self._bitop(e, m, "bitreverse")

    in_brevll = in_brev

    def in_ffs(self, e, m):
        b = self.b
        v = self.args(e, m)[0]
        et = v.type.element
        tz = b.call(intrinsic(self.m, f"llvm.cttz.{vname(et)}", v.type, [v.type, I1]),
                    [v, ll.Constant(I1, 0)])
        r = b.select(b.icmp_unsigned("==", v, splat(0, et)), splat(0, et), b.add(tz, splat(1, et)))
        return self._res(r, e)

    in_ffsll = in_ffs

    def _mul24(self, e, m, signed):
        b = self.b
        x, y = self.args(e, m)
        if signed:
            x = b.ashr(b.shl(x, splat(8, I32)), splat(8, I32))
            y = b.ashr(b.shl(y, splat(8, I32)), splat(8, I32))
        else:
            x = b.and_(x, splat(0xFFFFFF, I32))
            y = b.and_(y, splat(0xFFFFFF, I32))
        return b.mul(x, y)

    def in_mul24(self, e, m):
        return self._mul24(e, m, True)

    def in_umul24(self, e, m):
        return self._mul24(e, m, False)

    def _mulhi(self, e, m, signed, bits):
        b = self.b
        x, y = self.args(e, m)
        wide = ll.VectorType(ll.IntType(2 * bits), WARP)
        ext = b.sext if signed else b.zext
        p = b.mul(ext(x, wide), ext(y, wide))
        return b.trunc(b.lshr(p, splat(bits, ll.IntType(2 * bits))), x.type)

    def in_mulhi(self, e, m):
        return self._mulhi(e, m, True, 32)

    def in_umulhi(self, e, m):
        return self._mulhi(e, m, False, 32)

    def in_mul64hi(self, e, m):
        return self._mulhi(e, m, True, 64)

    def in_umul64hi(self, e, m):
        return self._mulhi(e, m, False, 64)

    def _sad(self, e, m, signed):
        b = self.b
        x, y, z = self.args(e, m)
        gt = b.icmp_signed(">", x, y) if signed else b.icmp_unsigned(">", x, y)
        d = b.select(gt, b.sub(x, y), b.sub(y, x))
        return b.add(d, z)

    def in_sad(self, e, m):
        return self._sad(e, m, True)

    def in_usad(self, e, m):
        return self._sad(e, m, False)

    def in_byte_perm(self, e, m):
        b = self.b
        x, y, s = self.args(e, m)
        v64 = ll.VectorType(I64, WARP)
        both = b.or_(b.shl(b.zext(y, v64), splat(32, I64)), b.zext(x, v64))
        r = splat(0, I64)
        s64 = b.zext(s, v64)
        for n in range(4):
            sel = b.and_(b.lshr(s64, splat(4 * n, I64)), splat(7, I64))
            byte = b.and_(b.lshr(both, b.mul(sel, splat(8, I64))), splat(0xFF, I64))
            r = b.or_(r, b.shl(byte, splat(8 * n, I64)))
        return b.trunc(r, ll.VectorType(I32, WARP))

    def _reinterpret(self, e, m):
        v = self.args(e, m)[0]
        return self.b.bitcast(v, ll.VectorType(scalar_ll(e.type), WARP))

    in_float_as_int = in_int_as_float = in_float_as_uint = in_uint_as_float = _reinterpret
    in_double_as_longlong = in_longlong_as_double = _reinterpret

    def _minmax(self, e, m, is_min):
        b = self.b
        x, y = self.args(e, m)
        t = e.type
        if is_float_t(t):
            nm = "minnum" if is_min else "maxnum"
            return b.call(intrinsic(self.m, f"llvm.{nm}.{vname(x.type.element)}", x.type,
                                    [x.type, x.type]), [x, y])
        c = "<" if is_min else ">"
        lt = b.icmp_signed(c, x, y) if t.signed else b.icmp_unsigned(c, x, y)
        return b.select(lt, x, y)

    def in_min(self, e, m):
        return self._minmax(e, m, True)

    def in_max(self, e, m):
        return self._minmax(e, m, False)

    def in_abs(self, e, m):
        b = self.b
        x = self.args(e, m)[0]
        if is_float_t(e.type):
            return b.call(intrinsic(self.m, f"llvm.fabs.{vname(x.type.element)}", x.type, [x.type]), [x])
        neg = b.icmp_signed("<", x, splat(0, x.type.element))
        return b.select(neg, b.neg(x), x)

    # directed rounding ----------------------------------------------------
    def _f64(self, name, *vals):
        """llvm.NAME on 32 doubles."""
        t = vals[0].type
        return self.b.call(intrinsic(self.m, f"llvm.{name}.{vname(t.element)}", t, [t] * len(vals)), list(vals))

    def _exact_f64(self, op, xs):
        """The exact result of a float operation as s + e: s its double
        rounded to nearest, e a double with the sign of the rest (0 when s
        is exact; NaN where s is infinite or NaN); and the operands as
        doubles (for a sum its two terms: fma's are the product and c).
        A float product is exact in double; a sum's rest is TwoSum's
        (Knuth), exact; a quotient's and a square root's rest is the fma
        remainder, exact (Markstein)."""
        b = self.b
        v64 = ll.VectorType(ll.DoubleType(), WARP)
        xs = [b.fpext(x, v64) for x in xs]
        if op == "frcp":
            op, xs = "fdiv", [splat(1.0, ll.DoubleType())] + xs
        if op == "fsub":
            op, xs = "fadd", [xs[0], b.fneg(xs[1])]
        if op == "fmaf":
            op, xs = "fadd", [b.fmul(xs[0], xs[1]), xs[2]]
        if op == "fmul":
            return b.fmul(xs[0], xs[1]), splat(0.0, ll.DoubleType()), xs
        if op == "fadd":
            x, y = xs
            s = b.fadd(x, y)
            yv = b.fsub(s, x)
            e = b.fadd(b.fsub(x, b.fsub(s, yv)), b.fsub(y, yv))
            return s, e, xs
        if op == "fdiv":
            x, y = xs
            q = b.fdiv(x, y)
            rem = self._f64("fma", b.fneg(q), y, x)          # x - q*y
            return q, b.fmul(rem, y), xs                      # (x/y - q) has the sign of rem*y
        q = self._f64("sqrt", xs[0])
        return q, self._f64("fma", b.fneg(q), q, xs[0]), xs  # x - q*q

    def _directed(self, e, m):
        """__fadd_rz & co. correctly rounded toward zero (rz), +inf (ru) or
        -inf (rd), as the GPU's add/mul/fma/div/rcp/sqrt.{rz,rp,rm}.f32 (PTX
        ISA; IEEE 754 with subnormals). The exact result is s + e (see
        _exact_f64); f = s rounded to a float. Where f differs from s, the
        exact result lies strictly between the same two floats as s, so its
        directed rounding is s's; where f equals s, the sign of e decides.
        f then moves one float in the rounding's direction or stays."""
        b = self.b
        op, mode = e.name.rsplit("_", 1)
        s, err, xs = self._exact_f64(op, self.args(e, m))
        vf = ll.VectorType(F32, WARP)
        f = b.fptrunc(s, vf)
        d = b.fpext(f, s.type)
        rest = b.select(b.fcmp_ordered("==", d, s), err, b.fsub(s, d))   # sign of exact - f
        zero64 = splat(0.0, ll.DoubleType())
        above, below = b.fcmp_ordered(">", rest, zero64), b.fcmp_ordered("<", rest, zero64)
        bits = b.bitcast(f, ll.VectorType(I32, WARP))
        neg = b.icmp_signed("<", bits, splat(0, I32))
        is0 = b.fcmp_ordered("==", f, splat(0.0, F32))
        inc, dec = b.add(bits, splat(1, I32)), b.sub(bits, splat(1, I32))
        if mode == "rz":     # f > 0 > rest or f < 0 < rest: one float nearer zero
            step = b.and_(b.xor(is0, splat(1, I1)), b.select(neg, above, below))
            new = dec
        elif mode == "ru":
            step, new = above, b.select(is0, splat(1, I32), b.select(neg, dec, inc))
        else:
            step, new = below, b.select(is0, splat(-0x7FFFFFFF, I32), b.select(neg, inc, dec))
            if op in ("fadd", "fsub", "fmaf"):
                # an exact zero sum is -0 rounding down unless both terms are +0 (IEEE 754 6.3)
                sign = b.or_(*[b.and_(b.bitcast(t, ll.VectorType(I64, WARP)), splat(-1 << 63, I64))
                               for t in xs])
                zero_sum = b.fcmp_ordered("==", s, zero64)
                bits = b.select(zero_sum, b.or_(bits, b.trunc(b.lshr(sign, splat(32, I64)),
                                                                ll.VectorType(I32, WARP))), bits)
        return b.bitcast(b.select(step, new, bits), vf)

    def _remquo_quo(self, e, m):
        """remquo's quotient bits: glibc's remquo (its low 3 bits, negated
        where x and y differ in sign bit, as libdevice's __nv_remquof), 0
        where the remainder is NaN (libdevice; glibc leaves it unwritten)."""
        b = self.b
        x, y = self.args(e, m)
        et = x.type.element
        cname = "remquof" if et == F32 else "remquo"
        self.libm_used.add(cname)
        fn = intrinsic(self.m, cname, et, [et, et, I32.as_pointer()])
        with b.goto_entry_block():
            slot = b.alloca(I32, name="remquo_quo")
        out = ll.Constant(ll.VectorType(I32, WARP), ll.Undefined)
        for lanei in range(WARP):
            idx = ll.Constant(I32, lanei)
            b.store(ll.Constant(I32, 0), slot)
            r = b.call(fn, [b.extract_element(x, idx), b.extract_element(y, idx), slot])
            q = b.select(b.fcmp_unordered("uno", r, r), ll.Constant(I32, 0), b.load(slot))
            out = b.insert_element(out, q, idx)
        return out

    def _float_parts(self, e, m):
        vals = self.args(e, m)
        name = e.name
        if name in ("frexp", "frexp_exp"):
            return float_parts.frexp(self.b, self.m, vals[0])[name == "frexp_exp"]
        if name == "modf":
            return float_parts.modf(self.b, self.m, vals[0])[0]
        return getattr(float_parts, name)(self.b, self.m, *vals)

    # math -----------------------------------------------------------------
    def math(self, e, m):
        b = self.b
        name = e.name
        vals = self.args(e, m)
        x = vals[0]
        et = x.type.element
        if name in ("isnan", "isinf", "isfinite", "signbit"):
            if name == "signbit":      # the sign bit itself: -0.0 and -NaN too
                it = ll.VectorType(I32 if et == F32 else I64, WARP)
                r = b.icmp_signed("<", b.bitcast(x, it), splat(0, it.element))
            elif name == "isnan":
                r = b.fcmp_unordered("uno", x, x)
            else:
                ax = b.call(intrinsic(self.m, f"llvm.fabs.{vname(et)}", x.type, [x.type]), [x])
                inf = splat(float("inf"), et)
                r = b.fcmp_ordered("==", ax, inf) if name == "isinf" else b.fcmp_ordered("<", ax, inf)
            if is_bool(e.type):
                return r
            return b.zext(r, ll.VectorType(scalar_ll(e.type), WARP))
        if name == "rsqrt_rn":
            # 1/sqrt in double, rounded once to float: correctly rounded for
            # every float x (checked over all of [1, 4) with an exact midpoint
            # test; 1/sqrt(4^k x) = 2^-k/sqrt(x), and double neither under-
            # nor overflows here, so every binade follows)
            r = b.fdiv(splat(1.0, ll.DoubleType()), self._f64("sqrt", b.fpext(x, ll.VectorType(ll.DoubleType(), WARP))))
            return b.fptrunc(r, x.type)
        if name == "rsqrt":
            s = b.call(intrinsic(self.m, f"llvm.sqrt.{vname(et)}", x.type, [x.type]), [x])
            return b.fdiv(splat(1.0, et), s)
        if name == "saturate":
            lo = b.call(intrinsic(self.m, f"llvm.maxnum.{vname(et)}", x.type, [x.type, x.type]),
                        [x, splat(0.0, et)])
            return b.call(intrinsic(self.m, f"llvm.minnum.{vname(et)}", x.type, [x.type, x.type]),
                          [lo, splat(1.0, et)])
        if name == "fdivide":
            # x * (1/y) with 1/y flushed to zero where it would be subnormal:
            # CUDA Programming Guide, "Intrinsic Functions": for 2^126 < |y| <
            # 2^128 __fdividef(x, y) delivers 0, and NaN if x is infinite
            y = vals[1]
            ay = b.call(intrinsic(self.m, f"llvm.fabs.{vname(et)}", y.type, [y.type]), [y])
            flushed = b.call(intrinsic(self.m, f"llvm.copysign.{vname(et)}", y.type, [y.type, y.type]),
                             [splat(0.0, et), y])
            return b.select(b.fcmp_ordered(">", ay, splat(2.0**126, et)), b.fmul(x, flushed), b.fdiv(x, y))
        if name in LLVM_MATH:
            ln = LLVM_MATH[name]
            return b.call(intrinsic(self.m, f"llvm.{ln}.{vname(et)}", x.type, [x.type] * len(vals)), vals)
        cname = LIBM[name][0 if et == F32 else 1]
        self.libm_used.add(cname)
        ct = ll.DoubleType() if name in VIA_DOUBLE else et
        fn = intrinsic(self.m, cname, ct, [ct] * len(vals))
        out = ll.Constant(x.type, ll.Undefined)
        for lanei in range(WARP):
            idx = ll.Constant(I32, lanei)
            lane = [b.extract_element(v, idx) for v in vals]
            if ct != et:
                lane = [b.fpext(v, ct) for v in lane]
            r = b.call(fn, lane)
            out = b.insert_element(out, r if ct == et else b.fptrunc(r, et), idx)
        return out
