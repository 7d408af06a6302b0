"""Cooperative groups (CUDA C Programming Guide, "Cooperative Groups"),
lowered to the warp intrinsics they stand for, so that divergence and the
bug finders see the same __syncthreads / __syncwarp / __shfl_*_sync /
vote operations as in hand-written code.

A group is a 64-bit handle value: bits 32..39 its kind (1 thread block,
2 tile, 3 coalesced group), bits 40..47 a tile's size, bits 0..31 a
coalesced group's member mask. Variables of a group type carry the kind
statically (QType.group: ('block',), ('tile', N), ('coalesced',)), so
operations on them compile to the intrinsics directly; only a generic
`cg::thread_group` decides at run time from the handle.

    block.sync()           __syncthreads()
    block.thread_rank()    threadIdx.x + threadIdx.y*bx + threadIdx.z*bx*by
    block.size()           blockDim.x * blockDim.y * blockDim.z
    block.group_index()    blockIdx (dim3)      block.thread_index()  threadIdx
    tile.sync()            __syncwarp(tile mask)
    tile.thread_rank()     laneid % N           tile.meta_group_rank()  rank in block / N
    tile.shfl*(v, x)       __shfl*_sync(tile mask, v, x, N)
    tile.any/all/ballot    __any/__all/__ballot_sync(tile mask, p) (ballot shifted to the tile)
    cg::reduce(tile, v, op)  log2(N) __shfl_xor_sync steps (every lane gets the result)
    cg::inclusive_scan / exclusive_scan(tile, v)  log2(N) __shfl_up_sync steps
The tile mask of lane l is ((1 << N) - 1) << (l & ~(N - 1)): tiles are
consecutive lanes of a warp (tiled_partition splits a block by thread rank).
"""
from __future__ import annotations

from . import ast as A
from . import ir
from .ir import BOOL, I32, U32, U64
from .conversions import promote
from .declarations import QType
from .places import is_arith, tname

KIND = {"block": 1, "tile": 2, "coalesced": 3}
FULL = 0xFFFFFFFF


def _c(t, loc, v):
    return ir.Const(t, loc, v)


def _b(t, loc, op, a, b):
    return ir.Binary(t, loc, op, a, b)


def _handle(group: tuple, loc, mask=None) -> ir.Expr:
    k = KIND[group[0]]
    base = (k << 32) | ((group[1] if group[0] == "tile" else 0) << 40)
    if mask is None:
        h = _c(U64, loc, base)
    else:
        h = _b(U64, loc, "or", ir.Cast(U64, loc, mask), _c(U64, loc, base))
    h.group = group
    return h


def _sp(name, loc):
    return ir.Special(U32, loc, name)


def _lane(loc):
    return _sp("laneid", loc)


def linear_tid(loc) -> ir.Expr:
    x, y, z = _sp("tid.x", loc), _sp("tid.y", loc), _sp("tid.z", loc)
    bx, by = _sp("ntid.x", loc), _sp("ntid.y", loc)
    return _b(U32, loc, "add", x, _b(U32, loc, "mul", _b(U32, loc, "add", y, _b(U32, loc, "mul", z, by)), bx))


def block_size(loc) -> ir.Expr:
    return _b(U32, loc, "mul", _b(U32, loc, "mul", _sp("ntid.x", loc), _sp("ntid.y", loc)), _sp("ntid.z", loc))


def tile_mask(n: int, loc) -> ir.Expr:
    if n == 32:
        return _c(U32, loc, FULL)
    return _b(U32, loc, "shl", _c(U32, loc, (1 << n) - 1),
              _b(U32, loc, "and", _lane(loc), _c(U32, loc, FULL & ~(n - 1))))


def _dim3(prefix: str, loc) -> ir.Expr:
    from .builtins import VECTOR_TYPES
    return ir.MakeVector(VECTOR_TYPES["dim3"], loc, [_sp(f"{prefix}.{c}", loc) for c in "xyz"])


# ----------------------------------------------------------------- types

