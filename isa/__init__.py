"""The kernel language: a true subset of CUDA C -> isa.ir (see isa/ir.py).

    module = isa.compile_source(text, filename="k.cu", include_dirs=(), defines=None, arch=None)

One module per step: preprocessor.py (pcpp; positions mapped back to the
user's files) -> parser.py + grammar.lark (lark LALR; typedef names found by a
token pre-pass; unsupported.py names C++/CUDA constructs we reject) -> ast.py
-> typecheck.py (module level: declarations, functions, globals, recursion)
+ lower.py (statements, expressions, C's conversions) + calls.py (device
calls and CUDA built-ins, tables in builtins.py) -> ir.Module. Helpers:
conversions.py (promotions, literal types), declarations.py (type words,
struct layout), const_fold.py (constant expressions, init images),
system_headers.py (<stdint.h>, <float.h>, ... as text).

Conventions the IR docstring leaves open, fixed here:
- Kernel pointer parameters have PointerType(..., 'global'); other declared
  pointers are 'generic'; expressions keep a statically known space
  (AddrOf of a __shared__ array is 'shared') and Casts convert between them.
- Temporaries (names '__tmpN') are Decl'd at the top of the function body.
- __shared__ variables get no Decl: they are in Function.shared_vars (the
  kernel's list also holds those of the device functions it calls, and the
  file-scope __shared__ variables it uses).
- A memory-resident local (array, struct, address-taken scalar) is Decl'd
  without init; its initialiser follows as Stores (or a MemCopy).
- A parameter whose address is taken is copied into a 'local' Var of the
  same name at function entry.
- Structs by value into __device__ functions: the parameter is a
  PointerType(struct, 'local') Var and the caller passes the address of a
  fresh local copy; a struct result is written through a hidden last
  parameter '__ret' (PointerType(struct, 'local')), the function returns VOID.
  Kernels' struct parameters stay by value (storage 'param', read via AddrOf).
- ExprStmt(Intrinsic atomic_*) and (void)atomic*(...) have result_used False.
"""
from __future__ import annotations

from . import ir
from .diagnostics import CompileError
from .frontend import compile_source

__all__ = ["compile_source", "CompileError", "ir"]
