"""The preprocessor step: macros, conditionals, includes, true positions."""
from __future__ import annotations

import pytest

import isa
from isa import ir
from isa.preprocessor import preprocess
from isa_ir_walk import nodes, compile_error, nvcc_accepts


def kernel_const(src: str, **kw) -> int:
    """Value stored by the first Store of kernel k."""
    m = isa.compile_source(src, "t.cu", **kw)
    return nodes(m.kernel("k").body, ir.Store)[0].value.value


def test_object_macro_expands():
    assert kernel_const("#define N 42\n__global__ void k(int *p) { p[0] = N; }") == 42


def test_function_macro_expands():
    assert kernel_const("#define SQ(x) ((x) * (x))\n__global__ void k(int *p) { p[0] = SQ(3 + 1); }") == 16


def test_ifdef_selects_branch():
    src = "#define FAST\n#ifdef FAST\n#define V 1\n#else\n#define V 2\n#endif\n__global__ void k(int *p) { p[0] = V; }"
    assert kernel_const(src) == 1


def test_elif_chain():
    src = "#define L 2\n#if L == 1\n#define V 10\n#elif L == 2\n#define V 20\n#else\n#define V 30\n#endif\n" \
          "__global__ void k(int *p) { p[0] = V; }"
    assert kernel_const(src) == 20


def test_cudacc_and_nvcc_are_predefined():
    src = "#if defined(__CUDACC__) && defined(__NVCC__)\n#define V 1\n#else\n#define V 0\n#endif\n" \
          "__global__ void k(int *p) { p[0] = V; }"
    assert kernel_const(src) == 1


def test_cuda_arch_set_from_arch_argument():
    src = "__global__ void k(int *p) { p[0] = __CUDA_ARCH__; }"
    assert kernel_const(src, arch=900) == 900


def test_cuda_arch_undefined_without_arch():
    src = "#ifdef __CUDA_ARCH__\n#define V 1\n#else\n#define V 0\n#endif\n__global__ void k(int *p) { p[0] = V; }"
    assert kernel_const(src) == 0


def test_user_defines_argument():
    assert kernel_const("__global__ void k(int *p) { p[0] = BS; }", defines={"BS": "128"}) == 128


def test_include_local_file_relative_to_source(tmp_path):
    (tmp_path / "consts.cuh").write_text("#define W 7\n")
    src = '#include "consts.cuh"\n__global__ void k(int *p) { p[0] = W; }'
    m = isa.compile_source(src, str(tmp_path / "k.cu"))
    assert nodes(m.kernel("k").body, ir.Store)[0].value.value == 7


def test_include_from_include_dirs(tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "h.cuh").write_text("#define W 9\n")
    assert kernel_const('#include "h.cuh"\n__global__ void k(int *p) { p[0] = W; }',
                        include_dirs=(str(tmp_path / "inc"),)) == 9


def test_system_headers_are_accepted():
    src = ("#include <cuda_runtime.h>\n#include <cuda.h>\n#include <device_launch_parameters.h>\n"
           "#include <stdio.h>\n#include <stdint.h>\n#include <math.h>\n#include <float.h>\n#include <limits.h>\n"
           "__global__ void k(int *p) { p[0] = INT_MAX; }")
    assert kernel_const(src) == 2147483647


def test_stdint_types_come_from_header():
    m = isa.compile_source("#include <stdint.h>\n__global__ void k(uint32_t *p, int64_t *q) { p[0] = 1; }", "t.cu")
    assert [v.type.pointee for v in m.kernel("k").params] == [ir.U32, ir.I64]


def test_flt_max_from_float_h():
    m = isa.compile_source("#include <float.h>\n__global__ void k(float *p) { p[0] = FLT_MAX; }", "t.cu")
    v = nodes(m.kernel("k").body, ir.Store)[0].value
    assert v.type == ir.F32 and v.value == 3.4028234663852886e+38


def test_unknown_system_header_is_a_diagnostic():
    e = compile_error("int a;\n#include <thrust/sort.h>\n")
    assert e.message == "system header 'thrust/sort.h' not found" and (e.line, e.col) == (2, 1)


def test_missing_local_include_is_a_diagnostic():
    e = compile_error('#include "nothere.cuh"\n')
    assert "include file 'nothere.cuh' not found" in e.message


