"""Blocks resident at the same time: a block that spins lets the others run.

The machine runs a launch's blocks one at a time, each to its end. On a
GPU the blocks resident on the device at the same time run concurrently
(CUDA C Programming Guide, "Thread Hierarchy": blocks are scheduled in any
order across the SMs; a grid that fits the device at once is resident as a
whole, as cooperative launch, "Grid Synchronization", guarantees, and the
occupancy calculator says how many blocks fit). A kernel whose blocks hand
data to each other, one spinning on a flag that another sets (a producer
and consumer, a decoupled look-back scan), completes on the GPU whenever the
two are resident together; run one at a time it waits for ever on a block
that has not started.

So a block whose warps spin is parked and the others run. A warp's yield
past a threshold of loop back edges (block_runner.SPIN_F) asks SpinWatch
whether its block spins: its frames (but the watchdog's back-edge count and
the instruction count), their states and its shared memory are the same
as at the last look, so only something outside the block can move it.
Loops that do not spin look different each time: they are looked at after
SPIN_FIRST, 2 SPIN_FIRST, 4 SPIN_FIRST ... back edges and go on as before.

The block that spins first (the launch's own, in its block slot) calls
ResidentBlocks.wait: every parked block runs again until it finishes or
spins, then blocks not yet started, in the launch's order, as long as
fewer than `limit` blocks (the occupancy calculator's for the whole
device) are resident; then the spinning block goes on. Each of those is a
BlockTask with its own frames and shared memory, run by the native block
loop and parked in place. Once a block has been parked the launch's rest
runs here (run_rest). Nothing moved when a whole round left every
spinning block, the blocks started and finished and the global memory as
they were (and the weak memory model holds no store back): then one block
spins on for long, as the machine did before, since another host thread
may still write the flag; if its watchdog stops it, the timeout is a
deadlock, named with the block it waits on when that one could not be
resident alongside it.
"""
from __future__ import annotations

import ctypes
import hashlib
import zlib

import numpy as np

from gpuemu.jit import abi

from . import block_runner
from .findings import resident_deadlock_finding
from .occupancy import compute_occupancy

_INT32_MAX = (1 << 31) - 1
STUCK_LOOK = 1 << 20        # back edges the lead spins between rounds where nothing moved
# the frame fields that change while a warp spins without changing what it does
_VOLATILE = ((abi.F_BACKEDGES, abi.F_BACKEDGES + 8), (abi.F_ICOUNT, abi.F_ICOUNT + 8))


def resident_limit(preset, shape, meta) -> int:
    """Blocks of this launch resident on the device at once: the occupancy
    calculator's blocks per SM (registers not counted: the machine does not
    allocate them) times the SMs."""
    occ = compute_occupancy(preset, shape.threads_per_block, 0,
                            int(meta.static_shared) + int(shape.shared_dynamic))
    return max(1, occ.active_blocks_per_sm) * max(1, int(preset.num_sms))


def frame_key(row: np.ndarray) -> bytes:
    """A warp's frame (row: its int32 view) without the counts that grow as it spins."""
    f = row.view(np.uint8).copy()
    for lo, hi in _VOLATILE:
        f[lo:hi] = 0
    return f.tobytes()


