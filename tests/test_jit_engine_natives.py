"""engine.native_function: a machine helper compiled and loaded once per
process; several symbols of one module share that one compile."""
import ctypes

from gpuemu.jit import engine

PROTO = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)


def _module_of_two(counted: list):
    def build_ir() -> str:
        counted.append(1)
        return """
define i64 @gpuemu_test_twice(i64 %x) { %y = mul i64 %x, 2
  ret i64 %y }
define i64 @gpuemu_test_thrice(i64 %x) { %y = mul i64 %x, 3
  ret i64 %y }
"""
    return build_ir


def test_two_symbols_of_one_module_are_compiled_once():
    counted: list = []
    build_ir = _module_of_two(counted)
    twice = engine.native_function("gpuemu_test_twice", build_ir, PROTO)
    thrice = engine.native_function("gpuemu_test_thrice", build_ir, PROTO)
    assert (twice(7), thrice(7)) == (14, 21)
    assert len(counted) == 1