def test_error_directive_becomes_compile_error():
    e = compile_error("#if 1\n#error need sm_70\n#endif\n")
    assert e.message == "#error need sm_70" and e.line == 2


def test_macro_with_wrong_argument_count_is_diagnostic():
    e = compile_error("#define F(a) a\nint x = F(1, 2);\n")
    assert (e.line, e.col) == (2, 9) and e.message == 'macro "F" passed 2 arguments, but takes just 1'   # gcc's words


def test_line_numbers_stay_true_after_multiline_macro():
    src = "#define ADD(a, b) \\\n   ((a) + \\\n    (b))\n__global__ void k(int *p)\n{\n  p[0] = ADD(1, 2);\n  q = 1;\n}\n"
    e = compile_error(src)
    assert (e.line, e.col) == (7, 3) and e.source_line.strip() == "q = 1;"


def test_columns_true_after_block_comment():
    e = compile_error("__global__ void k()\n{\n  /* note */ y = 1;\n}\n")
    assert (e.line, e.col) == (3, 14)


def test_error_inside_included_file_names_that_file(tmp_path):
    (tmp_path / "bad.cuh").write_text("__device__ int f()\n{\n    return zz;\n}\n")
    src = '#include "bad.cuh"\n__global__ void k() {}\n'
    e = compile_error(src, str(tmp_path / "k.cu"))
    assert e.file.endswith("bad.cuh") and (e.line, e.col) == (3, 12)
    assert e.source_line.strip() == "return zz;"


def test_pragma_unroll_is_ignored():
    assert kernel_const("__global__ void k(int *p) {\n#pragma unroll\n for (int i = 0; i < 4; i++) p[i] = 5; }") == 5


def test_column_of_token_after_macro_use_maps_back():
    src = "#define LONGNAME_VALUE 1\n__global__ void k()\n{\n  int a = LONGNAME_VALUE + bad;\n}\n"
    e = compile_error(src)
    assert (e.line, e.col) == (4, 28)


def test_line_table_maps_every_line():
    pp = preprocess("#define A 1\nint x = A;\n\nint y;\n", "f.cu")
    assert pp.loc(len(pp.line_map) - 1, 1).line >= 1
    assert [pp.line_map[i] for i, l in enumerate(pp.out_lines) if "int y" in l] == [("f.cu", 4)]


def test_crlf_source_gives_clean_diagnostic():
    e = compile_error("__global__ void k(int *p)\r\n{\r\n  p[1] = q;\r\n}\r\n")
    assert (e.line, e.col) == (3, 10) and e.source_line == "  p[1] = q;"


def test_relative_filename_is_kept_and_source_line_found(tmp_path, monkeypatch):
    (tmp_path / "sub").mkdir()
    f = tmp_path / "sub" / "b.cu"
    f.write_text("__global__ void k(float *x)\n{\n    int i = threadIdx.x\n    x[i] = 1.0f;\n}\n")
    monkeypatch.chdir(tmp_path)
    e = compile_error(f.read_text(), "sub/../sub/b.cu")
    assert e.file == "sub/../sub/b.cu" and e.source_line == "    int i = threadIdx.x"


def test_pragma_once_header_included_twice(tmp_path):
    (tmp_path / "h.cuh").write_text("#pragma once\n__device__ inline int twice(int x) { return 2 * x; }\n")
    src = '#include "h.cuh"\n#include "h.cuh"\n__global__ void k(int *p) { p[0] = twice(3); }\n'
    m = isa.compile_source(src, str(tmp_path / "k.cu"))
    assert [f.name for f in m.functions] == ["twice", "k"]


K = "__global__ void k(int *p) { p[0] = 1; }\n"


def test_define_without_name_is_diagnostic_at_the_directive():
    e = compile_error("\n#define\n" + K)
    assert e.message == "no macro name given in #define directive"
    assert (e.line, e.col) == (2, 8) and e.source_line == "#define" and str(e).splitlines()[2] == " " * 7 + "^"


def test_define_of_a_number_is_diagnostic():
    e = compile_error("#define 5 x\n" + K)
    assert e.message == "macro names must be identifiers" and (e.line, e.col) == (1, 9)


