"""programs/texture_walk.cu on a real GPU (CuPy): the column walk through
global memory and through a 2D texture (a CUDA array, point filtering).

Run on the GPU machine: python benchmarks/texture_walk_h100.py
Results in benchmarks/results/texture_walk_h100.json."""
import json
import pathlib
import time

import cupy as cp
import numpy as np
from cupy.cuda import texture as T

SRC = pathlib.Path(__file__).resolve().parent.parent / "programs" / "texture_walk.cu"


def best(fn, reps=20):
    fn()
    cp.cuda.Device().synchronize()
    out = 1e9
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        cp.cuda.Device().synchronize()
        out = min(out, time.perf_counter() - t0)
    return out


def main(src=None):
    code = src or SRC.read_text()
    mod = cp.RawModule(code=code)
    res = {}
    for w, h in ((256, 512), (1024, 8192), (4096, 16384)):
        img = np.random.default_rng(0).random((h, w), dtype=np.float32)
        d = cp.asarray(img)
        ch = T.ChannelFormatDescriptor(32, 0, 0, 0, cp.cuda.runtime.cudaChannelFormatKindFloat)
        arr = T.CUDAarray(ch, w, h)
        arr.copy_from(img)
        rd = T.ResourceDescriptor(cp.cuda.runtime.cudaResourceTypeArray, cuArr=arr)
        td = T.TextureDescriptor((cp.cuda.runtime.cudaAddressModeClamp,) * 2,
                                 cp.cuda.runtime.cudaFilterModePoint, cp.cuda.runtime.cudaReadModeElementType)
        tex = T.TextureObject(rd, td)
        og, ot = cp.zeros(h, cp.float32), cp.zeros(h, cp.float32)
        g, t = mod.get_function("walk_global"), mod.get_function("walk_texture")
        grid = ((h + 127) // 128,)
        a = (np.int32(w), np.int32(h))
        tg = best(lambda: g(grid, (128,), (og, d) + a))
        tt = best(lambda: t(grid, (128,), (ot, tex) + a))
        assert cp.allclose(og, ot, rtol=1e-4)
        res[f"{w}x{h}"] = {"global_s": tg, "texture_s": tt}
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
