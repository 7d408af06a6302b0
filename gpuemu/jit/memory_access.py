"""Native helpers that perform one warp-wide memory instruction, checked.

For each active lane (in lane order) a helper decodes the fat pointer (tag in
bits 48-63, device address below), looks the tag up in its bounds table (the
run's own for the kernel's static tags, else the device's: _BoundsTables) and
checks [addr, addr+size) inside the object's [lo, hi) and natural alignment.
Only when every active lane passes does it record the request in the trace
buffer (MemInstr id, mask, space, 32 addresses as gpuemu.memory.trace says;
a shared load or store, when ctx's C_WARP_COUNTS names a state, is counted
there instead, inline where its words lie in one row, else by the memory
model's function: gpuemu/memory/warp_bank_counts.py)
and touch memory; otherwise it writes the fault into ctx and returns 1, so a
bad kernel never reads or writes outside its objects.

Local objects (and kernel struct parameters, space 'param', which each
thread may modify) live in each lane's window of the frame.

Atomics go lane by lane in lane order, each lane's read-modify-write one
atomic instruction (global memory is shared by the parallel block workers). Plain stores visit lanes in the
order of ctx's store-order table (identity unless the launch has a seed), so
of several lanes storing to one address the last visited wins: the highest
active lane by default, a seeded-random one on request. Helpers are generated once per (operation, type) in the kernel's
LLVM module.
"""
from __future__ import annotations

import llvmlite.ir as ll

from . import abi
from .lane_types import I1, I32, I64, VOIDP, AlignedBuilder
from .c_semantics import intrinsic, vector_reduce, vname

# space codes (gpuemu.memory.trace.SPACE_CODES)
SP_GLOBAL, SP_SHARED, SP_LOCAL, SP_CONSTANT, SP_PARAM = 0, 1, 2, 3, 4

ATOMIC_OPS = ("add", "sub", "exch", "min", "max", "and", "or", "xor", "inc", "dec", "cas")

HELPER_TYPE = ll.FunctionType(I32, [VOIDP, VOIDP, VOIDP, I32, VOIDP, VOIDP, I32, I32])


def _c(v, t=I64):
    return ll.Constant(t, v)


def _splat(v: int):
    """A constant <32 x i64> of v."""
    return ll.Constant(ll.VectorType(I64, abi.WARP), [v] * abi.WARP)


def _vsplat(b: ll.IRBuilder, x):
    """A <32 x i64> of the run-time i64 x in every lane."""
    vt = ll.VectorType(I64, abi.WARP)
    one = b.insert_element(ll.Constant(vt, ll.Undefined), x, ll.Constant(I32, 0))
    return b.shuffle_vector(one, ll.Constant(vt, ll.Undefined),
                            ll.Constant(ll.VectorType(I32, abi.WARP), [0] * abi.WARP))


class _Emitter:
    def __init__(self, fn: ll.Function):
        self.fn = fn
        self.b = AlignedBuilder(fn.append_basic_block("entry"))

    def ctx_field(self, ctx, idx: int):
        p = self.b.gep(self.b.bitcast(ctx, I64.as_pointer()), [_c(idx, I32)])
        return self.b.load(p)

    def ctx_store(self, ctx, idx: int, v):
        p = self.b.gep(self.b.bitcast(ctx, I64.as_pointer()), [_c(idx, I32)])
        self.b.store(v, p)

    def byte_ptr(self, base_i8p, off_i64, t: ll.Type):
        return self.b.bitcast(self.b.gep(base_i8p, [off_i64]), t.as_pointer())

    def frame_i32(self, frame, off: int):
        return self.b.load(self.byte_ptr(frame, _c(off), I32))


