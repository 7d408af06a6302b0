"""Streams, events and the modelled host/device timeline.

The emulator runs every copy and kernel at once (results are ready when the
call returns); what this module models is WHEN each would run on the GPU,
so copies overlap kernels as CUDA C Programming Guide, "Asynchronous
Concurrent Execution" describes:

- three engines: the host-to-device copy engine, the device-to-host copy
  engine and the compute engine; each runs one operation at a time;
- operations of one stream run in issue order; a stream's operation starts
  at max(the stream's last end, its engine's last end, the host's time when
  it was issued);
- the default stream (`None`, legacy semantics) waits for every stream and
  every stream waits for it;
- a copy from or to pageable memory, and any copy without a stream, is
  synchronous: the host waits for its end (Guide: "if host memory is not
  page-locked, the copy is synchronous"); a kernel launch and an async
  copy of pinned memory return at once;
- `Event.record(stream)` marks the end of the stream's work so far;
  `elapsed_time(a, b)` is the difference in milliseconds, as
  cudaEventElapsedTime; `stream.synchronize()` advances the host's time.

Durations: copies by gpuemu/host/pcie.py; kernels by their functional-mode
cycles at the link's SM clock (zero-copy sectors included), plus their
managed page faults (`kernel_seconds`).
"""
from __future__ import annotations

import itertools
import threading
import weakref
from dataclasses import dataclass, field
from typing import Optional

from gpuemu.memory.launch_sums import Ended
from gpuemu.stats import Stats

from .pcie import LINKS, PcieLink, copy_seconds, link_for

COMPUTE = "compute"                 # the engine that runs kernels
_new = object.__new__
ENGINES = ("h2d", "d2h", COMPUTE)


@dataclass(slots=True)      # one per launch and copy: made in a fifth less time, half the memory
class Op:
    name: str
    engine: str
    stream: int
    start: float
    end: float
    nbytes: int = 0


class Stream:
    """A CUDA stream on the process timeline (CuPy's cupy.cuda.Stream shape)."""
    _ids = itertools.count(1)

    def __init__(self, non_blocking: bool = False):
        self.id = next(Stream._ids)
        self.non_blocking = bool(non_blocking)
        self.ready = 0.0

    def synchronize(self) -> None:
        """The host waits for the stream's work (cudaStreamSynchronize)."""
        tl = timeline()
        tl.host_time = max(tl.host_time, self.ready)

    def record(self, event: Optional["Event"] = None) -> "Event":
        """Record `event` (a new one if None) at the end of the stream's work so far."""
        event = event or Event()
        event.record(self)
        return event

    def wait_event(self, event: "Event") -> None:
        """Later work of this stream starts after `event` (cudaStreamWaitEvent)."""
        self.ready = max(self.ready, event.time)
        tl = timeline()
        if self.id in tl.streams:           # a stream the default stream waits for
            tl._note(self, self.ready)

    def __repr__(self) -> str:
        return f"Stream({self.id})"


class Event:
    """A point in a stream's work (cudaEvent)."""

    def __init__(self):
        self.time = 0.0

    def record(self, stream: Optional[Stream] = None) -> None:
        """Mark the end of `stream`'s work so far (None: the default stream's,
        which waits for every blocking stream), as cudaEventRecord."""
        tl = timeline()
        self.time = tl._stream_ready(stream)

    def synchronize(self) -> None:
        """The host waits until the event's point (cudaEventSynchronize)."""
        tl = timeline()
        tl.host_time = max(tl.host_time, self.time)


def elapsed_time(start: Event, end: Event) -> float:
    """Milliseconds between two recorded events (cudaEventElapsedTime)."""
    for name, ev in (("start", start), ("end", end)):
        if not isinstance(ev, Event):
            raise TypeError(f"elapsed_time: {name} must be a gpuemu.Event, got {type(ev).__name__}")
    return (end.time - start.time) * 1e3