def test_undef_without_name_is_diagnostic():
    e = compile_error("#undef\n" + K)
    assert e.message == "no macro name given in #undef directive" and e.line == 1


def test_include_without_file_name_is_diagnostic():
    e = compile_error(K + "#include\n")
    assert e.message == '#include expects "FILENAME" or <FILENAME>' and (e.line, e.col) == (2, 9)


def test_ifdef_without_name_is_diagnostic():
    e = compile_error("#ifdef\n#endif\n" + K)
    assert e.message == "no macro name given in #ifdef directive" and (e.line, e.col) == (1, 7)


def test_if_and_elif_without_expression_are_diagnostics():
    assert compile_error("#if\n#endif\n" + K).message == "#if with no expression"
    e = compile_error("#if 0\n#elif\n#endif\n" + K)
    assert e.message == "#elif with no expression" and (e.line, e.col) == (2, 6)


def test_if_of_a_macro_expanding_to_nothing_is_diagnostic_at_the_line_end():
    # gcc and nvcc: "t.cu:2:6: error: #if with no expression", the caret past the line
    e = compile_error("#define A\n#if A\n#endif\n" + K)
    assert e.message == "#if with no expression" and (e.line, e.col) == (2, 6) and e.source_line == "#if A"
    assert str(e).splitlines()[2] == " " * 5 + "^"


def test_elif_of_a_macro_expanding_to_nothing_is_diagnostic():
    e = compile_error("#define A\n#if 0\n#elif A\n#endif\n" + K)
    assert e.message == "#elif with no expression" and (e.line, e.col) == (3, 8)


def test_if_of_macros_expanding_to_blanks_is_diagnostic():
    e = compile_error("#define A /* c */\n#if A A\n#endif\n" + K)
    assert e.message == "#if with no expression" and (e.line, e.col) == (2, 8)


def test_if_of_an_empty_function_macro_call_is_diagnostic():
    e = compile_error("#define F(x)\n#if F(1)\n#endif\n" + K)
    assert e.message == "#if with no expression" and (e.line, e.col) == (2, 9)


def test_if_with_no_expression_caret_follows_a_comment_and_a_continued_line():
    assert (compile_error("#define A\n#if A // c\n#endif\n" + K).col) == 11   # gcc: 2:11
    e = compile_error("#define A\n#if A \\\n A\n#endif\n" + K)
    assert (e.line, e.col) == (3, 3)                                              # gcc: 3:3


def test_if_of_an_empty_macro_before_an_operand_is_accepted():
    # gcc reads "#if A + 1" as "#if + 1", a unary plus: true
    assert kernel_const("#define A\n#if A + 1\n#define V 1\n#else\n#define V 2\n#endif\n"
                        "__global__ void k(int *p) { p[0] = V; }") == 1


def test_elif_after_a_taken_branch_is_not_evaluated():
    # gcc accepts "#if 1 / #elif A" with A empty: the #elif is never evaluated
    assert kernel_const("#define A\n#if 1\n#elif A\n#endif\n" + K) == 1


def test_if_operator_left_without_operand_by_an_empty_macro_is_gccs_diagnostic():
    # gcc: "t.cu:2:10: error: operator '+' has no right operand"
    e = compile_error("#define A\n#if 1 + A\n#endif\n" + K)
    assert e.message == "operator '+' has no right operand" and (e.line, e.col) == (2, 10)


def test_if_parentheses_emptied_by_a_macro_are_gccs_diagnostic():
    # gcc: "error: missing expression between '(' and ')'"
    e = compile_error("#define A\n#if (A)\n#endif\n" + K)
    assert e.message == "missing expression between '(' and ')'" and e.line == 2


def test_if_division_by_zero_is_diagnostic():
    # gcc: "error: division by zero in #if"
    assert compile_error("#if 1 / 0\n#endif\n" + K).message == "division by zero in #if"


def test_if_expression_the_evaluator_refuses_is_quoted_at_the_operand():
    e = compile_error("#if 1.0\n#endif\n" + K)
    assert e.message == "invalid #if expression '1.0'" and (e.line, e.col) == (1, 5)


def test_directives_without_operand_in_a_skipped_group_are_ignored():
    # C11 6.10.1p6: a skipped group's directives are processed only for nesting
    assert kernel_const("#if 0\n#define\n#undef\n#include\n#ifdef\n#endif\n#endif\n" + K) == 1