def _atomic_apply(b: ll.IRBuilder, op: str, old, v, cmp, et: ll.Type, is_float: bool, signed: bool):
    if op == "add":
        return b.fadd(old, v) if is_float else b.add(old, v)
    if op == "sub":
        return b.fsub(old, v) if is_float else b.sub(old, v)
    if op == "exch":
        return v
    if op in ("min", "max"):
        if is_float:
            c = b.fcmp_ordered("<" if op == "min" else ">", v, old)
        elif signed:
            c = b.icmp_signed("<" if op == "min" else ">", v, old)
        else:
            c = b.icmp_unsigned("<" if op == "min" else ">", v, old)
        return b.select(c, v, old)
    if op == "and":
        return b.and_(old, v)
    if op == "or":
        return b.or_(old, v)
    if op == "xor":
        return b.xor(old, v)
    if op == "inc":   # ((old >= v) ? 0 : (old+1))   CUDA Guide, atomicInc
        return b.select(b.icmp_unsigned(">=", old, v), ll.Constant(et, 0), b.add(old, ll.Constant(et, 1)))
    if op == "dec":   # (((old == 0) || (old > v)) ? v : (old-1))   CUDA Guide, atomicDec
        c = b.or_(b.icmp_unsigned("==", old, ll.Constant(et, 0)), b.icmp_unsigned(">", old, v))
        return b.select(c, v, b.sub(old, ll.Constant(et, 1)))
    if op == "cas":   # integer types only (the front end rejects others, as CUDA has no float CAS)
        return b.select(b.icmp_unsigned("==", old, cmp), v, old)
    raise NotImplementedError(op)


# one hardware read-modify-write instruction where LLVM has it (x86: lock
# xadd, lock and, ...); the others (inc, dec, float min/max, 8/16-bit float
# ops) are a compare-and-swap loop around the rule of _atomic_apply
_RMW_INT = {"add": "add", "sub": "sub", "exch": "xchg", "and": "and", "or": "or", "xor": "xor"}
_RMW_FLOAT = {"add": "fadd", "sub": "fsub"}


def _atomic_rmw(b: ll.IRBuilder, op: str, hp, v, cmp, et: ll.Type, is_float: bool, signed: bool,
                align: int):
    """Apply `op` to *hp atomically (blocks on parallel workers share global
    memory, so a lane's read-modify-write is one atomic instruction, as on
    the GPU; relaxed ordering, as CUDA's atomics); returns the old value."""
    if not is_float and op in _RMW_INT:
        return b.atomic_rmw(_RMW_INT[op], hp, v, "monotonic")
    if not is_float and op in ("min", "max"):
        return b.atomic_rmw(op if signed else "u" + op, hp, v, "monotonic")
    if is_float and op in _RMW_FLOAT:
        return b.atomic_rmw(_RMW_FLOAT[op], hp, v, "monotonic")
    it = ll.IntType(et.width if isinstance(et, ll.IntType) else (32 if et == ll.FloatType() else 64))
    ip = b.bitcast(hp, it.as_pointer())
    as_int = (lambda x: x) if isinstance(et, ll.IntType) else (lambda x: b.bitcast(x, it))
    if op == "cas":
        pair = b.cmpxchg(ip, as_int(cmp), as_int(v), "monotonic", "monotonic")
        old = b.extract_value(pair, 0)
        return old if isinstance(et, ll.IntType) else b.bitcast(old, et)
    pre = b.block
    first = b.load(ip, align=align)
    loop = b.append_basic_block("cas_loop")
    after = b.append_basic_block("cas_done")
    b.branch(loop)
    b.position_at_end(loop)
    cur = b.phi(it)
    cur.add_incoming(first, pre)
    cur_v = cur if isinstance(et, ll.IntType) else b.bitcast(cur, et)
    new = _atomic_apply(b, op, cur_v, v, cmp, et, is_float, signed)
    pair = b.cmpxchg(ip, cur, as_int(new), "monotonic", "monotonic")
    seen = b.extract_value(pair, 0)
    cur.add_incoming(seen, loop)
    b.cbranch(b.extract_value(pair, 1), after, loop)
    b.position_at_end(after)
    return cur_v


def _count_in_warp(b, counts, addrs, mask, instr, frame_int) -> None:
    """Call the memory model's counting function for a shared request (its
    address is the state's first field: gpuemu/memory/warp_bank_counts.py)
    with the lanes' addresses, written where the trace record's go."""
    fty = ll.FunctionType(I64, [I64] * 5)
    fn = b.inttoptr(b.load(b.inttoptr(counts, I64.as_pointer())), fty.as_pointer())
    b.call(fn, [counts, addrs, b.zext(mask, I64), b.zext(instr, I64), frame_int])


def _warp_counts(e, b, ctx, space):
    """(the C_WARP_COUNTS state's address, whether the warp counts this
    request itself): a shared load or store, when the launch's warps count
    them (gpuemu/memory/warp_bank_counts.py); any other request is traced."""
    counts = e.ctx_field(ctx, abi.C_WARP_COUNTS)
    return counts, b.and_(b.icmp_unsigned("!=", counts, _c(0)), b.icmp_signed("==", space, _c(SP_SHARED, I32)))


