"""The C++ that CUDA samples use: templates, references, casts, namespaces,
auto, constexpr, default arguments (isa/cxx_tokens.py, isa/templates.py)."""
from __future__ import annotations

import numpy as np
import pytest

import gpuemu
import isa
from isa import ir
from isa_ir_walk import nodes, compile_error, run


def run1(src: str, name: str, n: int = 64, dtype=np.float32, **mod_kw):
    """Launch `name(out, in, n)` on one block of n threads; returns (in, out)."""
    mod = gpuemu.RawModule(code=src, **mod_kw)
    a = np.arange(n, dtype=dtype)
    out = np.zeros_like(a)
    mod.get_function(name)((1,), (n,), (out, a, np.int32(n)))
    return a, out


TEMPLATE = r'''
template <class T, unsigned int blockSize, bool twice>
__global__ void scale(T *out, const T *in, int n)
{
    __shared__ T s[blockSize];
    unsigned int i = threadIdx.x;
    s[i] = in[i];
    __syncthreads();
    if (twice) out[i] = s[blockSize - 1 - i] * 2;
    else out[i] = s[blockSize - 1 - i];
}
'''


def test_kernel_template_instantiated_by_get_function():
    a, out = run1(TEMPLATE, "scale<float, 64, true>")
    assert np.array_equal(out, a[::-1] * 2)


def test_kernel_template_instantiated_by_name_expressions_like_cupy():
    mod = gpuemu.RawModule(code=TEMPLATE, name_expressions=["scale<int,32,false>"])
    assert mod.get_lowered_name("scale<int,32,false>") == "scale<int,32,false>"
    a = np.arange(32, dtype=np.int32)
    out = np.zeros_like(a)
    mod.get_function("scale<int,32,false>")((1,), (32,), (out, a, np.int32(32)))
    assert np.array_equal(out, a[::-1])


def test_template_parameters_fold_at_compile_time():
    m = isa.compile_source(TEMPLATE + "template __global__ void scale<float, 128, false>(float *, const float *, int);")
    k = m.kernel("scale<float,128,false>")
    assert k.shared_vars[0].type == ir.ArrayType(ir.F32, 128)
    assert not any(isinstance(c, ir.VarRef) and c.var.name == "twice" for c in nodes(k.body, ir.VarRef))


def test_device_template_called_with_explicit_and_deduced_arguments():
    src = r'''
    template <typename T> __device__ T twice(T x) { return x + x; }
    template <int N, typename T> __device__ T times(T x) { return x * N; }
    __global__ void k(float *out, const float *in, int n)
    { out[threadIdx.x] = twice(in[threadIdx.x]) + times<3>(in[threadIdx.x]) + twice<int>(1); }
    '''
    a, out = run1(src, "k")
    assert np.array_equal(out, a * 5 + 2)


def test_a_deduced_type_keeps_a_pointer_arguments_pointee_qualifiers(tmp_path):
    # [temp.deduct.call]: g(T) of a const int * is T = const int *, h(T *) T = const int, c(const T *)
    # T = int (x is writable); nvcc compiles it (this was 'cannot pass a pointer to const as int *')
    src = r'''
    template <class T> __device__ int g(T p) { return p[1]; }
    template <class T> __device__ int h(T *p) { return p[2]; }
    template <class T> __device__ int c(const T *p) { T x = p[3]; x += 1; return x; }
    template <class T> __device__ int d(T *p) { return sizeof(*p[0]); }
    __global__ void k(int *o) {
        const int a[4] = {1, 2, 3, 4};
        const int *p = a;
        volatile int b[4] = {5, 6, 7, 8};
        const short s = 1; const short *ps = &s;
        int r[4] = {g(p) + h(p) * 10, c(p) + c(a) * 10, g(b) + h(b) * 10, d(&ps)};
        o[threadIdx.x] = r[threadIdx.x];
    }
    '''
    assert list(run(src, tmp_path)) == [32, 55, 76, 2]


def test_a_kernel_instance_for_a_pointer_to_const_passes_it_to_a_deduced_template():
    src = r'''
    template <class T> __device__ int g(T p) { return p[1]; }
    template <class T> __global__ void k(T p, int *o) { o[threadIdx.x] = g<T>(p) + g(p) * 10; }
    template __global__ void k<const int *>(const int *, int *);
    '''
    a = gpuemu.asarray(np.arange(4, dtype=np.int32))
    o = gpuemu.zeros(4, dtype=np.int32)
    gpuemu.RawModule(code=src).get_function("k<const int*>")((1,), (4,), (a, o))
    assert list(o.get()) == [11] * 4


def test_value_initialisation_of_a_template_type_is_zero():
    src = "template <typename T> __device__ T zero() { return T(); }\n" \
          "__global__ void k(float *o, const float *i, int n) { o[threadIdx.x] = zero<float>() + i[threadIdx.x]; }"
    a, out = run1(src, "k")
    assert np.array_equal(out, a)


