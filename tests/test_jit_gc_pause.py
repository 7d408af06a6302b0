"""The cyclic garbage collector is off while a kernel's LLVM IR is built
(gpuemu/jit/gc_pause.py), and afterwards as it was before."""
from __future__ import annotations

import gc

import isa
from gpuemu.jit import compiler, gc_pause
from gpuemu.jit.warp_codegen import WarpCodegen

SRC = "__global__ void k(int *a) { a[threadIdx.x] += 1; }"


def _compile_seeing_gc(monkeypatch) -> list:
    seen = []
    build = WarpCodegen.build

    def spy(self):
        seen.append(gc.isenabled())
        return build(self)
    monkeypatch.setattr(WarpCodegen, "build", spy)
    compiler.compile_kernel(isa.compile_source(SRC, arch=900), "k", use_cache=False)
    return seen


def test_the_collector_is_off_while_the_ir_is_built_and_on_again_after(monkeypatch):
    assert gc.isenabled()
    assert _compile_seeing_gc(monkeypatch) == [False]
    assert gc.isenabled()


def test_a_collector_turned_off_before_stays_off(monkeypatch):
    gc.disable()
    try:
        assert _compile_seeing_gc(monkeypatch) == [False]
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_overlapping_pauses_turn_it_on_after_the_last_one_leaves():
    first, second = gc_pause.paused(), gc_pause.paused()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert not gc.isenabled()
    second.__exit__(None, None, None)
    assert gc.isenabled()
