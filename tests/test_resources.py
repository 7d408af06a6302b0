"""`gpuemu info FILE.cu` and gpuemu/resources.py: ptxas -v-like lines."""
import subprocess
import sys

import gpuemu
from conftest import PROGRAMS
from gpuemu.resources import kernel_resources, ptxas_lines

VECADD = (PROGRAMS / "vecadd.cu").read_text()


def test_cmem0_is_the_reserved_bytes_plus_the_parameters():
    # nvcc -arch=sm_80 -Xptxas -v programs/vecadd.cu: "380 bytes cmem[0]" (3 pointers + int)
    r = kernel_resources(gpuemu.RawModule(code=VECADD, arch="sm_80").get_function("vecadd"))
    assert r.param_bytes == 28 and r.cmem0_bytes == 380


def test_a_launch_bounds_kernel_reports_the_capped_count_and_spills():
    mod = gpuemu.RawModule(path=str(PROGRAMS / "register_spill.cu"))
    wide, capped = (kernel_resources(mod.get_function(n)) for n in ("wide", "wide_capped"))
    # 2 blocks of 1024 threads in 65536 registers: 32 per thread
    assert capped.registers == 32 and capped.cap_reason == "__launch_bounds__"
    assert capped.spill_store_bytes > 0 and capped.spill_load_bytes > 0
    assert capped.stack_frame_bytes >= 4 * (capped.register_demand - 32) // 2
    assert wide.registers == wide.register_demand > 32 and wide.spill_store_bytes == 0


def test_shared_bytes_are_the_static_shared_memory():
    mod = gpuemu.RawModule(path=str(PROGRAMS / "transpose_tiled33.cu"))
    name = mod.module.kernels[0].name
    assert kernel_resources(mod.get_function(name)).shared_bytes == 32 * 33 * 4


def test_ptxas_lines_have_ptxas_words():
    r = kernel_resources(gpuemu.RawModule(code=VECADD, arch="sm_80").get_function("vecadd"))
    text = ptxas_lines(r)
    assert "Compiling entry function 'vecadd' for 'sm_80'" in text
    assert f"Used {r.registers} registers, 0 bytes smem, 380 bytes cmem[0]" in text
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in text


def test_info_file_prints_a_resource_line_per_kernel():
    r = subprocess.run([sys.executable, "-m", "gpuemu", "info", str(PROGRAMS / "register_spill.cu")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("ptxas info    : Used") == 2
    assert "Used 32 registers" in r.stdout and "spill to local memory" in r.stdout


def test_info_file_honours_maxrregcount():
    r = subprocess.run([sys.executable, "-m", "gpuemu", "info", str(PROGRAMS / "vecadd.cu"),
                        "--maxrregcount", "8"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "Used 8 registers" in r.stdout


def test_info_of_a_missing_file_is_a_usage_error():
    r = subprocess.run([sys.executable, "-m", "gpuemu", "info", "nope.cu"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and "no such file" in r.stderr and "Traceback" not in r.stderr
