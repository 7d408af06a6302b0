"""RawModule / RawKernel / DeviceArray as a CuPy user writes them."""
from __future__ import annotations

import numpy as np
import pytest

import gpuemu


def test_exports_and_version():
    for name in ("RawModule", "RawKernel", "asarray", "empty", "zeros", "empty_like", "zeros_like",
                 "DeviceArray", "Launch", "CompileError", "LaunchError", "KernelError", "Finding"):
        assert hasattr(gpuemu, name)
    assert gpuemu.__version__ == "0.1.0"


def test_device_arrays_round_trip_and_slice_assignment():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    d = gpuemu.asarray(a)
    assert d.shape == (3, 4) and d.dtype == np.float32 and d.size == 12 and d.nbytes == 48
    np.testing.assert_array_equal(d.get(), a)
    d[1, :] = -1
    d.set(d.get() * 2)
    want = a * 2
    want[1, :] = -2
    np.testing.assert_array_equal(d.get(), want)
    z = gpuemu.zeros_like(d)
    assert z.shape == d.shape and (z.get() == 0).all()
    assert gpuemu.empty((5,), np.int16).dtype == np.int16
    assert gpuemu.empty_like(a).shape == (3, 4)


def test_global_allocations_are_256_byte_aligned():
    arrs = [gpuemu.empty(n, np.uint8) for n in (1, 100, 300)]
    assert all(x.device_address % 256 == 0 for x in arrs)


def test_get_function_takes_the_plain_name_and_launch_reports():
    src = r"""
    extern "C" __global__ void scale(float* y, const float* x, float a, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i];
    }"""
    k = gpuemu.RawModule(code=src).get_function("scale")
    x = gpuemu.asarray(np.arange(100, dtype=np.float32))
    y = gpuemu.empty_like(x)
    la = k((2,), (64,), (y, x, 2.5, 100))
    np.testing.assert_array_equal(y.get(), np.arange(100, dtype=np.float32) * np.float32(2.5))
    assert la.kernel == "scale" and la.grid == (2, 1, 1) and la.block == (64, 1, 1)
    assert la.findings == [] and la.seconds > 0
    assert la.stats["global_load_requests"] == 4
    assert la.stats["thread_instructions"] > la.stats["warp_instructions"] > 0
    assert 0 < la.stats["active_lanes_per_instruction"] <= 32
    assert la.stats_by_line[4]["global_store_requests"] == 4


@pytest.mark.parametrize("stats", [False, True])
def test_a_launch_holds_exactly_the_fields_the_launch_dataclass_declares(stats):
    """RawKernel._launch_of builds every Launch (full path and kept path) without
    Launch.__init__: its fields are still exactly the dataclass's, in order."""
    import dataclasses
    k = gpuemu.RawModule(code=r"""
    extern "C" __global__ void inc(int *x) { x[threadIdx.x] += 1; }""").get_function("inc")
    x = gpuemu.asarray(np.zeros(64, np.int32))
    got = [k((1,), (64,), (x,), stats=stats) for _ in range(3)]    # the full path, then kept
    assert np.array_equal(x.get(), np.full(64, 3, np.int32))
    for la in got:
        assert list(vars(la)) == [f.name for f in dataclasses.fields(gpuemu.Launch)]
        assert gpuemu.Launch(**vars(la)) == la
        assert (la.kernel, la.grid, la.block, la.shared_mem) == ("inc", (1, 1, 1), (64, 1, 1), 0)
    assert [la.stats["warp_instructions"] > 0 for la in got] == [stats] * 3


