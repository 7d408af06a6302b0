"""The system headers a kernel may include, as text for the preprocessor.

nvcc puts the CUDA runtime headers and the C library headers on the include
path; device code only needs what they declare for the device side. These are
the declarations our language understands (typedefs and limit macros); built-in
functions and vector types are known to the type checker without any header,
as they are to nvcc (which includes cuda_runtime.h implicitly).
"""
from __future__ import annotations

# <stdint.h>: exact-width types as on every 64-bit CUDA host (LP64).
_STDINT = """
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long uint64_t;
typedef long intptr_t;
typedef unsigned long uintptr_t;
#define INT8_MIN (-128)
#define INT8_MAX 127
#define UINT8_MAX 255
#define INT16_MIN (-32767-1)
#define INT16_MAX 32767
#define UINT16_MAX 65535
#define INT32_MIN (-2147483647-1)
#define INT32_MAX 2147483647
#define UINT32_MAX 4294967295u
#define INT64_MIN (-9223372036854775807LL-1)
#define INT64_MAX 9223372036854775807LL
#define UINT64_MAX 18446744073709551615ULL
"""

# <limits.h> (LP64, as on the CUDA host side).
_LIMITS = """
#define CHAR_BIT 8
#define SCHAR_MIN (-128)
#define SCHAR_MAX 127
#define UCHAR_MAX 255
#define CHAR_MIN SCHAR_MIN
#define CHAR_MAX SCHAR_MAX
#define SHRT_MIN (-32768)
#define SHRT_MAX 32767
#define USHRT_MAX 65535
#define INT_MIN (-2147483647-1)
#define INT_MAX 2147483647
#define UINT_MAX 4294967295u
#define LONG_MIN (-9223372036854775807L-1)
#define LONG_MAX 9223372036854775807L
#define ULONG_MAX 18446744073709551615UL
#define LLONG_MIN (-9223372036854775807LL-1)
#define LLONG_MAX 9223372036854775807LL
#define ULLONG_MAX 18446744073709551615ULL
"""

# <float.h>: IEEE binary32/binary64.
_FLOAT = """
#define FLT_MAX 3.402823466e+38F
#define FLT_MIN 1.175494351e-38F
#define FLT_EPSILON 1.192092896e-07F
#define FLT_DIG 6
#define FLT_MANT_DIG 24
#define DBL_MAX 1.7976931348623158e+308
#define DBL_MIN 2.2250738585072014e-308
#define DBL_EPSILON 2.2204460492503131e-016
#define DBL_DIG 15
#define DBL_MANT_DIG 53
"""

# <math.h>: constants and macros; the functions themselves are built in.
_MATH = """
#define M_PI 3.14159265358979323846
#define M_PI_2 1.57079632679489661923
#define M_PI_4 0.78539816339744830962
#define M_E 2.7182818284590452354
#define M_LN2 0.69314718055994530942
#define M_LN10 2.30258509299404568402
#define M_LOG2E 1.4426950408889634074
#define M_SQRT2 1.41421356237309504880
#define M_1_PI 0.31830988618379067154
#define M_2_PI 0.63661977236758134308
#define INFINITY __builtin_inff()
#define NAN __builtin_nanf("")
#define HUGE_VALF __builtin_inff()
#define HUGE_VAL __builtin_inf()
"""

# <assert.h>: assert is built in (a failed assert stops the kernel with a
# KernelError of kind 'assert'); NDEBUG turns it off as in C.
_ASSERT = """
#ifdef NDEBUG
#define assert(e) ((void)0)
#endif
"""

_STDDEF = """
#define NULL 0
"""

_CUDA_RUNTIME = '#include <stdint.h>\n#include <limits.h>\n#include <float.h>\n#include <math.h>\n#include <stddef.h>\n'

HEADERS: dict = {
    "stdint.h": _STDINT,
    "cstdint": _STDINT,
    "limits.h": _LIMITS,
    "climits": _LIMITS,
    "float.h": _FLOAT,
    "cfloat": _FLOAT,
    "math.h": _MATH,
    "cmath": _MATH,
    "stddef.h": _STDDEF,
    "cstddef": _STDDEF,
    "stdio.h": "",     # printf is built in (isa/printf_format.py)
    "cstdio": "",
    "stdlib.h": "",
    "assert.h": _ASSERT,
    "cassert": _ASSERT,
    "cuda_runtime.h": _CUDA_RUNTIME,
    "cuda.h": _CUDA_RUNTIME,
    "cuda_runtime_api.h": _CUDA_RUNTIME,
    "device_launch_parameters.h": "",
    "device_functions.h": "",
    "math_constants.h": "#define CUDART_PI_F 3.141592654f\n#define CUDART_INF_F __builtin_inff()\n"
                        "#define CUDART_NAN_F __builtin_nanf(\"\")\n#define CUDART_PI 3.1415926535897931e+0\n",
    "vector_types.h": "",
    # cooperative groups: the names are known to the checker (cooperative_groups.py)
    "cooperative_groups.h": "",
    "cooperative_groups/reduce.h": "#include <cooperative_groups.h>\n",
    "cooperative_groups/scan.h": "#include <cooperative_groups.h>\n",
    "vector_functions.h": "",
}

# Headers of features we do not support: a specific message beats "not found".
UNSUPPORTED_HEADERS: dict = {
    "cuda_fp16.h": "half precision (cuda_fp16.h) is not supported",
    "cuda_bf16.h": "bfloat16 (cuda_bf16.h) is not supported",
    "mma.h": "warp matrix functions (mma.h) are not supported",
    "texture_fetch_functions.h": "texture objects are not supported",
    "cub/cub.cuh": "CUB is not supported",
    "cooperative_groups/memcpy_async.h": "cooperative groups' memcpy_async is not supported",
    "thrust/device_vector.h": "Thrust is not supported",
    "iostream": "C++ standard library headers are not supported",
}
