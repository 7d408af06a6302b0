"""Arithmetic and warp semantics on a real GPU (CuPy) against gpuemu, bit for bit.

The same CUDA C runs on the GPU and in gpuemu on the same inputs: float to
char/short conversions out of range, the float intrinsics with a rounding
mode (__fadd_rz, __fmaf_ru, __fdiv_rd, __frcp_*, __fsqrt_*, __frsqrt_rn),
__fdividef's special range (an approximate intrinsic: its rows say how many
ulps apart), __shfl_up_sync/__shfl_down_sync for deltas
0..40 at widths 32/16/8, a switch without default and a struct reference
parameter. A result matches where the bits are equal (any NaN matches any
NaN: the GPU's canonical NaN is not a rule of the language). The GPU
side is compiled by nvcc with its defaults (-ftz=false: subnormals kept, as
gpuemu keeps them; CuPy's NVRTC path forces -ftz=true).

Run on the GPU machine from the repository root:
    python benchmarks/semantics_h100.py [--json benchmarks/results/semantics_h100.json]
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SRC = r"""
struct S { int v; };
__device__ void inc(S &b) { b.v += 7; }

template <typename T>
__device__ void narrow_to(T f, int *o) {
    o[0] = (char)f; o[1] = (unsigned char)f; o[2] = (short)f; o[3] = (unsigned short)f;
    o[4] = (signed char)f;
}

extern "C" __global__ void narrow(const float *x, const double *d, int *o, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        narrow_to(x[i], o + 10 * i);
        narrow_to(d[i], o + 10 * i + 5);
    }
}

#define ROUNDED(OUT, F, ...) OUT[0] = F##_rn(__VA_ARGS__); OUT[1] = F##_rz(__VA_ARGS__); \
                             OUT[2] = F##_ru(__VA_ARGS__); OUT[3] = F##_rd(__VA_ARGS__);

extern "C" __global__ void rounding(const float *a, const float *b, const float *c, float *o, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float x = a[i], y = b[i], z = c[i];
        float *r = o + 30 * i;
        ROUNDED(r, __fadd, x, y)
        ROUNDED((r + 4), __fsub, x, y)
        ROUNDED((r + 8), __fmul, x, y)
        ROUNDED((r + 12), __fmaf, x, y, z)
        ROUNDED((r + 16), __fdiv, x, y)
        ROUNDED((r + 20), __frcp, x)
        ROUNDED((r + 24), __fsqrt, x)
        r[28] = __frsqrt_rn(x);
        r[29] = __fdividef(x, y);
    }
}

extern "C" __global__ void shuffles(int *o, int delta, int width) {
    int t = threadIdx.x;
    o[t] = __shfl_up_sync(0xffffffffu, t * 10 + 1, delta, width);
    o[32 + t] = __shfl_down_sync(0xffffffffu, t * 10 + 1, delta, width);
}