def test_a_launchs_counters_made_when_first_read_are_those_of_a_launch_read_at_once():
    """Launch.stats, stats_by_line and worst_requests are made from the run's
    counters when first read (stats.Deferred): after other launches ran,
    through a pickle or a copy, they are what reading them at once gives."""
    import copy
    import pickle
    k = gpuemu.RawModule(code=r"""
    extern "C" __global__ void st(float *x, int s) { x[threadIdx.x * s] = threadIdx.x; }""").get_function("st")
    x = gpuemu.asarray(np.zeros(64 * 8, np.float32))
    read_now = k((1,), (64,), (x, np.int32(1)))
    now = (dict(read_now.stats), read_now.stats_by_line, dict(read_now.worst_requests))
    later = [k((1,), (64,), (x, np.int32(s))) for s in (1, 8)]   # the kept run, launched again
    assert type(vars(later[0])["stats"]) is gpuemu.stats.Deferred
    unread = pickle.loads(pickle.dumps(later[0]))
    for la in (later[0], unread, copy.copy(later[0])):
        assert (la.stats, la.stats_by_line, la.worst_requests) == now
        assert type(la.stats) is dict and list(la.stats) == list(now[0])
    assert later[1].stats["global_store_sectors"] == 64 > now[0]["global_store_sectors"] == 8   # a sector a lane


def _unread_launches(count: int) -> tuple:
    """A kernel's launch read at once, and `count` launches of it whose counters nobody read yet."""
    k = gpuemu.RawModule(code=r"""
    extern "C" __global__ void va(const float *a, float *c) { c[threadIdx.x] = a[threadIdx.x] + 1.0f; }""").get_function("va")
    a, c = gpuemu.asarray(np.ones(256, np.float32)), gpuemu.asarray(np.zeros(256, np.float32))
    ref = k((1,), (256,), (a, c))
    return ref, [k((1,), (256,), (a, c)) for _ in range(count)]


def test_two_threads_reading_a_launchs_counters_at_once_both_get_them_whole():
    """Making the counters replays the launch's sums once, under one lock:
    a thread reading stats while another reads stats_by_line sees neither
    half-made dict (threads switched as often as Python allows)."""
    import sys
    import threading
    ref, launches = _unread_launches(60)
    want = (dict(ref.stats), ref.stats_by_line, dict(ref.worst_requests))
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for la in launches:
            got, bar = {}, threading.Barrier(3)

            def read(field):
                bar.wait()
                got[field] = getattr(la, field)
            ts = [threading.Thread(target=read, args=(f,)) for f in ("stats", "stats_by_line", "worst_requests")]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            assert (got["stats"], got["stats_by_line"], got["worst_requests"]) == want
            assert (la.stats, la.stats_by_line, la.worst_requests) == want
    finally:
        sys.setswitchinterval(interval)


def test_a_launch_pickles_and_copies_with_plain_counter_dicts():
    """Every pickle protocol (0 and 1 too) and copy.copy see the counters
    made: plain dicts, shared by a shallow copy, never the placeholder."""
    import copy
    import pickle
    ref, launches = _unread_launches(7)
    for proto, la in zip(range(pickle.HIGHEST_PROTOCOL + 1), launches):
        back = pickle.loads(pickle.dumps(la, proto))
        assert type(vars(back)["stats"]) is dict and back.stats == ref.stats
        assert back.stats_by_line == ref.stats_by_line
    la = launches[-1]
    assert copy.copy(la).stats is la.stats


def test_a_launchs_counters_can_be_deleted_like_any_attribute():
    _, (la,) = _unread_launches(1)
    del la.stats
    with pytest.raises(AttributeError):
        la.stats


def test_unknown_kernel_name_lists_the_kernels():
    mod = gpuemu.RawModule(code='extern "C" __global__ void a(int* p) { p[0] = 1; }')
    with pytest.raises(KeyError, match="kernels: a"):
        mod.get_function("b")


def test_get_global_reads_and_writes_constant_and_device_symbols():
    src = r"""
    __constant__ float coeffs[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    __device__ int counter;
    extern "C" __global__ void poly(float* y, const float* x) {
        int i = threadIdx.x;
        float v = x[i];
        y[i] = coeffs[0] + v * (coeffs[1] + v * (coeffs[2] + v * coeffs[3]));
        atomicAdd(&counter, 1);
    }"""
    mod = gpuemu.RawModule(code=src)
    c = mod.get_global("coeffs")
    np.testing.assert_array_equal(c.get(), [1, 2, 3, 4])
    c[:] = np.array([0.5, 0, 0, 1], np.float32)
    x = np.linspace(-1, 1, 32).astype(np.float32)
    y = np.zeros(32, np.float32)
    la = mod.get_function("poly")(1, 32, (y, x))
    v = x
    want = np.float32(0.5) + v * (np.float32(0) + v * (np.float32(0) + v * np.float32(1)))
    np.testing.assert_array_equal(y, want)
    assert mod.get_global("counter").get() == 32
    assert la.stats["constant_requests"] == 4


