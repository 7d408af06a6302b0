"""printf in kernels: the format subset CUDA documents (CUDA C Programming
Guide, "Formatted Output"): %d %i %u %x %X %o %c %s %p %f %F %e %E %g %G %a
and %%, with flags (-+ #0), width, precision and the length modifiers h hh
l ll z. Each call is checked here against its arguments; the kernel records
one entry per thread (intrinsic 'printf'), and the host formats the entries
after the launch (gpuemu/printf_output.py), in the buffer's order as CUDA
does (a warp's threads in lane order).

Arguments travel as 64-bit words: integers extended by their own type,
float promoted to double (C's default argument promotions), pointers as
addresses; a %s argument must be a string literal (kept in the module's
string table), since device strings cannot be read back.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_SPEC = re.compile(r"%(?P<flags>[-+ #0]*)(?P<width>\*|\d+)?(?:\.(?P<prec>\*|\d*))?"
                   r"(?P<len>hh|h|ll|l|z|j|t|L)?(?P<conv>[diouxXcspfFeEgGaAn%])?")


# the largest width or precision: C asks an implementation to produce at least
# 4095 characters in one conversion (C11 5.2.4.1); far larger ones would only
# exhaust the host's memory when the output is formatted
MAX_FIELD = 4095


@dataclass
class Conversion:
    text: str         # the whole conversion, e.g. '%-8.3f'
    conv: str         # 'd', 'f', ...
    length: str       # '', 'l', 'll', ...


def conversions(fmt: str) -> list:
    """The format's conversions in order (not %%). Raises ValueError naming
    an unsupported one."""
    out = []
    i = 0
    while True:
        j = fmt.find("%", i)
        if j < 0:
            return out
        m = _SPEC.match(fmt, j)
        conv = m.group("conv")
        if conv is None:
            raise ValueError(f"incomplete conversion '{fmt[j:m.end() + 1]}' in the printf format")
        if conv == "%":
            if m.group(0) != "%%":
                raise ValueError(f"bad conversion '{m.group(0)}' in the printf format")
            i = m.end()
            continue
        if conv == "n":
            raise ValueError("%n is not supported in printf")
        if m.group("width") == "*" or m.group("prec") == "*":
            raise ValueError("'*' widths and precisions are not supported in printf")
        if max(int(m.group("width") or 0), int(m.group("prec") or 0)) > MAX_FIELD:
            raise ValueError(f"'{m.group(0)}': printf widths and precisions are limited to {MAX_FIELD}")
        if m.group("len") == "L":
            raise ValueError("long double (%L...) is not supported in printf")
        out.append(Conversion(m.group(0), conv, m.group("len") or ""))
        i = m.end()


INT_CONVS = "diouxXc"
FLOAT_CONVS = "fFeEgGaA"


def string_literal(text: str) -> str:
    """The value of C string literal tokens as written ('"a\\n" "b"' -> 'a\nb')."""
    out = []
    for seg in re.findall(r'"((?:\\.|[^"\\])*)"', text):
        i = 0
        while i < len(seg):
            c = seg[i]
            if c != "\\":
                out.append(c)
                i += 1
                continue
            nx = seg[i + 1]
            if nx in "01234567":
                m = re.match(r"[0-7]{1,3}", seg[i + 1:])
                out.append(chr(int(m.group(0), 8)))
                i += 1 + len(m.group(0))
            elif nx == "x":
                m = re.match(r"[0-9a-fA-F]+", seg[i + 2:])
                out.append(chr(int(m.group(0), 16) & 0xFF))
                i += 2 + len(m.group(0))
            else:
                out.append({"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v",
                            "0": "\0"}.get(nx, nx))
                i += 2
    return "".join(out)
