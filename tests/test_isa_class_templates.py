"""Class templates (isa/class_templates.py): each argument list its own
struct, member functions instantiated when called, deduction of function
templates from them, diagnostics naming the instantiation. Every kernel
here that must run is also compiled by nvcc where nvcc is on the PATH."""
from __future__ import annotations

import numpy as np
import pytest

import gpuemu
import isa
from isa_ir_walk import compile_error, nvcc_accepts, refused, run

ARR = r'''
template <typename T, int N> struct Arr {
    T v[N];
    __device__ T sum() const { T s = 0; for (int i = 0; i < N; i++) s += v[i]; return s; }
    __device__ void fill(T x) { for (int i = 0; i < N; i++) v[i] = x + i; }
    __device__ T get(int i) const { return v[i]; }
    __device__ Arr plus(const Arr &o) const { Arr r; for (int i = 0; i < N; i++) r.v[i] = get(i) + o.v[i]; return r; }
};
'''

USES = ARR + r'''
template <typename T = float> struct Box { T x; __device__ T get() const { return x; } };
template <class T, bool Neg> struct Signed { T x; __device__ T get() const { return Neg ? -x : x; } };
template <typename T> struct Node { T val; Node<T> *next; __device__ T pair() const { return val + (next ? next->val : 0); } };
template <typename T, int N> __device__ T first(const Arr<T, N> &a) { return a.v[0]; }
template <int N> __device__ int count(Arr<int, N> *p) { return N + p->v[0]; }
template <typename T, int N> __device__ int inner(const Arr<Arr<T, N>, 3> &a) { return N * 100 + (int)a.v[2].v[0]; }

__global__ void k(int *o)
{
    Arr<float, 4> a;
    a.fill(1.0f);                    // 1 2 3 4
    Arr<int, 3> b;
    b.fill(2);                       // 2 3 4
    Arr<Arr<int, 2>, 3> nest;
    nest.v[1].fill(5);               // 5 6
    nest.v[2].fill(7);
    Box<> bf; bf.x = 2.5f;
    Box<int> bi; bi.x = 7;
    Signed<int, true> s; s.x = 3;
    Node<int> n1, n2; n1.val = 5; n2.val = 6; n1.next = &n2; n2.next = 0;
    Arr<int, 3> c = b.plus(b);       // 4 6 8
    o[0] = (int)a.sum();
    o[1] = b.sum();
    o[2] = nest.v[1].sum();
    o[3] = (int)(bf.get() * 2) + bi.get();
    o[4] = s.get();
    o[5] = n1.pair() * 10 + n2.pair();
    o[6] = first(b) * 10 + (int)first(a);
    o[7] = count(&b) * 1000 + inner(nest);
    o[8] = c.sum();
    o[9] = sizeof(Arr<float, 4>) * 100 + sizeof(Arr<char, 3>);
    o[10] = sizeof(nest);
    o[11] = sizeof(Arr<Arr<int, 2>, 3>) == sizeof(nest);
}
'''


def run_k(src: str, n: int = 12) -> np.ndarray:
    o = gpuemu.zeros(n, dtype=np.int32)
    gpuemu.RawModule(code=src).get_function("k")((1,), (1,), (o,))
    return o.get()


@pytest.fixture(scope="module")
def uses() -> np.ndarray:
    return run_k(USES)


def test_member_functions_use_the_type_and_value_arguments(uses):
    assert uses[0] == 1 + 2 + 3 + 4 and uses[1] == 2 + 3 + 4


def test_a_member_function_returns_its_own_instance_by_the_injected_class_name(uses):
    assert uses[8] == 4 + 6 + 8


def test_nested_argument_lists_closed_by_one_shift_token(uses):
    assert uses[2] == 5 + 6 and uses[10] == 3 * 2 * 4 and uses[11] == 1


def test_each_argument_list_is_its_own_struct_with_its_own_layout(uses):
    assert uses[9] == 16 * 100 + 3


def test_default_arguments_class_keyword_and_bool_parameter(uses):
    assert uses[3] == 5 + 7 and uses[4] == -3


def test_a_member_can_point_to_its_own_instance(uses):
    assert uses[5] == (5 + 6) * 10 + (6 + 0)