def group_type(ck, o: A.TypedefName, scope_lookup) -> QType:
    """The QType of a cg:: type name (a U64 handle with its static kind)."""
    name = o.name[4:]
    if name == "thread_block":
        return QType(U64, group=("block",))
    if name == "coalesced_group":
        return QType(U64, group=("coalesced",))
    if name == "thread_group":
        return QType(U64, group=("any",))
    if name == "thread_block_tile":
        if not o.targs or len(o.targs) != 1:
            raise ck.error("cg::thread_block_tile needs its size: cg::thread_block_tile<32>", o.loc)
        n = ck.const_int(ck.templates.frag.expr(o.targs[0], ck.templates.type_params_in_scope()),
                         scope_lookup, "the tile size")
        _check_tile(ck, n, o.loc)
        return QType(U64, group=("tile", n))
    raise ck.error(f"'cg::{name}' is not supported (grid and multi-grid groups need a cooperative launch)", o.loc)


def _check_tile(ck, n: int, loc) -> None:
    if n < 1 or n > 32 or n & (n - 1):
        raise ck.error(f"a tile size must be a power of two from 1 to 32, not {n}", loc)


def group_of(low, e: A.Expr):
    """(handle value, static kind) of a group expression."""
    v = low.rvalue(e)
    g = getattr(v, "group", None)
    if g is None and isinstance(e, A.Name):
        sym = low.lookup(e.name)
        g = getattr(sym.qtype, "group", None) if sym is not None and sym.qtype is not None else None
    if g is None:
        raise low.error(f"expected a cooperative group, not a value of type '{tname(v.type)}'", e.loc)
    return v, g


# ------------------------------------------------------------ free calls

def cg_call(low, e: A.CallExpr) -> ir.Expr:
    name = e.func.name[4:]
    loc = e.loc
    if low.const_only:
        raise low.error("a function call is not a constant expression", loc)
    args = e.args

    def want(n):
        if len(args) != n:
            raise low.error(f"'cg::{name}' takes {n} argument{'s' if n != 1 else ''}, not {len(args)}", loc)

    if name == "this_thread_block":
        want(0)
        return _handle(("block",), loc)
    if name == "coalesced_threads":
        want(0)
        return _handle(("coalesced",), loc, ir.Intrinsic(U32, loc, "activemask", []))
    if name == "tiled_partition":
        if e.func.targs:
            if len(e.func.targs) != 1:
                raise low.error("cg::tiled_partition<N> takes one template argument", loc)
            want(1)
            n = low.ck.const_int(low.ck.templates.frag.expr(e.func.targs[0], low.ck.templates.type_params_in_scope()),
                                 low.lookup, "the tile size")
        else:
            want(2)
            n = low.ck.const_int(args[1], low.lookup, "the tile size of cg::tiled_partition(group, size)")
        _check_tile(low.ck, n, loc)
        _, parent = group_of(low, args[0])
        if parent[0] == "tile" and n > parent[1]:
            raise low.error(f"a tile of {n} threads cannot be partitioned from a tile of {parent[1]}", loc)
        if parent[0] == "coalesced":
            raise low.error("tiled_partition of a coalesced group is not supported", loc)
        return _handle(("tile", n), loc)
    if name == "sync":
        want(1)
        return _method(low, args[0], "sync", [], loc)
    if name == "reduce":
        want(3)
        return _reduce(low, args, loc)
    if name in ("inclusive_scan", "exclusive_scan"):
        if len(args) not in (2, 3):
            raise low.error(f"'cg::{name}' takes (group, value) or (group, value, op)", loc)
        return _scan(low, args, name == "exclusive_scan", loc)
    if name in ("plus", "less", "greater", "bit_and", "bit_or", "bit_xor"):
        raise low.error(f"'cg::{name}' is supported only as the operator of cg::reduce or a scan", loc)
    if name == "this_grid":
        raise low.error("grid-wide cooperative groups (this_grid) are not supported", loc)
    raise low.error(f"'cg::{name}' cannot be called here", loc)


def method_call(low, e: A.CallExpr) -> ir.Expr:
    m = e.func
    if m.arrow:
        raise low.error("member functions through '->' are not supported", m.loc)
    return _method(low, m.a, m.name, e.args, e.loc)