def _count_or_keep(e, b, ctx, frame, addrs, first, mask, instr, space, rec_addr0, counted, spread) -> None:
    """On the fast path of a load or store (every active lane checked, lane
    addresses `addrs()`, the first active lane's `first`; a whole warp's
    `spread`: the bits where some lane's address differs from the first's):
    a shared request whose words lie in one row, when the warps count
    (_warp_counts), is counted here inline (warp_bank_counts.one_row or
    one_row_spread, emit_charge: no call, no copy of its addresses) and
    `counted` set; any other has its addresses written into the trace
    record, for the call or the record after the checks."""
    from gpuemu.memory import warp_bank_counts as wbc
    v64 = ll.VectorType(I64, abi.WARP)
    counts, here = _warp_counts(e, b, ctx, space)
    keep = lambda: b.store(addrs(), b.inttoptr(rec_addr0, v64.as_pointer()), align=8)  # noqa: E731
    with b.if_else(here) as (shared, other):
        with shared:
            st = b.inttoptr(counts, I64.as_pointer())
            with b.if_else(b.icmp_unsigned("==", mask, _c(-1, I32))) as (whole, part):
                with whole:
                    one_w, whole_end = wbc.one_row_spread(b, st, spread), b.block
                with part:
                    one_p, part_end = wbc.one_row(b, st, addrs(), first, mask), b.block
            one = b.phi(I1)
            one.add_incoming(one_w, whole_end)
            one.add_incoming(one_p, part_end)
            with b.if_else(one) as (one, more):
                with one:
                    wbc.emit_charge(b, st, b.zext(instr, I64), b.zext(mask, I64),
                                    b.bitcast(frame, I32.as_pointer()), _c(1), _c(1), _c(1),
                                    lambda dst: b.store(addrs(), b.bitcast(dst, v64.as_pointer()), align=8))
                    b.store(ll.Constant(I1, 1), counted)
                with more:
                    keep()
        with other:
            keep()


def _record(e, b, ctx, frame, rec, instr, mask, space_acc, tlen) -> None:
    """Fill in trace record `rec` (its addresses are written) and count it."""
    recp = b.inttoptr(rec, I32.as_pointer())
    b.store(instr, recp)
    b.store(mask, b.gep(recp, [_c(1, I32)]))
    b.store(b.load(space_acc), b.gep(recp, [_c(2, I32)]))
    b.store(e.frame_i32(frame, abi.F_BLOCK), b.gep(recp, [_c(3, I32)]))
    b.store(e.frame_i32(frame, abi.F_WARP), b.gep(recp, [_c(4, I32)]))
    b.store(e.frame_i32(frame, abi.F_SM), b.gep(recp, [_c(5, I32)]))
    icount = b.load(e.byte_ptr(frame, _c(abi.F_ICOUNT), I64))
    b.store(icount, b.inttoptr(b.add(rec, _c(abi.TRACE_DTYPE.fields["icount"][1])),
                               I64.as_pointer()))
    # barrier and warp-sync intervals (F_EPOCH, F_WSYNC) into `pad`
    b.store(b.load(e.byte_ptr(frame, _c(abi.F_EPOCH), I64)),
            b.inttoptr(b.add(rec, _c(abi.TRACE_EPOCH_OFFSET)), I64.as_pointer()))
    e.ctx_store(ctx, abi.C_TRACE_LEN, b.add(tlen, _c(1)))


def _space_ok(b, space, writes: bool):
    """The object's space admits the access: an object at all (space >= 0),
    and for a store or atomic not constant memory, read-only in device code
    (CUDA C Programming Guide, "Variable Memory Space Specifiers",
    __constant__: written by the host only; a store through a cast pointer
    is the constant_write fault)."""
    ok = b.icmp_signed(">=", space, _c(0, I32))
    if writes:
        ok = b.and_(ok, b.icmp_signed("!=", space, _c(SP_CONSTANT, I32)))
    return ok