def test_function_templates_deduce_type_and_value_parameters_from_an_instance(uses):
    assert uses[6] == 2 * 10 + 1
    assert uses[7] == (3 + 2) * 1000 + 2 * 100 + 7


def test_each_argument_list_is_instantiated_once():
    m = isa.compile_source(USES, "t.cu")
    names = [f.name for f in m.functions]
    assert names.count("Arr<int,3>::sum") == 1 and "Arr<float,4>::sum" in names
    assert "Arr<Arr<int,2>,3>::sum" in names     # declared with its instance; never called, so no body
    assert next(f for f in m.functions if f.name == "Arr<Arr<int,2>,3>::sum").body is None


KERNEL_PARAMS = ARR + r'''
template <typename T>
__global__ void kt(T *o, Arr<T, 2> a, Arr<T, 2> *p)
{
    Arr<T, 2> c = a.plus(*p);
    o[0] = c.sum();
    o[1] = p->get(1);
    o[2] = sizeof(a);
}
template __global__ void kt<int>(int *, Arr<int, 2>, Arr<int, 2> *);
'''


def test_instances_as_kernel_parameters_by_value_and_as_pointees():
    o = gpuemu.zeros(3, dtype=np.int32)
    a = np.array([((10, 20),)], dtype=[("v", np.int32, (2,))])[0]
    p = gpuemu.asarray(np.array([1, 2], dtype=np.int32))
    gpuemu.RawModule(code=KERNEL_PARAMS).get_function("kt<int>")((1,), (1,), (o, a, p))
    assert o.get().tolist() == [11 + 22, 2, 8]


def test_a_member_that_does_not_compile_for_the_arguments_is_an_error_only_when_called():
    src = ARR.replace("struct Arr {", "struct Arr {\n    __device__ int bad() const { return v[0].nothing; }")
    ok = src + "__global__ void k(int *o) { Arr<int, 2> a; a.fill(1); o[0] = a.sum(); }\n"
    assert run_k(ok, 1)[0] == 1 + 2
    e = compile_error(src + "__global__ void k(int *o) {\n    Arr<int, 2> a;\n    o[0] = a.bad();\n}\n")
    assert (e.line, e.col) == (3, 46)       # at the member, inside the template
    assert e.message == ("member reference base type 'int' is not a struct (in '.nothing') "
                         "(detected during instantiation of 'Arr<int,2>::bad' at line 12)")


def test_an_instance_whose_members_do_not_compile_names_the_instantiation():
    e = compile_error("template <typename T, int N> struct Arr { T v[N]; };\n"
                      "__global__ void k(int *o) {\n    Arr<int, -1> a;\n}\n")
    assert (e.line, e.col) == (1, 47)
    assert e.message == ("array size must be positive, not -1 "
                         "(detected during instantiation of 'Arr<int,-1>' at line 3)")


@pytest.mark.parametrize("use,msg,col", [
    ("Arr a;", "argument list for class template 'Arr' is missing", 5),
    ("Arr<int> a;", "too few template arguments for class template 'Arr'", 5),
    ("Arr<int, 2, 3> a;", "too many template arguments for 'Arr' (it takes 2)", 5),
])
def test_wrong_argument_lists_are_named(use, msg, col):
    e = compile_error("template <typename T, int N> struct Arr { T v[N]; };\n"
                      f"__global__ void k(int *o) {{\n    {use}\n}}\n")
    assert msg in e.message and (e.line, e.col) == (3, col)


SPECIALISED = ARR + r'''
template <> struct Arr<bool, 1> {
    int flag;
    __device__ int sum() const { return 100 + flag; }
};
template <typename T = int> struct Def { T x; };
template <> struct Def<> { char c[3]; };
template <typename T> struct Shared {
    __device__ operator T *() { extern __shared__ int smem[]; return (T *)smem; }
};
template <> struct Shared<double> {
    __device__ operator double *() { extern __shared__ double smem_d[]; return smem_d; }
};
__global__ void k(int *o)
{
    Arr<bool, 1> s;
    s.flag = 5;
    Arr<char, 2> g;
    g.fill(3);
    o[0] = s.sum();
    o[1] = sizeof(Arr<bool, 1>) * 10 + sizeof(Arr<bool, 2>);
    o[2] = g.sum();
    o[3] = sizeof(Def<>) * 10 + sizeof(Def<int>);
    o[4] = sizeof(Def<float>);
    double *d = Shared<double>();
    int *i = Shared<int>();
    d[0] = 2.5;
    o[5] = i[1] == 0x40040000;      // the high word of 2.5: both name the dynamic shared memory
}
'''


