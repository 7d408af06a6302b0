"""The optimisation pipeline: O2 as LLVM gives it, except that InstCombine
does not sink instructions in modules over engine.SINKING_LIMIT lines (sinking
walks a value down a chain of blocks one block per visit: quadratic)."""
import re

import numpy as np

from gpuemu.jit import engine
from kernel_launch import launch


def _chain(links: int) -> str:
    """A kernel shaped as ours are: each link loads, adds to a running sum,
    then calls a helper that may fail and branches on its answer (the fault
    check after each memory access), so every add is used only in the next block."""
    lines = ["declare i32 @may_fail(ptr)", "", "define i32 @chain(ptr %p) {", "entry:",
             "  %s0 = load i32, ptr %p", "  %c0 = call i32 @may_fail(ptr %p)",
             "  %f0 = icmp ne i32 %c0, 0", "  br i1 %f0, label %fault, label %ok0",
             "fault:", "  ret i32 -1"]
    for i in range(1, links):
        lines += [f"ok{i - 1}:", f"  %v{i} = load i32, ptr %p", f"  %s{i} = add i32 %s{i - 1}, %v{i}",
                  f"  %c{i} = call i32 @may_fail(ptr %p)", f"  %f{i} = icmp ne i32 %c{i}, 0",
                  f"  br i1 %f{i}, label %fault, label %ok{i}"]
    lines += [f"ok{links - 1}:", f"  ret i32 %s{links - 1}", "}", ""]
    return "\n".join(lines)


def _blocks_with_adds(llvm_ir: str) -> int:
    body = llvm_ir[llvm_ir.index("@chain("):]
    return sum(1 for block in re.split(r"\n(?=[\w.]+:)", body) if re.search(r"= add i32", block))


def test_a_module_over_the_limit_is_optimised_without_sinking():
    text = _chain(4000)
    assert text.count("\n") > engine.SINKING_LIMIT
    # each partial sum stays in the block of its load (sunk, all 3999 would meet in the last)
    assert _blocks_with_adds(engine.optimised_ir(text)) > 3000


def test_a_module_under_the_limit_is_optimised_as_llvm_does_at_o2():
    text = _chain(20)
    assert engine.sinks(text)
    assert _blocks_with_adds(engine.optimised_ir(text)) == 1      # every add sunk to the last block


def test_sinking_comes_back_for_the_next_small_module():
    engine.optimised_ir(_chain(4000))
    assert _blocks_with_adds(engine.optimised_ir(_chain(20))) == 1


def test_a_300_term_sum_of_loads_is_the_sum():
    src = 'extern "C" __global__ void k(int *a)\n{\n    a[0] = %s;\n}\n' % "+".join(["a[1]"] * 300)
    a = np.array([0, 7], dtype=np.int32)
    launch(src, "k", 1, 1, a)
    assert a[0] == 2100
