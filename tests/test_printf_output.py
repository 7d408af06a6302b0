"""printf and assert in kernels (isa/printf_format.py, gpuemu/printf_output.py)."""
from __future__ import annotations

import struct

import numpy as np
import pytest

import gpuemu
from gpuemu.printf_output import format_entry
from isa_ir_walk import compile_error


def dbl(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


@pytest.mark.parametrize("fmt,words,want", [
    ("%d|%5d|%-4d|%04d", [(-3) & (2**64 - 1), 42, 7, 9], "-3|   42|7   |0009"),
    ("%u %x %X %o", [(-1) & (2**64 - 1), 255, 255, 8], "4294967295 ff FF 10"),
    ("%lld %llu", [(-5) & (2**64 - 1), 2**40], "-5 1099511627776"),
    ("%f %.2f %8.3e %g", [dbl(1.5), dbl(3.14159), dbl(12345.678), dbl(0.0001)],
     "1.500000 3.14 1.235e+04 0.0001"),
    ("%c%c %s %%", [ord("h"), ord("i"), 0], "hi str %"),
    ("%p", [0x1234 | (7 << 48)], "0x1234"),
])
def test_format_entry_prints_as_c_printf(fmt, words, want):
    assert format_entry(fmt, words, ["str"]) == want


SRC = r'''
#include <stdio.h>
#include <assert.h>
__global__ void k(const float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i % 5 == 0) printf("b%d t%d %.1f %s\n", blockIdx.x, threadIdx.x, x[i], "ok");
    assert(x[i] < n);
}
'''


def test_printf_output_after_launch_in_warp_and_lane_order(capsys):
    x = np.arange(64, dtype=np.float32)
    launch = gpuemu.RawModule(code=SRC).get_function("k")((2,), (32,), (x, np.int32(64)))
    want = "".join(f"b{i // 32} t{i % 32} {i:.1f} ok\n" for i in range(0, 64, 5))
    assert launch.printed == want
    assert capsys.readouterr().out == want


def test_failed_assert_is_a_kernel_error_naming_block_thread_and_line(capsys):
    x = np.arange(64, dtype=np.float32)
    with pytest.raises(gpuemu.KernelError) as e:
        gpuemu.RawModule(code=SRC).get_function("k")((2,), (32,), (x, np.int32(40)))
    f = e.value.findings[0]
    assert (f.kind, f.kernel, f.block, f.thread, f.line) == ("assert", "k", (1, 0, 0), (8, 0, 0), 8)
    assert f.message == "Assertion `x[i] < n` failed" and "Assertion `x[i] < n` failed" in str(e.value)
    assert "b0 t0 0.0 ok" in capsys.readouterr().out


def test_ndebug_turns_assert_off():
    x = np.arange(32, dtype=np.float32)
    mod = gpuemu.RawModule(code=SRC, options=("-DNDEBUG",))
    assert mod.get_function("k")((1,), (32,), (x, np.int32(0))).printed.count("\n") == 7


@pytest.mark.parametrize("call,msg", [
    ('printf("%d %d\\n", 1)', "the printf format has 2 conversions but 1 argument follow"),
    ('printf("%d\\n", 1.5f)', "'%d' needs an integer argument, not 'float'"),
    ('printf("%f\\n", 1)', "'%f' needs a floating-point argument, not 'int'"),
    ('printf("%s\\n", p)', "%s needs a string literal argument"),
    ('printf("%n\\n", p)', "%n is not supported in printf"),
    ('printf("%99999999999d\\n", 1)', "'%99999999999d': printf widths and precisions are limited to 4095"),
    ('printf("%.4096f\\n", 1.0)', "'%.4096f': printf widths and precisions are limited to 4095"),
])
def test_bad_printf_is_a_diagnostic(call, msg):
    e = compile_error(f"__global__ void k(char *p)\n{{\n    {call};\n}}\n")
    assert msg in e.message and e.line == 3


def test_printf_output_is_whole_and_ordered_with_several_block_workers():
    x = np.arange(64, dtype=np.float32)
    launch = gpuemu.RawModule(code=SRC).get_function("k")((2,), (32,), (x, np.int32(64)), workers=2)
    assert launch.printed == "".join(f"b{i // 32} t{i % 32} {i:.1f} ok\n" for i in range(0, 64, 5))


# C's printf rules where Python's % formatting differs (C11 7.21.6.1; glibc's
# text where C leaves it to the implementation), worked by hand.
@pytest.mark.parametrize("fmt,word,want", [
    ("%#o", 8, "010"),                        # '#o' makes the first digit 0, no '0o'
    ("%#o", 0, "0"),
    ("%#x", 0, "0"),                          # '#x' adds 0x only to a nonzero value
    ("%#08x", 255, "0x0000ff"),
    ("%.0d", 0, ""),                          # precision 0 of a zero: no digits
    ("%#.0o", 0, "0"),
    ("%5.0x|", 0, "     |"),
    ("%08.3d", 8, "     008"),                # a precision turns the '0' flag off
    ("%.3x", 31, "01f"),
    ("%+u", 8, "8"),                          # '+' and ' ' only sign signed conversions
    ("% x", 8, "8"),
    ("% 05d", (-3) & (2**64 - 1), "-0003"),
    ("%hhd", 200, "-56"),
    ("%.2a", dbl(2.5), "0x1.40p+1"),
    ("%.2a", dbl(float("inf")), "inf"),
    ("%a", dbl(2.5), "0x1.4p+1"),             # no precision: exact, no trailing zeros
    ("%a", dbl(0.0), "0x0p+0"),
    ("%a", dbl(-0.0), "-0x0p+0"),
    ("%A", dbl(255.5), "0X1.FFP+7"),
    ("%a", dbl(5e-324), "0x0.0000000000001p-1022"),   # subnormal: 0.hhh p-1022
    ("%.0a", dbl(1.5), "0x2p+0"),             # rounded half to even; a carry makes the lead 2
    ("%.0a", dbl(2.5), "0x1p+1"),
    ("%.1a", dbl(1.03125), "0x1.0p+0"),
    ("%#.0a", dbl(1.0), "0x1.p+0"),
    ("%010a", dbl(1.0), "0x00001p+0"),        # zeros go after the 0x
    ("%08.2f", dbl(float("inf")), "     inf"),   # inf and nan are never zero-padded
    ("%-8f|", dbl(float("-inf")), "-inf    |"),
    ("%+F", dbl(float("inf")), "+INF"),
    ("%f", dbl(float("nan")) | 1 << 63, "-nan"),
    ("%E", dbl(float("nan")), "NAN"),
    ("%#.0e", dbl(1.0), "1.e+00"),
    ("%#g", dbl(1.0), "1.00000"),
    ("%05c", ord("A"), "    A"),              # '0' pads only numbers
    ("%3c|", ord("A"), "  A|"),
    ("%10p", 0x1234, "    0x1234"),           # %p as glibc prints it: '%#x', (nil) for NULL
    ("%010p", 0x1234, "0x00001234"),
    ("%-8p|", 0, "(nil)   |"),
])
def test_format_entry_follows_c_rules_where_python_differs(fmt, word, want):
    assert format_entry(fmt, [word], ["str"]) == want


def test_widest_field_c_asks_for_prints_whole():
    assert format_entry("%4095.4095d", [7], []) == "0" * 4094 + "7"


def test_format_entry_pads_and_cuts_strings_as_c():
    assert format_entry("%5s|%-5s|%.2s|%05s", [0, 0, 0, 0], ["abc"]) == "  abc|abc  |ab|  abc"


def _libc_snprintf():
    import ctypes
    import ctypes.util
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    if not hasattr(libc, "gnu_get_libc_version"):
        return None
    buf = ctypes.create_string_buffer(4096)

    def snprintf(fmt: str, arg) -> str:
        libc.snprintf(buf, len(buf), fmt.encode(), arg)
        return buf.value.decode("latin-1")
    return snprintf


def _cases():
    """(format, word, ctypes argument) over the conversions, flags, widths,
    precisions and length modifiers the project supports."""
    import ctypes
    flags = ["", "-", "+", " ", "#", "0", "-0", "+0", " 0", "#0", "-#", "+ #0"]
    widths = ["", "1", "9"]
    precs = ["", ".", ".0", ".1", ".3", ".13", ".20"]
    ints = [0, 1, 8, -1, 255, -128, 4096, 2**31 - 1, -2**31, 2**40 + 5, -2**63]
    floats = [0.0, -0.0, 1.0, 1.5, 2.5, 0.1, -3.75, 1e-5, 123456.789, 9.9999, 1e300,
              5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
              float("inf"), float("-inf"), float("nan"), -float("nan")]
    for fl in flags:
        for wd in widths:
            for pr in precs:
                spec = "%" + fl + wd + pr
                for ln in ["", "hh", "h", "l", "ll", "z"]:
                    for conv in "diouxX":
                        for v in ints:
                            arg = ctypes.c_longlong(v) if ln in ("l", "ll", "z") else \
                                ctypes.c_int((v + 2**31) % 2**32 - 2**31)
                            yield spec + ln + conv, v & (2**64 - 1), arg
                for conv in "fFeEgGaA":
                    for v in floats:
                        yield spec + conv, dbl(v), ctypes.c_double(v)
                for v in [0, 0x1234, 0x7fff_ffff_fff0]:
                    yield spec + "p", v, ctypes.c_void_p(v)
            for v in [65, 122]:
                yield "%" + fl + wd + "c", v, ctypes.c_int(v)


@pytest.mark.skipif(_libc_snprintf() is None, reason="compares with glibc's snprintf (Linux)")
def test_format_entry_matches_glibc_snprintf():
    snprintf = _libc_snprintf()
    bad = [(fmt, format_entry(fmt, [w], []), snprintf(fmt, arg))
           for fmt, w, arg in _cases() if format_entry(fmt, [w], []) != snprintf(fmt, arg)]
    assert bad == []


@pytest.mark.parametrize("tail,want", [("", False), (' printf("%f\\n", y[i]);', True)])
def test_uses_printf_reads_a_1200_term_expression_at_the_default_recursion_limit(tail, want):
    import sys
    import isa
    from gpuemu.printf_output import uses_printf
    src = ("__global__ void deep(float *y, const float *x)\n{ int i = threadIdx.x; y[i] = x[i]%s;%s }\n"
           % (" + x[i]" * 1200, tail))
    module = isa.compile_source(src)
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)             # Python's default; compiles raise it, launches do not
    try:
        got = uses_printf(module.kernel("deep"), module)
    finally:
        sys.setrecursionlimit(max(before, sys.getrecursionlimit()))
    assert got is want