@pytest.fixture(scope="module")
def specialised() -> np.ndarray:
    o = gpuemu.zeros(6, dtype=np.int32)
    gpuemu.RawModule(code=SPECIALISED).get_function("k")((1,), (1,), (o,), shared_mem=64)
    return o.get()


def test_an_explicit_specialisation_is_the_struct_for_its_arguments(specialised):
    assert specialised[0] == 105 and specialised[1] == 4 * 10 + 2


def test_other_argument_lists_still_instantiate_the_template(specialised):
    assert specialised[2] == 3 + 4 and specialised[4] == 4


def test_a_specialisation_matches_after_default_arguments(specialised):
    assert specialised[3] == 3 * 10 + 3


def test_shared_memory_specialised_for_double_as_the_reduction_sample_does(specialised):
    assert specialised[5] == 1


VEC = r'''
template <typename T, int N> struct Vec {
    T v[N];
    __device__ Vec operator+(const Vec &o) const { Vec r; for (int i = 0; i < N; i++) r.v[i] = v[i] + o.v[i]; return r; }
    __device__ T &operator[](int i) { return v[i]; }
    __device__ T get(int i) { return v[i] + 1000; }
    __device__ T get(int i) const { return v[i]; }
};
template <typename T> __device__ int size_of() { return sizeof(T); }
template <typename T>
__global__ void k(int *o, T t)
{
    Vec<int, 2> a = Vec<int, 2>{{1, 2}};
    Vec<int, 2> b{{10, 20}};
    Vec<int, 2> c = a + b;
    const Vec<int, 2> cc = c;
    o[0] = c[1];
    o[1] = c.get(0);
    o[2] = cc.get(0);
    o[3] = t.v[0] + t.v[1];
    o[4] = size_of<Vec<char, 3>>() + size_of<Vec<Vec<int, 2>, 2>>();
}
template __global__ void k<Vec<int, 2>>(int *, Vec<int, 2>);
'''


@pytest.fixture(scope="module")
def vec() -> list:
    mod = gpuemu.RawModule(code=VEC, name_expressions=["k<Vec<int,2>>"])
    o = gpuemu.zeros(5, dtype=np.int32)
    t = np.array([((3, 4),)], dtype=[("v", np.int32, (2,))])[0]
    mod.get_function(mod.get_lowered_name("k<Vec<int,2>>"))((1,), (1,), (o, t))
    return o.get().tolist()


def test_member_operators_and_const_overloads_of_an_instance(vec):
    assert vec[:3] == [22, 1011, 11]


def test_an_instance_as_a_kernel_template_argument_named_by_a_name_expression(vec):
    assert vec[3] == 3 + 4


def test_a_shift_token_closes_a_function_template_list_around_an_instance(vec):
    assert vec[4] == 3 + 16


@pytest.mark.parametrize("src,msg,line,col", [
    ("template <typename T> struct A { T x; __device__ T get() const; };\n"
     "template <typename T> __device__ T A<T>::get() const { return x; }",
     "names qualified by a template-id ('S<int>::x': static member functions, nested types, members defined "
     "outside their class) are not supported", 2, 40),
    ("template <typename T> struct A { T x; };\n__global__ void k(int *o) { o[0] = A<int>::n; }",
     "no static data member 'n' in 'A<int>'", 2, 36),
    ("struct A { int x; __device__ int get() const; };",
     "member functions are supported only when defined inside their struct", 1, 34),
])
def test_members_outside_their_class_are_named(src, msg, line, col):
    e = compile_error(src + "\n")
    assert msg in e.message and (e.line, e.col) == (line, col)


