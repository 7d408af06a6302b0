"""gpuemu.manifest: the init rules of ../shared/conformance/README.md, loading,
expectations and comparison (no emulator needed: these are numpy-only)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import CONFORMANCE, PROGRAMS
from gpuemu import manifest as mf


def write(tmp_path, d, name="k.json"):
    p = tmp_path / name
    p.write_text(json.dumps(d))
    return p


BASE = {"kernel": "k", "grid": [2], "block": [32, 2],
        "args": [{"kind": "buffer", "name": "x", "dtype": "float32", "count": 4,
                  "init": "arange"},
                 {"kind": "buffer", "name": "y", "dtype": "float32", "count": 4,
                  "output": True},
                 {"kind": "scalar", "name": "n", "dtype": "int32", "value": 4}]}


# ---------------------------------------------------------------- init rules

def test_zeros_gives_zeros_of_the_dtype():
    a = mf.init_array("int16", 5, "zeros")
    assert a.dtype == np.int16 and a.tolist() == [0] * 5


def test_arange_counts_from_zero_cast_to_dtype():
    a = mf.init_array("float64", 4, "arange")
    assert a.dtype == np.float64 and a.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_arange_wraps_like_a_cast_for_narrow_integers():
    a = mf.init_array("uint8", 258, "arange")
    assert a[256] == 0 and a[257] == 1


def test_const_fills_every_element_with_the_value():
    assert mf.init_array("float32", 3, "const:2.5").tolist() == [2.5, 2.5, 2.5]
    assert mf.init_array("int32", 2, "const:-7").tolist() == [-7, -7]


def test_random_float_is_default_rng_random_cast():
    want = np.random.default_rng(5).random(100).astype(np.float32)
    assert np.array_equal(mf.init_array("float32", 100, "random:5"), want)


def test_random_integer_is_default_rng_integers_below_1000():
    want = np.random.default_rng(9).integers(0, 1000, 64).astype(np.int32)
    got = mf.init_array("int32", 64, "random:9")
    assert got.dtype == np.int32 and np.array_equal(got, want)


def test_random_matches_a_conformance_input_when_present():
    # reduce_shfl_down's input is random:3 float32 (its manifest); the GPU's
    # output is the per-block sum of it, so a wrong init rule would show here.
    case = CONFORMANCE / "reduce_shfl_down.json"
    if not case.exists():
        pytest.skip(f"conformance set not found at {CONFORMANCE}")
    m = mf.load(case)
    inputs = mf.build_inputs(m)
    src = [a for a in m.args if a.kind == "buffer" and not a.output][0]
    out = [a for a in m.args if a.output][0]
    gpu = np.load(m.expect_file)[out.name]
    sums = inputs[src.name].astype(np.float64).reshape(len(gpu), -1).sum(axis=1)
    assert np.allclose(gpu, sums, rtol=1e-5)


def test_file_init_loads_an_npy_relative_to_the_manifest(tmp_path):
    np.save(tmp_path / "data.npy", np.array([3, 1, 2]))
    a = mf.init_array("int32", 3, "file:data.npy", base=tmp_path)
    assert a.tolist() == [3, 1, 2]


def test_unknown_init_is_a_manifest_error_naming_it():
    with pytest.raises(mf.ManifestError, match="ones"):
        mf.init_array("float32", 3, "ones")


def test_unknown_dtype_is_a_manifest_error():
    with pytest.raises(mf.ManifestError, match="float13"):
        mf.init_array("float13", 3, "zeros")


def test_impossible_count_is_a_manifest_error_not_a_crash():
    with pytest.raises(mf.ManifestError, match="cannot build"):
        mf.init_array("float32", 10**14, "zeros")


def test_scalar_is_a_numpy_scalar_of_its_dtype():
    v = mf.scalar_value("uint16", 7)
    assert isinstance(v, np.uint16) and v == 7


def test_scalar_out_of_range_is_a_manifest_error():
    with pytest.raises(mf.ManifestError, match="does not fit int8"):
        mf.scalar_value("int8", 300)


# ---------------------------------------------------------------- loading

def test_load_pads_grid_and_block_to_three_dimensions(tmp_path):
    m = mf.load(write(tmp_path, BASE))
    assert m.grid == (2, 1, 1) and m.block == (32, 2, 1)


def test_source_defaults_to_the_cu_beside_the_manifest(tmp_path):
    m = mf.load(write(tmp_path, BASE, "vec.json"))
    assert m.source == tmp_path / "vec.cu"


def test_source_is_relative_to_the_manifest(tmp_path):
    m = mf.load(write(tmp_path, dict(BASE, source="kernels/a.cu")))
    assert m.source == tmp_path / "kernels" / "a.cu"


def test_outputs_are_the_buffers_flagged_output(tmp_path):
    assert mf.load(write(tmp_path, BASE)).outputs == ["y"]


def test_missing_field_is_named(tmp_path):
    d = dict(BASE)
    del d["block"]
    with pytest.raises(mf.ManifestError, match="missing 'block'"):
        mf.load(write(tmp_path, d))


def test_buffer_without_count_is_named(tmp_path):
    d = dict(BASE, args=[{"kind": "buffer", "name": "q", "dtype": "int32"}])
    with pytest.raises(mf.ManifestError, match=r"args\[0\] \(q\).*count"):
        mf.load(write(tmp_path, d))


def test_invalid_json_reports_line_and_column(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text('{"kernel": "k",\n "grid": [1,}')
    with pytest.raises(mf.ManifestError, match=r"bad.json:2:\d+: invalid JSON"):
        mf.load(p)


def test_measured_counters_come_from_the_h100_block(tmp_path):
    d = dict(BASE, h100={"shared_load_requests": 128, "sass_memory_ops_static": {"LDS": 4}})
    assert mf.load(write(tmp_path, d)).measured == {"shared_load_requests": 128}


def test_constants_are_built_under_their_symbol(tmp_path):
    d = dict(BASE, constants=[{"symbol": "coeff", "dtype": "float32", "count": 3,
                               "init": "arange"}])
    inputs = mf.build_inputs(mf.load(write(tmp_path, d)))
    assert inputs["coeff"].tolist() == [0.0, 1.0, 2.0]


# ---------------------------------------------------------------- expectations

def test_expect_expression_sees_inputs_by_name(tmp_path):
    m = mf.load(write(tmp_path, dict(BASE, expect="y = x * 2 + n")))
    want = mf.expected_outputs(m, mf.build_inputs(m))
    assert want["y"].tolist() == [4.0, 6.0, 8.0, 10.0]


def test_expect_may_be_several_lines(tmp_path):
    m = mf.load(write(tmp_path, dict(BASE, expect=["t = x + 1", "y = t * t"])))
    assert mf.expected_outputs(m, mf.build_inputs(m))["y"].tolist() == [1.0, 4.0, 9.0, 16.0]


def test_reference_is_read_like_expect(tmp_path):
    m = mf.load(write(tmp_path, dict(BASE, reference="y = x[::-1]")))
    assert mf.expected_outputs(m, mf.build_inputs(m))["y"].tolist() == [3.0, 2.0, 1.0, 0.0]


def test_expect_file_is_an_npz_by_output_name(tmp_path):
    np.savez(tmp_path / "want.npz", y=np.array([9, 8, 7, 6], dtype=np.float32))
    m = mf.load(write(tmp_path, dict(BASE, outputs_file="want.npz")))
    assert mf.expected_outputs(m, mf.build_inputs(m))["y"].tolist() == [9, 8, 7, 6]


def test_broken_expect_is_a_manifest_error(tmp_path):
    m = mf.load(write(tmp_path, dict(BASE, expect="y = x +")))
    with pytest.raises(mf.ManifestError, match="expect: SyntaxError"):
        mf.expected_outputs(m, mf.build_inputs(m))


def test_expect_does_not_modify_the_inputs(tmp_path):
    m = mf.load(write(tmp_path, dict(BASE, expect="x += 100\ny = x")))
    inputs = mf.build_inputs(m)
    mf.expected_outputs(m, inputs)
    assert inputs["x"].tolist() == [0.0, 1.0, 2.0, 3.0]


def test_expect_updating_an_output_in_place_gives_it(tmp_path):
    m = mf.load(write(tmp_path, dict(BASE, expect="y[:] = x + 1")))
    assert mf.expected_outputs(m, mf.build_inputs(m))["y"].tolist() == [1.0, 2.0, 3.0, 4.0]


def test_expect_augmented_assignment_gives_the_output(tmp_path):
    m = mf.load(write(tmp_path, dict(BASE, expect="y += x")))
    assert mf.expected_outputs(m, mf.build_inputs(m))["y"].tolist() == [0.0, 1.0, 2.0, 3.0]


def test_expect_in_place_to_the_initial_value_still_gives_the_output(tmp_path):
    m = mf.load(write(tmp_path, dict(BASE, expect="y[:] = 0")))
    assert mf.expected_outputs(m, mf.build_inputs(m))["y"].tolist() == [0.0] * 4


def test_expect_changing_an_output_through_a_call_gives_it(tmp_path):
    m = mf.load(write(tmp_path, dict(BASE, expect="np.copyto(y, x * 2)")))
    assert mf.expected_outputs(m, mf.build_inputs(m))["y"].tolist() == [0.0, 2.0, 4.0, 6.0]


def test_in_place_expectation_that_disagrees_is_a_mismatch(tmp_path):
    m = mf.load(write(tmp_path, dict(BASE, expect="y[:] = x + 1")))
    inputs = mf.build_inputs(m)
    got = mf.RunResult(m, inputs, {"y": np.zeros(4, np.float32)}, None)
    assert [x.name for x in mf.check(got)] == ["y"]


def test_expect_giving_no_output_is_a_manifest_error(tmp_path):
    m = mf.load(write(tmp_path, dict(BASE, expect="yy = x + 1")))
    with pytest.raises(mf.ManifestError, match="expect: gives no output.*y"):
        mf.expected_outputs(m, mf.build_inputs(m))


def test_expect_file_without_an_output_is_a_manifest_error(tmp_path):
    np.savez(tmp_path / "want.npz", z=np.zeros(4, dtype=np.float32))
    m = mf.load(write(tmp_path, dict(BASE, expect_file="want.npz")))
    with pytest.raises(mf.ManifestError, match="expect_file: gives no output"):
        mf.expected_outputs(m, mf.build_inputs(m))


def test_integers_must_match_exactly():
    assert mf.compare("h", np.array([1, 2, 3]), np.array([1, 2, 3])) is None
    mm = mf.compare("h", np.array([1, 2, 3]), np.array([1, 2, 4]))
    assert mm is not None and "first at [2]" in mm.message


def test_floats_match_within_rtol():
    a = np.array([1.0, 1000.0], dtype=np.float32)
    assert mf.compare("f", a * np.float32(1 + 5e-7), a, rtol=1e-6) is None
    assert mf.compare("f", a * np.float32(1 + 5e-6), a, rtol=1e-6) is not None


def test_size_mismatch_is_reported():
    mm = mf.compare("f", np.zeros(3), np.zeros(4))
    assert mm is not None and "3 values, expected 4" in mm.message


def test_check_lists_only_the_outputs_that_differ(tmp_path):
    m = mf.load(write(tmp_path, dict(BASE, expect="y = x + 1")))
    inputs = mf.build_inputs(m)
    good = mf.RunResult(m, inputs, {"y": np.array([1, 2, 3, 4], np.float32)}, None)
    bad = mf.RunResult(m, inputs, {"y": np.array([1, 2, 3, 5], np.float32)}, None)
    assert mf.check(good) == [] and [x.name for x in mf.check(bad)] == ["y"]


def test_checksum_changes_with_the_content():
    a = np.arange(10, dtype=np.int32)
    b = a.copy()
    b[3] = 0
    assert mf.checksum(a) == mf.checksum(a.copy()) != mf.checksum(b)


# ---------------------------------------------------------------- the shipped manifests

@pytest.mark.parametrize("path", mf.discover(PROGRAMS), ids=lambda p: p.stem)
def test_every_program_manifest_loads_with_source_and_expectation(path):
    m = mf.load(path)
    if m.expect_finding:          # a bug demo: it expects a finding, not outputs
        assert m.source.is_file() and not m.has_expectation
        return
    assert m.source.is_file() and m.has_expectation and m.outputs
    want = mf.expected_outputs(m, mf.build_inputs(m))
    assert set(want) == set(m.outputs)


def test_launch_options_and_expected_finding_are_read():
    m = mf.from_dict({"kernel": "k", "grid": [1], "block": [32], "launch": {"budget": 7},
                      "expect_finding": "timeout"})
    assert m.launch_options == {"budget": 7} and m.expect_finding == "timeout"


def test_launch_must_be_an_object():
    with pytest.raises(mf.ManifestError, match="'launch' must be an object"):
        mf.from_dict({"kernel": "k", "grid": [1], "block": [32], "launch": [1]})


# ---------------------------------------------------------------- field types

@pytest.mark.parametrize("field, value, wanted", [
    ("source", 5, "a file name"), ("expect_file", 5, "a file name"),
    ("constants", 5, "a list of constant objects"), ("h100", [1], "an object of counter"),
    ("rtol", "abc", "a number"), ("rtol", [1], "a number"), ("atol", True, "a number"),
    ("kernel", None, "a string"), ("args", "x", "a list of argument objects"),
])
def test_a_field_of_the_wrong_type_is_named_with_what_it_expects(field, value, wanted):
    with pytest.raises(mf.ManifestError, match=f"'{field}' must be {wanted}"):
        mf.from_dict(dict(BASE, **{field: value}))


@pytest.mark.parametrize("arg, field, value, wanted", [
    (0, "name", [1], "a string"), (0, "name", {}, "a string"),
    (2, "value", [1], "a number"), (2, "value", {}, "a number"),
    (0, "count", 5.5, "an integer"), (0, "count", True, "an integer"),
    (1, "output", "yes", "true or false"),
])
def test_an_argument_field_of_the_wrong_type_is_named(arg, field, value, wanted):
    d = json.loads(json.dumps(BASE))
    d["args"][arg][field] = value
    with pytest.raises(mf.ManifestError, match=rf"args\[{arg}\]: '{field}' must be {wanted}"):
        mf.from_dict(d)


@pytest.mark.parametrize("option, instead", [
    ("shared_mem", "dynamic_shared_bytes"), ("grid", "grid"), ("stream", "gpuemu.Stream"),
    ("progress", "callable"),
])
def test_launch_may_not_set_what_the_manifest_or_python_gives(option, instead):
    with pytest.raises(mf.ManifestError, match=f"may not set '{option}'.*{instead}"):
        mf.from_dict(dict(BASE, launch={option: 3}))


def test_a_manifest_not_in_utf8_is_a_manifest_error(tmp_path):
    p = tmp_path / "k.json"
    p.write_bytes(b"\xff\xfe bad")
    with pytest.raises(mf.ManifestError, match="not UTF-8"):
        mf.load(p)


def test_json_nested_too_deeply_is_a_manifest_error(tmp_path):
    p = tmp_path / "k.json"
    p.write_text("[" * 100000 + "]" * 100000)
    with pytest.raises(mf.ManifestError, match="nested too deeply"):
        mf.load(p)


def test_a_bool_scalar_may_be_given_as_json_true(tmp_path):
    d = json.loads(json.dumps(BASE))
    d["args"][2] = {"kind": "scalar", "name": "flag", "dtype": "bool", "value": True}
    m = mf.load(write(tmp_path, d))
    assert [a.value for a in m.args if a.name == "flag"] == [True]


# ---------------------------------------------------------------- unknown fields

def _refused(tmp_path, d):
    """The message of the ManifestError loading `d` from k.json gives."""
    with pytest.raises(mf.ManifestError) as e:
        mf.load(write(tmp_path, d))
    return str(e.value)


def _with_arg(arg, **fields):
    d = json.loads(json.dumps(BASE))
    d["args"][arg].update(fields)
    return d


def test_a_misspelt_top_level_field_is_refused_naming_the_file_and_the_closest_field(tmp_path):
    msg = _refused(tmp_path, dict(BASE, gird=[4]))
    assert str(tmp_path / "k.json") in msg and "gird: unknown field" in msg
    assert "did you mean 'grid'?" in msg


def test_blocks_for_block_is_refused_as_a_misspelling(tmp_path):
    assert "did you mean 'block'?" in _refused(tmp_path, dict(BASE, blocks=[64]))


def test_a_misspelt_argument_field_is_refused_with_its_path(tmp_path):
    msg = _refused(tmp_path, _with_arg(1, dtyp="int32"))
    assert "args[1].dtyp: unknown field" in msg and "did you mean 'dtype'?" in msg


def test_a_buffer_field_on_a_scalar_argument_is_refused(tmp_path):
    msg = _refused(tmp_path, _with_arg(2, count=8))
    assert "args[2].count" in msg and "a scalar argument" in msg and "a buffer" in msg


def test_a_value_on_a_buffer_argument_is_refused(tmp_path):
    msg = _refused(tmp_path, _with_arg(0, value=3))
    assert "args[0].value" in msg and "a buffer argument" in msg


def test_a_symbol_on_a_kernel_argument_is_refused(tmp_path):
    assert "args[0].symbol" in _refused(tmp_path, _with_arg(0, symbol="coeff"))


def test_a_constant_cannot_be_marked_output(tmp_path):
    d = dict(BASE, constants=[{"symbol": "c", "dtype": "float32", "count": 4, "output": True}])
    assert "constants[0].output" in _refused(tmp_path, d)


def test_a_top_level_field_inside_an_argument_is_refused_saying_where_it_belongs(tmp_path):
    msg = _refused(tmp_path, _with_arg(0, grid=[2]))
    assert "args[0].grid" in msg and "the manifest's top level" in msg


def test_an_argument_field_at_the_top_level_is_refused_saying_where_it_belongs(tmp_path):
    msg = _refused(tmp_path, dict(BASE, dtype="float32"))
    assert "dtype: unknown field" in msg and "a buffer argument" in msg


def test_an_unknown_launch_option_is_refused_when_the_manifest_loads(tmp_path):
    msg = _refused(tmp_path, dict(BASE, launch={"budjet": 5}))
    assert "launch.budjet: unknown field" in msg and "did you mean 'budget'?" in msg


def test_every_field_of_the_schema_is_accepted(tmp_path):
    d = dict(BASE, dynamic_shared_bytes=0, source="k.cu", expect="y = x", expect_file=None,
             rtol=1e-5, atol=0.0, purpose="p", note="n", h100={"cycles": 1}, launch={"budget": 9},
             expect_finding=None, check_finding=None,
             constants=[{"symbol": "c", "name": "c", "kind": "buffer", "dtype": "float32",
                         "count": 4, "init": "arange"},
                        {"symbol": "s", "name": "s", "kind": "scalar", "dtype": "int32",
                         "value": 2}])
    assert set(d) == set(mf.MANIFEST_FIELDS) - {"reference", "outputs_file"}
    assert mf.load(write(tmp_path, d)).kernel == "k"


@pytest.mark.parametrize("path", mf.discover(CONFORMANCE), ids=lambda p: p.stem)
def test_every_conformance_manifest_loads(path):
    m = mf.load(path)
    assert m.source.is_file() and m.has_expectation


# ---------------------------------------------------------------- fields that would have no effect

def test_an_arch_field_is_refused_because_the_run_chooses_the_gpu(tmp_path):
    msg = _refused(tmp_path, dict(BASE, arch="sm_70"))
    assert "arch" in msg and "--arch" in msg and "did you mean" not in msg


def test_an_arch_launch_option_is_refused_because_the_run_chooses_the_gpu(tmp_path):
    msg = _refused(tmp_path, dict(BASE, launch={"arch": "sm_70"}))
    assert "launch.arch" in msg and "--arch" in msg


def test_expect_and_its_conformance_name_reference_together_are_refused(tmp_path):
    msg = _refused(tmp_path, dict(BASE, expect="y = x", reference="y = x + 1"))
    assert "'expect'" in msg and "'reference'" in msg


def test_expect_file_and_its_conformance_name_outputs_file_together_are_refused(tmp_path):
    msg = _refused(tmp_path, dict(BASE, expect_file="a.npz", outputs_file="b.npz"))
    assert "'expect_file'" in msg and "'outputs_file'" in msg


def test_an_expected_finding_with_an_output_expectation_is_refused(tmp_path):
    # a launch expected to stop has no outputs for `expect` to check
    msg = _refused(tmp_path, dict(BASE, expect="y = x", expect_finding="deadlock"))
    assert "'expect_finding'" in msg and "'expect'" in msg


def test_a_constant_named_like_an_argument_is_refused(tmp_path):
    # both would be bound to one name in `expect`, and the symbol filled with the argument
    d = dict(BASE, constants=[{"symbol": "x", "dtype": "float32", "count": 4, "init": "zeros"}])
    assert "repeat: x" in _refused(tmp_path, d)


def test_two_constants_filling_one_symbol_are_refused(tmp_path):
    d = dict(BASE, constants=[{"symbol": "c", "dtype": "int32", "count": 2},
                              {"name": "c", "dtype": "int32", "count": 2}])
    assert "names repeat: c" in _refused(tmp_path, d)


def test_a_constant_whose_name_and_symbol_differ_is_refused(tmp_path):
    # the symbol names the constant: a different 'name' would be unread
    d = dict(BASE, constants=[{"symbol": "c", "name": "c0", "dtype": "int32", "count": 2}])
    assert "'name' 'c0' and 'symbol' 'c' differ" in _refused(tmp_path, d)



@pytest.mark.parametrize("field, value", [("rtol", -1e-6), ("atol", -1), ("rtol", float("nan")),
                                          ("atol", float("inf"))])
def test_a_tolerance_that_is_negative_or_not_finite_is_refused(tmp_path, field, value):
    assert f"'{field}' must be a finite number of at least 0" in \
        _refused(tmp_path, dict(BASE, **{field: value}))


def test_a_note_on_a_case_is_accepted_as_benchmarks_fidelity_reads_it(tmp_path):
    # benchmarks/fidelity.py shows a case's "note" (top level or in "h100")
    assert mf.load(write(tmp_path, dict(BASE, note="nvcc merged four reads"))).kernel == "k"


@pytest.mark.parametrize("key", ["expect_finding", "check_finding"])
def test_a_misspelt_finding_kind_is_refused_with_the_closest_kind(tmp_path, key):
    d = {k: v for k, v in BASE.items() if k != "expect"}
    msg = _refused(tmp_path, dict(d, **{key: "deadlok"}))
    assert f"{key}: unknown finding kind 'deadlok'; did you mean 'deadlock'?" in msg


def test_every_finding_kind_is_a_valid_expect_finding(tmp_path):
    from gpuemu.errors import FINDING_KINDS
    d = {k: v for k, v in BASE.items() if k != "expect"}
    for kind in FINDING_KINDS:
        assert mf.load(write(tmp_path, dict(d, expect_finding=kind))).expect_finding == kind
