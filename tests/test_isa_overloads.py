"""Overloaded device functions and member functions: calls resolved by C++'s
rules ([over.match], isa/overloads.py); every accepted kernel is also
compiled by nvcc (where it is on the PATH), every refused one is one nvcc
refuses too, or names what gpuemu does not support."""
from __future__ import annotations

from isa_ir_walk import NVCC, compile_error, nvcc_result, refused, run

F_INT_FLOAT = "__device__ int f(int a) { return 1; }\n__device__ int f(float a) { return 2; }\n"


def test_overload_with_the_exact_argument_type_is_called(tmp_path):
    src = F_INT_FLOAT + "__global__ void k(int *o) { o[threadIdx.x] = f(7) * 10 + f(7.0f); }\n"
    assert list(run(src, tmp_path)) == [12] * 4


def test_integral_promotion_beats_a_conversion(tmp_path):
    # short and char promote to int; to float they convert
    src = F_INT_FLOAT + "__global__ void k(int *o) { short s = 1; char c = 2; bool b = true;\n" \
                        "  o[threadIdx.x] = f(s) * 100 + f(c) * 10 + f(b); }\n"
    assert list(run(src, tmp_path)) == [111] * 4


def test_float_promotion_to_double_beats_a_conversion_to_int(tmp_path):
    src = "__device__ int g(double a) { return 1; }\n__device__ int g(int a) { return 2; }\n" \
          "__global__ void k(int *o) { o[threadIdx.x] = g(1.5f); }\n"
    assert list(run(src, tmp_path)) == [1] * 4


def test_identity_beats_adding_const_to_the_pointee(tmp_path):
    src = r'''
    __device__ int f(const int *p) { return 1; }
    __device__ int f(int *p) { return 2; }
    __global__ void k(int *o) {
        const int c = 3; int a[2] = {0, 0};
        o[threadIdx.x] = f(&c) * 100 + f(a) * 10 + f(o);
    }
    '''
    assert list(run(src, tmp_path)) == [122] * 4


def test_overloads_differing_in_parameter_count_and_defaults(tmp_path):
    src = r'''
    __device__ int g(int a, int b = 2) { return a * b; }
    __device__ int g(float a) { return 100; }
    __device__ int g(int a, int b, int c) { return a + b + c; }
    __global__ void k(int *o) { o[threadIdx.x] = g(3) + g(2.5f) + g(1, 2, 3) * 1000 + g(4, 5) * 10000; }
    '''
    assert list(run(src, tmp_path)) == [6 + 100 + 6000 + 200000] * 4


def test_non_const_reference_overload_preferred_for_a_modifiable_lvalue(tmp_path):
    src = r'''
    __device__ int f(int &a) { return 1; }
    __device__ int f(const int &a) { return 2; }
    __global__ void k(int *o) { int x = 0; const int y = 1; o[threadIdx.x] = f(x) * 100 + f(y) * 10 + f(3); }
    '''
    assert list(run(src, tmp_path)) == [122] * 4


def test_struct_and_vector_arguments_pick_their_overload(tmp_path):
    src = r'''
    struct P { int a; };
    __device__ P mk(int v) { P p; p.a = v; return p; }
    __device__ int f(P p) { return p.a; }
    __device__ int f(int a) { return -1; }
    __device__ int u(float2 v) { return 1; }
    __device__ int u(float4 v) { return 2; }
    __global__ void k(int *o) {
        P q; q.a = 5;
        o[threadIdx.x] = f(mk(7)) * 100 + f(q) * 10 + u(make_float2(1, 2)) + u(make_float4(1, 2, 3, 4)) * 1000;
    }
    '''
    assert list(run(src, tmp_path)) == [700 + 50 + 1 + 2000] * 4


MEMBERS = r'''
struct S {
    int v;
    __device__ int get() const { return 10; }
    __device__ int get() { return 20; }
    __device__ int m(int a) { return 1000; }
    __device__ int m(double a) { return 2000; }
    __device__ int both() { return m(1.0) + get(); }
};
'''


def test_const_member_function_overload_is_chosen_for_a_const_object(tmp_path):
    src = MEMBERS + "__global__ void k(int *o) { S s; s.v = 1; const S cs = s; const S *p = &s;\n" \
                    "  o[threadIdx.x] = s.get() * 100 + cs.get() + p->get(); }\n"
    assert list(run(src, tmp_path)) == [2020] * 4


def test_member_overloads_by_argument_type(tmp_path):
    src = MEMBERS + "__global__ void k(int *o) { S s; s.v = 1;\n" \
                    "  o[threadIdx.x] = s.m(1) + s.m(1.0) + s.m('a') + s.both() * 10000; }\n"
    assert list(run(src, tmp_path)) == [4000 + 2020 * 10000] * 4