@pytest.mark.parametrize("src,msg", [
    ("template <> struct Q<int> { int x; };", "explicit specialisation of 'Q' before its class template"),
    ("template <typename T> __device__ T f(T x) { return x; }\ntemplate <> __device__ int f<int>(int x) { return 1; }",
     "explicit specialisations of function templates (template <>) are not supported"),
    ("template <typename T> struct S { T x; };\ntemplate <typename T> struct S<T &> { T y; };\n"
     "__global__ void k(int *o) { S<int> s; }",
     "this form of partial specialisation argument ('T &') is not supported"),
    ("template <typename T> struct S { template <typename U> __device__ U f(U u) { return u; } };",
     "member templates are not supported"),
])
def test_unsupported_class_template_forms_are_named(src, msg):
    assert msg in compile_error(src + "\n").message


@pytest.mark.parametrize("src", [USES, KERNEL_PARAMS, SPECIALISED, VEC],
                         ids=["uses", "kernel_params", "specialised", "vec"])
def test_the_kernels_here_are_valid_cuda(src, tmp_path):
    nvcc_accepts(src, tmp_path)


def test_static_constant_members_of_a_class_template_per_instance(tmp_path):
    src = r'''
    template <class T, int N> struct S { static const int n = N + 1; static constexpr int size = sizeof(T); };
    __global__ void k(int *o) { o[threadIdx.x] = S<int, 2>::n + S<double, 0>::size * 10 + S<char, 5>::n * 100; }
    '''
    assert list(run(src, tmp_path)) == [683] * 4


def test_a_static_member_names_a_constexpr_call_and_sizes_an_array(tmp_path):
    src = r'''
    constexpr __host__ __device__ int sq(int x) { return x * x; }
    template <int N> struct S { static constexpr int m = sq(N); };
    __global__ void k(int *o) { int a[S<3>::m]; o[threadIdx.x] = sizeof(a); }
    '''
    assert list(run(src, tmp_path)) == [36] * 4


def test_a_static_member_named_bare_in_its_class_sizes_a_member_and_reads_in_a_member_function(tmp_path):
    src = r'''
    template <int N> struct S {
        static const int n = N * 2;
        int v[n];
        __device__ int get() const { return n * 100; }
    };
    __global__ void k(int *o) { S<3> s; o[threadIdx.x] = s.get() + (int)sizeof(s); }
    '''
    assert list(run(src, tmp_path)) == [624] * 4


def test_a_function_template_names_a_static_member_of_its_parameter(tmp_path):
    src = r'''
    template <class T> struct Size { static const int bytes = sizeof(T); };
    template <class T> __device__ int bytes_of() { return Size<T>::bytes; }
    __global__ void k(int *o) { o[threadIdx.x] = bytes_of<double>() * 10 + bytes_of<short>(); }
    '''
    assert list(run(src, tmp_path)) == [82] * 4


def test_static_constant_members_of_a_struct(tmp_path):
    src = r'''
    struct P { static const int n = 7; int x; __device__ int g() const { return n + P::n + x; } };
    __global__ void k(int *o) { P p = {1}; o[threadIdx.x] = P::n * 100 + p.g() + (int)sizeof(P) * 1000; }
    '''
    assert list(run(src, tmp_path)) == [4715] * 4


@pytest.mark.parametrize("definition", ["const int P::n;",
                                        "template <class T> const int Q<T>::n;"], ids=["struct", "template"])
def test_an_out_of_class_definition_of_a_static_constant_is_accepted(definition, tmp_path):
    src = "struct P { static const int n = 7; };\ntemplate <class T> struct Q { static const int n = 8; };\n" \
          + definition + "\n__global__ void k(int *o) { o[threadIdx.x] = P::n * 10 + Q<int>::n; }\n"
    assert list(run(src, tmp_path)) == [78] * 4


def test_a_static_member_that_is_not_a_constant_is_named():
    e = compile_error("struct P { static int n; };\n__global__ void k(int *o) { o[0] = 1; }\n")
    assert e.message.startswith("static data members are supported only as constants with an initialiser")
    assert (e.line, e.col) == (1, 12)


def test_a_static_member_a_class_template_lacks_is_named(tmp_path):
    src = "template <class T> struct S { static const int n = 1; };\n" \
          "__global__ void k(int *o) { o[0] = S<int>::m; }\n"
    assert refused(src, tmp_path) == "no static data member 'm' in 'S<int>'"


