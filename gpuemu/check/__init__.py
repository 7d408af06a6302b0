"""The bug finders of check mode: racecheck, initcheck, synccheck, memcheck.

`kernel(..., check=True)` turns on every tool; `check=["race", "initcheck"]`
chooses. memcheck (out-of-bounds and misaligned accesses in every space) is
always on, natively; the others read the trace of warp-level accesses the
JIT records (gpuemu/jit/abi.py) and report `gpuemu.Finding`s.
"""
from __future__ import annotations

from typing import Optional

TOOLS = ("race", "memcheck", "initcheck", "synccheck")
ALIASES = {"racecheck": "race", "races": "race", "init": "initcheck", "sync": "synccheck"}


def parse_check(check) -> frozenset:
    """The set of tools a launch's `check=` asks for (empty: check mode off)."""
    if check is None or check is False:
        return frozenset()
    if check is True:
        return frozenset(TOOLS)
    if isinstance(check, str):
        check = [check]
    try:
        names = [ALIASES.get(str(c), str(c)) for c in check]
    except TypeError:
        raise ValueError(f"check= takes True, False or a list of {', '.join(TOOLS)}; "
                         f"got {check!r}") from None
    bad = [n for n in names if n not in TOOLS]
    if bad:
        raise ValueError(f"unknown check tool(s) {', '.join(bad)}; known: {', '.join(TOOLS)}")
    return frozenset(names)


def make_checker(check, meta, preset, shape, memory, params=None) -> Optional["Checker"]:
    """A Checker for one launch, or None when check mode is off (params:
    the launch's parameter bytes, to name the arguments findings touch)."""
    tools = parse_check(check)
    if not tools:
        return None
    from .checker import Checker
    return Checker(tools, meta, preset, shape, memory, params)