def test_constant_bank_over_64_kb_is_a_compile_error():
    src = r"""
    __constant__ float big[20000];
    extern "C" __global__ void k(float* y) { y[0] = big[0]; }"""
    with pytest.raises(gpuemu.CompileError, match="64|65536"):
        gpuemu.RawModule(code=src)


def test_device_symbol_beyond_memory_is_a_compile_error_at_it():
    # 4 TiB compiles on nvcc; the module load then fails for want of memory
    src = '__device__ int g[1LL << 40];\nextern "C" __global__ void k(int *y) { y[0] = g[0]; }'
    with pytest.raises(gpuemu.CompileError) as e:
        gpuemu.RawModule(code=src)
    assert e.value.message.startswith("__device__ 'g' needs 4,398,046,511,104 bytes of global memory")
    assert (e.value.line, e.value.col) == (1, 16)


def _struct_param(ints: int, pointer_first: bool = False) -> str:
    params = "int *o, S s" if pointer_first else "S s, int *o"
    return (f"struct S {{ int a[{ints}]; }};\n"
            f'extern "C" __global__ void k({params})\n{{\n    o[0] = s.a[{ints - 1}];\n}}\n')


def _nvcc_says(src: str, tmp_path) -> str:
    """nvcc's messages compiling src for sm_90 ('' where it accepts it; None without nvcc)."""
    import shutil
    import subprocess
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return None
    (tmp_path / "k.cu").write_text(src)
    r = subprocess.run([nvcc, "-arch=sm_90", "-cubin", "-o", str(tmp_path / "k.cubin"),
                        str(tmp_path / "k.cu")], capture_output=True, text=True, timeout=300)
    return "" if r.returncode == 0 else r.stderr


def test_parameters_past_32764_bytes_are_a_compile_error_at_the_parameter(tmp_path):
    src = _struct_param(100000)
    with pytest.raises(gpuemu.CompileError, match=r"2:30: error: formal parameter space overflowed: "
                       r"kernel 'k' needs 400008 bytes of parameters, the limit is 32764 bytes on sm_90; "
                       r"parameter 's' \(struct S, 400000 bytes\)") as e:
        gpuemu.RawModule(code=src).get_function("k")
    assert "\n" + " " * 29 + "^" in str(e.value)
    said = _nvcc_says(src, tmp_path)
    assert said is None or "Formal parameter space overflowed (400008 bytes required, max 32764" in said


def test_parameters_of_32764_bytes_fit_and_32768_do_not(tmp_path):
    src = _struct_param(8189, pointer_first=True)        # the pointer's 8 bytes + 32756
    k = gpuemu.RawModule(code=src).get_function("k")
    s, o = np.arange(8189, dtype=np.int32), np.zeros(1, np.int32)
    k(1, 1, (o, s.tobytes()))
    assert o[0] == 8188
    assert _nvcc_says(src, tmp_path) in (None, "")
    with pytest.raises(gpuemu.CompileError, match="needs 32768 bytes of parameters"):
        gpuemu.RawModule(code=_struct_param(8190, pointer_first=True)).get_function("k")
    said = _nvcc_says(_struct_param(8190, pointer_first=True), tmp_path)
    assert said is None or "32768 bytes required, max 32764" in said


def test_before_volta_parameters_are_limited_to_4_kb():
    with pytest.raises(gpuemu.CompileError, match="needs 4104 bytes of parameters, the limit is 4096 "
                                                  "bytes on sm_60"):
        gpuemu.RawModule(code=_struct_param(1024), arch="sm_60").get_function("k")


