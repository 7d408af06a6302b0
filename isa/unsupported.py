"""CUDA/C++ constructs outside our language, named so the user sees what is
unsupported instead of a syntax error. Checked on the token stream before
parsing (see parser.py), so the diagnostic points at the construct itself."""
from __future__ import annotations

# keyword or identifier -> message. Identifiers count only when used as a
# name (not as a struct member after '.'/'->').
KEYWORDS: dict = {
    "typename": "dependent type names (typename T::x) are not supported",
    "class": "classes are not supported",
    "virtual": "virtual functions are not supported",
    "public": "classes are not supported",
    "private": "classes are not supported",
    "protected": "classes are not supported",
    "friend": "classes are not supported",
    "new": "new and delete are not supported",
    "delete": "new and delete are not supported",
    "goto": "goto is not supported",
    "throw": "exceptions are not supported",
    "try": "exceptions are not supported",
    "catch": "exceptions are not supported",
    "asm": "inline PTX assembly (asm) is not supported",
    "__asm__": "inline PTX assembly (asm) is not supported",
    "decltype": "decltype is not supported",
    "__managed__": "managed memory (__managed__) is not supported",
    "dynamic_cast": "dynamic_cast is not supported (no classes with virtual functions)",
    "__half": "half precision is not supported",
    "__half2": "half precision is not supported",
    "__nv_bfloat16": "bfloat16 is not supported",
    "__grid_constant__": "__grid_constant__ is not supported",
    "__cluster_dims__": "thread block clusters (__cluster_dims__) are not supported",
}

# identifiers that are only unsupported when called or used as a type
CALLS: dict = {
    "malloc": "device-side malloc and free are not supported",
    "free": "device-side malloc and free are not supported",
    "clock": "clock() is not supported",
    "clock64": "clock64() is not supported",
    "tex3D": "3D, layered and cubemap textures are not supported (tex1Dfetch, tex1D, tex2D are)",
    "tex2DLayered": "3D, layered and cubemap textures are not supported (tex1Dfetch, tex1D, tex2D are)",
    "texCubemap": "3D, layered and cubemap textures are not supported (tex1Dfetch, tex1D, tex2D are)",
    "surf1Dread": "surface objects are not supported",
    "surf2Dread": "surface objects are not supported",
    "surf1Dwrite": "surface objects are not supported",
    "surf2Dwrite": "surface objects are not supported",
    "this_grid": "grid-wide cooperative groups (this_grid) are not supported",
    "cudaMalloc": "host API calls are not supported in kernel code",
    "cudaMemcpy": "host API calls are not supported in kernel code",
    "__syncthreads_count": "'__syncthreads_count' is not supported",
    "__syncthreads_and": "'__syncthreads_and' is not supported",
    "__syncthreads_or": "'__syncthreads_or' is not supported",
    "__nanosleep": "'__nanosleep' is not supported",
    "__trap": "'__trap' is not supported",
    "__brkpt": "'__brkpt' is not supported",
    "__prof_trigger": "'__prof_trigger' is not supported",
    "_Pragma": "_Pragma takes a parenthesized string literal",   # one that does is dropped (preprocessor.py)
}
# warp reduce/match functions (sm_70/sm_80) and SIMD video intrinsics
for _n in ("add", "min", "max", "and", "or", "xor"):
    CALLS[f"__reduce_{_n}_sync"] = f"'__reduce_{_n}_sync' is not supported"
for _n in ("__match_any_sync", "__match_all_sync", "__funnelshift_l", "__funnelshift_r", "__funnelshift_lc",
           "__funnelshift_rc", "__dp4a", "__dp2a_lo", "__dp2a_hi", "__vadd2", "__vadd4", "__vsub2", "__vsub4",
           "__vabsdiffu4", "__hadd", "__rhadd", "__uhadd", "__urhadd", "__fns", "__ldcs", "__stcs"):
    CALLS[_n] = f"'{_n}' is not supported"
CALLS.pop("__ldcs")   # plain loads and stores (builtins.LOADS/STORES)
CALLS.pop("__stcs")

NAMES: dict = {
    "texture": "texture references are not supported: use a cudaTextureObject_t (gpuemu.Texture)",
    "cudaSurfaceObject_t": "surface objects are not supported",
    "grid_group": "grid-wide cooperative groups (grid_group) are not supported",
}

# NAMES count when used as a type: followed by a name, '<' or '::'.

# punctuation sequences
PUNCT: dict = {
    "::": "this '::' qualified name is not supported",
    "<<<": "kernel launches (<<<...>>>) are not supported in kernel source",
    "...": "variadic functions are not supported",
}