def test_const_member_function_through_a_const_reference(tmp_path):
    src = r'''
    struct V { int x; __device__ int twice() const { return 2 * x; } };
    __device__ int h(const V &v) { return v.twice(); }
    __global__ void k(int *o) { V v = {21}; o[threadIdx.x] = h(v); }
    '''
    assert list(run(src, tmp_path)) == [42] * 4


def test_non_template_beats_a_template_only_when_it_matches_as_well(tmp_path):
    src = r'''
    template <typename T> __device__ int h(T a) { return 7; }
    __device__ int h(int a) { return 8; }
    __global__ void k(int *o) { o[threadIdx.x] = h(1) * 100 + h(1.0f) * 10 + h<int>(1); }
    '''
    assert list(run(src, tmp_path)) == [877] * 4


def test_user_overloads_beside_the_math_functions(tmp_path):
    src = r'''
    __device__ float sq(float x) { return x * x; }
    __device__ double sq(double x) { return x * x + 1; }
    __global__ void k(int *o) { o[threadIdx.x] = (int)sq(3.0f) * 100 + (int)sq(3.0) + (int)sqrt(16.0f) * 1000; }
    '''
    assert list(run(src, tmp_path)) == [4910] * 4


def test_ambiguous_call_names_the_candidates(tmp_path):
    e = compile_error(F_INT_FLOAT + "__global__ void k(int *o) { o[0] = f(1.0); }\n")
    assert e.message == ("more than one instance of overloaded function 'f' matches the argument types "
                         "(double): f(int), f(float)")
    assert (e.line, e.col) == (3, 36)
    if NVCC is not None:
        assert "more than one instance" in nvcc_result(F_INT_FLOAT + "__global__ void k(int *o) { o[0] = f(1.0); }\n",
                                                       tmp_path).stderr


def test_integer_argument_to_float_and_double_overloads_is_ambiguous(tmp_path):
    src = "__device__ float sq(float x) { return x; }\n__device__ double sq(double x) { return x; }\n" \
          "__global__ void k(int *o) { o[0] = sq(2); }\n"
    assert "more than one instance of overloaded function 'sq'" in refused(src, tmp_path)


def test_no_viable_overload_names_the_candidates(tmp_path):
    msg = refused(F_INT_FLOAT + "__global__ void k(int *o) { o[0] = f(o); }\n", tmp_path)
    assert msg == "no instance of overloaded function 'f' matches the argument types (int *); " \
                  "candidates: f(int), f(float)"


def test_no_viable_member_overload_names_struct_and_candidates(tmp_path):
    msg = refused(MEMBERS + "__global__ void k(int *o) { S s; s.v = 0; o[0] = s.m(o); }\n", tmp_path)
    assert msg == "no instance of overloaded function 'S::m' matches the argument types (int *); " \
                  "candidates: S::m(int), S::m(double)"


def test_non_const_member_function_is_not_viable_on_a_const_object(tmp_path):
    src = "struct S { int v; __device__ int f() { return v; } __device__ int f(int a) { return a; } };\n" \
          "__global__ void k(int *o) { const S s = {1}; o[0] = s.f(); }\n"
    assert "no instance of overloaded function 'S::f'" in refused(src, tmp_path)


def test_overloads_differing_only_in_return_type_are_refused(tmp_path):
    e = compile_error("__device__ int f(int a) { return 1; }\n__device__ float f(int a) { return 2; }\n")
    assert e.message == "cannot overload functions distinguished by return type alone" and e.line == 2


def test_overloaded_kernels_are_refused_by_name(tmp_path):
    src = "__global__ void k(int *o) { o[0] = 1; }\n__global__ void k(float *o) { o[0] = 1; }\n"
    e = compile_error(src)
    assert e.message == ("overloading the __global__ function 'k' is not supported "
                         "(get_function finds a kernel by its name alone)")
    assert e.line == 2
    if NVCC is not None:
        assert nvcc_result(src, tmp_path).returncode == 0


def test_redeclaration_with_the_same_signature_is_not_an_overload(tmp_path):
    src = "__device__ int f(const int a);\n__device__ int f(int a) { return a + 1; }\n" \
          "__global__ void k(int *o) { o[threadIdx.x] = f(1); }\n"
    assert list(run(src, tmp_path)) == [2] * 4


def test_a_temporary_binds_only_to_the_const_reference_overload(tmp_path):
    src = r'''
    struct P { int a; };
    __device__ int f(P &p) { return 1; }
    __device__ int f(const P &p) { return 2; }
    __global__ void k(int *o) { P q = {1}; o[threadIdx.x] = f(P{3}) * 10 + f(q); }
    '''
    assert list(run(src, tmp_path)) == [21] * 4


