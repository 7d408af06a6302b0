"""Issue rules of the timing model that are not memory costs, per GPU family.

`alu_latency`: cycles before a warp's next instruction may issue after the
previous one (every instruction is taken to depend on the one before it, so
a lone warp issues once every alu_latency cycles and a scheduler needs that
many ready warps to issue every cycle). Figures are the dependent-issue
latencies of the common arithmetic instructions measured by microbenchmark:
- sm_70 and later: 4 cycles (Jia et al. 2018, "Dissecting the NVIDIA Volta
  GPU Architecture via Microbenchmarking", Table 4.1; Turing/Ampere/Hopper
  keep 4: Jia et al. 2019 (Turing), Luo et al. 2024 (Hopper));
- sm_5x / sm_6x: 6 cycles (Jia et al. 2018, same table, Pascal P100: 6);
- cc3.x: 9 cycles (Kepler; Mei and Chu 2017 / Jia et al. 2018);
- cc2.x: 18 cycles (Fermi; Wong et al.-style measurements, ~18-22);
- cc1.x: 24 cycles (GT200; Wong et al. 2010, "Demystifying GPU
  Microarchitecture through Microbenchmarking").
Memory latencies and throughput costs come from the preset's MemoryConfig
through the memory system, not from here.
"""
from __future__ import annotations

from dataclasses import dataclass

ALU_LATENCY_BY_MAJOR = {1: 24, 2: 18, 3: 9, 5: 6, 6: 6}
ALU_LATENCY_DEFAULT = 4          # compute capability 7.0 and later


@dataclass(frozen=True)
class IssueRules:
    alu_latency: int


def issue_rules(preset) -> IssueRules:
    """The preset's issue rules (by compute capability major)."""
    major = int(preset.compute_capability[0])
    return IssueRules(alu_latency=ALU_LATENCY_BY_MAJOR.get(major, ALU_LATENCY_DEFAULT))
