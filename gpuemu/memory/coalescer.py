"""The coalescer: a warp's global (or local) request -> the memory transactions
and 32-byte sectors it costs, by the preset's `coalescing` rule.

- 'sectors' (sm_5x and later; Guide "Compute Capability 5.x, Global
  Memory"): one request touches every distinct 32-byte sector its active
  lanes' bytes fall in; a transaction is a sector. H100: an aligned warp of
  floats 4 sectors, misaligned by a word 5, a float4 per lane 16
  (conformance gmem_ld_offset0/1, gmem_ld_float4).
- 'lines' (cc2.x/3.x; Guide "Compute Capability 2.x, Global Memory"): a load
  cached in L1 costs one transaction per distinct 128-byte line; otherwise
  (-dlcm=cg, stores) one per distinct 32-byte segment.
- 'half_warp_segments' (cc1.2/1.3; Guide "Compute Capability 1.x, Global
  Memory"): per half-warp, repeatedly take the segment (32 B for 1-byte, 64 B
  for 2-byte, 128 B for 4/8/16-byte words) holding the lowest active lane's
  address, serve every lane inside it, and shrink the transaction to the
  used half (128 -> 64 -> 32 bytes) while only one half is used.

In every mode `sectors` counts 32-byte sectors: the distinct sectors
touched, or on cc1.x the bytes moved / 32.

`global_request_reference` is the readable rule for one request;
`global_requests_batch` the numpy path for N (tests/test_coalescer.py shows
they agree).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from gpuemu.arch.memory_config import MemoryConfig

SECTOR = 32


@dataclass(frozen=True)
class GlobalCost:
    sectors: tuple          # distinct 32-byte sector ids (addr // 32), ascending
    transactions: int
    transaction_bytes: int  # bytes moved by the transactions


def _segment_bytes(size: int) -> int:
    # Guide 1.x: 32-byte segments for 1-byte words, 64 for 2-byte, 128 for 4/8/16
    return {1: 32, 2: 64}.get(size, 128)


def _half_warp_segments(lanes: list, size: int) -> list:
    """cc1.2/1.3 procedure for one half-warp: list of (base, bytes)."""
    remaining = list(lanes)
    out = []
    while remaining:
        seg = _segment_bytes(size)
        base = (remaining[0] // seg) * seg
        inside = [a for a in remaining if base <= a < base + seg]
        remaining = [a for a in remaining if not (base <= a < base + seg)]
        lo, hi = min(inside), max(inside) + size - 1
        while seg > 32:
            half = seg // 2
            if hi < base + half:
                seg = half
            elif lo >= base + half:
                base, seg = base + half, half
            else:
                break
        out.append((base, seg))
    return out


def global_request_reference(addrs: Sequence[int], mask: int, size: int, mem: MemoryConfig,
                             l1_cached: bool = False) -> GlobalCost:
    """Transactions and sectors of one warp request (32 lane addresses)."""
    lanes = [int(addrs[i]) for i in range(len(addrs)) if (mask >> i) & 1]
    if mem.coalescing == "half_warp_segments":
        segs = []
        for h in range(0, len(addrs), 16):
            half = [int(addrs[i]) for i in range(h, min(h + 16, len(addrs))) if (mask >> i) & 1]
            segs += _half_warp_segments(half, size)
        sectors = sorted({(b + o) // SECTOR for b, n in segs for o in range(0, n, SECTOR)})
        return GlobalCost(tuple(sectors), len(segs), sum(n for _, n in segs))
    sectors = sorted({s for a in lanes for s in range(a // SECTOR, (a + size - 1) // SECTOR + 1)})
    if mem.coalescing == "lines" and l1_cached:
        unit = mem.l1_line_bytes
    else:
        unit = SECTOR
    units = {s for a in lanes for s in range(a // unit, (a + size - 1) // unit + 1)}
    return GlobalCost(tuple(sectors), len(units), len(units) * unit)


# --------------------------------------------------------------- batch path

@dataclass
class CoalescedBatch:
    sectors: np.ndarray        # int64[N]: sectors per request
    transactions: np.ndarray   # int64[N]
    req: np.ndarray            # int64[M]: request index of each touched sector
    sector_id: np.ndarray      # int64[M]: the sector (addr // 32), ascending per request


def _distinct_per_row(keys: np.ndarray, valid: np.ndarray):
    """Row-wise distinct values: (count per row, row index and value of each)."""
    big = np.iinfo(np.int64).max
    k = np.where(valid, keys, big)
    k.sort(axis=1)
    first = k != big
    first[:, 1:] &= k[:, 1:] != k[:, :-1]
    flat = np.flatnonzero(first)              # row-major: by row, values ascending
    rows = flat // k.shape[1]
    return np.bincount(rows, minlength=k.shape[0]).astype(np.int64), rows, k.ravel()[flat]


def _touched(addr: np.ndarray, active: np.ndarray, size, unit: int):
    """[N,L] addresses -> unit ids of each access's first and last byte:
    [N,2L], or [N,L] when no active access crosses a unit boundary. size:
    bytes per lane, a scalar or int[N,1] (zero-copy requests of mixed sizes)."""
    first = addr // unit
    if np.max(size) <= unit:
        cross = (addr - first * unit) > unit - size
        cross &= active
        if not cross.any():
            return first, active
    last = (addr + size - 1) // unit
    keys = np.concatenate([first, last], axis=1)
    return keys, np.concatenate([active, active], axis=1)


def sectors_touched(addr: np.ndarray, active: np.ndarray, size) -> tuple:
    """The distinct 32-byte sectors each request's active lanes touch:
    (count per request, request index and sector id of each, ascending per
    request). addr int64[N,L]; size: bytes per lane, a scalar or int[N,1]."""
    return _distinct_per_row(*_touched(addr, active, size, SECTOR))


def _batch_half_warp(addr: np.ndarray, active: np.ndarray, size: int):
    n, L = addr.shape
    nh = -(-L // 16)
    pad = nh * 16 - L
    if pad:
        addr = np.pad(addr, ((0, 0), (0, pad)))
        active = np.pad(active, ((0, 0), (0, pad)))
    a = addr.reshape(n * nh, 16)
    rem = active.reshape(n * nh, 16).copy()
    big = np.iinfo(np.int64).max
    tx = np.zeros(n * nh, dtype=np.int64)
    seg_req, seg_base, seg_len = [], [], []
    rows = np.flatnonzero(rem.any(axis=1))
    S = _segment_bytes(size)
    while rows.size:
        r = rem[rows]
        ar = a[rows]
        lead = ar[np.arange(rows.size), np.argmax(r, axis=1)]
        base = (lead // S) * S
        inside = r & (ar >= base[:, None]) & (ar < base[:, None] + S)
        lo = np.where(inside, ar, big).min(axis=1)
        hi = np.where(inside, ar, -1).max(axis=1) + size - 1
        seg = np.full(rows.size, S, dtype=np.int64)
        for _ in range(2):                      # 128 -> 64 -> 32
            half = seg // 2
            can = seg > 32
            lower = can & (hi < base + half)
            upper = can & ~lower & (lo >= base + half)
            base = np.where(upper, base + half, base)
            seg = np.where(lower | upper, half, seg)
        tx[rows] += 1
        seg_req.append(rows // nh)
        seg_base.append(base)
        seg_len.append(seg)
        r &= ~inside
        rem[rows] = r
        rows = rows[r.any(axis=1)]
    transactions = tx.reshape(n, nh).sum(axis=1)
    if seg_req:
        sreq = np.concatenate(seg_req)
        sbase = np.concatenate(seg_base)
        slen = np.concatenate(seg_len)
        # expand segments into 32-byte sectors (1, 2 or 4 each)
        k = slen // SECTOR
        rep_req = np.repeat(sreq, k)
        offs = np.arange(k.sum()) - np.repeat(np.cumsum(k) - k, k)
        sec = np.repeat(sbase // SECTOR, k) + offs
        order = np.lexsort((sec, rep_req))
        rep_req, sec = rep_req[order], sec[order]
        keep = np.ones(sec.size, dtype=bool)
        keep[1:] = (sec[1:] != sec[:-1]) | (rep_req[1:] != rep_req[:-1])
        rep_req, sec = rep_req[keep], sec[keep]
        sectors = np.bincount(rep_req, minlength=n).astype(np.int64)
    else:
        rep_req = sec = np.zeros(0, dtype=np.int64)
        sectors = np.zeros(n, dtype=np.int64)
    return CoalescedBatch(sectors, transactions, rep_req, sec)


def global_requests_batch(addr: np.ndarray, active: np.ndarray, size: int, mem: MemoryConfig,
                          l1_cached: bool = False) -> CoalescedBatch:
    """N requests of `size`-byte accesses: addr int64[N,L], active bool[N,L]."""
    addr = np.asarray(addr, dtype=np.int64)
    active = np.asarray(active, dtype=bool)
    if mem.coalescing == "half_warp_segments":
        return _batch_half_warp(addr, active, size)
    nsec, req, sec = sectors_touched(addr, active, size)
    if mem.coalescing == "lines" and l1_cached:
        lk, lv = _touched(addr, active, size, mem.l1_line_bytes)
        ntx, _, _ = _distinct_per_row(lk, lv)
    else:
        ntx = nsec
    return CoalescedBatch(nsec, ntx, req, sec)


def interleave_local(offsets: np.ndarray, active: np.ndarray, size: int, warp_ids: np.ndarray,
                     mem: MemoryConfig):
    """Thread-relative local offsets -> device addresses of the hardware layout.

    Local memory is interleaved per 4-byte word across the lanes of a warp:
    word w of lane l lives at warp_base + (w * 32 + l) * 4, so a warp reading
    one local offset touches 128 contiguous bytes. An access wider than 4
    bytes is split into its words. Returns (addr [N, 32*k], active [N, 32*k],
    unit size). `warp_ids` place each warp's window in its own address
    range (only the cache set mapping depends on it)."""
    ib = mem.local_interleave_bytes
    k = max(1, size // ib)
    unit = min(size, ib)
    n = offsets.shape[0]
    lanes = np.arange(32, dtype=np.int64)
    window = mem.local_bytes_per_thread_window * 32
    base = (np.int64(1) << 44) + np.asarray(warp_ids, dtype=np.int64) * window
    parts = []
    for j in range(k):
        off = offsets + j * ib
        w, b = off // ib, off % ib
        parts.append(base[:, None] + (w * 32 + lanes[None, :]) * ib + b)
    addr = np.concatenate(parts, axis=1) if k > 1 else parts[0]
    act = np.concatenate([active] * k, axis=1) if k > 1 else active
    return addr.reshape(n, 32 * k), act.reshape(n, 32 * k), unit
