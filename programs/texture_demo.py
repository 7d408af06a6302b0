"""The column walk of programs/texture_walk.cu through global memory and
through a texture, side by side.

    python programs/texture_demo.py [--arch sm_90] [--w 256] [--h 512]
"""
import argparse
from pathlib import Path

import numpy as np

import gpuemu

KEYS = ("global_load_sectors", "texture_sectors", "texture_hits", "l1_hits", "l2_read_sectors",
        "memory_cycles", "warp_instructions", "cycles")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--w", type=int, default=256)
    ap.add_argument("--h", type=int, default=512)
    ns = ap.parse_args()
    w, h = ns.w, ns.h
    img = np.random.default_rng(0).random((h, w), dtype=np.float32)
    mod = gpuemu.RawModule(path=str(Path(__file__).with_name("texture_walk.cu")), arch=ns.arch)
    grid, block = ((h + 127) // 128,), (128,)
    og, ot = np.zeros(h, np.float32), np.zeros(h, np.float32)
    g = mod.get_function("walk_global")(grid, block, (og, img, np.int32(w), np.int32(h)))
    t = mod.get_function("walk_texture")(grid, block, (ot, gpuemu.Texture(img), np.int32(w), np.int32(h)))
    assert np.allclose(og, img.sum(axis=1), rtol=1e-5) and np.array_equal(og, ot)
    print(f"{ns.arch}, {w} x {h} floats, one row per thread")
    print(f"  {'counter':<22}{'global':>12}{'texture':>12}")
    for k in KEYS:
        print(f"  {k:<22}{g.stats.get(k, 0):>12}{t.stats.get(k, 0):>12}")


if __name__ == "__main__":
    main()