def shared_bytes(row: np.ndarray, nbytes: int) -> bytes:
    """The shared memory of the block of a warp's frame (its F_SHARED address)."""
    return ctypes.string_at(int(row.view(np.int64)[abi.F_SHARED // 8]), nbytes)


def global_memory_hash(run) -> int:
    """A hash of every live global allocation's bytes."""
    h = 0
    for a in run.memory.live_allocations("global"):
        if a.nbytes:
            h = zlib.crc32(np.ascontiguousarray(a.host).view(np.uint8).reshape(-1), h)
    return h


class SpinWatch:
    """Whether a block spins, from what its warps look like at their yields."""

    def __init__(self, block: int = -1) -> None:
        self.block = block          # the linear index of the block watched
        self.warps: dict = {}       # entry -> its frame_key at its last look
        self.key = None             # the block's key at its last look with a warp unchanged
        self.parked = False         # it has spun before: look at every yield
        self.same = False           # the last look found the yielding warp unchanged
        self.moved = False          # ... found it changed since its look before
        self.memory = None          # the global memory's hash at the last look the block was unchanged

    def spins(self, w: int, rows: list, states, shared: int, memory=None) -> bool:
        """Entry w yielded: whether the block is where it was at the last look
        (entry w's frame first, then every frame, the entries' states and the
        shared memory), and so is the global memory (`memory()`: its hash): a
        loop that keeps no state of its own but works through global memory
        (a thread taking tickets with atomicAdd) is no spin, and parking it
        would change the launch's schedule and counters."""
        k = frame_key(rows[w])
        last = self.warps.get(w)
        self.moved = last is not None and last != k
        if last != k:
            self.warps[w] = k
            self.same = False
            return False
        self.same = True
        h = hashlib.blake2b(digest_size=16)
        for r, s in zip(rows, states):
            h.update(bytes((int(s),)))
            h.update(frame_key(r))
        h.update(shared_bytes(rows[0], shared))
        key, self.key = self.key, h.digest()
        if key != self.key:
            return False
        if memory is None:
            return True
        mem, self.memory = self.memory, memory()
        if mem != self.memory:
            self.same = False       # (global memory moves: the next look twice as far)
            return False
        return True

    def next_look(self, edges: int) -> int:
        """The back edges of the next look: soon where the block has spun or
        one warp looked the same, else twice as far (a long loop is looked at
        a few times in all)."""
        step = abi.YIELD_EVERY if self.parked or self.same else edges
        return min(edges + max(step, abi.YIELD_EVERY), _INT32_MAX)


class BlockTask:
    """A block started while another spins: its own frames and shared
    memory, the native block loop's state; run a step at a time (step)
    until it finishes."""

    def __init__(self, run, lin: int, idx: tuple, sm: int) -> None:
        nw = run._nw
        self.run, self.lin, self.idx, self.sm = run, lin, idx, sm
        self.frames = np.zeros((nw, run.meta.frame_bytes), dtype=np.uint8)
        self.shared = np.zeros(run.shared_stride, dtype=np.uint8)
        self.frames[:, :abi.HEADER_BYTES] = run.header_template[:nw]
        i32 = self.frames.view(np.int32)
        i32[:, abi.F_BLOCK // 4] = lin
        i32[:, abi.F_CTAID // 4:abi.F_CTAID // 4 + 3] = idx
        i32[:, abi.F_SM // 4] = sm
        self.frames.view(np.int64)[:, abi.F_SHARED // 8] = self.shared.ctypes.data
        self.rows = [i32[w] for w in range(nw)]
        self.fragments: list = []   # warp fragments' frames (independent thread scheduling)
        self.st = np.zeros(block_runner.HEAD + 2 * nw, dtype=np.int32)
        self.st[block_runner.N_F] = self.st[block_runner.ROUND_F] = nw
        self.st[block_runner.SPIN_F] = run._spin_first
        self.fptrs = np.zeros(2 * nw, dtype=np.int64)
        self.fptrs[:nw] = [self.frames.ctypes.data + w * run.meta.frame_bytes for w in range(nw)]
        self.watch = SpinWatch(lin)
        self.spin_w = 0             # the entry that yielded last (executor._spun)

    def step(self) -> bool:
        """Run until the block finishes (True) or spins (False)."""
        run = self.run
        code = block_runner._function()(run.ck.address, self.fptrs.ctypes.data, run._nw, run._ctxp,
                                        self.st.ctypes.data, *block_runner._event_buffer(run))
        done = code == block_runner.DONE or block_runner._events(
            run, 0, self.idx, code, self.st, self.fptrs, task=self)
        run._switched(self.lin, self.sm, done)
        return done


class ResidentBlocks:
    """The blocks resident alongside the one that spun first (the launch's),
    started in the launch's order from `pending` ((linear, (x, y, z), sm)
    of the blocks not yet started)."""

    def __init__(self, run, pending, limit: int) -> None:
        self.run, self.pending, self.limit = run, pending, limit
        self.tasks: list = []       # started, not finished, in the order they started
        self.started = self.finished = 0
        self._next = None           # the next pending block, once looked at
        self._last = None           # (what the last round left, the global memory's hash)
        self.stuck = False          # the last round left everything as the one before
        self.lead = None            # the block that spins on while stuck (None: the launch's own)
        self.own = None             # the launch's own block (linear index), once it waited

    def _peek(self):
        if self._next is None:
            self._next = next(self.pending, None)
        return self._next

    def _round(self, others: int) -> None:
        """Every parked block once more, then new ones while fewer than
        `limit` (with `others` on the stack) are resident."""
        for t in list(self.tasks):
            if t.step():
                self.tasks.remove(t)
                self.finished += 1
        while len(self.tasks) + others < self.limit and self._peek() is not None:
            lin, idx, sm = self._next
            self._next = None
            t = BlockTask(self.run, lin, idx, sm)
            self.started += 1
            if t.step():
                self.finished += 1
            else:
                self.tasks.append(t)

    def _stuck(self, main_key) -> bool:
        """Whether this round left everything as the last one did: the
        spinning blocks, how many started and finished, the global memory."""
        now = (main_key, tuple(t.watch.key for t in self.tasks), self.started, self.finished)
        last = self._last
        weak = self.run.weak
        if last is None or last[0] != now or (weak is not None and weak.pending):   # (held stores to come)
            self._last = (now, None)
            return False
        mem = global_memory_hash(self.run)
        self._last = (now, mem)
        return last[1] == mem

    def wait(self, watch: SpinWatch) -> None:
        """The launch's own block spins (watch: its SpinWatch): the other
        resident blocks run a round."""
        watch.parked = True
        self.own, self.lead = watch.block, None
        self._round(1)
        self.stuck = self._stuck(watch.key)

    def run_rest(self) -> None:
        """The launch's own block finished: run every parked and pending block to its end."""
        run = self.run
        if run.checker is not None and self.own is not None:   # its records, held since it spun
            run.drain()
            run.checker.block_done(self.own)
        while self.tasks or self._peek() is not None:
            self.lead = self.tasks[0] if self.tasks else None
            self._round(0)
            self.stuck = bool(self.tasks) and self._stuck(None)

    def next_look(self, task, at: int, edges: int) -> int:
        """The back edges of a spinning block's next look (`at`, its
        SpinWatch's): where nothing could move at the last round the lead
        (the launch's own block, task None, else the first parked one)
        spins on for long, so that only its watchdog or a change from
        outside (another host thread writing memory) ends the wait."""
        if self.stuck and task is self.lead:
            return min(edges + STUCK_LOOK, _INT32_MAX)
        return at

    def timeout_finding(self, idx: tuple, row: np.ndarray):
        """The finding of a watchdog timeout of block idx (row: the frame
        of its warp that timed out) where nothing could move at the last
        round (else None: the plain timeout)."""
        if not self.stuck:
            return None
        waits_on = self._peek()
        others = [t.idx for t in self.tasks if tuple(t.idx) != tuple(idx)]
        run = self.run
        return resident_deadlock_finding(run.meta, idx, row, run.shape.block, int(row[abi.F_EVENT_LINE // 4]),
                                         others, waits_on[1] if waits_on else None, self.limit, run.budget)