def test_command_line_define_without_name_names_the_option():
    e = compile_error(K, defines={"": "5"})
    assert e.message == "command-line option -D=5: no macro name given"
    assert (e.file, e.line, e.col) == ("<command-line>", 1, 3) and e.source_line == "-D=5"


def test_command_line_define_of_a_number_names_the_option():
    e = compile_error(K, defines={"5": "1"})
    assert e.message == "command-line option -D5: macro names must be identifiers"


def test_command_line_function_macro_is_accepted():
    assert kernel_const("__global__ void k(int *p) { p[0] = F(2); }", defines={"F(x)": "x*3"}) == 6


def test_bare_d_option_of_a_module_names_the_option():
    import gpuemu
    try:
        gpuemu.RawModule(code=K, options=("-D",))
    except isa.CompileError as e:
        assert e.message == "command-line option -D: no macro name given" and e.file == "<command-line>"
    else:
        raise AssertionError("expected a CompileError")


def test_if_literal_wider_than_64_bits_is_diagnostic_at_the_directive():
    e = compile_error("#define BIG 0xfffffffffffffffffff\n#if BIG\n#endif\n" + K)
    assert e.message == "integer literal '0xfffffffffffffffffff' is too large for any integer type"
    assert (e.line, e.col) == (2, 5)


def test_if_multi_character_literal_has_gccs_value():
    assert kernel_const("#if 'ab' == 0x6162\n#define V 1\n#else\n#define V 2\n#endif\n"
                        "__global__ void k(int *p) { p[0] = V; }") == 1


def test_if_char_escape_out_of_range_is_diagnostic():
    e = compile_error("#if '\\777'\n#endif\n" + K)
    assert e.message == "octal escape sequence out of range in character literal '\\777'"


def test_error_in_a_file_named_by_absolute_path_keeps_that_path_line_and_caret(tmp_path, monkeypatch):
    # pcpp spells files relative to the working directory: the diagnostic names the file as given
    main = tmp_path / "inc" / "main.cu"
    main.parent.mkdir()
    main.write_text("// 1\n#if 1/0\n#endif\n")
    monkeypatch.chdir(tmp_path)
    e = compile_error(main.read_text(), str(main))
    assert (e.file, e.line, e.col, e.source_line) == (str(main), 2, 5, "#if 1/0")


def test_include_cycle_stops_at_gccs_depth_naming_the_chain(tmp_path):
    (tmp_path / "self.cuh").write_text('#include "self.cuh"\n')
    main = tmp_path / "main.cu"
    e = compile_error('#include "self.cuh"\n', str(main))
    assert e.message == ("#include nested too deeply (more than 200 levels: "
                         "main.cu:1 -> self.cuh:1 -> self.cuh:1 -> ...)")
    assert (e.file, e.line, e.col) == (str(tmp_path / "self.cuh"), 1, 10)


@pytest.mark.parametrize("src, line, message", [
    ("#endif\n", 1, "#endif without #if"),
    ("#else\n", 1, "#else without #if"),
    ("#elif 1\n", 1, "#elif without #if"),
    ("#if 0\n#else\n#elif 1\n#endif\n", 3, "#elif after #else"),
    ("#if 1\n#else\n#else\n#endif\n", 3, "#else after #else"),
    ("#if 0\n#if 1\n#else\n#elif 1\n#endif\n#endif\n", 4, "#elif after #else"),   # in a skipped group too
])
def test_conditional_directive_out_of_place_in_gccs_words(src, line, message):
    e = compile_error(src)
    assert (e.message, e.line, e.col) == (message, line, 2)


def test_unterminated_conditional_is_named_at_it():
    e = compile_error("int a;\n#ifdef X\nint b;\n")
    assert (e.message, e.line, e.source_line) == ("unterminated #ifdef", 2, "#ifdef X")


def test_macro_given_too_few_arguments_in_gccs_words_at_the_call():
    e = compile_error("#define F(a, b) a + b\nint x = F(1);\n")
    assert (e.message, e.line, e.col) == ('macro "F" requires 2 arguments, but only 1 given', 2, 9)


