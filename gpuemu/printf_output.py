"""printf output of a launch: the buffer the warps append to, and its text.

Each entry is [nwords, block (linear), thread in block (linear), format id,
argument words...] (gpuemu/jit/intrinsics_codegen.py `in_printf`). The text
comes out after the launch in the buffer's order, as CUDA prints its
device-side FIFO at the next synchronisation: one warp's threads in lane
order, warps in the order they ran (CUDA C Programming Guide, "Formatted
Output"). Entries past the buffer's size are dropped, as CUDA drops them.
"""
from __future__ import annotations

import struct

import numpy as np

from isa.printf_format import FLOAT_CONVS, _SPEC
from .jit.abi import ADDR_MASK

# words in the buffer (CUDA's default FIFO is 1 MB; 8-byte words here)
BUFFER_WORDS = 1 << 17


def uses_printf(kernel, module) -> bool:
    """Whether a kernel (or a device function it calls) calls printf."""
    from isa import ir
    seen = set()

    def walk(n) -> bool:
        if isinstance(n, ir.Intrinsic) and n.name == "printf":
            return True
        if isinstance(n, ir.Call) and id(n.func) not in seen:
            seen.add(id(n.func))
            if n.func.body is not None and walk(n.func.body):
                return True
        if isinstance(n, (ir.Expr, ir.Stmt)):
            for k, v in vars(n).items():
                if k in ("type", "loc", "var", "func"):
                    continue
                if isinstance(v, (ir.Expr, ir.Stmt)) and walk(v):
                    return True
                if isinstance(v, list) and any(isinstance(x, (ir.Expr, ir.Stmt)) and walk(x) for x in v):
                    return True
        return False
    return kernel.body is not None and walk(kernel.body)


def new_buffer() -> np.ndarray:
    return np.zeros(BUFFER_WORDS, dtype=np.int64)


def entries(buf: np.ndarray, used: int, grid: tuple) -> list:
    """(block (x, y, z), thread linear index, format id, words) per entry."""
    out = []
    i = 0
    gx, gy = grid[0], grid[1]
    while i + 3 <= used:
        n = int(buf[i])
        if n < 4 or i + n > used:
            break
        b = int(buf[i + 1])
        out.append(((b % gx, (b // gx) % gy, b // (gx * gy)), int(buf[i + 2]), int(buf[i + 3]),
                    [int(x) & (1 << 64) - 1 for x in buf[i + 4:i + n]]))
        i += n
    return out


def format_entry(fmt: str, words: list, strings: list) -> str:
    """One printf call's text from its argument words, as C's printf formats them."""
    out = []
    i = 0
    k = 0
    for m in _SPEC.finditer(fmt):
        out.append(fmt[i:m.start()])
        i = m.end()
        conv = m.group("conv")
        if conv == "%" or conv is None:
            out.append("%" if conv else m.group(0))
            continue
        w = words[k] if k < len(words) else 0
        k += 1
        spec = "%" + (m.group("flags") or "") + (m.group("width") or "") + \
            ("." + m.group("prec") if m.group("prec") is not None else "")
        ln = m.group("len") or ""
        bits = 64 if ln in ("l", "ll", "z", "j", "t") else 8 if ln == "hh" else 16 if ln == "h" else 32
        if conv in "di":
            v = w & ((1 << bits) - 1)
            if v >> (bits - 1):
                v -= 1 << bits
            out.append((spec + "d") % v)
        elif conv in "ouxX":
            out.append((spec + conv) % (w & ((1 << bits) - 1)))
        elif conv == "c":
            out.append((spec.replace("0", "") + "c") % chr(w & 0xFF))
        elif conv in FLOAT_CONVS:
            v = struct.unpack("<d", struct.pack("<Q", w))[0]
            if conv in "aA":
                s = v.hex()
                out.append((spec.replace("#", "") + "s") % (s.upper() if conv == "A" else s))
            else:
                out.append((spec + conv) % v)
        elif conv == "s":
            out.append((spec + "s") % (strings[w] if 0 <= w < len(strings) else "(null)"))
        elif conv == "p":
            a = w & ADDR_MASK
            out.append((spec.replace("#", "").replace("0", "") + "s") % (f"0x{a:x}" if a else "(nil)"))
    out.append(fmt[i:])
    return "".join(out)


def text(buf: np.ndarray, used: int, grid: tuple, strings: list) -> str:
    """All of a launch's printf output, in the buffer's order."""
    return "".join(format_entry(strings[f], words, strings) for _, _, f, words in entries(buf, used, grid))
