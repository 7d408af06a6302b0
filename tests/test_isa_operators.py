"""User-defined operators on structs and vector types (isa/operators.py):
member and free operator functions called by operator expressions; every
accepted kernel is also compiled by nvcc (where it is on the PATH)."""
from __future__ import annotations


from isa_ir_walk import NVCC, compile_error, nvcc_result, run

VEC = r'''
struct V {
    float x, y;
    __device__ V operator+(const V &o) const { V r; r.x = x + o.x; r.y = y + o.y; return r; }
    __device__ V &operator+=(const V &o) { x += o.x; y += o.y; return *this; }
    __device__ V operator-() const { V r; r.x = -x; r.y = -y; return r; }
    __device__ V operator-(const V &o) const { V r; r.x = x - o.x; r.y = y - o.y; return r; }
    __device__ float operator[](int i) const { return i == 0 ? x : y; }
    __device__ float &operator[](int i) { if (i == 0) return x; return y; }
    __device__ bool operator==(const V &o) const { return x == o.x && y == o.y; }
    __device__ bool operator<(const V &o) const { return x < o.x; }
};
__device__ V operator*(const V &a, float s) { V r; r.x = a.x * s; r.y = a.y * s; return r; }
__device__ V operator*(float s, const V &a) { return a * s; }
'''


def kernel(body: str, prelude: str = VEC) -> str:
    return prelude + "__global__ void k(int *o) {\n    V a = {1.f, 2.f}, b = {3.f, 4.f};\n" + body + "\n}\n"


def test_member_binary_operator(tmp_path):
    src = kernel("V c = a + b; o[threadIdx.x] = (int)(c.x * 100 + c.y);")
    assert list(run(src, tmp_path)) == [406] * 4


def test_compound_assignment_operator_returning_a_reference(tmp_path):
    src = kernel("V c = b; c += a; (c += a) += a; o[threadIdx.x] = (int)(c.x * 100 + c.y);")
    assert list(run(src, tmp_path)) == [610] * 4


def test_unary_minus_and_binary_minus_are_told_apart_by_arity(tmp_path):
    src = kernel("V d = -(b - a); o[threadIdx.x] = (int)(d.x * 100 + d.y);")
    assert list(run(src, tmp_path)) == [-202] * 4


def test_free_operators_with_the_scalar_on_either_side(tmp_path):
    src = kernel("V c = a * 2.f; V d = 3.f * b; o[threadIdx.x] = (int)(c.x + c.y * 10 + d.x * 100 + d.y * 1000);")
    assert list(run(src, tmp_path)) == [2 + 40 + 900 + 12000] * 4


def test_subscript_operator_returning_a_reference_is_assignable(tmp_path):
    src = kernel("a[1] = 10.f; a[0] += 5.f; a[1]++; o[threadIdx.x] = (int)(a.x * 100 + a.y);")
    assert list(run(src, tmp_path)) == [611] * 4


def test_subscript_operator_of_a_const_object_returns_a_value(tmp_path):
    src = kernel("const V c = b; o[threadIdx.x] = (int)(c[0] * 10 + c[1]);")
    assert list(run(src, tmp_path)) == [34] * 4


def test_comparison_operators_give_bool(tmp_path):
    src = kernel("V c = a; o[threadIdx.x] = (a == c) * 1000 + (a == b) * 100 + (a < b) * 10 + (b < a);")
    assert list(run(src, tmp_path)) == [1010] * 4


def test_operator_on_a_struct_result(tmp_path):
    src = kernel("o[threadIdx.x] = (int)((a + b) * 2.f)[1] + (int)(a + b + b).x * 100;")
    assert list(run(src, tmp_path)) == [12 + 700] * 4


FLOAT2 = r'''
__device__ float2 operator+(float2 a, float2 b) { return make_float2(a.x + b.x, a.y + b.y); }
__device__ void operator+=(float2 &a, float2 b) { a.x += b.x; a.y += b.y; }
__device__ float2 operator*(float2 a, float s) { return make_float2(a.x * s, a.y * s); }
'''