DEFINED_X = '#ifndef X\n#error X is not defined\n#endif\nextern "C" __global__ void k(int *a) { a[0] = X; }\n'


def test_a_misspelt_keyword_of_raw_module_is_a_type_error_naming_the_one_meant():
    with pytest.raises(TypeError, match=r"^RawModule\(\) got an unexpected keyword argument 'option'; "
                                        r"did you mean 'options'\?$"):
        gpuemu.RawModule(code=DEFINED_X, option=("-DX=1",))


def test_an_unknown_keyword_of_raw_module_is_a_type_error():
    with pytest.raises(TypeError, match=r"^RawModule\(\) got an unexpected keyword argument 'foo'$"):
        gpuemu.RawModule(code=DEFINED_X, foo=1, options=("-DX=1",))


def test_a_misspelt_keyword_of_raw_kernel_is_a_type_error_naming_the_one_meant():
    with pytest.raises(TypeError, match=r"^RawKernel\(\) got an unexpected keyword argument 'optons'; "
                                        r"did you mean 'options'\?$"):
        gpuemu.RawKernel(DEFINED_X, "k", optons=("-DX=1",))


def test_cupys_compile_keywords_are_taken():
    a = np.zeros(1, np.int32)
    gpuemu.RawModule(code=DEFINED_X, options=("-DX=1",), backend="nvcc", jitify=False,
                     translate_cucomplex=False, enable_cooperative_groups=False).get_function("k")(1, 1, (a,))
    gpuemu.RawKernel(DEFINED_X, "k", options=("-DX=2",), backend="nvrtc")(1, 1, (a,))
    assert a[0] == 2


def test_dynamic_shared_carve_out_from_one_extern_array():
    src = r"""
    extern "C" __global__ void k(short* a, float* b, int* c) {
        extern __shared__ float array[];
        short* s = (short*)array;
        float* f = (float*)&s[64];
        int* n = (int*)&f[32];
        int t = threadIdx.x;
        s[t] = t; s[t + 32] = -t;
        f[t] = 0.5f * t;
        n[t] = 1000 + t;
        __syncthreads();
        a[t] = s[63 - t]; b[t] = f[31 - t]; c[t] = n[31 - t];
    }"""
    a, b, c = np.zeros(32, np.int16), np.zeros(32, np.float32), np.zeros(32, np.int32)
    gpuemu.RawModule(code=src).get_function("k")(1, 32, (a, b, c), shared_mem=64 * 2 + 32 * 4 + 32 * 4)
    t = np.arange(32)
    np.testing.assert_array_equal(a, -(31 - t))
    np.testing.assert_array_equal(b, 0.5 * (31 - t))
    np.testing.assert_array_equal(c, 1000 + 31 - t)


def test_dynamic_shared_is_bounded_by_the_launch_size():
    src = r"""
    extern "C" __global__ void k(int* out) {
        extern __shared__ int dyn[];
        dyn[threadIdx.x] = 1;
        out[threadIdx.x] = dyn[threadIdx.x];
    }"""
    k = gpuemu.RawModule(code=src).get_function("k")
    with pytest.raises(gpuemu.KernelError) as ei:
        k(1, 32, (np.zeros(32, np.int32),), shared_mem=64)
    assert ei.value.findings[0].thread == (16, 0, 0)


def test_scalar_arguments_convert_to_the_parameter_type():
    src = r"""
    extern "C" __global__ void k(double* out, unsigned char c, short s, long long l, float f, double d) {
        out[0] = c; out[1] = s; out[2] = (double)l; out[3] = f; out[4] = d;
    }"""
    out = np.zeros(5, np.float64)
    gpuemu.RawModule(code=src).get_function("k")(1, 1, (out, np.int32(200), -5, 2**40, np.float64(0.1), 7))
    np.testing.assert_array_equal(out, [200, -5, 2**40, np.float32(0.1), 7.0])


