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
])
def test_bad_printf_is_a_diagnostic(call, msg):
    e = compile_error(f"__global__ void k(char *p)\n{{\n    {call};\n}}\n")
    assert msg in e.message and e.line == 3


def test_printf_output_is_whole_and_ordered_with_several_block_workers():
    x = np.arange(64, dtype=np.float32)
    launch = gpuemu.RawModule(code=SRC).get_function("k")((2,), (32,), (x, np.int32(64)), workers=2)
    assert launch.printed == "".join(f"b{i // 32} t{i % 32} {i:.1f} ok\n" for i in range(0, 64, 5))