@dataclass
class Timeline:
    arch: str = "sm_90"
    host_time: float = 0.0
    engine_free: dict = field(default_factory=lambda: dict.fromkeys(ENGINES, 0.0))
    default_ready: float = 0.0
    # the streams seen: id -> a weak reference (a dropped one is pruned when others are seen);
    # non-empty once one was seen (place_kernel's and the launch gate's plain path is off)
    streams: dict = field(default_factory=dict)
    ops: list = field(default_factory=list)
    counters: dict = field(default_factory=dict)
    max_ops: int = 100_000
    # the latest end of the blocking streams seen, and of all streams seen (alive or dropped):
    # what the default stream and cudaDeviceSynchronize wait for, without a walk of the streams
    blocking_ready: float = 0.0
    streams_ready: float = 0.0
    prune_at: int = 64              # prune dropped streams when this many are held

    @property
    def link(self) -> PcieLink:
        """The PCIe link of the timeline's preset (gpuemu/host/pcie.py)."""
        return link_for(self.arch)

    def reset(self, arch: Optional[str] = None) -> "Timeline":
        """Empty timeline (time 0, no operations), optionally for another preset."""
        with _SEEN_LOCK:
            seen = list(self.streams.values())
            self.__init__(arch=arch or self.arch)
        for ref in seen:
            st = ref()
            if st is not None:
                st.ready = 0.0
        return self

    def _see(self, stream: Stream) -> None:
        """Hold `stream` (weakly) as seen; drop the entries of dropped streams
        when their number doubled (their ends stay in blocking_ready and streams_ready)."""
        with _SEEN_LOCK:        # the one writer of self.streams (threads launch at once)
            streams = self.streams
            if len(streams) >= self.prune_at:
                for key in [key for key, ref in streams.items() if ref() is None]:
                    del streams[key]
                self.prune_at = max(64, 2 * len(streams))
            streams[stream.id] = weakref.ref(stream)

    def _note(self, stream: Stream, end: float) -> None:
        """A seen stream's work now ends at `end`."""
        if end > self.streams_ready:
            self.streams_ready = end
        if not stream.non_blocking and end > self.blocking_ready:
            self.blocking_ready = end

    def _add(self, name, value) -> None:
        self.counters[name] = self.counters.get(name, 0) + value

    def _stream_ready(self, stream: Optional[Stream]) -> float:
        if stream is None:         # the default stream waits for every blocking stream
            ready = self.default_ready
            return ready if ready >= self.blocking_ready else self.blocking_ready
        return max(stream.ready, self.default_ready if not stream.non_blocking else 0.0)

    def schedule(self, name: str, engine: str, seconds: float, stream: Optional[Stream] = None,
                 sync: bool = False, nbytes: int = 0) -> Op:
        """Place one operation; returns it with its start and end."""
        # start = max(stream ready, engine free, host time), with ifs (every launch: a
        # fifth of a microsecond less than max())
        if stream is not None:
            if stream.id not in self.streams:
                self._see(stream)
            start = self._stream_ready(stream)
        elif self.streams:
            start = self._stream_ready(None)
        else:                       # the default stream, no other seen: its own ready time
            start = self.default_ready
        free = self.engine_free
        if free[engine] > start:
            start = free[engine]
        if self.host_time > start:
            start = self.host_time
        end = start + seconds
        free[engine] = end
        if stream is None:
            self.default_ready = end
        else:
            stream.ready = end
            self._note(stream, end)
        if (sync or stream is None) and end > self.host_time:
            self.host_time = end
        op = Op(name, engine, stream.id if stream is not None else 0, start, end, nbytes)
        if len(self.ops) < self.max_ops:
            self.ops.append(op)
        return op

    def copy(self, nbytes: int, direction: str, pinned: bool, stream: Optional[Stream] = None,
             name: str = "") -> Op:
        """A host<->device copy: charged by the PCIe model, counted."""
        t = copy_seconds(nbytes, direction, pinned, self.link)
        self._add(f"pcie_{direction}_bytes", nbytes)
        self._add("pcie_seconds", t)
        if not pinned:
            self._add("staging_bytes", nbytes)
        label = name or f"memcpy {direction.upper()} {nbytes} B {'pinned' if pinned else 'pageable'}"
        return self.schedule(label, direction, t, stream, sync=not pinned, nbytes=nbytes)

    def host_faults(self, blocks: int, nbytes: int) -> None:
        """Managed pages that the host touches come back (CPU faults)."""
        self._add("host_page_faults", blocks)
        self._add("pcie_d2h_bytes", nbytes)
        t = blocks * self.link.page_fault + nbytes / self.link.d2h
        self.schedule(f"managed migration D2H {nbytes} B", "d2h", t, None, sync=True, nbytes=nbytes)

    def synchronize(self) -> None:
        """cudaDeviceSynchronize: the host waits for everything."""
        self.host_time = max(self.host_time, self.default_ready, self.streams_ready)

    def chrome_trace(self) -> dict:
        """The operations as a Chrome trace (chrome://tracing, Perfetto):
        one row per engine, microseconds."""
        tids = {e: i for i, e in enumerate(ENGINES)}
        ev = [{"name": o.name, "ph": "X", "pid": 0, "tid": tids[o.engine],
               "ts": o.start * 1e6, "dur": (o.end - o.start) * 1e6,
               "args": {"stream": o.stream, "bytes": o.nbytes}} for o in self.ops]
        ev += [{"name": "thread_name", "ph": "M", "pid": 0, "tid": i, "args": {"name": e}}
               for e, i in tids.items()]
        return {"traceEvents": ev, "displayTimeUnit": "ms"}