def _whole_warp_check(b, pv, p0, tagbits0, lo0, hi0, space_ok, size: int, align: int, ok, bad):
    """Check a request of every lane of the warp (the common case) with
    fewer vector operations than the lane-masked check: the lanes' pointers
    `pv` all carry lane 0's tag (`p0`'s, `tagbits0` its bits) and lie
    aligned when their bits above the address and below `align` equal p0's
    and p0 is aligned; then each lies in [lo0, hi0 - size] when d = pointer
    - tagbits0 - lo0 (its address - lo0) and (hi0 - size - lo0) - d are
    both >= 0 (device addresses are below 2^48: no overflow; a lane of
    another tag fails the first test, whatever its d). Two OR reductions
    over the lanes, then one test; branches to `ok` or `bad`.
    Returns the OR of (pv xor p0): the address bits where some lane differs
    from lane 0 (warp_bank_counts.one_row_spread reads the row from it)."""
    spread = vector_reduce(b, "or", b.xor(pv, _vsplat(b, p0)))
    d = b.sub(pv, _vsplat(b, b.add(tagbits0, lo0)))
    out = vector_reduce(b, "or", b.or_(d, b.sub(_vsplat(b, b.sub(b.sub(hi0, lo0), _c(size))), d)))
    wrong = b.or_(b.and_(spread, _c(~abi.ADDR_MASK | (align - 1))),
                  b.or_(b.and_(out, _c(-1 << 63)), b.and_(p0, _c(align - 1))))
    good = b.and_(b.icmp_unsigned("==", wrong, _c(0)), space_ok)
    b.cbranch(good, ok, bad)
    return spread


def _store_whole(b, vals, dat) -> None:
    """Store the vector `vals` at the 32-byte aligned `dat` in whole 32-byte
    stores, as the warp function reads it back (a load served by two
    16-byte stores waits for both: x86 forwards a store to a load only
    within one store). LLVM would store a vector built from 16-byte halves
    as two halves; on x86 with AVX an empty inline asm hands each 32-byte
    part over as one (ymm) register (without AVX there is none to ask for)."""
    from . import engine
    n = 256 // (vals.type.element.width if isinstance(vals.type.element, ll.IntType)
                else {ll.FloatType: 32, ll.DoubleType: 64}[type(vals.type.element)])
    part = ll.VectorType(vals.type.element, n)
    x86 = engine.triple().startswith(("x86_64", "i686", "i386")) and engine.has_feature("avx")
    for k in range(0, abi.WARP, n):
        v = b.shuffle_vector(vals, ll.Constant(vals.type, ll.Undefined),
                             ll.Constant(ll.VectorType(I32, n), list(range(k, k + n))))
        if x86:
            v = b.asm(ll.FunctionType(part, [part]), "", "=x,0", [v], False)
        b.store(v, b.bitcast(b.gep(b.bitcast(dat, vals.type.element.as_pointer()), [_c(k, I32)]),
                             part.as_pointer()), align=32)


def _whole_warp_move(e, b, ctx, kind: str, mask, hosts, dat, et, align: int, order, done) -> None:
    """A load or plain store by every lane of the warp (the common case), of
    4- or 8-byte lanes: one gather of the 32 host addresses into the 32 data
    slots, or one scatter of the slots to them, no per-lane test (nothing
    counted: ctx's C_LANE_MOVES counts the others). A scatter writes lanes in lane
    order (of lanes storing to one address the highest wins: LLVM's
    masked.scatter), so a store takes it only while the store-order table
    is the identity (no seed). Anything else goes on lane by lane, where the
    builder is left."""
    width = {ll.FloatType: 32, ll.DoubleType: 64}.get(type(et), getattr(et, "width", 0))
    if width not in (32, 64) or not isinstance(et, (ll.IntType, ll.FloatType, ll.DoubleType)):
        return
    whole = b.icmp_unsigned("==", mask, _c(-1, I32))
    if kind == "st":
        v8 = ll.VectorType(ll.IntType(8), abi.WARP)
        same = b.icmp_unsigned("==", b.load(b.bitcast(order, v8.as_pointer()), align=1),
                               ll.Constant(v8, list(range(abi.WARP))))
        whole = b.and_(whole, b.icmp_unsigned("==", b.bitcast(same, I32), _c(-1, I32)))
    full, part = b.append_basic_block(f"{kind}_whole_warp"), b.append_basic_block(f"{kind}_lanes")
    b.cbranch(whole, full, part)
    b.position_at_end(full)
    vt, pt = ll.VectorType(et, abi.WARP), ll.VectorType(et.as_pointer(), abi.WARP)
    v1 = ll.VectorType(I1, abi.WARP)
    code = f"i{width}" if isinstance(et, ll.IntType) else f"f{width}"
    over = f"{vname(et)}.v{abi.WARP}p0{code}"                # the overload: v32i32.v32p0i32
    every = ll.Constant(v1, [1] * abi.WARP)
    ptrs = b.inttoptr(b.load(b.bitcast(hosts, ll.VectorType(I64, abi.WARP).as_pointer()), align=8), pt)
    if kind == "ld":
        gather = intrinsic(b.module, f"llvm.masked.gather.{over}", vt, [pt, I32, v1, vt])
        _store_whole(b, b.call(gather, [ptrs, _c(align, I32), every, ll.Constant(vt, ll.Undefined)]), dat)
    else:
        scatter = intrinsic(b.module, f"llvm.masked.scatter.{over}", ll.VoidType(), [vt, pt, I32, v1])
        b.call(scatter, [b.load(b.bitcast(dat, vt.as_pointer()), align=32), ptrs, _c(align, I32), every])
    b.branch(done)
    b.position_at_end(part)