@pytest.mark.parametrize("directive, col, message", [
    ("#define F(a, a) a", 14, 'duplicate macro parameter "a"'),
    ("#define S(x) #y", 14, "'#' is not followed by a macro parameter"),
    ("#define P(x) ##x", 14, "'##' cannot appear at either end of a macro expansion"),
    ("#define P(x) x##", 15, "'##' cannot appear at either end of a macro expansion"),
    ("#if defined(", 13, 'operator "defined" requires an identifier'),
    ("#if defined", 12, 'operator "defined" requires an identifier'),
    ("#if defined(X", 14, "missing ')' after \"defined\""),
    ("#if defined(X) && defined 1", 27, 'operator "defined" requires an identifier'),
])
def test_malformed_macro_or_defined_is_refused_as_gcc_does(directive, col, message):
    e = compile_error(directive + "\n#if 0\n#endif\n")
    assert (e.message, e.line, e.col) == (message, 1, col)


def test_stringizing_and_pasting_parameters_still_define():
    src = "#define S(x) #x\n#define V(...) #__VA_ARGS__\n#define C(a, b) a##b\nS(ab) V(1, 2) C(1, 0)\n"
    assert preprocess(src, "t.cu").text.split() == ['"ab"', '"1,', '2"', "10"]


@pytest.mark.parametrize("src, line, col", [
    ("__global__ void k(int *p) { p[0] = 1; }\n/* never closed\n", 2, 1),
    ("/* never closed\n__global__ void k(int *p) { p[0] = 1; }\n", 1, 1),
    ("__global__ void k(int *p) {\n  p[0] = 1; /* oops\n}\n", 2, 13),
])
def test_unterminated_block_comment_is_named_at_its_start(src, line, col):
    e = compile_error(src)
    assert (e.message, e.line, e.col) == ("unterminated comment", line, col)


def test_comment_opener_in_a_line_comment_string_or_closed_comment_opens_nothing():
    src = ('// a /* in a line comment\n/* a closed one /* */\n'
           '__global__ void k(int *p) { printf("/*"); p[0] = \'/\' * 2; }\n')
    assert kernel_const(src) == ord("/") * 2


def test_unterminated_comment_in_an_included_file_is_named_there(tmp_path):
    (tmp_path / "h.cuh").write_text("int a;\n  /* open\n")
    e = compile_error('#include "h.cuh"\n', str(tmp_path / "main.cu"))
    assert (e.message, e.file, e.line, e.col) == ("unterminated comment", str(tmp_path / "h.cuh"), 2, 3)


def test_byte_order_mark_is_skipped_keeping_columns(tmp_path):
    src = "\ufeff#define V 7\n__global__ void k(int *p) { p[0] = V; }\n"
    nvcc_accepts(src, tmp_path)
    assert kernel_const(src) == 7
    e = compile_error("\ufeff__global__ void k(int *p) { p[0] = 1 + ; }\n")
    assert (e.line, e.col) == (1, 40) and not e.source_line.startswith("\ufeff")


def test_byte_order_mark_of_an_included_file_is_skipped(tmp_path):
    (tmp_path / "h.cuh").write_text("\ufeff#define V 9\n", encoding="utf-8")
    m = isa.compile_source('#include "h.cuh"\n__global__ void k(int *p) { p[0] = V; }\n', str(tmp_path / "m.cu"))
    assert nodes(m.kernel("k").body, ir.Store)[0].value.value == 9


def test_pragma_operator_is_dropped_as_a_pragma_directive_is(tmp_path):
    src = ('#define UNROLL _Pragma("unroll 2")\n'
           '__global__ void k(int *p) { _Pragma("unroll") for (int j = 0; j < 4; j++) p[0] = 5;\n'
           '  UNROLL for (int j = 0; j < 4; j++) p[1] = 2 + ; }\n')
    nvcc_accepts(src.replace("2 + ;", "2;"), tmp_path)
    assert kernel_const(src.replace("2 + ;", "2;")) == 5
    e = compile_error(src)
    assert (e.line, e.col) == (3, 49)      # the ";" after "2 + ": columns stay true


def test_pragma_operator_without_a_string_is_named():
    e = compile_error("__global__ void k(int *p) { _Pragma(unroll) p[0] = 1; }\n")
    assert (e.message, e.col) == ("_Pragma takes a parenthesized string literal", 29)