def test_free_operators_on_cuda_vector_types(tmp_path):
    src = FLOAT2 + r'''
    __global__ void k(int *o) {
        float2 p = make_float2(1, 2), q = make_float2(10, 20);
        float2 r = p + q * 2.f;
        r += p;
        o[threadIdx.x] = (int)(r.x * 1000 + r.y) + (int)(p + q).y * 1000000;
    }
    '''
    assert list(run(src, tmp_path)) == [22044 + 22000000] * 4


def test_built_in_operators_keep_their_meaning_beside_user_operators(tmp_path):
    src = FLOAT2 + r'''
    __global__ void k(int *o) {
        int i = threadIdx.x; float f = 1.5f;
        o[threadIdx.x] = (i + 2) * 3 + (int)(f * 2.f);
    }
    '''
    assert list(run(src, tmp_path)) == [(i + 2) * 3 + 3 for i in range(4)]


def test_operator_call_spelled_as_a_member_call(tmp_path):
    src = kernel("V c = a.operator+(b); o[threadIdx.x] = (int)c.y;")
    assert list(run(src, tmp_path)) == [6] * 4


def test_struct_without_a_matching_operator_is_an_error_naming_the_operator(tmp_path):
    src = FLOAT2 + "struct W { float x; };\n__global__ void k(int *o) { W a = {1.f}, b = {2.f}; W c = a + b; o[0] = 1; }\n"
    e = compile_error(src)
    assert e.message == "no operator '+' matches these operands (struct W, struct W); candidates: operator+(float2, float2)"
    if NVCC is not None:
        assert "no operator \"+\" matches these operands" in nvcc_result(src, tmp_path).stderr


def test_struct_without_any_operator_keeps_the_built_in_diagnostic():
    e = compile_error("struct V { float x; };\n__global__ void k(int *o) { V a = {1.f}, b = {2.f}; V c = a + b; }\n")
    assert e.message == "invalid operands to binary '+' ('struct V' and 'struct V')"


def test_user_defined_assignment_operator_is_refused():
    e = compile_error("struct V { float x; __device__ V &operator=(const V &o) { x = o.x; return *this; } };\n")
    assert e.message == "a user-defined operator= is not supported (a struct is assigned member by member)"
    assert (e.line, e.col) == (1, 35)


def test_operator_on_built_in_types_only_is_refused():
    e = compile_error("enum E { A, B };\n__device__ E operator|(E a, E b) { return B; }\n")
    assert e.message == "'operator|' needs a parameter of struct or vector type (operators on enums are not supported)"


def test_unary_address_of_operator_is_refused():
    e = compile_error("struct V { float x; __device__ V *operator&() { return this; } };\n")
    assert e.message == "overloading unary operator& is not supported"


def test_function_returning_a_reference_is_an_assignable_place(tmp_path):
    src = r'''
    __device__ int &at(int *p, int i) { return p[i]; }
    __global__ void k(int *o) { at(o, threadIdx.x) = 5; at(o, threadIdx.x) += (int)threadIdx.x; }
    '''
    assert list(run(src, tmp_path)) == [5, 6, 7, 8]


def test_operator_with_a_struct_result_as_a_statement(tmp_path):
    src = kernel("a + b; -a; o[threadIdx.x] = (int)a.x;")
    assert list(run(src, tmp_path)) == [1] * 4


def test_prefix_and_postfix_increment_operators(tmp_path):
    src = r'''
    struct C {
        int n;
        __device__ C &operator++() { n += 1; return *this; }
        __device__ C operator++(int) { C old = *this; n += 10; return old; }
        __device__ C &operator--() { n -= 100; return *this; }
    };
    __global__ void k(int *o) {
        C c = {0};
        ++c; c++;
        C d = c++;
        C e = ++c;
        --c;
        int i = 0; i++; ++i;
        o[threadIdx.x] = c.n * 10000 + d.n * 100 + e.n + i * 1000000;
    }
    '''
    assert list(run(src, tmp_path)) == [-780000 + 1100 + 22 + 2000000] * 4
