"""docs/arch.md is generated from the presets (gpuemu/arch/reference.py) and
says, for every setting, its value, meaning and source."""
from __future__ import annotations

from dataclasses import fields

from conftest import REPO
from gpuemu.arch import PRESETS, MemoryConfig, Preset
from gpuemu.arch import reference

REGENERATE = "regenerate it: gpuemu info arch --markdown > docs/arch.md"


def test_committed_reference_is_current():
    assert (REPO / "docs" / "arch.md").read_text() == reference.markdown(), REGENERATE


def test_every_preset_has_a_section_with_every_setting():
    md = reference.markdown()
    for name, p in PRESETS.items():
        section = reference.preset_markdown(p)
        assert section in md
        for f in fields(MemoryConfig):
            assert f"| `{f.name}` |" in section


def test_every_memory_setting_has_a_meaning():
    rows = reference.rows(PRESETS["sm_90"])
    assert all(meaning for _, _, _, meaning, _ in rows)


def test_field_comments_are_read_from_the_dataclass():
    notes = reference.field_notes(MemoryConfig)
    assert "8 in cc3.x 8-byte mode" in notes["shared_bank_bytes"][1]
    # a comment block above several fields speaks for each of them
    assert "Luo et al." in notes["dram_latency"][1] and "Luo et al." in notes["l2_hit_latency"][1]
    # a '# --- section' line names the source of the fields under it
    assert "Compute Capabilities" in reference.field_notes(Preset)["num_sms"][0]


def test_a_preset_files_comment_is_the_values_source():
    assert reference.value_notes(PRESETS["cc1x"])["banks"] == 'Guide 1.x: "16 banks"'


def test_byte_sizes_print_in_kib_and_counts_as_numbers():
    assert reference.fmt(48 * 1024, "max_shared_per_block") == "48 KiB"
    assert reference.fmt(50 * 1024 * 1024, "l2_bytes") == "50 MiB"
    assert reference.fmt(65536, "registers_per_sm") == "65536"


def test_cli_prints_one_preset_and_the_markdown(cli):
    r = cli("info", "arch", "sm_90")
    assert r.returncode == 0 and "shared_bank_bytes" in r.stdout
    r = cli("info", "arch", "--markdown")
    assert r.returncode == 0 and r.stdout == reference.markdown()
    r = cli("info", "arch", "sm_99")
    assert r.returncode == 2 and "unknown arch" in r.stderr