_SEEN_LOCK = threading.Lock()
_TIMELINE = Timeline()


def timeline() -> Timeline:
    """The process's timeline (one emulated GPU)."""
    return _TIMELINE


def kernel_seconds(cycles: int, page_faults: int, migrated: int, link: PcieLink) -> float:
    """A launch's modelled time: its cycles at the SM clock (zero-copy
    sectors are already in them, at the link's share per SM), then its
    managed page faults and migrations (which stall it, serially)."""
    return cycles / link.sm_clock_hz + page_faults * link.page_fault + migrated / link.h2d


_TIMED = ("cycles", "page_faults", "managed_migrated_bytes")     # what a launch's seconds are made of
_TIMED_SET = frozenset(_TIMED)


def place_launch(name: str, stats, preset, stream: Optional[Stream] = None) -> dict:
    """Put a finished launch (its counters: a Stats, a kept launch's
    launch_sums.Ended, or a dict) on the timeline; its start, end and seconds."""
    if type(stats) is Stats or type(stats) is Ended:    # (the three in one call: every counted launch)
        cycles, faults, moved = stats.get_each(_TIMED, _TIMED_SET)
    else:
        cycles, faults, moved = stats.get(_TIMED[0], 0), stats.get(_TIMED[1], 0), stats.get(_TIMED[2], 0)
    try:                        # link_for's lookup, without its call, for a preset object
        link = LINKS[preset.name]
    except AttributeError:      # a preset's name
        link = link_for(preset)
    return place_kernel(name, kernel_seconds(int(cycles), int(faults), int(moved), link), stream)


def place_kernel(name: str, seconds: float, stream: Optional[Stream] = None) -> dict:
    """Put a kernel of `seconds` (place_launch's, known before: a repeated
    launch without counters) on the timeline; its start, end and seconds."""
    tl = _TIMELINE
    if stream is not None or tl.streams:
        op = tl.schedule(name, COMPUTE, seconds, stream)     # a kernel: on the compute engine, sync=False
        return {"start": op.start, "end": op.end, "seconds": seconds, "stream": op.stream}
    # the default stream, no other seen: Timeline.schedule's rule written out (every launch
    # without counters: a third of a microsecond less; test_host_streams holds it to schedule)
    start = tl.default_ready
    free = tl.engine_free
    busy = free[COMPUTE]
    if busy > start:
        start = busy
    host = tl.host_time
    if host > start:
        start = host
    end = start + seconds
    free[COMPUTE] = tl.default_ready = end
    if end > host:
        tl.host_time = end
    ops = tl.ops
    if len(ops) < tl.max_ops:       # Op(name, COMPUTE, 0, start, end) without its __init__'s call
        op = _new(Op)               # (a statement a field: no tuple made and unpacked)
        op.name = name
        op.engine = COMPUTE
        op.stream = 0
        op.start = start
        op.end = end
        op.nbytes = 0
        ops.append(op)
    return {"start": start, "end": end, "seconds": seconds, "stream": 0}
