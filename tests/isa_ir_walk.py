"""Test helpers for the front-end tests: compile a snippet, walk its IR."""
from __future__ import annotations

import isa
from isa import ir


def compile_kernel(body: str, params: str = "", prelude: str = "", name: str = "k") -> ir.Function:
    """Compile `__global__ void k(params) { body }` and return the kernel."""
    src = f"{prelude}\n__global__ void {name}({params})\n{{\n{body}\n}}\n"
    return isa.compile_source(src, "t.cu").kernel(name)


def nodes(root, cls) -> list:
    """Every node of class `cls` under `root` (pre-order)."""
    out = []

    def walk(n):
        if isinstance(n, cls):
            out.append(n)
        if isinstance(n, (ir.Expr, ir.Stmt, ir.Function)):
            for k, v in vars(n).items():
                if k in ("type", "loc", "var", "func", "params", "shared_vars"):
                    continue
                if isinstance(v, (ir.Expr, ir.Stmt)):
                    walk(v)
                elif isinstance(v, list):
                    for x in v:
                        if isinstance(x, (ir.Expr, ir.Stmt)):
                            walk(x)
    walk(root)
    return out


def stmts(fn: ir.Function) -> list:
    """The kernel body's statements without the temporaries' Decls."""
    return [s for s in fn.body.stmts if not (isinstance(s, ir.Decl) and s.var.name.startswith("__tmp"))]


def decl_init(fn: ir.Function, name: str) -> ir.Expr:
    for d in nodes(fn.body, ir.Decl):
        if d.var.name == name:
            return d.init
    raise KeyError(name)


def compile_error(src: str, filename: str = "t.cu", **kw) -> isa.CompileError:
    try:
        isa.compile_source(src, filename, **kw)
    except isa.CompileError as e:
        return e
    raise AssertionError("expected a CompileError")


def nvcc_accepts(src: str, tmp_path) -> None:
    """Assert nvcc (sm_90) compiles `src`; skip where nvcc is not on the PATH."""
    import shutil
    from pathlib import Path

    import pytest
    from conftest import nvcc_cubin
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on the PATH")
    f = Path(tmp_path) / "k.cu"
    f.write_text(src)
    nvcc_cubin(nvcc, f, tmp_path)


NVCC = __import__("shutil").which("nvcc")


def nvcc_result(src: str, tmp_path):
    """nvcc's result (sm_90, device code) on `src` written to tmp_path/k.cu."""
    from pathlib import Path

    from conftest import nvcc_compile
    f = Path(tmp_path) / "k.cu"
    f.write_text(src)
    return nvcc_compile(NVCC, f, Path(tmp_path))


def run(src: str, tmp_path, n: int = 4):
    """o[i] of `k(int *o)` on one block of n threads; nvcc must compile src too."""
    import numpy as np

    import gpuemu
    if NVCC is not None:
        r = nvcc_result(src, tmp_path)
        assert r.returncode == 0, r.stderr
    o = gpuemu.zeros(n, dtype=np.int32)
    gpuemu.RawModule(code=src).get_function("k")((1,), (n,), (o,))
    return o.get()


def refused(src: str, tmp_path) -> str:
    """gpuemu's message for src, which nvcc refuses as well."""
    if NVCC is not None:
        assert nvcc_result(src, tmp_path).returncode != 0
    return compile_error(src).message