PARTIAL = r"""
template <class T, int N = 1> struct S { static const int n = 1; __device__ int f() const { return N; } };
template <class T, int N> struct S<T *, N> { static const int n = 2; __device__ int f() const { return N * 10 + sizeof(T); } };
template <class T> struct S<T, 0> { static const int n = 3; };
template <class T> struct W { T v; };
template <class T> struct S<W<T>, 5> { static const int n = 4; T x; };
template <> struct S<char, 1> { static const int n = 5; };
"""


def test_a_partial_specialisation_for_pointers_is_made_for_a_pointer_argument(tmp_path):
    src = PARTIAL + "__global__ void k(int *o) { S<double *, 7> s; S<int> a;\n" \
                    "  o[threadIdx.x] = S<int>::n + S<int *>::n * 10 + s.f() * 100 + a.f() * 10000; }\n"
    assert list(run(src, tmp_path)) == [1 + 20 + 7800 + 10000] * 4


def test_a_partial_specialisation_fixing_a_value_argument(tmp_path):
    src = PARTIAL + "__global__ void k(int *o) { o[threadIdx.x] = S<float, 0>::n * 10 + S<float, 2>::n; }\n"
    assert list(run(src, tmp_path)) == [31] * 4


def test_a_partial_specialisation_for_a_class_template_instance_deduces_its_argument(tmp_path):
    # S<W<short>, 5>: T is short, so its member x is a short beside nothing else
    src = PARTIAL + "__global__ void k(int *o) { S<W<short>, 5> w;\n" \
                    "  o[threadIdx.x] = S<W<short>, 5>::n * 10 + (int)sizeof(w); }\n"
    assert list(run(src, tmp_path)) == [42] * 4


DEFAULTED = """
template <class T, int N = 2> struct W { T v[N]; };
template <class T> struct S { static const int n = 1; };
template <class T> struct S<W<T> > { static const int n = sizeof(T) * 10; };
"""


def test_a_class_template_instance_pattern_takes_the_default_of_an_argument_it_leaves_out(tmp_path):
    # S<W<T> > is S<W<T, 2> >: W<int, 3> is no instance of it (nvcc: 12040)
    src = DEFAULTED + "__global__ void k(int *o) {\n" \
                      "  o[threadIdx.x] = S<W<short> >::n * 100 + S<W<int, 2> >::n + S<W<int, 3> >::n * 10000; }\n"
    assert list(run(src, tmp_path)) == [12040] * 4


def test_a_class_template_instance_pattern_leaving_out_an_argument_without_default_is_refused(tmp_path):
    src = "template <class T, int N> struct W { T v[N]; };\n" + DEFAULTED.split("\n", 2)[2] + \
          "__global__ void k(int *o) { o[threadIdx.x] = S<W<int, 2> >::n; }\n"
    assert refused(src, tmp_path) == "too few template arguments for class template 'W' in 'W<T>'"


def test_a_class_template_instance_pattern_whose_left_out_default_names_a_parameter_is_not_supported():
    src = "template <class T, int N = sizeof(T)> struct W { T v[N]; };\n" + DEFAULTED.split("\n", 2)[2] + \
          "__global__ void k(int *o) { o[threadIdx.x] = S<W<int> >::n; }\n"
    assert "this form of partial specialisation argument ('W<T>') is not supported" in compile_error(src).message


def test_an_explicit_specialisation_beats_a_partial_one(tmp_path):
    src = PARTIAL + "__global__ void k(int *o) { o[threadIdx.x] = S<char>::n; }\n"
    assert list(run(src, tmp_path)) == [5] * 4


def test_two_partial_specialisations_matching_one_instance_are_refused(tmp_path):
    # nvcc: neither S<T *, N> nor S<T, 0> is more specialised for S<int *, 0>
    src = PARTIAL + "__global__ void k(int *o) { o[threadIdx.x] = S<int *, 0>::n; }\n"
    assert refused(src, tmp_path).startswith("more than one partial specialisation of 'S' matches 'S<int*,0>'")