def test_float4_loads_and_stores_are_one_16_byte_access():
    src = r"""
    extern "C" __global__ void k(float4* out, const float4* in) {
        int i = threadIdx.x;
        float4 v = in[i];
        out[i] = make_float4(v.w, v.z, v.y, v.x + 1.0f);
    }"""
    a = np.arange(128, dtype=np.float32)
    out = np.zeros(128, np.float32)
    la = gpuemu.RawModule(code=src).get_function("k")(1, 32, (out, a))
    r = a.reshape(32, 4)
    want = np.stack([r[:, 3], r[:, 2], r[:, 1], r[:, 0] + 1], axis=1).ravel()
    np.testing.assert_array_equal(out, want)
    assert la.stats["global_load_requests"] == 1 and la.stats["global_store_requests"] == 1


def test_nvcc_style_define_and_include_options(tmp_path):
    (tmp_path / "scale.h").write_text("#define SCALE 3\n")
    src = r"""
    #include "scale.h"
    extern "C" __global__ void k(int* out) { out[threadIdx.x] = threadIdx.x * SCALE + OFFSET; }"""
    out = np.zeros(32, np.int32)
    mod = gpuemu.RawModule(code=src, options=("-DOFFSET=7", f"-I{tmp_path}"))
    mod.get_function("k")(1, 32, (out,))
    np.testing.assert_array_equal(out, np.arange(32) * 3 + 7)


def test_module_from_a_file_path(tmp_path):
    p = tmp_path / "k.cu"
    p.write_text('extern "C" __global__ void k(int* out) { out[threadIdx.x] = 5; }\n')
    out = np.zeros(32, np.int32)
    gpuemu.RawModule(path=str(p)).get_function("k")(1, 32, (out,))
    assert (out == 5).all()


L1_PROBE = r"""
__global__ void k(const float *a, float *b) { b[threadIdx.x] = a[threadIdx.x]; }"""


def _load_transactions(options=(), **launch_options):
    k = gpuemu.RawModule(code=L1_PROBE, arch="cc2x", options=options).get_function("k")
    a = np.arange(32, dtype=np.float32)
    return k(1, 32, (a, np.zeros_like(a)), **launch_options).stats["global_load_transactions"]


def test_dlcm_cg_module_option_sends_global_loads_past_l1():
    # cc2.x: one 128-byte L1 line for an aligned warp of floats; with L1
    # bypassed, four 32-byte segments (Guide, Compute Capability 2.x, Global Memory).
    assert _load_transactions() == 1
    assert _load_transactions(options=("-Xptxas", "-dlcm=cg")) == 4


def test_launch_l1_option_overrides_the_module_option():
    assert _load_transactions(options=("-Xptxas", "-dlcm=cg"), l1=True) == 1


def _included_kernel(tmp_path):
    (tmp_path / "helpers.cuh").write_text(
        "// helpers\n"
        "__device__ float twice(float x)\n"
        "{\n"
        "    while (x < 0.0f) { }\n"          # line 4: spins for negative input
        "    return x * 2.0f;\n"              # line 5
        "}\n")
    (tmp_path / "k.cu").write_text(
        '#include "helpers.cuh"\n'
        "__global__ void k(float *a)\n"
        "{\n"
        "    a[threadIdx.x] = twice(a[threadIdx.x]);\n"   # line 4 of k.cu
        "}\n")
    return gpuemu.RawModule(path=str(tmp_path / "k.cu")).get_function("k")


def test_stats_of_an_included_file_are_keyed_by_file_and_line(tmp_path):
    k = _included_kernel(tmp_path)
    launch = k(1, 32, (np.ones(32, np.float32),))
    assert launch.stats_by_line[4]["global_load_requests"] == 1
    assert f"{tmp_path / 'helpers.cuh'}:5" in launch.stats_by_line


def test_finding_in_an_included_file_names_that_file_and_its_line(tmp_path):
    k = _included_kernel(tmp_path)
    with pytest.raises(gpuemu.KernelError) as e:
        k(1, 32, (-np.ones(32, np.float32),), budget=1000)
    f = e.value.findings[0]
    assert (f.kind, f.line, f.extra["file"]) == ("timeout", 4, str(tmp_path / "helpers.cuh"))
    assert "helpers.cuh:4" in f.message


