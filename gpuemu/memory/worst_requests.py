"""The costliest warp request of each source line, kept for the reports.

The counters say how much a line cost in total; a person fixing it wants to
see one request as the hardware saw it: which lane touched which bank (the
bank heat map) or which sectors (coalescing). The memory system hands every
charged shared and global request here; per line we keep the first request
with the most wavefronts (shared) or sectors (global), its 32 lane addresses
and active mask, so the report can redraw it with the same rules
(bank_arbiter.shared_request_reference, coalescer.global_request_reference).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class WorstRequest:
    """One warp request: space, the counter row it belongs to, its cost, the lanes."""
    space: str            # 'shared' | 'global' | 'local'
    row: int              # counter row (the line; see KernelMeta.line_key)
    op: str               # 'ld' | 'st' | 'atom' | 'red'
    size: int             # bytes per lane
    cost: int             # wavefronts (shared) or sectors (global/local)
    mask: int             # active lanes, bit i = lane i
    addrs: tuple          # 32 byte addresses (meaningless for inactive lanes)

    def as_dict(self) -> dict:
        """JSON-ready fields."""
        return {"space": self.space, "row": self.row, "op": self.op, "size": self.size,
                "cost": self.cost, "mask": self.mask, "addrs": list(self.addrs)}


@dataclass
class WorstRequests:
    """Per (space, counter row): the first request of the highest cost seen."""
    by_line: dict = field(default_factory=dict)

    def note(self, space: str, rows: np.ndarray, ops: np.ndarray, sizes: np.ndarray,
             costs: np.ndarray, masks: np.ndarray, addrs: np.ndarray) -> None:
        """N requests of one space in issue order; keeps per row the first maximum."""
        rows = np.asarray(rows, dtype=np.int64)
        if rows.size == 0:
            return
        costs = np.asarray(costs, dtype=np.int64)
        # the first request of the highest cost in each row: sort by (row, -cost, index)
        order = np.lexsort((np.arange(rows.size), -costs, rows))
        first = np.ones(order.size, dtype=bool)
        first[1:] = rows[order][1:] != rows[order][:-1]
        for i in order[first].tolist():
            key = (space, int(rows[i]))
            old = self.by_line.get(key)
            if old is None or int(costs[i]) > old.cost:
                self.by_line[key] = WorstRequest(
                    space=space, row=int(rows[i]), op=str(ops[i]), size=int(sizes[i]),
                    cost=int(costs[i]), mask=int(masks[i]),
                    addrs=tuple(int(a) for a in np.asarray(addrs[i]).reshape(-1)[:32]))

    def merge(self, later: "WorstRequests") -> None:
        """Take in the requests kept from later requests (issue order): a
        later one replaces a kept one only when it costs more."""
        for key, w in later.by_line.items():
            old = self.by_line.get(key)
            if old is None or w.cost > old.cost:
                self.by_line[key] = w

    def get(self, space: str, row: int):
        """The kept request of (space, counter row), or None."""
        return self.by_line.get((space, row))

    @classmethod
    def empty(cls) -> "WorstRequests":
        """A new one holding nothing (as WorstRequests(), without the
        dataclass's __init__: a memory system makes one every launch)."""
        w = _new(cls)
        w.__dict__["by_line"] = {}
        return w

    def defer(self, merge, *args) -> None:
        """merge(*args, by_line) takes in requests kept later (launch_sums'
        settle: they are made into WorstRequest when `by_line` is first
        read), in the order deferred, before anything else reads or changes
        them (the arguments given apart: no partial made every launch)."""
        later = self.__dict__.get("_later")
        if later:
            later.append((merge, args))
        else:
            self.__dict__["_later"] = [(merge, args)]


def _by_line(self) -> dict:
    """Per (space, counter row): the kept request (the deferred ones merged in first)."""
    d = self.__dict__
    later = d.get("_later")
    if later:
        d["_later"] = None
        for merge, args in later:
            merge(*args, d["by_line"])
    return d["by_line"]


_new = object.__new__
WorstRequests.by_line = property(_by_line, lambda self, v: self.__dict__.__setitem__("by_line", v),
                                 doc=_by_line.__doc__)