ENDLESS = ("template <int N> __device__ int f() { return N == 0 ? 0 : f<N - 1>(); }\n"
           "__global__ void k(int *a) { a[0] = f<%d>(); }\n")


@pytest.mark.parametrize("n, stops_at", [(5, "f<-195>"), (200, "f<0>")])
def test_endless_template_recursion_stops_at_the_201st_nested_instantiation_like_nvcc(n, stops_at):
    # f<N - 1> is instantiated whatever N: nvcc (EDG) allows 200 pending instantiations and
    # says 'excessive recursion at instantiation of function "f<N>() [with N=-195]"' for f<5>
    e = compile_error(ENDLESS % n)
    assert e.message == (f"excessive recursion at instantiation of function '{stops_at}' "
                         "(more than 200 nested instantiations)")
    assert (e.line, e.col) == (1, ENDLESS.index("f<N - 1>") + 1)   # the call

def test_default_template_argument():
    src = "template <typename T, int N = 4> __device__ T f(T x) { return x * N; }\n" \
          "__global__ void k(float *o, const float *i, int n) { o[threadIdx.x] = f(i[threadIdx.x]); }"
    a, out = run1(src, "k")
    assert np.array_equal(out, a * 4)


def test_reference_parameters_write_through_and_const_ref_reads():
    src = r'''
    __device__ void addTo(float &acc, const float &v) { acc += v; }
    __device__ void swap2(float &a, float &b) { float t = a; a = b; b = t; }
    __global__ void k(float *out, const float *in, int n)
    {
        float x = in[threadIdx.x], y = 100.0f;
        addTo(x, 1.0f);
        swap2(x, y);
        addTo(out[threadIdx.x], x + y);
    }
    '''
    a, out = run1(src, "k")
    assert np.array_equal(out, a + 101)


def test_local_reference_aliases_an_element():
    src = "__global__ void k(float *o, const float *i, int n) { float &r = o[threadIdx.x]; r = i[threadIdx.x]; r *= 3; }"
    a, out = run1(src, "k")
    assert np.array_equal(out, a * 3)


def test_cxx_casts_namespaces_auto_constexpr_default_arguments():
    src = r'''
    #include <cuda_runtime.h>
    #include <stdint.h>
    namespace util {
        constexpr int kScale = 2;
        __device__ __forceinline__ int scaled(int x, int by = kScale) { return x * by; }
        static __device__ inline float half_of(float x) { return x / 2; }
    }
    __global__ void k(float * __restrict__ out, const float * __restrict__ in, int n)
    {
        auto i = threadIdx.x;
        const uint32_t bits = reinterpret_cast<const uint32_t *>(in)[i];
        float back = __uint_as_float(bits);
        out[i] = static_cast<float>(util::scaled(static_cast<int>(back))) + util::half_of(back)
                 + util::scaled(1, 3) + sizeof(int64_t);
    }
    '''
    a, out = run1(src, "k")
    assert np.array_equal(out, a * 2 + a / 2 + 3 + 8)


def test_noinline_and_static_device_functions_accepted():
    src = "static __device__ __noinline__ int f(int x) { return x + 1; }\n" \
          "__global__ void k(int *o, const int *i, int n) { o[threadIdx.x] = f(i[threadIdx.x]); }"
    a, out = run1(src, "k", dtype=np.int32)
    assert np.array_equal(out, a + 1)


@pytest.mark.parametrize("src,msg,line,col", [
    ("template <typename T>\n__device__ T f(T x) { return x; }\n__global__ void k(int *p) { p[0] = f<int, 2>(1); }",
     "too many template arguments for 'f'", 3, 36),
    ("template <int N>\n__device__ int f() { return N; }\n__global__ void k(int *p) { p[0] = f(); }",
     "cannot deduce template argument 'N'", 3, 36),
    ("__device__ void f(float &x) { x = 1; }\n__global__ void k(float *p) { f(p[0] + 1); }",
     "cannot bind the reference parameter 'x'", 2, 38),
    ("__device__ void inc(int &x) { x += 1; }\n__global__ void k(float *p) { float v = p[0]; inc(v); p[0] = v; }",
     "cannot bind a reference to 'int' to a value of type 'float'", 2, 51),
    ("__global__ void k(float *p) { p[0] = std::sqrt(2.0f); }", "the C++ standard library is not supported", 1, 38),
    ("__global__ void k(float *p) { float *q = new float[4]; }", "new and delete are not supported", 1, 42),
    ("__global__ void k(float *p) { throw 1; }", "exceptions are not supported", 1, 31),
    ("namespace cg = ;\n__global__ void k() {}", "expected a namespace name after '='", 1, 16),
])
def test_unsupported_or_wrong_cxx_is_a_positioned_diagnostic(src, msg, line, col):
    e = compile_error(src)
    assert msg in e.message and (e.line, e.col) == (line, col)
    assert "Traceback" not in str(e) and "^" in str(e)


