"""Issue rules of the timing model that are not memory costs, per GPU family.

`issue_interval`: cycles between two instructions of one warp. A warp
instruction occupies its scheduler's arithmetic units for 32 lanes / the
lanes they process per cycle (CUDA C Programming Guide, "Arithmetic
Instructions" throughput table and the per-family "Compute Capabilities"
sections):
- cc1.x: 8 cores per SM, one scheduler: a warp instruction takes 4 cycles;
- cc2.x: 32 cores per SM in two groups of 16, two schedulers: 2 cycles;
- cc3.x and later: 32 lanes per scheduler per cycle: 1 cycle.
Dependent-instruction latency (about 4 cycles on Volta and later: Jia et al.
2018, "Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking")
is not charged: the compiler interleaves independent instructions (our
instructions are IR operations, about 1.7 per SASS instruction on the
conformance set), so only memory results stall a warp. With a 4-cycle
dependent latency the model ranks the H100 conformance times worse
(Spearman 0.73 against 0.91: benchmarks/timing_fidelity.py).
Memory latencies and throughput costs come from the preset's MemoryConfig
through the memory system, not from here.
"""
from __future__ import annotations

from dataclasses import dataclass

ISSUE_INTERVAL_BY_MAJOR = {1: 4, 2: 2}
ISSUE_INTERVAL_DEFAULT = 1         # compute capability 3.0 and later


@dataclass(frozen=True)
class IssueRules:
    issue_interval: int


def issue_rules(preset) -> IssueRules:
    """The preset's issue rules (by compute capability major)."""
    major = int(preset.compute_capability[0])
    return IssueRules(issue_interval=ISSUE_INTERVAL_BY_MAJOR.get(major, ISSUE_INTERVAL_DEFAULT))