KSRC = 'extern "C" __global__ void k(int* p) { p[0] = 1; }'


def test_module_from_utf8_bytes_compiles():
    assert gpuemu.RawModule(code=KSRC.encode()).get_function("k").name == "k"


def test_code_that_is_not_source_text_is_a_type_error_saying_so():
    with pytest.raises(TypeError, match=r"code= is CUDA C source text \(a str\), got int"):
        gpuemu.RawModule(code=5)


def test_source_file_that_is_not_utf8_is_a_compile_error_at_the_byte(tmp_path):
    p = tmp_path / "bin.cu"
    p.write_bytes(b"// ok\n__global__ void k() {}\n/* \xff */\n")
    with pytest.raises(gpuemu.CompileError, match=r"not UTF-8 text \(byte 0xff\)") as e:
        gpuemu.RawModule(path=str(p))
    assert (e.value.file, e.value.line, e.value.col) == (str(p), 3, 4)


def test_source_path_that_is_a_directory_is_a_compile_error(tmp_path):
    with pytest.raises(gpuemu.CompileError, match=r"cannot read the source file: Is a directory"):
        gpuemu.RawModule(path=str(tmp_path))


def test_option_with_an_unclosed_quote_is_a_compile_error_showing_it():
    with pytest.raises(gpuemu.CompileError, match=r"<options>.*cannot split the option.*\n-DX='1 2"):
        gpuemu.RawModule(code=KSRC, options=("-DX='1 2",))


def test_one_option_string_is_one_option():
    mod = gpuemu.RawModule(code='__global__ void k(int* p) { p[0] = V; }', options="-DV=7")
    out = np.zeros(1, np.int32)
    mod.get_function("k")(1, 1, (out,))
    assert out[0] == 7


def test_a_name_that_is_not_a_str_is_a_key_error_listing_the_kernels():
    mod = gpuemu.RawModule(code=KSRC)
    with pytest.raises(KeyError, match=r"is a str, got 5 \(kernels: k\)"):
        mod.get_function(5)
    with pytest.raises(KeyError, match=r"is a str, got 5 \(kernels: k\)"):
        gpuemu.RawModule(code=KSRC, name_expressions=[5])


def test_raw_kernel_of_a_missing_name_lists_the_kernels():
    with pytest.raises(KeyError, match=r"no __global__ function named 'zz' \(kernels: k\)"):
        gpuemu.RawKernel(KSRC, "zz")


def test_kernel_whose_frame_with_inlined_device_functions_passes_512_kb_is_compile_error():
    # each function alone fits the 512 KB of local memory per thread; inlined, the kernel's frame does not
    src = ("__device__ int f(int i) { int d[120000]; d[i] = i; return d[i]; }\n"
           "__device__ int g(int i) { int d[120000]; d[i] = i + f(i); return d[i]; }\n"
           "__global__ void k(int *p) { int a[120000]; a[0] = g(0); p[0] = a[0]; }\n")
    with pytest.raises(gpuemu.CompileError) as e:
        gpuemu.RawModule(code=src).get_function("k")
    assert e.value.message == ("kernel 'k' needs 1440000 bytes of local memory per thread with the device "
                               "functions it calls; the limit is 524288 bytes (512 KB) per thread")
    assert (e.value.line, e.value.col) == (3, 17) and e.value.source_line.startswith("__global__ void k")


def test_define_option_with_an_empty_value_defines_the_macro_empty():
    # gcc / nvcc: -DNAME= defines NAME as nothing; -DNAME defines it as 1
    mod = gpuemu.RawModule(code='__global__ void k(int* p) { p[0] = 7 E; p[1] = F; }',
                           options=("-DE=", "-DF"))
    out = gpuemu.zeros(2, np.int32)
    mod.get_function("k")((1,), (1,), (out,))
    assert out.get().tolist() == [7, 1]
