"""Streams, events and the modelled timeline (gpuemu/host/streams.py)."""
import numpy as np
import pytest

import gpuemu
from gpuemu.host.pcie import copy_seconds, link_for

SCALE = r'''extern "C" __global__ void scale(float *o, const float *a, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) o[i] = 2.0f * a[i]; }'''
BIG = 1 << 24


def setup():
    k = gpuemu.RawModule(code=SCALE).get_function("scale")
    a = gpuemu.asarray(np.ones(1024, np.float32))
    o = gpuemu.empty(1024, np.float32)
    host = gpuemu.alloc_pinned(BIG, np.uint8)
    dev = gpuemu.empty(BIG, np.uint8)
    return k, a, o, host, dev


def measure(same_stream: bool) -> float:
    k, a, o, host, dev = setup()
    tl = gpuemu.timeline().reset("sm_90")
    s1, s2 = gpuemu.Stream(), gpuemu.Stream()
    start = gpuemu.Event()
    start.record()
    gpuemu.memcpy_htod(dev, host, stream=s1)
    k((4,), (256,), (o, a, np.int32(1024)), stream=s1 if same_stream else s2)
    end = gpuemu.Event()
    end.record()
    assert tl.ops[-1].name == "scale"
    return gpuemu.elapsed_time(start, end)


def test_a_kernel_in_another_stream_overlaps_the_copy():
    copy_ms = copy_seconds(BIG, "h2d", True, link_for("sm_90")) * 1e3
    assert measure(same_stream=False) == pytest.approx(copy_ms)


def test_in_one_stream_the_kernel_waits_for_the_copy():
    copy_ms = copy_seconds(BIG, "h2d", True, link_for("sm_90")) * 1e3
    assert measure(same_stream=True) > copy_ms


def test_an_async_pinned_copy_returns_at_once_a_pageable_one_blocks():
    _, _, _, host, dev = setup()
    tl = gpuemu.timeline().reset("sm_90")
    s = gpuemu.Stream()
    gpuemu.memcpy_htod(dev, host, stream=s)
    assert tl.host_time == 0.0
    s.synchronize()
    assert tl.host_time == pytest.approx(copy_seconds(BIG, "h2d", True, link_for("sm_90")))
    tl.reset()
    gpuemu.memcpy_htod(dev, np.zeros(BIG, np.uint8), stream=s)
    assert tl.host_time == pytest.approx(copy_seconds(BIG, "h2d", False, link_for("sm_90")))


def test_wait_event_orders_two_streams():
    k, a, o, host, dev = setup()
    tl = gpuemu.timeline().reset("sm_90")
    s1, s2 = gpuemu.Stream(non_blocking=True), gpuemu.Stream(non_blocking=True)
    gpuemu.memcpy_htod(dev, host, stream=s1)
    copied = s1.record()
    s2.wait_event(copied)
    launch = k((4,), (256,), (o, a, np.int32(1024)), stream=s2)
    assert launch.timeline["start"] == pytest.approx(copied.time)


def test_the_timeline_is_a_chrome_trace():
    measure(same_stream=False)
    trace = gpuemu.timeline().chrome_trace()
    names = {e["name"] for e in trace["traceEvents"] if e["ph"] == "X"}
    assert "scale" in names and any(n.startswith("memcpy H2D") for n in names)