def test_of_two_matching_partial_specialisations_the_more_specialised_is_made(tmp_path):
    # S<int **, float>: S<T **, U> over S<T *, U>; S<float *, float>: S<T *, T> over S<T *, U>
    src = r'''
    template <class T, class U> struct S { static const int n = 1; };
    template <class T, class U> struct S<T *, U> { static const int n = 2; };
    template <class T, class U> struct S<T **, U> { static const int n = 3; };
    template <class T> struct S<T *, T> { static const int n = 4; };
    __global__ void k(int *o) {
        o[threadIdx.x] = S<int, float>::n + S<int *, float>::n * 10 + S<int **, float>::n * 100
                         + S<float *, float>::n * 1000;
    }
    '''
    assert list(run(src, tmp_path)) == [4321] * 4


def test_a_partial_specialisation_for_pointers_to_const_is_chosen_over_the_one_for_pointers(tmp_path):
    # nvcc: const int ** is T * with T = const int *, int *const * is const T * with T = int *
    src = r'''
    template <class T> struct S { static const int n = 1; };
    template <class T> struct S<T *> { static const int n = 2; };
    template <class T> struct S<const T *> { static const int n = 3 + sizeof(T) * 10; };
    __global__ void k(int *o) {
        int r[4] = {S<float *>::n, S<const double *>::n, S<const int **>::n, S<int *const *>::n};
        o[threadIdx.x] = r[threadIdx.x];
    }
    '''
    assert list(run(src, tmp_path)) == [2, 3 + 80, 2, 3 + 80]


def test_a_partial_specialisation_for_arrays_deduces_the_element_type_and_bound(tmp_path):
    # nvcc: int[3][2] is T[N] with T = int[2], N = 3; int[4] takes the more specialised T[4]
    src = r'''
    template <class T> struct S { static const int n = 1; };
    template <class T, int N> struct S<T[N]> { static const int n = N * 100 + sizeof(T); };
    template <class T> struct S<T[4]> { static const int n = 7; };
    __global__ void k(int *o) {
        int r[4] = {S<short[3]>::n, S<int[3][2]>::n, S<const char[2]>::n, S<int[4]>::n};
        o[threadIdx.x] = r[threadIdx.x];
    }
    '''
    assert list(run(src, tmp_path)) == [302, 308, 201, 7]


def test_an_array_partial_specialisation_binds_its_parameters_in_its_members(tmp_path):
    src = r'''
    template <class T> struct S { static const int n = 1; };
    template <class T, int N> struct S<T[N]> {
        T v[N];
        __device__ T get(int i) const { return v[i]; }
        __device__ int sum() const { int s = 0; for (int i = 0; i < N; i++) s += v[i]; return s; }
    };
    __global__ void k(int *o) {
        S<int[3]> a; a.v[0] = 1; a.v[1] = 2; a.v[2] = 4;
        o[threadIdx.x] = a.sum() + sizeof(a) * 10 + a.get(2) * 1000;
    }
    '''
    assert list(run(src, tmp_path)) == [7 + 120 + 4000] * 4


def test_a_partial_specialisation_for_an_instance_of_a_fixed_type_is_more_specialised(tmp_path):
    # nvcc: R<W<int>, U> over R<W<T>, U> for R<W<int>, char>; R<W<T>, int> over it for R<W<char>, int>
    src = r'''
    template <class T> struct W { T v; };
    template <class T, class U> struct R { static const int n = 1; };
    template <class T, class U> struct R<W<T>, U> { static const int n = 2; };
    template <class U> struct R<W<int>, U> { static const int n = 3; };
    template <class T> struct R<W<T>, int> { static const int n = 4; };
    __global__ void k(int *o) {
        int r[4] = {R<W<float>, char>::n, R<W<int>, char>::n, R<W<char>, int>::n, R<int, int>::n};
        o[threadIdx.x] = r[threadIdx.x];
    }
    '''
    assert list(run(src, tmp_path)) == [2, 3, 4, 1]