extern "C" __global__ void control(const int *op, int *o, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int r = 100;
    switch (op[i]) {
        case 1: r += 1; break;
        case 2: r += 2; break;
    }
    S s; s.v = op[i];
    inc(s);
    o[2 * i] = r;
    o[2 * i + 1] = s.v;
}
"""


def _floats(n: int, seed: int) -> np.ndarray:
    """Random float bit patterns (subnormals, huge, inf, NaN among them),
    ordinary values, and the edges the rounding rules turn on."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 1 << 32, size=n // 2, dtype=np.uint64).astype(np.uint32).view(np.float32)
    plain = (rng.standard_normal(n - n // 2 - 16) * 10.0 ** rng.integers(-3, 4, n - n // 2 - 16)).astype(np.float32)
    edges = np.array([0.0, -0.0, 1.0, -1.0, 1.5 * 2.0 ** -24, 2.0 ** 127, -2.0 ** 127, 3e38, np.inf, -np.inf,
                      np.nan, 1e-45, -1e-45, 1.17549435e-38, 3.4028235e38, 0.1], dtype=np.float32)
    return np.concatenate([bits, plain, edges])


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise: equal bits, or both NaN."""
    if a.dtype.kind == "f":
        return (a.view(np.uint32 if a.itemsize == 4 else np.uint64)
                == b.view(np.uint32 if b.itemsize == 4 else np.uint64)) | (np.isnan(a) & np.isnan(b))
    return a == b


def _cases():
    """(name, kernel, grid, block, inputs (numpy), output index, labels of the output's columns)"""
    n = 4096
    x = _floats(n, 1)
    narrow_in = np.concatenate([x[:n - 24], np.array([300.0, -200.0, 3e9, 40000.0, 70000.0, -1.0, 255.9,
                                                       -129.0, 128.0, 65535.5, 2.0 ** 31, -2.0 ** 31,
                                                       2.0 ** 32, -3e9, 1e20, -1e20, np.nan, np.inf,
                                                       -np.inf, 32768.0, -32769.0, 127.5, -0.5, 0.99],
                                                      dtype=np.float32)])
    cols = ["char", "uchar", "short", "ushort", "schar"]
    yield ("narrow", "narrow", ((n + 127) // 128,), (128,),
           [narrow_in, narrow_in.astype(np.float64), np.zeros(10 * n, np.int32), np.int32(n)], 2,
           [c + "(float)" for c in cols] + [c + "(double)" for c in cols])
    a, b, c = _floats(n, 2), _floats(n, 3), _floats(n, 4)
    b[: n // 8] = (2.0 ** np.random.default_rng(5).uniform(126, 128, n // 8)).astype(np.float32)   # __fdividef's range
    names = [f"{f}_{m}" for f in ("__fadd", "__fsub", "__fmul", "__fmaf", "__fdiv", "__frcp", "__fsqrt")
             for m in ("rn", "rz", "ru", "rd")] + ["__frsqrt_rn", "__fdividef"]
    yield ("rounding", "rounding", ((n + 127) // 128,), (128,),
           [a, b, c, np.zeros(30 * n, np.float32), np.int32(n)], 3, names)
    for width in (32, 16, 8):
        for delta in range(41):
            yield (f"shuffle w{width} d{delta}", "shuffles", (1,), (32,),
                   [np.zeros(64, np.int32), np.int32(delta), np.int32(width)], 0, ["up", "down"])
    op = np.arange(-4, 60, dtype=np.int32) % 5
    yield ("control", "control", (1,), (64,), [op, np.zeros(128, np.int32), np.int32(64)], 1,
           ["switch without default", "struct reference"])


def _gpu_module():
    """SRC compiled by nvcc (its defaults: -ftz=false, subnormals kept, as
    gpuemu keeps them) and loaded by CuPy. CuPy's own RawModule(code=...)
    compiles with NVRTC and adds -ftz=true (cupy/cuda/compiler.py), which no
    option given after it undoes: subnormal operands and results of float
    arithmetic become zero there."""
    import subprocess
    import tempfile
    import cupy as cp
    tmp = pathlib.Path(tempfile.mkdtemp())
    (tmp / "k.cu").write_text(SRC)
    subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-cubin", "-o", str(tmp / "k.cubin"), str(tmp / "k.cu")],
                   check=True)
    return cp.RawModule(path=str(tmp / "k.cubin"))


def _on_gpu(name, grid, block, args, out):
    import cupy as cp
    mod = _on_gpu.mod = getattr(_on_gpu, "mod", None) or _gpu_module()
    dev = [cp.asarray(v) if isinstance(v, np.ndarray) else v for v in args]
    mod.get_function(name)(grid, block, tuple(dev))
    return cp.asnumpy(dev[out])


def _ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Floats apart, counted on the ordered integer line (0 where both are NaN)."""
    def line(v):
        i = v.astype(np.float32).view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    d = np.abs(line(a) - line(b))
    return np.where(np.isnan(a) & np.isnan(b), 0, d)


def _on_gpuemu(name, grid, block, args, out, arch):
    import gpuemu
    mod = _on_gpuemu.mod = getattr(_on_gpuemu, "mod", None) or gpuemu.RawModule(code=SRC, arch=arch)
    host = [v.copy() if isinstance(v, np.ndarray) else v for v in args]
    mod.get_function(name)(grid, block, tuple(host))
    return host[out]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--gpuemu-only", action="store_true", help="no GPU: run gpuemu alone (a smoke run)")
    args = ap.parse_args(argv)
    rows = []
    for case, kern, grid, block, inputs, out, labels in _cases():
        mine = _on_gpuemu(kern, grid, block, inputs, out, args.arch)
        theirs = mine if args.gpuemu_only else _on_gpu(kern, grid, block, inputs, out)
        m, t = mine.reshape(-1, len(labels)), theirs.reshape(-1, len(labels))
        ok = _same(m, t)
        for j, label in enumerate(labels):
            bad = np.flatnonzero(~ok[:, j])
            row = {"case": case, "column": label, "values": int(len(ok)), "differ": int(len(bad))}
            if m.dtype.kind == "f" and len(bad):
                row["most_ulps"] = int(_ulps(m[:, j], t[:, j]).max())
            if len(bad):
                k = int(bad[0])
                row["first"] = {"index": k, "gpuemu": m[k, j].item(), "gpu": t[k, j].item()}
            rows.append(row)
    shown = [r for r in rows if r["differ"] or not r["case"].startswith("shuffle")]
    print("| case | result | values | differ | most ulps apart | first difference (index: gpuemu / GPU) |")
    print("|---|---|---|---|---|---|")
    for r in shown:
        f = r.get("first")
        first = "" if f is None else "%d: %r / %r" % (f["index"], f["gpuemu"], f["gpu"])
        print(f"| {r['case']} | {r['column']} | {r['values']} | {r['differ']} | {r.get('most_ulps', '')} | {first} |")
    shuf = [r for r in rows if r["case"].startswith("shuffle")]
    print(f"shuffles: {len(shuf)} columns (up and down, deltas 0-40, widths 32/16/8), "
          f"{sum(r['differ'] for r in shuf)} lanes differ")
    total = sum(r["differ"] for r in rows)
    print(f"all: {sum(r['values'] for r in rows)} values, {total} differ")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"arch": args.arch, "rows": rows}, indent=1))
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