def test_the_host_memory_program_runs_and_pinned_beats_pageable():
    import subprocess
    import sys
    from conftest import PROGRAMS
    r = subprocess.run([sys.executable, str(PROGRAMS / "host_memory.py"), "--n", "65536"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    ms = {line.split("  ")[1].strip(): float(line.split()[-2] if line.rstrip().endswith("ms") else
                                             line.split(" ms")[0].split()[-1])
          for line in r.stdout.splitlines()[1:]}
    assert ms["pinned copy, then kernel"] < ms["pageable copy, then kernel"]


def test_a_kernel_of_known_seconds_is_placed_as_place_launch_places_it():
    from gpuemu.host.streams import kernel_seconds, place_kernel, place_launch
    stats = {"cycles": 14100, "page_faults": 0, "managed_migrated_bytes": 0}
    tl = gpuemu.timeline().reset("sm_90")
    one = place_launch("k", stats, "sm_90")
    two = place_kernel("k", kernel_seconds(14100, 0, 0, link_for("sm_90")))
    assert one["seconds"] == two["seconds"] == pytest.approx(14100 / link_for("sm_90").sm_clock_hz)
    assert two["start"] == one["end"] and two["end"] == one["end"] + one["seconds"]
    assert [op.name for op in tl.ops] == ["k", "k"]


def test_a_kernel_on_the_default_stream_waits_for_a_blocking_streams_copy():
    from gpuemu.host.streams import place_kernel
    tl = gpuemu.timeline().reset("sm_90")
    copy = tl.copy(BIG, "h2d", pinned=True, stream=gpuemu.Stream())   # async: the host goes on
    placed = place_kernel("k", 1e-6)
    assert tl.host_time == placed["end"] and placed["start"] == copy.end > 0


def test_a_kernel_on_the_default_stream_does_not_wait_for_a_non_blocking_streams_copy():
    from gpuemu.host.streams import place_kernel
    tl = gpuemu.timeline().reset("sm_90")
    copy = tl.copy(BIG, "h2d", pinned=True, stream=gpuemu.Stream(non_blocking=True))
    placed = place_kernel("k", 1e-6)
    assert copy.end > 0 and placed["start"] == 0.0 and placed["end"] == 1e-6


def test_a_kernel_alone_on_the_default_stream_is_placed_as_schedule_places_it():
    from gpuemu.host.streams import COMPUTE, place_kernel
    tl = gpuemu.timeline().reset("sm_90")

    def steps(kernel):              # the host ahead, the compute engine busy, a kernel of 0 s
        got = [kernel("a", 2e-6)]
        tl.host_time += 5e-6
        got.append(kernel("b", 1e-6))
        tl.engine_free[COMPUTE] += 3e-6
        got += [kernel("c", 0.0), kernel("d", 4e-7)]
        return got, list(tl.ops), tl.host_time, tl.default_ready, dict(tl.engine_free)

    written = steps(place_kernel)
    tl.reset()

    def schedule(name, seconds):
        op = tl.schedule(name, COMPUTE, seconds)
        return {"start": op.start, "end": op.end}
    scheduled = steps(schedule)
    assert [p["start"] for p in written[0]] == [p["start"] for p in scheduled[0]]
    assert [p["end"] for p in written[0]] == [p["end"] for p in scheduled[0]]
    assert written[1:] == scheduled[1:]


def test_a_dropped_stream_is_not_held_by_the_timeline():
    import gc
    import weakref
    from gpuemu.host.streams import COMPUTE
    tl = gpuemu.timeline().reset("sm_90")
    s = gpuemu.Stream()
    tl.schedule("k", COMPUTE, 1e-6, s)
    gone = weakref.ref(s)
    del s
    gc.collect()
    assert gone() is None


def test_the_timeline_holds_no_more_entries_than_twice_its_live_streams():
    from gpuemu.host.streams import COMPUTE
    tl = gpuemu.timeline().reset("sm_90")
    kept = [gpuemu.Stream() for _ in range(10)]
    for s in kept:
        tl.schedule("k", COMPUTE, 1e-6, s)
    for _ in range(5000):
        tl.schedule("k", COMPUTE, 1e-6, gpuemu.Stream())     # dropped at once
    assert len(tl.streams) <= 128
    assert all(s.id in tl.streams for s in kept)


def test_the_default_stream_waits_for_a_dropped_blocking_streams_work():
    from gpuemu.host.streams import COMPUTE
    tl = gpuemu.timeline().reset("sm_90")
    s = gpuemu.Stream()
    copy = tl.schedule("copy", "h2d", 5e-3, s)
    del s
    for _ in range(200):                 # enough others seen to prune the dropped one
        tl.schedule("k", COMPUTE, 1e-6, gpuemu.Stream(non_blocking=True))
    assert tl.schedule("k", COMPUTE, 1e-6).start == copy.end


def test_device_synchronize_waits_for_a_dropped_streams_work():
    tl = gpuemu.timeline().reset("sm_90")
    s = gpuemu.Stream(non_blocking=True)
    copy = tl.schedule("copy", "h2d", 5e-3, s)
    del s
    for _ in range(200):
        tl.schedule("copy", "h2d", 1e-9, gpuemu.Stream())
    tl.synchronize()
    assert tl.host_time >= copy.end


class Intruder(gpuemu.Stream):
    """A stream that, once armed, has another thread's launch on a new
    stream happen while the timeline reads or writes it."""
    armed = False

    def _intrude(self):
        if Intruder.armed:
            Intruder.armed = False
            from gpuemu.host.streams import COMPUTE
            gpuemu.timeline().schedule("other thread", COMPUTE, 1e-6, gpuemu.Stream())

    @property
    def ready(self):
        self._intrude()
        return self._ready

    @ready.setter
    def ready(self, v):
        self._intrude()
        self._ready = v


@pytest.mark.parametrize("step", ["default stream launch", "synchronize", "reset"])
def test_a_stream_seen_by_another_thread_meanwhile_does_not_break(step):
    from gpuemu.host.streams import COMPUTE
    tl = gpuemu.timeline().reset("sm_90")
    s = Intruder()
    tl.schedule("k", COMPUTE, 1e-6, s)
    Intruder.armed = True
    if step == "default stream launch":
        tl.schedule("k", COMPUTE, 1e-6)
    elif step == "synchronize":
        tl.synchronize()
    else:
        tl.reset()
    Intruder.armed = False
