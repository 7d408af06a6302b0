"""RawModule's compile options (gpuemu/compile_options.py): honoured ones
act, ones that change nothing gpuemu models are accepted, and ones that would
change results on a GPU are refused naming the option, never ignored."""
import numpy as np
import pytest

import gpuemu
from gpuemu.compile_options import ALIASES, OPTIONS, check_options

K = '__global__ void k(float* p) { p[0] = 1.0f; }'


def refused(*options, arch="sm_90") -> str:
    with pytest.raises(gpuemu.CompileError) as e:
        gpuemu.RawModule(code=K, arch=arch, options=options)
    return e.value.message


def test_ftz_true_is_refused_naming_the_option():
    assert refused("-ftz=true").startswith("-ftz=true: gpuemu keeps subnormal floats")


def test_ftz_true_in_its_long_spelling_is_refused():
    assert refused("--ftz=true").startswith("--ftz=true:")


def test_ftz_false_is_accepted():
    assert gpuemu.RawModule(code=K, options=("-ftz=false",)).options == ("-ftz=false",)


def test_use_fast_math_is_refused_in_both_spellings():
    assert "fast math is not modelled" in refused("--use_fast_math")
    assert "fast math is not modelled" in refused("-use_fast_math")


def test_approximate_division_and_square_root_are_refused():
    assert refused("-prec-div=false").startswith("-prec-div=false: ")
    assert refused("-prec-sqrt=false").startswith("-prec-sqrt=false: ")


def test_fmad_true_is_refused_as_gpuemu_never_contracts():
    assert "never contracts a*b+c" in refused("-fmad=true")


def test_fmad_false_is_accepted_as_what_gpuemu_does():
    gpuemu.RawModule(code=K, options=("--fmad=false", "-prec-div=true", "-prec-sqrt=true"))


def test_device_debug_is_refused():
    assert refused("-G").startswith("-G: ")
    assert refused("--device-debug").startswith("--device-debug: ")


def test_std_and_optimisation_level_are_accepted():
    mod = gpuemu.RawModule(code=K, options=("-std=c++17", "-O3"))
    assert mod.options == ("-std=c++17", "-O3")


def test_std_with_its_value_as_the_next_option_is_accepted():
    gpuemu.RawModule(code=K, options=("--std", "c++17", "-lineinfo"))


def test_std_naming_no_cxx_standard_is_refused_listing_the_standards():
    assert "c++17" in refused("-std=c++99")


def test_unknown_option_is_refused_with_a_close_match():
    assert refused("-fzt=true") == "unknown option -fzt=true (did you mean -ftz?)"


def test_arch_naming_the_modules_arch_is_accepted():
    gpuemu.RawModule(code=K, arch="sm_80", options=("-arch=sm_80", "--gpu-code=sm_80,compute_80"))


def test_arch_naming_another_arch_is_refused_naming_both():
    msg = refused("-arch=sm_80")
    assert "sm_80" in msg and "arch='sm_90'" in msg


def test_arch_naming_no_architecture_is_refused():
    assert "'native' names no architecture" in refused("-arch", "native")


def test_ptxas_option_other_than_the_known_is_refused():
    assert "ptxas's default -O3" in refused("-Xptxas", "-O1")


def test_ptxas_options_after_an_equals_sign_reach_the_module():
    mod = gpuemu.RawModule(code=K, options=("--ptxas-options=-dlcm=cg,-v",))
    assert mod.l1_default is False and mod.options == ("-Xptxas", "-dlcm=cg", "-Xptxas", "-v")


def test_define_macro_long_spelling_is_honoured():
    mod = gpuemu.RawModule(code='__global__ void k(int* p) { p[0] = V; }',
                           options=("--define-macro", "V=5"))
    out = np.zeros(1, np.int32)
    mod.get_function("k")(1, 1, (out,))
    assert out[0] == 5


def test_maxrregcount_as_two_options_is_honoured():
    assert gpuemu.RawModule(code=K, options=("-maxrregcount", "32")).options == ("-maxrregcount=32",)


def test_every_alias_names_an_option_of_the_table():
    assert set(ALIASES.values()) <= set(OPTIONS)


def test_flag_given_a_value_is_refused():
    with pytest.raises(gpuemu.CompileError, match="takes no value"):
        check_options(["-lineinfo=1"], (9, 0), "sm_90")


@pytest.mark.parametrize("options", [("--diag-suppress=177",), ("-diag-suppress", "177,550"),
                                     ("--diag-warn=20012",), ("-dopt=on",)])
def test_warning_control_and_default_device_optimisation_are_accepted(options):
    assert gpuemu.RawModule(code=K, options=options).options == options


def test_unoptimised_device_code_is_refused():
    assert refused("-dopt=off").startswith("-dopt=off: gpuemu models nvcc's default optimised")


@pytest.mark.parametrize("option", ["-default-device", "--device-as-default-execution-space"])
def test_device_as_the_default_execution_space_is_refused_saying_what_gpuemu_does(option):
    assert refused(option) == (f"{option}: gpuemu compiles a function without an execution space as a "
                               "__host__ one (nvcc's default); mark the functions kernels call __device__")