class _BoundsTables:
    """Where a tag's bounds entry lies: a static tag of this run (ctx's
    C_STATIC_TAGS of them from FIRST_STATIC_TAG) in the run's own table
    (C_STATIC_BOUNDS, biased so that + tag * entry size is the entry), any
    other tag in the device's (C_BOUNDS): one compare and one select per
    lookup, so kernels never share static tags (abi.py, bounds table)."""

    def __init__(self, e: _Emitter, ctx) -> None:
        self.device = e.ctx_field(ctx, abi.C_BOUNDS)
        self.static = e.ctx_field(ctx, abi.C_STATIC_BOUNDS)
        self.n_static = e.ctx_field(ctx, abi.C_STATIC_TAGS)

    def entry(self, b: ll.IRBuilder, tag):
        """The i8* of `tag`'s entry (tag: i64, 0 to N_TAGS - 1)."""
        own = b.icmp_unsigned("<", b.sub(tag, _c(abi.FIRST_STATIC_TAG)), self.n_static)
        base = b.select(own, self.static, self.device)
        return b.inttoptr(b.add(base, b.mul(tag, _c(abi.BOUNDS_DTYPE.itemsize))), VOIDP)


def get_helper(module: ll.Module, kind: str, et: ll.Type, size: int, align: int,
               atomic_op: str = "", is_float: bool = False, signed: bool = True) -> ll.Function:
    """The helper for kind 'ld' | 'st' | 'atom' on lanes of element type et.

    Signature: i32 (ctx, frame, ptrs (i64[32]), mask, data (et[32]),
    aux (et[32], CAS compare values), instr id, line); ptrs and data are
    the warp function's 64-byte aligned buffers (warp_codegen's ptrbuf and
    databuf: whole 32-byte vector moves). Returns 0, or 1 on a fault
    (details in ctx)."""
    name = f"__mem_{kind}{atomic_op}_{et}_{size}_{align}_{int(signed)}".replace(" ", "")
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    fn = ll.Function(module, HELPER_TYPE, name)
    fn.linkage = "internal"
    ctx, frame, ptrs, mask, data, aux, instr, line = fn.args
    e = _Emitter(fn)
    b = e.b
    hosts = b.alloca(ll.ArrayType(I64, abi.WARP))
    space_acc = b.alloca(I32)
    b.store(_c(-1, I32), space_acc)
    counted = b.alloca(I1)              # counted already, on the fast path (_count_or_keep)
    b.store(ll.Constant(I1, 0), counted)
    ptrs64 = b.bitcast(ptrs, I64.as_pointer())
    tables = _BoundsTables(e, ctx)
    trace = e.ctx_field(ctx, abi.C_TRACE)
    tlen = e.ctx_field(ctx, abi.C_TRACE_LEN)
    tcap = e.ctx_field(ctx, abi.C_TRACE_CAP)
    local_off = e.ctx_field(ctx, abi.C_LOCAL_OFF)
    local_stride = e.ctx_field(ctx, abi.C_LOCAL_STRIDE)
    shared_base = b.load(e.byte_ptr(frame, _c(abi.F_SHARED), I64))
    frame_int = b.ptrtoint(frame, I64)
    tracing = b.and_(b.icmp_unsigned("!=", trace, _c(0)), b.icmp_signed("<", tlen, tcap))
    rec = b.add(trace, b.mul(tlen, _c(abi.TRACE_RECORD_BYTES)))
    rec_addr0 = b.add(rec, _c(abi.TRACE_DTYPE.fields["addr"][1]))

    loop_bb = fn.append_basic_block("check")
    check_bb = fn.append_basic_block("check_lane")
    next_bb = fn.append_basic_block("check_next")
    act_bb = fn.append_basic_block("act")
    fault_bb = fn.append_basic_block("fault")
    ret0 = fn.append_basic_block("ret0")
    fast_bb = fn.append_basic_block("fast")
    b.cbranch(b.icmp_unsigned("==", mask, _c(0, I32)), ret0, fast_bb)
    with b.goto_block(ret0):
        b.ret(_c(0, I32))

    # ---- pass 0: the common request, checked with vector operations: every
    # active lane in one object, in bounds and aligned (a whole warp's by
    # _whole_warp_check, others lane-masked). Anything else takes the
    # lane-by-lane pass 1 (counted in ctx's C_LANE_CHECKS), which finds and
    # reports the first bad lane.
    b.position_at_end(fast_bb)
    fast_ok = fn.append_basic_block("fast_ok")
    slow_bb = fn.append_basic_block("slow")
    v64 = ll.VectorType(I64, abi.WARP)
    pv = b.load(b.bitcast(ptrs, v64.as_pointer()), align=32)     # (the warp's 64-byte aligned ptrbuf)
    cttz = intrinsic(b.module, "llvm.cttz.i32", I32, [I32, I1])
    p0 = b.load(b.gep(ptrs64, [b.call(cttz, [mask, ll.Constant(I1, 1)])]))   # the first active lane's
    tag0 = b.lshr(p0, _c(abi.ADDR_BITS))
    tagbits0 = b.and_(p0, _c(~abi.ADDR_MASK))
    addrs = lambda: b.and_(pv, _splat(abi.ADDR_MASK))  # noqa: E731  (the lanes' device addresses, where used)
    ent0 = tables.entry(b, tag0)
    lo0 = b.load(e.byte_ptr(ent0, _c(0), I64))
    hi0 = b.load(e.byte_ptr(ent0, _c(8), I64))
    hbase0 = b.load(e.byte_ptr(ent0, _c(16), I64))
    space0 = b.load(e.byte_ptr(ent0, _c(24), I32))
    writes = kind in ("st", "atom")
    space_ok0 = _space_ok(b, space0, writes)
    whole = b.icmp_unsigned("==", mask, _c(-1, I32))
    whole_bb, part_bb = fn.append_basic_block("check_whole_warp"), fn.append_basic_block("check_part")
    b.cbranch(whole, whole_bb, part_bb)
    b.position_at_end(whole_bb)
    spread_w = _whole_warp_check(b, pv, p0, tagbits0, lo0, hi0, space_ok0, size, align, fast_ok, slow_bb)
    b.position_at_end(part_bb)
    av = addrs()
    okv = b.and_(b.icmp_unsigned("==", b.lshr(pv, _splat(abi.ADDR_BITS)), _vsplat(b, tag0)),
                 b.and_(b.icmp_signed(">=", av, _vsplat(b, lo0)),
                        b.icmp_signed("<=", b.add(av, _splat(size)), _vsplat(b, hi0))))
    if align > 1:
        okv = b.and_(okv, b.icmp_unsigned("==", b.and_(av, _splat(align - 1)), _splat(0)))
    bad = b.and_(mask, b.not_(b.bitcast(okv, I32)))   # (lanes as bits: no <32 x i1> of the mask)
    good = b.and_(b.icmp_unsigned("==", bad, _c(0, I32)), space_ok0)
    b.cbranch(good, fast_ok, slow_bb)
    b.position_at_end(fast_ok)
    spread = b.phi(I64)                 # whole warp: the bits where some lane's address differs from lane 0's
    spread.add_incoming(spread_w, whole_bb)
    spread.add_incoming(_c(-1), part_bb)
    lanes_v = ll.Constant(v64, list(range(abi.WARP)))
    is_sh0 = b.icmp_signed("==", space0, _c(SP_SHARED, I32))
    is_lo0 = b.or_(b.icmp_signed("==", space0, _c(SP_LOCAL, I32)),
                   b.icmp_signed("==", space0, _c(SP_PARAM, I32)))
    # host = device address + the object's offset (one for the warp), + lane * stride for local;
    # every active lane has lane 0's tag: pointer - tag bits = device address
    off0 = b.select(is_sh0, shared_base, b.select(is_lo0, b.add(frame_int, local_off), b.sub(hbase0, lo0)))
    hosts_v = b.bitcast(hosts, v64.as_pointer())
    b.store(b.add(pv, _vsplat(b, b.sub(off0, tagbits0))), hosts_v, align=8)
    with b.if_then(is_lo0, likely=False):
        b.store(b.add(b.load(hosts_v, align=8), b.mul(lanes_v, _vsplat(b, local_stride))), hosts_v, align=8)
    b.store(space0, space_acc)
    with b.if_then(tracing):
        if kind in ("ld", "st"):
            _count_or_keep(e, b, ctx, frame, addrs, b.and_(p0, _c(abi.ADDR_MASK)), mask, instr, space0,
                           rec_addr0, counted, spread)
        else:
            b.store(addrs(), b.inttoptr(rec_addr0, v64.as_pointer()), align=8)
    fast_end = b.block
    b.position_at_end(slow_bb)
    e.ctx_store(ctx, abi.C_LANE_CHECKS, b.add(e.ctx_field(ctx, abi.C_LANE_CHECKS), _c(1)))
    b.branch(loop_bb)

    # ---- pass 1: check every active lane, compute host and trace addresses
    b.position_at_end(loop_bb)
    lane = b.phi(I32)
    lane.add_incoming(_c(0, I32), slow_bb)
    active = b.trunc(b.lshr(mask, lane), I1)
    b.cbranch(active, check_bb, next_bb)
    b.position_at_end(check_bb)
    lane64 = b.zext(lane, I64)
    p = b.load(b.gep(ptrs64, [lane]))
    tag = b.lshr(p, _c(abi.ADDR_BITS))
    a = b.and_(p, _c(abi.ADDR_MASK))
    ent = tables.entry(b, tag)
    lo = b.load(e.byte_ptr(ent, _c(0), I64))
    hi = b.load(e.byte_ptr(ent, _c(8), I64))
    hbase = b.load(e.byte_ptr(ent, _c(16), I64))
    space = b.load(e.byte_ptr(ent, _c(24), I32))
    bad = b.or_(b.icmp_signed("<", space, _c(0, I32)),
                b.or_(b.icmp_signed("<", a, lo), b.icmp_signed(">", b.add(a, _c(size)), hi)))
    mis = b.icmp_unsigned("!=", b.and_(a, _c(align - 1)), _c(0))
    fkind = b.select(bad, _c(1), b.select(mis, _c(2), _c(0)))
    if writes:
        in_constant = b.icmp_signed("==", space, _c(SP_CONSTANT, I32))
        fkind = b.select(b.and_(in_constant, b.icmp_unsigned("==", fkind, _c(0))), _c(4), fkind)
    ok_bb = fn.append_basic_block("lane_ok")
    # fault details are written before branching (harmless when ok)
    b.cbranch(b.icmp_unsigned("!=", fkind, _c(0)), fault_bb, ok_bb)
    fault_kind = fkind
    b.position_at_end(ok_bb)
    host_g = b.add(hbase, b.sub(a, lo))
    host_s = b.add(shared_base, a)
    host_l = b.add(b.add(frame_int, local_off), b.add(b.mul(lane64, local_stride), a))
    is_sh = b.icmp_signed("==", space, _c(SP_SHARED, I32))
    is_lo = b.or_(b.icmp_signed("==", space, _c(SP_LOCAL, I32)),
                  b.icmp_signed("==", space, _c(SP_PARAM, I32)))
    host = b.select(is_sh, host_s, b.select(is_lo, host_l, host_g))
    b.store(host, b.gep(hosts, [_c(0, I32), lane]))
    first = b.icmp_signed("<", b.load(space_acc), _c(0, I32))
    b.store(b.select(first, space, b.load(space_acc)), space_acc)
    with b.if_then(tracing):
        b.store(a, b.inttoptr(b.add(rec_addr0, b.mul(lane64, _c(8))), I64.as_pointer()))
    b.branch(next_bb)
    b.position_at_end(next_bb)
    nxt = b.add(lane, _c(1, I32))
    lane.add_incoming(nxt, next_bb)
    b.cbranch(b.icmp_unsigned("<", nxt, _c(abi.WARP, I32)), loop_bb, act_bb)

    # ---- fault: report the first bad lane
    b.position_at_end(fault_bb)
    fk = b.phi(I64)
    fk.add_incoming(fault_kind, check_bb)
    fl = b.phi(I64)
    fl.add_incoming(lane64, check_bb)
    fa = b.phi(I64)
    fa.add_incoming(a, check_bb)
    fs = b.phi(I32)
    fs.add_incoming(space, check_bb)
    ft = b.phi(I64)
    ft.add_incoming(tag, check_bb)
    e.ctx_store(ctx, abi.C_FAULT_KIND, fk)
    e.ctx_store(ctx, abi.C_FAULT_LANE, fl)
    e.ctx_store(ctx, abi.C_FAULT_ADDR, fa)
    e.ctx_store(ctx, abi.C_FAULT_SPACE, b.sext(fs, I64))
    e.ctx_store(ctx, abi.C_FAULT_TAG, ft)
    e.ctx_store(ctx, abi.C_FAULT_INSTR, b.zext(instr, I64))
    e.ctx_store(ctx, abi.C_FAULT_LINE, b.zext(line, I64))
    b.ret(_c(1, I32))

    b.position_at_end(fast_end)
    b.branch(act_bb)

    # ---- commit the trace record, then act lane by lane in lane order
    b.position_at_end(act_bb)
    if kind == "st":
        order = b.inttoptr(e.ctx_field(ctx, abi.C_STORE_ORDER), ll.IntType(8).as_pointer())
    with b.if_then(b.and_(tracing, b.not_(b.load(counted)))):
        if kind in ("ld", "st"):    # a shared request the warp counts itself (C_WARP_COUNTS)
            counts, here = _warp_counts(e, b, ctx, b.load(space_acc))
            with b.if_else(here) as (count, record):
                with count:
                    _count_in_warp(b, counts, rec_addr0, mask, instr, frame_int)
                with record:
                    _record(e, b, ctx, frame, rec, instr, mask, space_acc, tlen)
        else:
            _record(e, b, ctx, frame, rec, instr, mask, space_acc, tlen)
    dat = b.bitcast(data, et.as_pointer())
    auxp = b.bitcast(aux, et.as_pointer())
    act_loop = fn.append_basic_block("act_loop")
    act_do = fn.append_basic_block("act_lane")
    act_next = fn.append_basic_block("act_next")
    done = fn.append_basic_block("done")
    if kind in ("ld", "st"):
        _whole_warp_move(e, b, ctx, kind, mask, hosts, dat, et, align, order if kind == "st" else None, done)
        # moved lane by lane (tests read the count: the common whole warp's path stays uncounted)
        e.ctx_store(ctx, abi.C_LANE_MOVES, b.add(e.ctx_field(ctx, abi.C_LANE_MOVES), _c(1)))
    pre = b.block
    b.branch(act_loop)
    b.position_at_end(act_loop)
    step = b.phi(I32)
    step.add_incoming(_c(0, I32), pre)
    ln = b.zext(b.load(b.gep(order, [step])), I32) if kind == "st" else step
    b.cbranch(b.trunc(b.lshr(mask, ln), I1), act_do, act_next)
    b.position_at_end(act_do)
    hp = b.inttoptr(b.load(b.gep(hosts, [_c(0, I32), ln])), et.as_pointer())
    slot = b.gep(dat, [ln])
    if kind == "ld":
        b.store(b.load(hp, align=align), slot)
    elif kind == "st":
        b.store(b.load(slot), hp, align=align)
    else:
        old = _atomic_rmw(b, atomic_op, hp, b.load(slot), b.load(b.gep(auxp, [ln])),
                          et, is_float, signed, align)
        b.store(old, slot)
    b.branch(act_next)
    b.position_at_end(act_next)
    n2 = b.add(step, _c(1, I32))
    step.add_incoming(n2, act_next)
    b.cbranch(b.icmp_unsigned("<", n2, _c(abi.WARP, I32)), act_loop, done)
    b.position_at_end(done)
    b.ret(_c(0, I32))
    return fn
