"""Architecture presets: `PRESETS` (name -> Preset) and `get_preset(name)`.

One small file per GPU family (cc1x.py ... sm_90.py); add a GPU by adding a
file and a line to `_MODULES`.
"""
from __future__ import annotations

import re

from gpuemu.arch.memory_config import MemoryConfig
from gpuemu.arch.preset import Preset
from gpuemu.arch import cc1x, cc2x, cc3x, sm_52, sm_60, sm_70, sm_80, sm_90

_MODULES = (cc1x, cc2x, cc3x, sm_52, sm_60, sm_70, sm_80, sm_90)
PRESETS: dict = {m.PRESET.name: m.PRESET for m in _MODULES}

# Family presets answer for every minor version of their compute capability.
_FAMILY = {"1": "cc1x", "2": "cc2x", "3": "cc3x"}


def _canonical(name: str) -> str | None:
    s = str(name).strip().lower().replace("-", "_")
    if s in PRESETS:
        return s
    m = re.fullmatch(r"(?:sm_?|compute_?|cc)?(\d)(?:\.|_)?(\d|x)?", s)
    if not m:
        return None
    major, minor = m.group(1), m.group(2) or "0"
    if major in _FAMILY:
        return _FAMILY[major]
    cand = f"sm_{major}{minor}"
    return cand if cand in PRESETS else None


def get_preset(name: str | Preset) -> Preset:
    """The preset for 'sm_90', 'sm90', '9.0', '90', 'cc1x', 'cc2.0', 'sm_35', ...

    Raises ValueError naming the known presets for anything else."""
    if isinstance(name, Preset):
        return name
    key = _canonical(name)
    if key is None:
        raise ValueError(f"unknown architecture {name!r}; known: {', '.join(PRESETS)}")
    return PRESETS[key]


__all__ = ["PRESETS", "Preset", "MemoryConfig", "get_preset"]
