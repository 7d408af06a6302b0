"""The architecture reference, generated from the presets themselves.

Every number the emulator uses for a GPU is a field of its Preset (limits)
or MemoryConfig (memory rules); what a field means is the comment beside it
in preset.py / memory_config.py, and where a preset's value comes from is
its module docstring and the comment beside the value in its file. This
module reads those comments with the values, so the reference cannot drift
from the code: `gpuemu info arch --markdown > docs/arch.md` writes it and
tests/test_arch_reference.py checks the committed file is current.
"""
from __future__ import annotations

import inspect
import re
from dataclasses import fields
from typing import Optional

from gpuemu.arch import PRESETS, MemoryConfig, Preset

_FIELD = re.compile(r"^\s{4}(\w+)\s*:\s*[^=#]+(?:=[^#]*)?(?:#\s*(.*))?$")
_KWARG = re.compile(r"^\s*(\w+)\s*=.*?#\s*(.*)$")
# Preset fields that hold the memory rules as a whole; MemoryConfig's fields are listed instead
_SKIP = {"memory", "mem"}


def field_notes(cls) -> dict:
    """{field: (section, meaning)} from the comments in a dataclass's source:
    a '# --- section' line opens a section; a block of '# ...' lines speaks
    for the fields right below it (up to a blank line or the next comment),
    and the comment after a field for that field alone."""
    notes, section, pending, block = {}, "", [], []
    for line in inspect.getsource(cls).splitlines():
        s = line.strip()
        if s.startswith("# ---"):
            section, pending, block = s.lstrip("# -").strip(), [], []
        elif s.startswith("#"):
            pending.append(s.lstrip("# ").rstrip())
        elif (m := _FIELD.match(line)) and not s.startswith(("def ", "return", "@")):
            if pending:
                block, pending = pending, []
            text = " ".join(block + ([m.group(2).strip()] if m.group(2) else []))
            notes[m.group(1)] = (section, text)
        elif not s:
            pending, block = [], []
    return notes


def value_notes(preset: Preset) -> dict:
    """{field: comment} for the values a preset's file annotates (its sources)."""
    module = inspect.getmodule(_module_of(preset))
    out = {}
    for line in inspect.getsource(module).splitlines():
        m = _KWARG.match(line)
        if m and not line.lstrip().startswith("#"):
            out.setdefault(m.group(1), m.group(2).strip())
    return out


def _module_of(preset: Preset):
    import importlib
    return importlib.import_module(f"gpuemu.arch.{preset.name}")


def _is_bytes(name: str) -> bool:
    return name.endswith("_bytes") or name.startswith(("shared_per", "max_shared", "shared_reserved"))


def fmt(v, name: str = "") -> str:
    """A value as the reference prints it (sizes in KiB/MiB for byte fields)."""
    if isinstance(v, dict):
        return " ".join(f"{k}:{fmt(x)}" for k, x in v.items()) or "-"
    if isinstance(v, (tuple, list)):
        return "(" + ", ".join(fmt(x) for x in v) + ")"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int) and _is_bytes(name) and v >= 4096 and v % 1024 == 0:
        return f"{v // (1 << 20)} MiB" if v % (1 << 20) == 0 else f"{v // 1024} KiB"
    return str(v)


def rows(preset: Preset) -> list:
    """(group, field, value, meaning, this preset's note) for every setting."""
    out = []
    pn, mn, vn = field_notes(Preset), field_notes(MemoryConfig), value_notes(preset)
    for f in fields(Preset):
        if f.name in _SKIP:
            continue
        sec, meaning = pn.get(f.name, ("", ""))
        out.append((sec or "identity", f.name, getattr(preset, f.name), meaning or sec,
                    vn.get(f.name, "")))
    for f in fields(MemoryConfig):
        sec, meaning = mn.get(f.name, ("", ""))
        out.append((f"memory: {sec}" if sec else "memory", f.name, getattr(preset.mem, f.name),
                    meaning or sec, vn.get(f.name, "")))
    return out


def _md_cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _rule_docs() -> list:
    """The rule modules whose docstrings state the rules the preset fields feed."""
    from gpuemu.arch import memory_config
    from gpuemu.memory import bank_arbiter, coalescer, constant_cache
    return [("Shared memory banks", "gpuemu/memory/bank_arbiter.py", bank_arbiter),
            ("The bank rule's four numbers", "gpuemu/arch/memory_config.py", memory_config),
            ("Global memory coalescing", "gpuemu/memory/coalescer.py", coalescer),
            ("Constant cache", "gpuemu/memory/constant_cache.py", constant_cache)]


def preset_markdown(preset: Preset, level: int = 2) -> str:
    """One preset: its docstring (the sources) and every setting with its note."""
    h = "#" * level
    doc = inspect.getdoc(_module_of(preset)) or ""
    lines = [f"{h} {preset.name}: {preset.description}", "",
             f"From `gpuemu/arch/{preset.name}.py`:", "", "```text", doc, "```", "",
             "| setting | value | meaning | source / note in the preset file |", "|---|---|---|---|"]
    for _, name, value, meaning, note in rows(preset):
        lines.append(f"| `{name}` | {_md_cell(fmt(value, name))} | {_md_cell(meaning)} | {_md_cell(note)} |")
    return "\n".join(lines) + "\n"


def markdown(names: Optional[list] = None) -> str:
    """The whole reference (all presets, or `names`), as docs/arch.md holds it."""
    presets = [PRESETS[n] for n in (names or list(PRESETS))]
    out = ["# Architecture reference", "",
           "Generated from `gpuemu/arch/` and the rule modules by "
           "`gpuemu info arch --markdown > docs/arch.md`; do not edit by hand "
           "(`tests/test_arch_reference.py` checks this file is current). A preset is plain "
           "data; the memory units read only its fields, so each rule below is "
           "one module's docstring and each number one field of a preset, with the "
           "comment that gives its source.", "",
           "## Presets at a glance", "",
           "| setting | " + " | ".join(p.name for p in presets) + " |",
           "|---|" + "---|" * len(presets)]
    table = [rows(p) for p in presets]
    for i, (_, name, *_rest) in enumerate(table[0]):
        if name not in ("name", "description"):
            out.append(f"| `{name}` | " + " | ".join(_md_cell(fmt(t[i][2], name)) for t in table) + " |")
    out += ["", "## The rules", ""]
    for title, path, module in _rule_docs():
        out += [f"### {title} (`{path}`)", "", "```text", inspect.getdoc(module) or "", "```", ""]
    out += ["## The presets", ""]
    for p in presets:
        out.append(preset_markdown(p, level=3))
    return "\n".join(out).rstrip() + "\n"
