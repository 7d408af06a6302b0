"""The PCIe link model (gpuemu/host/pcie.py) against hand-worked numbers and
the H100 measurement in benchmarks/results/pcie_h100.json."""
import json
from pathlib import Path

import pytest

from gpuemu.arch import PRESETS
from gpuemu.host.pcie import copy_seconds, cycles_per_pcie_sector, link_for

H100 = json.loads((Path(__file__).parent.parent / "benchmarks" / "results" / "pcie_h100.json").read_text())


def test_pinned_copy_is_latency_plus_bytes_over_bandwidth():
    link = link_for("sm_90")
    assert copy_seconds(55_000_000, "h2d", True, link) == pytest.approx(12e-6 + 1e-3)


def test_pageable_copy_adds_the_staging_pass():
    link = link_for("sm_90")
    n = 91_000_000
    assert copy_seconds(n, "h2d", False, link) - copy_seconds(n, "h2d", True, link) == pytest.approx(0.01)


def test_an_empty_copy_costs_nothing():
    assert copy_seconds(0, "d2h", False, link_for("sm_90")) == 0.0


def test_every_preset_has_a_link():
    for name in PRESETS:
        assert link_for(name).h2d > 0


def test_bad_direction_is_an_error():
    with pytest.raises(ValueError, match="h2d"):
        copy_seconds(4, "up", True, link_for("sm_90"))


@pytest.mark.parametrize("row", [r for r in H100["sizes"] if r["bytes"] >= 64 << 20], ids=lambda r: str(r["bytes"]))
@pytest.mark.parametrize("key", ["h2d_pinned_s", "d2h_pinned_s", "h2d_pageable_s", "d2h_pageable_s"])
def test_sm_90_model_is_within_10_percent_of_the_h100_for_large_copies(row, key):
    direction, kind = key.split("_")[:2]
    model = copy_seconds(row["bytes"], direction, kind == "pinned", link_for("sm_90"))
    assert model == pytest.approx(row[key], rel=0.10)


def test_zero_copy_sector_cost_spreads_the_link_over_all_sms():
    # 132 SMs x 1.98 GHz x 32 B / 50 GB/s
    assert cycles_per_pcie_sector(PRESETS["sm_90"], link_for("sm_90")) == round(132 * 1.98e9 * 32 / 50e9)