def sync_statement(low, e: A.Expr):
    """`g.sync();` or `cg::sync(g);` on a generic thread_group: an if on the
    handle's kind (a barrier must be a statement of its own). None otherwise."""
    if not isinstance(e, A.CallExpr):
        return None
    if isinstance(e.func, A.Member) and e.func.name == "sync" and not e.args:
        obj = e.func.a
    elif isinstance(e.func, A.Name) and e.func.name == "cg::sync" and len(e.args) == 1:
        obj = e.args[0]
    else:
        return None
    try:
        h, g = group_of(low, obj)
    except Exception:
        return None
    if g != ("any",):
        return None
    loc = e.loc
    kind = _b(U64, loc, "and", _b(U64, loc, "shr", h, _c(U64, loc, 32)), _c(U64, loc, 0xFF))
    is_block = _b(BOOL, loc, "eq", kind, _c(U64, loc, KIND["block"]))
    warp = ir.ExprStmt(loc, ir.Intrinsic(ir.VOID, loc, "syncwarp", [_generic_mask(low, h, loc)]))
    return ir.If(loc, is_block, ir.ExprStmt(loc, ir.Intrinsic(ir.VOID, loc, "syncthreads", [])), warp)


def _generic_mask(low, h, loc) -> ir.Expr:
    """The member mask of a generic group handle (tile: from its size)."""
    from .places import clone
    kind = _b(U64, loc, "and", _b(U64, loc, "shr", clone(h), _c(U64, loc, 32)), _c(U64, loc, 0xFF))
    n = ir.Cast(U32, loc, _b(U64, loc, "and", _b(U64, loc, "shr", clone(h), _c(U64, loc, 40)), _c(U64, loc, 0xFF)))
    ones = _b(U32, loc, "sub", _b(U32, loc, "shl", _c(U32, loc, 1), n), _c(U32, loc, 1))
    ones = ir.Cond(U32, loc, _b(BOOL, loc, "eq", clone(n), _c(U32, loc, 32)), _c(U32, loc, FULL), ones)
    tmask = _b(U32, loc, "shl", ones, _b(U32, loc, "and", _lane(loc),
                                         _b(U32, loc, "sub", _c(U32, loc, 0), clone(n))))
    cmask = ir.Cast(U32, loc, clone(h))
    return ir.Cond(U32, loc, _b(BOOL, loc, "eq", kind, _c(U64, loc, KIND["tile"])), tmask, cmask)


# ---------------------------------------------------------------- methods

def _value(low, a: A.Expr, what: str):
    v = low.rvalue(a)
    if not is_arith(v.type):
        raise low.error(f"{what} needs a scalar value, not '{tname(v.type)}'", a.loc)
    t = promote(v.type) if v.type.kind in ("int", "bool") else v.type
    return low.convert(v, t, a.loc)


