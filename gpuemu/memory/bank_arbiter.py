"""The shared-memory bank arbiter: how many conflict-free passes (wavefronts)
a warp's shared request needs, by the preset's rules (see
gpuemu/arch/memory_config.py for the four numbers that describe them).

Rule, for every preset but cc1.x ('any' broadcast):
  The request is served in phases of `shared_phase_lanes[size]` consecutive
  lanes (whole warp, or half-warps for 8/16-byte accesses). In a phase, each
  active lane touches the bank words of its access (several for an access
  wider than a bank); a word is identified by (bank, row) with
  bank = (addr // bank_bytes) % banks and row = addr // row_bytes. Any
  number of lanes reading one word are served together (broadcast; bytes of
  one word never conflict), so a phase takes as many wavefronts as the
  largest number of distinct rows any one bank must deliver.
  (CUDA C Programming Guide, "Compute Capability 5.x, Shared Memory"; H100
  measurements in ../shared/conformance/smem_*.json.)

Rule on cc1.x ('one_word' broadcast), per half-warp, the Guide's procedure
("Compute Capability 1.x, Shared Memory"): each step serves every address
inside one broadcast word plus one address for each other bank. The Guide
leaves the choice unspecified; we pick the word of the lowest remaining lane
as the broadcast word and the lowest remaining lane's address in each other
bank (deterministic, reproduces the Guide's examples).

Counts returned per request:
  wavefronts  passes of the shared pipeline
  ideal       the fewest passes the distinct words need
              (ceil(distinct words / banks) per phase): an 8-byte access by
              a full warp needs 2, a 16-byte one 4 (conformance README)
  ways        n-way conflict degree: max over phases of ceil(wavefronts/ideal)
shared_bank_conflicts = wavefronts - ideal, as Nsight Compute counts them.

Two implementations that must agree (tests/test_bank_arbiter.py):
`shared_request_reference` (plain Python, one request) and
`shared_requests_batch` (numpy, N requests at once, used by the machine).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from gpuemu.arch.memory_config import MemoryConfig

from . import native_banks

WARP = 32


@dataclass(frozen=True)
class SharedCost:
    wavefronts: int
    ideal: int
    ways: int

    @property
    def conflicts(self) -> int:
        return self.wavefronts - self.ideal


def phase_lanes(mem: MemoryConfig, size: int) -> int:
    """Lanes per conflict-free phase for `size`-byte accesses (sizes the
    preset does not list: whole warp up to 4 bytes, half-warps above)."""
    return mem.shared_phase_lanes.get(size, WARP if size <= 4 else WARP // 2)


def _units_of(addr: int, size: int, unit: int) -> list:
    """Byte addresses of the `unit`-byte words an access of `size` bytes touches."""
    first, last = addr // unit, (addr + size - 1) // unit
    return [w * unit for w in range(first, last + 1)]


# --------------------------------------------------------------- reference

def _phase_any_reference(lanes: list, size: int, mem: MemoryConfig) -> tuple:
    """'any' broadcast: (wavefronts, ideal, schedule) of one phase; a bank
    serves its distinct rows in successive wavefronts."""
    words: dict = {}               # (bank, row) -> the lanes that read it
    for lane, addr in lanes:
        for ua in _units_of(addr, size, mem.shared_bank_bytes):
            words.setdefault(((ua // mem.shared_bank_bytes) % mem.banks, ua // mem.shared_row_bytes),
                             set()).add(lane)
    if not words:
        return 0, 0, []
    rows_served: dict = {}         # bank -> wavefronts used so far
    schedule = []
    for (bank, row), readers in sorted(words.items()):
        step = rows_served.get(bank, 0)
        rows_served[bank] = step + 1
        schedule.extend((lane, bank, step) for lane in sorted(readers))
    wavefronts = max(rows_served.values())
    ideal = -(-len(words) // mem.banks)
    return wavefronts, ideal, schedule


def _phase_one_word_reference(lanes: list, size: int, mem: MemoryConfig) -> tuple:
    """cc1.x: the Guide's step-by-step broadcast procedure; (wavefronts,
    ideal, schedule) of one phase."""
    bb = mem.shared_bank_bytes
    # units in lane order: (address, word, bank, lane)
    units = []
    for lane, addr in lanes:
        parts = _units_of(addr, size, bb) if size > bb else [addr]
        for ua in parts:
            units.append((ua, ua // bb, (ua // bb) % mem.banks, lane))
    if not units:
        return 0, 0, []
    distinct_words = {(u[2], u[0] // mem.shared_row_bytes, u[1]) for u in units}
    ideal = -(-len(distinct_words) // mem.banks)
    remaining = list(units)
    schedule = []
    steps = 0
    while remaining:
        bword = remaining[0][1]
        bbank = remaining[0][2]
        chosen = {}           # bank -> the address served in it this step
        for ua, word, bank, _ in remaining:
            if bank != bbank and bank not in chosen:
                chosen[bank] = ua
        served = [u[1] == bword or (u[2] != bbank and chosen.get(u[2]) == u[0]) for u in remaining]
        schedule.extend((u[3], u[2], steps) for u, s in zip(remaining, served) if s)
        remaining = [u for u, s in zip(remaining, served) if not s]
        steps += 1
    return steps, ideal, schedule


def _phases_reference(addrs: Sequence[int], mask: int, size: int, mem: MemoryConfig):
    """(wavefronts, ideal, schedule) of each phase of one warp request."""
    phase = phase_lanes(mem, size)
    rule = _phase_one_word_reference if mem.shared_broadcast == "one_word" else _phase_any_reference
    for p0 in range(0, WARP, phase):
        yield rule([(lane, int(addrs[lane])) for lane in range(p0, p0 + phase) if (mask >> lane) & 1],
                   size, mem)


def shared_request_reference(addrs: Sequence[int], mask: int, size: int,
                             mem: MemoryConfig) -> SharedCost:
    """Wavefronts of one warp request: lane addresses (32), active mask, bytes per lane."""
    total_wf = total_ideal = ways = 0
    for wf, ideal, _ in _phases_reference(addrs, mask, size, mem):
        total_wf += wf
        total_ideal += ideal
        if ideal:
            ways = max(ways, -(-wf // ideal))
    return SharedCost(total_wf, total_ideal, ways)


def bank_schedule(addrs: Sequence[int], mask: int, size: int, mem: MemoryConfig) -> list:
    """Which bank serves each active lane in which wavefront of its phase,
    by the rule above: [(phase, lane, bank, wavefront)], one entry per bank a
    lane's access touches per wavefront that serves it (the report's bank
    heat map draws it)."""
    return [(k, lane, bank, step)
            for k, (_, _, sched) in enumerate(_phases_reference(addrs, mask, size, mem))
            for lane, bank, step in sched]


# --------------------------------------------------------------- batch path

def _lane_bits(mask: np.ndarray) -> np.ndarray:
    """uint32[N] masks -> bool[N, 32] (lane i = bit i)."""
    m = np.asarray(mask, dtype=np.uint64).reshape(-1, 1)
    return ((m >> np.arange(WARP, dtype=np.uint64)) & np.uint64(1)).astype(bool)


def _unit_addrs(addr: np.ndarray, size: int, unit: int) -> np.ndarray:
    """[N,32] lane addresses -> [N,32,k] byte addresses of the unit words touched
    (aligned accesses; a misaligned one is clipped to the words of its start)."""
    k = max(1, size // unit)
    base = (addr // unit) * unit
    return base[:, :, None] + unit * np.arange(k, dtype=np.int64)


def _batch_any_sorted(addr: np.ndarray, active: np.ndarray, size: int, mem: MemoryConfig):
    n = addr.shape[0]
    lanes = phase_lanes(mem, size)
    nph = WARP // lanes
    units = _unit_addrs(addr, size, mem.shared_bank_bytes)          # [N,32,k]
    k = units.shape[2]
    act = np.repeat(active[:, :, None], k, axis=2)
    bank = (units // mem.shared_bank_bytes) % mem.banks
    row = units // mem.shared_row_bytes
    key = row * mem.banks + bank
    big = np.iinfo(np.int64).max
    if key.size and key.max() < 2**31 - 1 and key.min() >= 0:
        key, big = key.astype(np.int32), np.int32(2**31 - 1)   # shared offsets: sort faster
    key = np.where(act, key, big).reshape(n * nph, lanes * k)
    key.sort(axis=1)
    valid = key != big
    first = np.empty_like(valid)
    first[:, 0] = valid[:, 0]
    first[:, 1:] = valid[:, 1:] & (key[:, 1:] != key[:, :-1])
    nrows = key.shape[0]
    bank_of = np.where(first, key % mem.banks, 0)
    flat = (np.arange(nrows, dtype=np.int64)[:, None] * mem.banks + bank_of.astype(np.int64))[first]
    per_bank = np.bincount(flat, minlength=nrows * mem.banks).reshape(nrows, mem.banks)
    wf = per_bank.max(axis=1).reshape(n, nph)
    distinct = first.sum(axis=1).reshape(n, nph)
    ideal = -(-distinct // mem.banks)
    return wf, ideal


def _batch_one_word(addr: np.ndarray, active: np.ndarray, size: int, mem: MemoryConfig):
    """cc1.x. When every word is read at one address only (always for 4-byte
    and wider accesses), each step serves the head word of every bank (the
    broadcast word is the head of its own bank), so the steps are the most
    distinct words in one bank: the 'any' rule. Only sub-word accesses of one
    word at different addresses need the step-by-step procedure."""
    if size >= mem.shared_bank_bytes:
        return _batch_any_sorted(addr, active, size, mem)
    n = addr.shape[0]
    lanes = phase_lanes(mem, size)
    nph = WARP // lanes
    big = np.iinfo(np.int64).max
    a = np.sort(np.where(active, addr, big).reshape(n * nph, lanes), axis=1)
    ok = a[:, 1:] != big
    multi = (ok & (a[:, 1:] // mem.shared_bank_bytes == a[:, :-1] // mem.shared_bank_bytes)
             & (a[:, 1:] != a[:, :-1])).any(axis=1).reshape(n, nph).any(axis=1)
    wf = np.zeros((n, nph), dtype=np.int64)
    ideal = np.zeros((n, nph), dtype=np.int64)
    simple = np.flatnonzero(~multi)
    hard = np.flatnonzero(multi)
    if simple.size:
        wf[simple], ideal[simple] = _batch_any_sorted(addr[simple], active[simple], size, mem)
    if hard.size:
        wf[hard], ideal[hard] = _batch_one_word_steps(addr[hard], active[hard], size, mem)
    return wf, ideal


def _batch_one_word_steps(addr: np.ndarray, active: np.ndarray, size: int, mem: MemoryConfig):
    n = addr.shape[0]
    lanes = phase_lanes(mem, size)
    nph = WARP // lanes
    bb = mem.shared_bank_bytes
    if size > bb:
        units = _unit_addrs(addr, size, bb)
    else:
        units = addr[:, :, None]
    k = units.shape[2]
    act = np.repeat(active[:, :, None], k, axis=2).reshape(n * nph, lanes * k)
    ua = units.reshape(n * nph, lanes * k)
    word = ua // bb
    bank = word % mem.banks
    # ideal: distinct words per phase
    big = np.iinfo(np.int64).max
    wk = np.where(act, word, big)
    wk = np.sort(wk, axis=1)
    v = wk != big
    firsts = v.copy()
    firsts[:, 1:] &= wk[:, 1:] != wk[:, :-1]
    ideal = (-(-firsts.sum(axis=1) // mem.banks)).reshape(n, nph)
    # the step procedure, vectorised over the phases still unfinished
    steps = np.zeros(n * nph, dtype=np.int64)
    rem = act.copy()
    # fast path: all units inside one bank-row and one address per bank -> 1 step
    rowid = ua // mem.shared_row_bytes
    lo = np.where(act, rowid, big).min(axis=1)
    hi = np.where(act, rowid, -1).max(axis=1)
    off = np.sort(np.where(act, ua - lo[:, None] * mem.shared_row_bytes, big), axis=1)
    clash = ((off[:, 1:] != big) & (off[:, 1:] // bb == off[:, :-1] // bb)
             & (off[:, 1:] != off[:, :-1])).any(axis=1)
    easy = (lo == hi) & ~clash
    steps[easy] = 1
    rem[easy] = False
    u = lanes * k
    earlier = np.tril(np.ones((u, u), dtype=bool), -1)               # j < i
    same_bank = bank[:, :, None] == bank[:, None, :]                 # [R,i,j]
    rows = np.flatnonzero(rem.any(axis=1))
    while rows.size:
        r = rem[rows]
        steps[rows] += 1
        w, b, a, sb = word[rows], bank[rows], ua[rows], same_bank[rows]
        first = np.argmax(r, axis=1)
        idx = np.arange(rows.size)
        bword, bbank = w[idx, first], b[idx, first]
        served = r & (w == bword[:, None])
        # first remaining unit of each bank, and its address for every unit
        has_earlier = (sb & earlier[None] & r[:, None, :]).any(axis=2)
        head = r & ~has_earlier
        head_addr = (sb & head[:, None, :]) * a[:, None, :]
        head_addr = head_addr.sum(axis=2)
        served |= r & (b != bbank[:, None]) & (a == head_addr)
        r &= ~served
        rem[rows] = r
        rows = rows[r.any(axis=1)]
    return steps.reshape(n, nph), ideal


def shared_requests_batch(addr: np.ndarray, mask: np.ndarray, size, mem: MemoryConfig):
    """N warp requests at once -> (wavefronts, ideal, ways), each int64[N].

    addr int64[N,32], mask uint32[N], size: int or int[N] (bytes per lane).
    Sizes the native path covers (native_banks.applies) go there."""
    addr = np.asarray(addr, dtype=np.int64).reshape(-1, WARP)
    mask = np.asarray(mask, dtype=np.uint32).reshape(-1)
    n = addr.shape[0]
    sizes = np.broadcast_to(np.asarray(size, dtype=np.int64), (n,))
    wf_out = np.zeros(n, dtype=np.int64)
    ideal_out = np.zeros(n, dtype=np.int64)
    ways_out = np.zeros(n, dtype=np.int64)
    rule = _batch_one_word if mem.shared_broadcast == "one_word" else _batch_any_sorted
    uniq = np.unique(sizes).tolist()
    for s in uniq:
        sel = None if len(uniq) == 1 else np.flatnonzero(sizes == s)
        if native_banks.applies(mem, int(s)):
            if sel is None:
                return native_banks.shared_any(addr, mask, mem)
            wf_out[sel], ideal_out[sel], ways_out[sel] = native_banks.shared_any(addr[sel], mask[sel], mem)
            continue
        if sel is None:
            sel = np.arange(n)
        wf, ideal = rule(addr[sel], _lane_bits(mask[sel]), int(s), mem)
        wf_out[sel] = wf.sum(axis=1)
        ideal_out[sel] = ideal.sum(axis=1)
        ratio = np.where(ideal > 0, -(-wf // np.maximum(ideal, 1)), 0)
        ways_out[sel] = ratio.max(axis=1)
    return wf_out, ideal_out, ways_out


def same_address_multiplicity(addr: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Per request, the largest number of active lanes sharing one address
    (atomics on one address are serialised; 0 for an empty mask)."""
    addr = np.asarray(addr, dtype=np.int64).reshape(-1, WARP)
    active = _lane_bits(mask)
    big = np.iinfo(np.int64).max
    a = np.sort(np.where(active, addr, big), axis=1)
    # run lengths of equal values along each row
    n = a.shape[0]
    out = np.zeros(n, dtype=np.int64)
    run = np.ones(n, dtype=np.int64)
    best = np.where(active.any(axis=1), 1, 0)
    for i in range(1, WARP):
        same = (a[:, i] == a[:, i - 1]) & (a[:, i] != big)
        run = np.where(same, run + 1, 1)
        best = np.maximum(best, np.where(a[:, i] != big, run, 0))
    out[:] = best
    return out

