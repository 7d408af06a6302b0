"""A model of the block workers' schedule (gpuemu/machine/block_workers.py
run_parallel), to tell what bounds N workers from times that a loaded
machine measures fairly: each range's thread CPU on one worker.

Each of N threads loops: charge the finished ranges that are next in
block order (the ordered step), unless another thread is charging; take
the next range and run it (its blocks, and with counters on the prepare
step of its trace). A pool thread that finds no range left charges once
more and stops; the calling thread waits until every range is charged.
A range r costs work[r] on the thread that runs it and apply[r] on the
thread that charges it; nothing else (no GIL waits, no slower memory
when two threads run at once: on idle cores those show as the measured
speed-up falling short of this model).
"""
from __future__ import annotations


def schedule(work: list, apply: list, nworkers: int) -> float:
    """The wall time of the ranges on `nworkers` threads (the units of `work`)."""
    n = len(work)
    now = [0.0] * nworkers
    live = set(range(nworkers))
    finished: dict = {}          # range -> when its run ends
    taken = charged = 0
    free_at = 0.0                # when the thread charging lets go of the ordered step
    end = 0.0
    while live:
        i = min(live, key=lambda k: (now[k], k))     # the thread that acts first
        while free_at <= now[i] and finished.get(charged, float("inf")) <= now[i]:
            now[i] += apply[charged]                 # the ordered step: the next range in order
            free_at = now[i]
            charged += 1
        if taken < n:
            now[i] += work[taken]
            finished[taken] = now[i]
            taken += 1
            continue
        if i != 0 or charged == n:   # a pool thread stops; the calling one once all is charged
            end = max(end, now[i])
            live.discard(i)
            continue
        # the calling thread waits: the next range finished, the ordered step let go
        now[i] = max(finished[charged], free_at)
    return end


def speedup(work: list, apply: list, nworkers: int) -> float:
    """One worker's time (every range's work and apply, one after the other)
    over the model's time on `nworkers`."""
    return (sum(work) + sum(apply)) / schedule(work, apply, nworkers)