def test_user_overloads_of_a_built_in_name_take_struct_and_vector_arguments(tmp_path):
    # helper_math.h style: the built-in keeps scalar calls, the user's overload takes the vectors
    src = r'''
    __device__ float2 fminf(float2 a, float2 b) { return make_float2(fminf(a.x, b.x), fminf(a.y, b.y)); }
    __device__ int2 max(int2 a, int2 b) { return make_int2(max(a.x, b.x), max(a.y, b.y)); }
    struct P { int v; };
    __device__ int abs(P p) { return p.v < 0 ? -p.v : p.v; }
    __global__ void k(int *o) {
        float2 m = fminf(make_float2(1, 5), make_float2(3, 2));
        int2 n = max(make_int2(1, 5), make_int2(3, 2));
        P p = {-7};
        o[threadIdx.x] = (int)(m.x * 1000 + m.y * 100) + n.x * 10 + n.y + abs(p) * 10000 + max(3, 4) * 100000
                         + (int)fminf(2.f, 1.f) * 1000000;
    }
    '''
    assert list(run(src, tmp_path)) == [1200 + 35 + 70000 + 400000 + 1000000] * 4


def test_a_built_in_redefined_with_scalar_parameters_is_refused():
    e = compile_error("__device__ float sqrt(float x) { return x; }\n")
    assert e.message == ("'sqrt' is a CUDA built-in function and cannot be redefined "
                         "(an overload of it needs a struct or vector parameter)")


def test_function_templates_of_one_name_overload_by_their_parameter_count(tmp_path):
    src = r'''
    template <class T> __device__ T f(T a) { return a + 1; }
    template <class T> __device__ T f(T a, T b) { return a * b; }
    __global__ void k(int *o) { o[threadIdx.x] = f(3) + f(2, 5) * 10 + (int)f<float>(1.5f, 2.0f) * 100; }
    '''
    assert list(run(src, tmp_path)) == [404] * 4


def test_the_more_specialised_template_is_called(tmp_path):
    # T * and const T * are more specialised than T for a pointer ([temp.func.order])
    src = r'''
    template <class T> __device__ int f(T a) { return 1; }
    template <class T> __device__ int f(T *a) { return 2; }
    template <class T> __device__ int f(const T *a) { return 3; }
    __global__ void k(int *o) { int x = 0; const int c = 0; o[threadIdx.x] = f(3) + f(&x) * 10 + f(&c) * 100; }
    '''
    assert list(run(src, tmp_path)) == [321] * 4


def test_templates_and_a_non_template_of_one_name_rank_together(tmp_path):
    # g(1, 2.0f) deduces only g(T, U); g(1.0f, 2.0f): the non-template ties with g(T, T) and wins;
    # g<float>(..) names only the templates; g(&x, 2): g(T *, T) is more specialised than g(T, U)
    src = r'''
    template <class T> __device__ int g(T a, T b) { return 1; }
    template <class T, class U> __device__ int g(T a, U b) { return 2; }
    template <class T> __device__ int g(T *a, T b) { return 3; }
    __device__ int g(float a, float b) { return 4; }
    __global__ void k(int *o) {
        int x;
        o[threadIdx.x] = g(1, 2) + 10 * g(1, 2.0f) + 100 * g(&x, 2) + 1000 * g(1.0f, 2.0f)
                         + 10000 * g<float>(1.0f, 2.0f);
    }
    '''
    assert list(run(src, tmp_path)) == [14321] * 4


def test_templates_neither_more_specialised_are_ambiguous(tmp_path):
    # (T, T) does not deduce from (U, int), nor (T, int) from (U, U)
    src = r'''
    template <class T> __device__ int g(T a, int b) { return 1; }
    template <class T> __device__ int g(T a, T b) { return 2; }
    __global__ void k(int *o) { o[threadIdx.x] = g(1, 2); }
    '''
    assert refused(src, tmp_path).startswith("more than one instance of overloaded function 'g' matches "
                                             "the argument types (int, int)")


def test_overloaded_kernel_templates_are_refused_by_name(tmp_path):
    # nvcc compiles them; get_function('k<int>') could not tell them apart
    e = compile_error("template <class T> __global__ void k(T *o) { o[0] = 1; }\n"
                      "template <class T> __global__ void k(T *o, int v) { o[0] = v; }\n")
    assert e.message == ("overloading the __global__ function template 'k' is not supported "
                         "(get_function finds a kernel by its name alone)")
    assert (e.line, e.col) == (2, 1)