def test_partial_specialisations_for_instances_order_by_their_arguments_forms(tmp_path):
    # nvcc: W<const T *> over W<T>; P<T, int> and P<T, T> over P<T, U>; the explicit S<W<char>> first
    src = r'''
    template <class T> struct W { T v; };
    template <class T, class U> struct P { T a; U b; };
    template <class T> struct S { static const int n = 1; };
    template <class T> struct S<W<T> > { static const int n = 2; };
    template <> struct S<W<char> > { static const int n = 5; };
    template <class T> struct S<W<T> *> { static const int n = 3; };
    template <class T> struct S<W<const T *> > { static const int n = 6; };
    template <class T> struct S<P<T, int> > { static const int n = 7; };
    template <class T> struct S<P<T, T> > { static const int n = 8; };
    template <class T, class U> struct S<P<T, U> > { static const int n = 10; };
    __global__ void k(int *o) {
        int r[4] = {S<W<float> >::n, S<W<const int *> >::n * 10 + S<W<char> >::n, S<W<short> *>::n,
                    S<P<float, int> >::n * 100 + S<P<short, short> >::n * 10 + S<P<char, float> >::n};
        o[threadIdx.x] = r[threadIdx.x];
    }
    '''
    assert list(run(src, tmp_path)) == [2, 65, 3, 790]


def test_partial_specialisations_for_instances_neither_more_specialised_are_refused(tmp_path):
    src = "template <class T> struct W { T v; };\ntemplate <class T, class U> struct R { static const int n = 1; };\n" \
          "template <class U> struct R<W<int>, U> { static const int n = 3; };\n" \
          "template <class T> struct R<W<T>, int> { static const int n = 4; };\n" \
          "__global__ void k(int *o) { o[threadIdx.x] = R<W<int>, int>::n; }\n"
    assert refused(src, tmp_path) == "more than one partial specialisation of 'R' matches 'R<W<int>,int>'"


def test_a_partial_specialisation_that_does_not_use_a_parameter_is_named(tmp_path):
    src = "template <class T> struct W { T v; };\ntemplate <class T> struct S { static const int n = 1; };\n" \
          "template <class T> struct S<W<int> *> { static const int n = 9; };\n" \
          "__global__ void k(int *o) { o[threadIdx.x] = S<int>::n; }\n"
    assert refused(src, tmp_path) == "the partial specialisation 'S<W<int> *>' does not use its template parameter 'T'"
    assert (compile_error(src).line, compile_error(src).col) == (3, 17)


def test_a_static_constant_declared_in_its_struct_and_initialised_after_it(tmp_path):
    src = "struct P { static const int n; };\nconst int P::n = 3;\n" \
          "__global__ void k(int *o) { o[threadIdx.x] = P::n; }\n"
    assert list(run(src, tmp_path)) == [3] * 4


def test_a_class_template_static_member_initialised_outside_its_class_per_instance(tmp_path):
    # one constant per instance, also an array size and a template argument; A<char> its own (nvcc: 8799)
    src = r'''
    template <class T> struct A { static const int n; };
    template <class T> const int A<T>::n = sizeof(T) * 2;
    template <> const int A<char>::n = 7;
    template <int N> struct B { int v[N]; };
    __global__ void k(int *o) {
        int arr[A<float>::n];
        arr[0] = 1;
        B<A<double>::n> b;
        b.v[0] = 2;
        o[threadIdx.x] = A<float>::n * 1000 + A<char>::n * 100 + sizeof(arr) / sizeof(int) * 10 + sizeof(b) / 4
                         + arr[0] + b.v[0];
    }
    '''
    assert list(run(src, tmp_path)) == [8 * 1000 + 7 * 100 + 8 * 10 + 16 + 1 + 2] * 4


def test_an_explicit_specialisation_of_a_static_member_replaces_its_class_initialiser(tmp_path):
    src = "template <class T> struct A { static const int n = 3; };\ntemplate <> const int A<char>::n = 7;\n" \
          "__global__ void k(int *o) { o[threadIdx.x] = A<char>::n * 10 + A<short>::n; }\n"
    assert list(run(src, tmp_path)) == [73] * 4


def test_the_static_member_of_an_explicit_class_specialisation_initialised_after_it(tmp_path):
    src = "template <class T> struct A { static const int n; };\n" \
          "template <class T> const int A<T>::n = sizeof(T) * 2;\n" \
          "template <> struct A<int> { static const int n; };\nconst int A<int>::n = 5;\n" \
          "__global__ void k(int *o) { o[threadIdx.x] = A<int>::n * 10 + A<short>::n; }\n"
    assert list(run(src, tmp_path)) == [54] * 4