def _method(low, obj: A.Expr, name: str, args: list, loc) -> ir.Expr:
    h, g = group_of(low, obj)
    kind = g[0]

    def want(n):
        if len(args) != n:
            raise low.error(f"'{name}' of a cooperative group takes {n} argument{'s' if n != 1 else ''}, "
                            f"not {len(args)}", loc)

    if name in ("size", "num_threads"):
        want(0)
        if kind == "block":
            return block_size(loc)
        if kind == "tile":
            return _c(U32, loc, g[1])
        if kind == "coalesced":
            return ir.Cast(U32, loc, ir.Intrinsic(I32, loc, "popc", [ir.Cast(U32, loc, h)]))
        return _generic(low, h, loc, block_size(loc), None, "size")
    if name == "thread_rank":
        want(0)
        if kind == "block":
            return linear_tid(loc)
        if kind == "tile":
            return _b(U32, loc, "and", _lane(loc), _c(U32, loc, g[1] - 1))
        if kind == "coalesced":
            return _coalesced_rank(h, loc)
        return _generic(low, h, loc, linear_tid(loc), None, "rank")
    if name == "sync":
        want(0)
        if kind == "block":
            return ir.Intrinsic(ir.VOID, loc, "syncthreads", [])
        if kind == "tile":
            return ir.Intrinsic(ir.VOID, loc, "syncwarp", [tile_mask(g[1], loc)])
        if kind == "coalesced":
            return ir.Intrinsic(ir.VOID, loc, "syncwarp", [ir.Cast(U32, loc, h)])
        raise low.error("sync() of a generic cg::thread_group must be a statement of its own", loc)
    if kind == "block":
        if name in ("group_index",):
            want(0)
            return _dim3("ctaid", loc)
        if name in ("thread_index",):
            want(0)
            return _dim3("tid", loc)
        if name in ("group_dim", "dim_threads"):
            want(0)
            return _dim3("ntid", loc)
        raise low.error(f"cg::thread_block has no member '{name}' we support "
                        "(sync, thread_rank, size, num_threads, group_index, thread_index, group_dim)", loc)
    if kind == "any":
        raise low.error(f"'{name}' of a generic cg::thread_group is not supported "
                        "(sync, thread_rank, size are)", loc)
    if kind == "tile":
        n = g[1]
        if name == "meta_group_rank":
            want(0)
            return _b(U32, loc, "div", linear_tid(loc), _c(U32, loc, n))
        if name == "meta_group_size":
            want(0)
            return _b(U32, loc, "div", _b(U32, loc, "add", block_size(loc), _c(U32, loc, n - 1)), _c(U32, loc, n))
        mask = tile_mask(n, loc)
        width = _c(I32, loc, n)
    else:
        mask = ir.Cast(U32, loc, h)
        width = _c(I32, loc, 32)
        n = 32
    if name in ("shfl", "shfl_down", "shfl_up", "shfl_xor"):
        want(2)
        v = _value(low, args[0], name)
        third = low.rvalue(args[1])
        if kind == "coalesced":
            if name != "shfl":
                raise low.error(f"'{name}' of a coalesced group is not supported (shfl from rank 0 is)", loc)
            from .const_fold import fold
            if fold(third) != 0:
                raise low.error("shfl of a coalesced group is supported from rank 0 only", args[1].loc)
            third = _b(I32, loc, "sub", ir.Intrinsic(I32, loc, "ffs", [ir.Cast(I32, loc, h)]), _c(I32, loc, 1))
        at = {"shfl": I32, "shfl_down": U32, "shfl_up": U32, "shfl_xor": I32}[name]
        return ir.Intrinsic(v.type, loc, name, [mask, v, low.convert(third, at, args[1].loc), width])
    if name in ("any", "all"):
        want(1)
        p = low.to_bool(low.rvalue(args[0]), args[0].loc)
        return ir.Intrinsic(I32, loc, name, [mask, p])
    if name == "ballot":
        want(1)
        p = low.to_bool(low.rvalue(args[0]), args[0].loc)
        b = ir.Intrinsic(U32, loc, "ballot", [mask, p])
        if kind == "coalesced":
            raise low.error("ballot of a coalesced group is not supported", loc)
        if n == 32:
            return b
        shifted = _b(U32, loc, "shr", b, _b(U32, loc, "and", _lane(loc), _c(U32, loc, FULL & ~(n - 1))))
        return _b(U32, loc, "and", shifted, _c(U32, loc, (1 << n) - 1))
    raise low.error(f"cooperative group member '{name}' is not supported", loc)


def _coalesced_rank(h, loc) -> ir.Expr:
    lt = _b(U32, loc, "sub", _b(U32, loc, "shl", _c(U32, loc, 1), _lane(loc)), _c(U32, loc, 1))
    return ir.Cast(U32, loc, ir.Intrinsic(I32, loc, "popc", [_b(U32, loc, "and", ir.Cast(U32, loc, h), lt)]))


