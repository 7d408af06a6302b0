"""The whole front end as one call: text -> isa.ir.Module."""
from __future__ import annotations

import re
import sys
import threading
from typing import Optional, Union

from . import ir
from .diagnostics import CompileError
from .nesting import reached
from .parser import parse
from .preprocessor import preprocess, without_bom
from .typecheck import Checker

# deep expressions (a + b + ... with thousands of terms) recurse deeply in
# the tree builder and the checker; run them with room to spare
_RECURSION_LIMIT = 20000
# local memory per thread on cc >= 2.0 (CUDA C Programming Guide, "Features and
# Technical Specifications"); gpuemu passes its preset's max_local_bytes
MAX_LOCAL_BYTES = 512 * 1024
_LIMIT_LOCK = threading.Lock()


def ensure_recursion_limit(limit: int = _RECURSION_LIMIT) -> None:
    """Raise the process's recursion limit to `limit` if it is lower; never
    lower it (the limit is process-wide: a compile that put back its old limit
    would leave another thread's compile without room mid-parse)."""
    if sys.getrecursionlimit() < limit:
        with _LIMIT_LOCK:
            if sys.getrecursionlimit() < limit:
                sys.setrecursionlimit(limit)


def arch_number(arch: Union[int, str, None]) -> Optional[int]:
    """__CUDA_ARCH__ for an arch: 900, "sm_90", "compute_90" -> 900; None or a
    name without a number (e.g. "cc2x") -> None."""
    if arch is None:
        return None
    if isinstance(arch, int):
        return arch
    m = re.fullmatch(r"(?:sm_|compute_)?(\d)(\d+)[a-z]?", str(arch).strip())
    if m is None:
        return None
    return int(m.group(1)) * 100 + int(m.group(2)[:1]) * 10


def compile_source(text: str, filename: str = "<source>", include_dirs: tuple = (),
                   defines: Optional[dict] = None, arch: Union[int, str, None] = None,
                   max_local_bytes: int = MAX_LOCAL_BYTES) -> ir.Module:
    """Preprocess, parse, type-check and lower a CUDA C source.

    `arch` (900 or "sm_90") sets __CUDA_ARCH__ as nvcc's device pass does;
    include files are searched next to `filename`, then in `include_dirs`;
    `max_local_bytes` caps each function's per-thread local variables (the
    arch preset's max_local_bytes).
    Raises CompileError (file:line:col, source line, caret, one sentence) on
    any bad input."""
    arch = arch_number(arch)
    text = without_bom(text)
    pp = preprocess(text, filename, tuple(include_dirs), defines, arch)
    ensure_recursion_limit()
    ck = Checker(pp, text, filename, max_local_bytes, arch)
    try:
        return ck.check(parse(pp))
    except RecursionError as e:
        loc = reached(e.__traceback__, pp)
        raise (ck.error("expression or statement nesting too deep", loc) if loc is not None else
               CompileError("expression or statement nesting too deep", ir.Loc(filename, 1, 1), None)) from None
    except CompileError:
        raise
    except Exception as e:  # a front-end bug must still read as one diagnostic
        raise CompileError(f"internal error in the front end ({type(e).__name__}: {e}); please report it",
                           ir.Loc(filename, 1, 1), None) from e