def test_the_headers_samples_include_are_accepted():
    heads = ["cuda_runtime.h", "cuda.h", "device_launch_parameters.h", "cooperative_groups.h",
             "cooperative_groups/reduce.h", "stdio.h", "stdint.h", "math.h", "float.h", "limits.h"]
    src = "".join(f"#include <{h}>\n" for h in heads) + \
        "__global__ void k(float *o, const float *i, int n) { o[threadIdx.x] = fminf(FLT_MAX, (float)INT_MAX) + M_PI * 0; }"
    a, out = run1(src, "k")
    assert np.all(out == np.float32(2147483647.0))


def test_unknown_system_header_is_a_diagnostic_at_the_include():
    e = compile_error("#include <stdio.h>\n#include <thrust/sort.h>\n__global__ void k() {}\n")
    assert e.message == "system header 'thrust/sort.h' not found" and (e.line, e.col) == (2, 1)


def test_local_include_keeps_its_own_lines(tmp_path):
    (tmp_path / "helpers.cuh").write_text("// helpers\n\ntemplate <typename T>\n__device__ T sq(T x) { return x * y; }\n")
    src = '#include "helpers.cuh"\n__global__ void k(float *p) { p[0] = sq(p[1]); }\n'
    e = compile_error(src, str(tmp_path / "k.cu"))
    assert e.file.endswith("helpers.cuh") and (e.line, e.col) == (4, 35) and "'y'" in e.message


def test_struct_member_functions_read_and_write_members():
    src = r'''
    struct Counter {
        int n;
        float sum;
        __device__ void add(float v) { n += 1; this->sum += v; }
        __device__ float mean() const { return sum / n; }
        __device__ bool empty() const { return n == 0; }
    };
    __global__ void k(float *out, const float *in, int n)
    {
        Counter c = {0, 0.0f};
        for (int j = 0; j <= (int)threadIdx.x; ++j) c.add(in[j]);
        Counter *p = &c;
        out[threadIdx.x] = p->empty() ? -1.0f : p->mean();
    }
    '''
    a, out = run1(src, "k")
    assert np.allclose(out, np.cumsum(a) / np.arange(1, 65))


MEMBER_REF = r'''
struct Acc {
    int total;
    __device__ void inc(int &x) { x += 1; total += x; }
    __device__ void twice(int &x) { int y = x; inc(y); inc(y); x = y; }
};
__global__ void k(int *out, const int *in, int n)
{
    Acc s = {0};
    Acc *p = &s;
    int v = in[threadIdx.x];
    s.inc(v);
    p->inc(v);
    s.twice(v);
    out[threadIdx.x] = v * 1000 + s.total;
}
'''


def test_member_function_reference_parameter_binds_to_a_register_variable():
    a, out = run1(MEMBER_REF, "k", dtype=np.int32)
    # v goes t -> t+1 -> t+2 -> t+3 -> t+4; total adds each new v
    want = (a + 4) * 1000 + (a + 1) + (a + 2) + (a + 3) + (a + 4)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("src,msg", [
    ("struct S { int a; S() : a(0) {} };", "constructors and destructors are not supported"),
    ("struct S { int a; __device__ virtual int f() { return a; } };", "virtual functions are not supported"),
    ("struct A { int a; };\nstruct B : A { int b; };", "inheritance is not supported"),
    ("struct S { int a; __device__ S &operator=(const S &o) { return *this; } };",
     "a user-defined operator= is not supported"),
    ("struct S { int a; int f() { return a; } };", "a member function used in device code needs __device__"),
    ("struct S { int a; __device__ int f(); };\n__device__ int S::f() { return a; }",
     "member functions are supported only when defined inside their struct"),
])
def test_unsupported_class_features_are_named(src, msg):
    assert msg in compile_error(src + "\n").message


def test_cupy_style_raw_kernel_from_code_and_a_template_name():
    k = gpuemu.RawKernel(TEMPLATE, "scale<float, 32, false>")
    a = np.arange(32, dtype=np.float32)
    out = np.zeros_like(a)
    k((1,), (32,), (out, a, np.int32(32)))
    assert k.name == "scale<float,32,false>" and np.array_equal(out, a[::-1])


def test_sizeof_a_member_array_named_bare_in_a_member_function_is_the_array_size(tmp_path):
    # it read 8, the size of the pointer the array decays to (nvcc: 24)
    src = "struct Q { int v[6]; __device__ int get() const { return sizeof(v); } };\n" \
          "__global__ void k(int *o) { Q q; o[threadIdx.x] = q.get(); }\n"
    assert list(run(src, tmp_path)) == [24] * 4