def _generic(low, h, loc, block_value, _unused, what: str) -> ir.Expr:
    """size/rank of a generic thread_group, by the handle's kind."""
    from .places import clone
    kind = _b(U64, loc, "and", _b(U64, loc, "shr", h, _c(U64, loc, 32)), _c(U64, loc, 0xFF))
    n = ir.Cast(U32, loc, _b(U64, loc, "and", _b(U64, loc, "shr", clone(h), _c(U64, loc, 40)), _c(U64, loc, 0xFF)))
    if what == "size":
        tile_v = n
        co = ir.Cast(U32, loc, ir.Intrinsic(I32, loc, "popc", [ir.Cast(U32, loc, clone(h))]))
    else:
        tile_v = _b(U32, loc, "and", _lane(loc), _b(U32, loc, "sub", n, _c(U32, loc, 1)))
        co = _coalesced_rank(clone(h), loc)
    return ir.Cond(U32, loc, _b(BOOL, loc, "eq", kind, _c(U64, loc, KIND["block"])), block_value,
                   ir.Cond(U32, loc, _b(BOOL, loc, "eq", clone(kind), _c(U64, loc, KIND["tile"])), tile_v, co))


# -------------------------------------------------------- reduce and scan

_OPS = {"plus": "add", "bit_and": "and", "bit_or": "or", "bit_xor": "xor", "less": "min", "greater": "max"}


def _functor(low, a: A.Expr, loc):
    """(op name, element type or None) of `cg::plus<T>()` & co., or
    (Lambda, its parameters' type) for `[](T x, T y) { return ...; }`."""
    if isinstance(a, A.Lambda):
        if len(a.params) != 2 or len(a.body.items) != 1 or not isinstance(a.body.items[0], A.Return) \
                or a.body.items[0].value is None:
            raise low.error("a lambda operator must take two values and be one return statement: "
                            "[](T a, T b) { return ...; }", a.loc)
        p = a.params[0]
        q = low.ck.base_type(p.specs, low.lookup)
        if p.declarator is not None and p.declarator.ops and p.declarator.ops[-1][0] != "ref":
            raise low.error("the lambda's parameters must be values or const references", p.loc)
        return a, q.type
    if isinstance(a, A.CallExpr) and isinstance(a.func, A.Name) and a.func.name.startswith("cg::") \
            and a.func.name[4:] in _OPS and not a.args:
        t = None
        if a.func.targs:
            tn = low.ck.templates.frag.type_name(a.func.targs[0], low.ck.templates.type_params_in_scope())
            t = low.type_of_name(tn).type
        return a.func.name[4:], t
    if isinstance(a, A.Name) and low.lookup(a.name) is None:
        pass
    raise low.error("the operator must be cg::plus<T>(), cg::less<T>(), cg::greater<T>(), cg::bit_and<T>(), "
                    "cg::bit_or<T>(), cg::bit_xor<T>() or a lambda [](T a, T b) { return ...; } (other function objects "
                    "are not supported)",
                    a.loc)


def _combine(op, t, loc, a, b, low=None) -> ir.Expr:
    if isinstance(op, A.Lambda):
        return _apply_lambda(low, op, t, loc, a, b)
    o = _OPS[op]
    if o in ("min", "max"):
        return ir.Intrinsic(t, loc, ("f" + o) if t.kind == "float" else o, [a, b])
    return _b(t, loc, o, a, b)


def _apply_lambda(low, lam: A.Lambda, t, loc, a, b) -> ir.Expr:
    """The lambda's return expression with its parameters bound to a and b
    (temporaries), inlined: (x = a, y = b, expr)."""
    from .typecheck import Sym
    low.push()
    items = []
    try:
        for p, v in zip(lam.params, (a, b)):
            tmp = low.temp(t, loc)
            items.append(ir.Assign(t, loc, tmp, v))
            name = p.declarator.name if p.declarator is not None else None
            if name:
                low.declare(name, Sym("var", tmp, QType(t, True), p.loc), p.loc)
        r = low.convert(low.rvalue(lam.body.items[0].value), t, lam.body.items[0].value.loc)
    finally:
        low.pop()
    return ir.Comma(t, loc, items + [r])


