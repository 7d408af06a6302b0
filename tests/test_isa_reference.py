"""isa/README.md, the language reference: its generated tables are current,
they list every built-in and every named unsupported construct, and its
example compiles."""
from __future__ import annotations

import re

import isa
from isa import builtins as B
from isa import reference, unsupported

TEXT = reference.README.read_text()


def test_generated_tables_are_current():
    assert reference.render(TEXT) == TEXT, "regenerate them: python -m isa.reference"


def test_every_generated_block_is_present():
    assert set(re.findall(r"<!-- generated: (\w+) -->", TEXT)) == set(reference.SECTIONS)


def test_every_builtin_function_is_listed():
    listed = reference.builtins_section()
    for table in (B.MATH, B.CLASSIFY, B.BITOPS, B.REINTERPRET, B.CONVERSIONS, B.ROUNDED_ARITH,
                  B.SHUFFLES, B.VOTES, B.FENCES):
        for name in table:
            assert f"`{name}`" in listed, name


def test_every_unsupported_construct_is_listed_with_its_message():
    listed = reference.unsupported_section()
    for table in (unsupported.KEYWORDS, unsupported.CALLS, unsupported.NAMES):
        for name, msg in table.items():
            assert f"| `{name}` |" in listed and msg in listed, name


def test_check_mode_reports_a_stale_file(tmp_path, monkeypatch):
    stale = tmp_path / "README.md"
    stale.write_text("<!-- generated: headers -->\nold\n<!-- end generated -->\n")
    monkeypatch.setattr(reference, "README", stale)
    assert reference.main(["--check"]) == 1
    assert reference.main([]) == 0 and reference.main(["--check"]) == 0
    assert "stdint.h" in stale.read_text()


def test_the_example_source_file_compiles():
    example = re.search(r"```c\n(.*?)```", TEXT, re.S).group(1)
    module = isa.compile_source(example, filename="example.cu")
    assert [f.name for f in module.kernels] == ["k"]
