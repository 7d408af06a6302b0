"""Arch presets: lookup by any common spelling, and the numbers each cites."""
import pytest

from gpuemu.arch import PRESETS, get_preset
from gpuemu.arch.preset import Preset

NAMES = ["cc1x", "cc2x", "cc3x", "sm_52", "sm_60", "sm_70", "sm_80", "sm_90"]


def test_every_family_has_a_preset():
    assert sorted(PRESETS) == sorted(NAMES)
    assert all(isinstance(p, Preset) for p in PRESETS.values())


@pytest.mark.parametrize("alias", ["sm_90", "sm90", "9.0", "90", "SM_90", "compute_90"])
def test_sm90_aliases(alias):
    assert get_preset(alias).name == "sm_90"


@pytest.mark.parametrize("alias,name", [("cc1x", "cc1x"), ("1.3", "cc1x"), ("cc2.0", "cc2x"),
                                        ("sm_35", "cc3x"), ("5.2", "sm_52"), ("sm_80", "sm_80")])
def test_family_aliases(alias, name):
    assert get_preset(alias).name == name


def test_unknown_name_lists_known_presets():
    with pytest.raises(ValueError) as e:
        get_preset("sm_75")
    assert "sm_75" in str(e.value) and "sm_90" in str(e.value) and "cc1x" in str(e.value)


def test_h100_has_132_sms_and_228kb_shared():
    p = get_preset("sm_90")
    assert p.num_sms == 132
    assert p.shared_per_sm == 228 * 1024 and p.max_shared_per_block_optin == 227 * 1024


def test_cc1x_has_16_banks_and_half_warp_phases():
    p = get_preset("cc1x")
    assert p.shared_banks == 16 and p.mem.banks == 16
    assert set(p.mem.shared_phase_lanes.values()) == {16}
    assert p.max_threads_per_block == 512


def test_memory_dict_mirrors_typed_config():
    for p in PRESETS.values():
        assert p.memory == p.mem.as_dict()
        assert p.shared_banks == p.mem.banks


def test_cc3x_bank_modes_and_refusal_elsewhere():
    m = get_preset("cc3x").mem
    assert m.with_bank_mode(8).shared_bank_bytes == 8
    assert m.with_bank_mode(4).shared_bank_bytes == 4
    with pytest.raises(ValueError):
        get_preset("sm_90").mem.with_bank_mode(8)


def test_l1_caching_of_global_loads_defaults():
    assert get_preset("cc2x").mem.l1_caches_global_loads
    assert get_preset("sm_90").mem.l1_caches_global_loads
    assert not get_preset("sm_52").mem.l1_caches_global_loads
    assert get_preset("cc2x").mem.l1_line_bytes == 128


def test_local_memory_per_thread_limit():
    # Guide, "Features and Technical Specifications": 16 KB on cc 1.x, 512 KB from cc 2.0
    assert get_preset("cc1x").max_local_bytes == 16 * 1024
    assert all(get_preset(n).max_local_bytes == 512 * 1024 for n in NAMES if n != "cc1x")


def test_module_refuses_local_array_past_its_preset_limit():
    import gpuemu
    with pytest.raises(gpuemu.CompileError) as e:
        gpuemu.RawModule(code="__global__ void k(int *p) { int a[5000]; a[1] = 1; p[0] = a[1]; }", arch="cc1x")
    assert "the limit is 16384 bytes (16 KB) per thread" in e.value.message