def _tile_of(low, a: A.Expr, what: str):
    h, g = group_of(low, a)
    if g[0] == "block":
        raise low.error(f"{what} needs a tile (cg::tiled_partition<N>) or a coalesced group, not a thread block",
                        a.loc)
    if g[0] == "any":
        raise low.error(f"{what} of a generic cg::thread_group is not supported", a.loc)
    if g[0] == "coalesced":
        raise low.error(f"{what} of a coalesced group is not supported; use a tile", a.loc)
    return g[1]


def _reduce(low, args: list, loc) -> ir.Expr:
    n = _tile_of(low, args[0], "cg::reduce")
    op, t = _functor(low, args[2], loc)
    v = _value(low, args[1], "cg::reduce")
    t = t or v.type
    if isinstance(op, str) and op.startswith("bit_") and t.kind != "int":
        raise low.error(f"cg::{op} needs an integer type, not '{tname(t)}'", args[2].loc)
    v = low.convert(v, t, args[1].loc)
    acc = low.temp(t, loc)
    items = [ir.Assign(t, loc, acc, v)]
    mask = tile_mask(n, loc)
    if n < 32:
        mv = low.temp(U32, loc)
        items.append(ir.Assign(U32, loc, mv, mask))
        mask = None
    o = n // 2
    while o >= 1:
        m = ir.VarRef(U32, loc, mv) if mask is None else _c(U32, loc, FULL)
        other = ir.Intrinsic(t, loc, "shfl_xor", [m, ir.VarRef(t, loc, acc), _c(I32, loc, o), _c(I32, loc, n)])
        items.append(ir.Assign(t, loc, acc, _combine(op, t, loc, ir.VarRef(t, loc, acc), other, low)))
        o //= 2
    items.append(ir.VarRef(t, loc, acc))
    return ir.Comma(t, loc, items)


def _scan(low, args: list, exclusive: bool, loc) -> ir.Expr:
    n = _tile_of(low, args[0], "cg::inclusive_scan" if not exclusive else "cg::exclusive_scan")
    op, t = _functor(low, args[2], loc) if len(args) > 2 else ("plus", None)
    if not (isinstance(op, str) and op == "plus") and exclusive:
        raise low.error("cg::exclusive_scan is supported with cg::plus only", loc)
    v = _value(low, args[1], "a scan")
    t = t or v.type
    v = low.convert(v, t, args[1].loc)
    acc = low.temp(t, loc)
    rank = low.temp(U32, loc)
    items = [ir.Assign(t, loc, acc, v), ir.Assign(U32, loc, rank, _b(U32, loc, "and", _lane(loc), _c(U32, loc, n - 1)))]
    mv = low.temp(U32, loc)
    items.append(ir.Assign(U32, loc, mv, tile_mask(n, loc)))
    o = 1
    got = low.temp(t, loc)
    while o < n:
        # every lane of the tile shuffles; only ranks >= o combine
        items.append(ir.Assign(t, loc, got, ir.Intrinsic(t, loc, "shfl_up", [
            ir.VarRef(U32, loc, mv), ir.VarRef(t, loc, acc), _c(U32, loc, o), _c(I32, loc, n)])))
        take = _b(BOOL, loc, "ge", ir.VarRef(U32, loc, rank), _c(U32, loc, o))
        items.append(ir.Assign(t, loc, acc, ir.Cond(t, loc, take, _combine(op, t, loc, ir.VarRef(t, loc, acc),
                                                                           ir.VarRef(t, loc, got), low),
                                                    ir.VarRef(t, loc, acc))))
        o *= 2
    if exclusive:
        items.append(ir.Assign(t, loc, got, ir.Intrinsic(t, loc, "shfl_up", [
            ir.VarRef(U32, loc, mv), ir.VarRef(t, loc, acc), _c(U32, loc, 1), _c(I32, loc, n)])))
        zero = _c(t, loc, 0.0 if t.kind == "float" else 0)
        first = _b(BOOL, loc, "eq", ir.VarRef(U32, loc, rank), _c(U32, loc, 0))
        items.append(ir.Assign(t, loc, acc, ir.Cond(t, loc, first, zero, ir.VarRef(t, loc, got))))
    items.append(ir.VarRef(t, loc, acc))
    return ir.Comma(t, loc, items)