def test_an_out_of_class_initialiser_with_its_own_parameter_names_in_class_scope(tmp_path):
    # S<U, M>::n names the class's m bare and W<U>; S<V *, 2>::n is the partial specialisation's member
    src = r'''
    template <class T> struct W { T a, b; };
    template <class T, int N = 2> struct S { static const int n; static const int m = 10;
      __device__ int get() const { return n + m; } };
    template <class U, int M> const int S<U, M>::n = sizeof(W<U>) * M + m;
    template <class T> struct S<T *, 2> { static const int n; };
    template <class V> const int S<V *, 2>::n = sizeof(V) + 100;
    template <int N> struct C { static const int n; };
    template <int K> const int C<K>::n = K * 3;
    __global__ void k(int *o) {
        S<short, 3> s;
        o[threadIdx.x] = S<char>::n * 1000000 + s.get() * 1000 + S<double *>::n + C<C<5>::n>::n * 10000000;
    }
    '''
    assert list(run(src, tmp_path)) == [45 * 10000000 + 14 * 1000000 + 32 * 1000 + 108] * 4


def test_a_static_member_initialiser_names_an_earlier_one_bare(tmp_path):
    src = "struct P { static const int m = 3; static const int n = m + 1; };\n" \
          "template <class T> struct Q { static const int m = sizeof(T); static const int n = m + 1; };\n" \
          "__global__ void k(int *o) { o[threadIdx.x] = P::n * 100 + Q<double>::n; }\n"
    assert list(run(src, tmp_path)) == [409] * 4


def test_a_class_template_static_member_initialised_in_and_outside_its_class_is_refused(tmp_path):
    # nvcc: member "A<T>::n" has already been initialized (an explicit specialisation may replace it)
    src = "template <class T> struct A { static const int n = 3; };\ntemplate <class T> const int A<T>::n = 4;\n" \
          "__global__ void k(int *o) { o[threadIdx.x] = A<char>::n; }\n"
    assert refused(src, tmp_path).startswith("static data member 'n' has already been initialised in its class")
    assert (compile_error(src).line, compile_error(src).col) == (2, 40)


def test_a_static_member_definition_for_a_partial_specialisation_never_declared_is_refused(tmp_path):
    # nvcc: template argument list must match the parameter list (also where no launch uses S)
    src = "template <class T> struct S { static const int n; };\n" \
          "template <class U> const int S<U *>::n = 1;\n" \
          "__global__ void k(int *o) { o[threadIdx.x] = 2; }\n"
    assert refused(src, tmp_path) == ("the template argument list of 'S<U *>::n' matches neither the parameter "
                                      "list of class template 'S' nor a partial specialisation of it")
    assert (compile_error(src).line, compile_error(src).col) == (2, 30)


def test_a_static_member_definition_with_more_template_parameters_than_its_class_is_refused(tmp_path):
    # nvcc: too many template parameters -- does not match previous declaration
    src = "template <class T> struct S { static const int n; };\n" \
          "template <class U, class V> const int S<U>::n = 1;\n" \
          "__global__ void k(int *o) { o[threadIdx.x] = 2; }\n"
    assert refused(src, tmp_path).startswith("'S<U>::n' has 2 template parameters, and neither class template 'S'")


def test_a_static_member_definition_of_a_declared_partial_specialisation_is_taken(tmp_path):
    src = "template <class T> struct S { static const int n; };\n" \
          "template <class T> struct S<T *> { static const int n; };\n" \
          "template <class U> const int S<U>::n = 1;\n" \
          "template <class U> const int S<U *>::n = 2;\n" \
          "__global__ void k(int *o) { o[threadIdx.x] = S<int>::n * 10 + S<int *>::n; }\n"
    assert list(run(src, tmp_path)) == [12] * 4


def test_an_assignment_to_a_class_template_static_member_is_no_definition(tmp_path):
    # nvcc: expression must be a modifiable lvalue (it was taken as the definition 'A<int>::n = 5')
    src = "template <class T> struct A { static const int n = 3; };\n" \
          "__global__ void k(int *o) { A<int>::n = 5; o[threadIdx.x] = A<int>::n; }\n"
    assert refused(src, tmp_path) == "expression is not assignable"
