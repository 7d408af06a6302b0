"""printf output of a launch: the buffer the warps append to, and its text.

Each entry is [nwords, block (linear), thread in block (linear), format id,
argument words...] (gpuemu/jit/intrinsics_codegen.py `in_printf`). The text
comes out after the launch in the buffer's order, as CUDA prints its
device-side FIFO at the next synchronisation: one warp's threads in lane
order, warps in the order they ran (CUDA C Programming Guide, "Formatted
Output"). Entries past the buffer's size are dropped, as CUDA drops them.
"""
from __future__ import annotations

import math
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
    nodes = (ir.Expr, ir.Stmt)
    todo = [kernel.body] if kernel.body is not None else []
    while todo:             # an explicit stack: a long expression nests thousands deep
        n = todo.pop()
        if isinstance(n, ir.Intrinsic) and n.name == "printf":
            return True
        if isinstance(n, ir.Call) and id(n.func) not in seen:
            seen.add(id(n.func))
            if n.func.body is not None:
                todo.append(n.func.body)
        if isinstance(n, nodes):
            for k, v in vars(n).items():
                if k in ("type", "loc", "var", "func"):
                    continue
                if isinstance(v, nodes):
                    todo.append(v)
                elif isinstance(v, list):
                    todo.extend(x for x in v if isinstance(x, nodes))
    return False


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
        prec = m.group("prec")
        out.append(convert(conv, m.group("flags") or "", int(m.group("width") or 0),
                           None if prec is None else int(prec or 0), m.group("len") or "", w, strings))
    out.append(fmt[i:])
    return "".join(out)


def convert(conv: str, flags: str, width: int, prec, length: str, w: int, strings: list) -> str:
    """One conversion of argument word w, by C's rules (C11 7.21.6.1, which CUDA's
    device printf follows; CUDA C Programming Guide, "Formatted Output"). Where C
    leaves the text to the implementation (%p, the sign of a NaN) it is glibc's.
    Returns the field: the sign and prefix, the digits, and the padding to width."""
    if conv in "diouxX":
        bits = 64 if length in ("l", "ll", "z", "j", "t") else 8 if length == "hh" else 16 if length == "h" else 32
        v = w & ((1 << bits) - 1)
        if conv in "di" and v >> (bits - 1):
            v -= 1 << bits
        # the precision is the least number of digits; a zero with precision 0 has none
        digits = "" if prec == 0 and v == 0 else format(abs(v), "d" if conv in "diu" else conv)
        digits = digits.zfill(prec or 0)
        prefix = _sign(v < 0, flags) if conv in "di" else ""   # '+' and ' ' are for signed conversions
        if "#" in flags and conv == "o" and not digits.startswith("0"):
            digits = "0" + digits                               # '#o': the first digit is a 0
        elif "#" in flags and conv in "xX" and v:
            prefix = "0" + conv                                 # '#x': 0x before a nonzero value
        return _pad(prefix, digits, width, flags, zeros=prec is None)   # '0' is ignored with a precision
    if conv in FLOAT_CONVS:
        v = struct.unpack("<d", struct.pack("<Q", w))[0]
        prefix = _sign(w >> 63, flags)
        if not math.isfinite(v):                                # [-]inf, [-]nan: never zero-padded
            body = "inf" if math.isinf(v) else "nan"
            return _pad(prefix, body.upper() if conv in "FEGA" else body, width, flags, zeros=False)
        if conv in "aA":
            body = _hex_digits(abs(v), prec, "#" in flags)
            prefix += "0x"
            if conv == "A":
                prefix, body = prefix.upper(), body.upper()
        else:                                                   # Python's are correctly rounded, as glibc's
            body = ("%" + ("#" if "#" in flags else "") + "." + str(6 if prec is None else prec) + conv) % abs(v)
        return _pad(prefix, body, width, flags, zeros=True)
    if conv == "c":
        return _pad("", chr(w & 0xFF), width, flags, zeros=False)
    if conv == "s":
        s = strings[w] if 0 <= w < len(strings) else ("(null)" if prec is None or prec >= 6 else "")
        return _pad("", s if prec is None else s[:prec], width, flags, zeros=False)
    a = w & ADDR_MASK                                           # %p: glibc's '%#x', and (nil) for NULL
    if not a:
        return _pad("", "(nil)", width, flags, zeros=False)
    return _pad(_sign(False, flags) + "0x", format(a, "x").zfill(prec or 0), width, flags, zeros=prec is None)


def _sign(negative, flags: str) -> str:
    return "-" if negative else "+" if "+" in flags else " " if " " in flags else ""


def _pad(prefix: str, body: str, width: int, flags: str, zeros: bool) -> str:
    """The field padded to width: on the right with '-', else with '0' between the
    sign/prefix and the digits where zeros apply, else with spaces on the left."""
    n = width - len(prefix) - len(body)
    if n <= 0:
        return prefix + body
    if "-" in flags:
        return prefix + body + " " * n
    if zeros and "0" in flags:
        return prefix + "0" * n + body
    return " " * n + prefix + body


def _hex_digits(v: float, prec, alt: bool) -> str:
    """%a's text after '0x' for v >= 0, in glibc's form: a normal number as 1.hhh,
    a subnormal as 0.hhh p-1022; rounded to prec hex digits half to even, a carry
    making the lead digit 2; without a precision, exact with no trailing zeros."""
    bits = struct.unpack("<Q", struct.pack("<d", v))[0]
    e = bits >> 52
    exp = 0 if bits == 0 else -1022 if e == 0 else e - 1023
    m = bits if e == 0 else (1 << 52) | (bits & ((1 << 52) - 1))   # lead digit and 13 hex digits
    if prec is None:
        frac = f"{m & ((1 << 52) - 1):013x}".rstrip("0")
    elif prec >= 13:
        frac = f"{m & ((1 << 52) - 1):013x}" + "0" * (prec - 13)
    else:
        drop = 4 * (13 - prec)
        q, r = divmod(m, 1 << drop)
        if 2 * r > 1 << drop or (2 * r == 1 << drop and q & 1):
            q += 1
        m = q << drop
        frac = f"{q & ((1 << 4 * prec) - 1):x}".zfill(prec) if prec else ""
    return f"{m >> 52}{'.' if frac or alt else ''}{frac}p{exp:+d}"


def text(buf: np.ndarray, used: int, grid: tuple, strings: list) -> str:
    """All of a launch's printf output, in the buffer's order."""
    return "".join(format_entry(strings[f], words, strings) for _, _, f, words in entries(buf, used, grid))
