"""Texture fetches: tex1Dfetch<float>, tex1D<float>, tex2D<float> on texture
objects (`cudaTextureObject_t`) created from Python (gpuemu/texture.py).

A texture object is a pointer to a descriptor in device memory (layout
DESCRIPTOR below, written by gpuemu/texture.py). A fetch is lowered to a
call of a device function written in CUDA C (PRELUDE), compiled once by our
own front end, so the filtering and addressing rules read as code. The
rules are the CUDA C Programming Guide's, appendix "Texture Fetching":

- normalised coordinates are scaled by the size first (x * width);
- point filtering: T[floor(x)];
- linear filtering: xB = x - 0.5, i = floor(xB), alpha = frac(xB) kept in
  9-bit fixed point with 8 fractional bits (rounded to 1/256), then
  (1-a)T[i] + aT[i+1] in 1D and the bilinear mix of four texels in 2D;
- address modes per dimension on texel indices: clamp (to [0, n-1]),
  border (outside: the border value), wrap (index mod n), mirror (period
  2n, reflected); wrap and mirror need normalised coordinates in CUDA;
- tex1Dfetch: integer index into linear memory, no filtering, 0 outside.

Texel loads are `__ldg` loads marked `texture` (the memory system charges
them through the texture / read-only cache); the descriptor's fields are
read by loads marked `texture` but not `readonly`, which the memory system
does not charge: on the GPU the texture header sits in the texture unit. 2D texels are stored in a
tiled layout (TILE_W x TILE_H texels per 128-byte line, sectors of
SECTOR_W x SECTOR_H texels), as CUDA arrays are stored block-linear, so
texels close in 2D share cache sectors and lines: that is the 2D locality
the Guide speaks of ("Texture and Surface Memory").

The inlined function's body takes the position of the fetch in the user's
source, so per-line counters land on the tex2D line. Its functions are marked
`one_instruction`: the code generator counts the fetch as one warp
instruction (the GPU's TEX: the texture unit reads the header, addresses and
filters) and nothing of the body but its texel loads' memory requests.
"""
from __future__ import annotations

from dataclasses import fields, is_dataclass, replace
from functools import lru_cache

from . import ast as A
from . import ir

TILE_W, TILE_H = 8, 4          # texels per 128-byte line (4-byte texels)
SECTOR_W, SECTOR_H = 4, 2      # texels per 32-byte sector

FETCHES = {"tex1Dfetch": ("__gpuemu_tex1Dfetch", 1), "tex1D": ("__gpuemu_tex1D", 1),
           "tex2D": ("__gpuemu_tex2D", 2)}

ADDRESS_MODES = {"wrap": 0, "clamp": 1, "mirror": 2, "border": 3}
FILTER_MODES = {"point": 0, "linear": 1}

# the descriptor: (field, C type, byte offset)
DESCRIPTOR = (("data", "const float *", 0), ("width", "int", 8), ("height", "int", 12),
              ("tiles_x", "int", 16), ("address_x", "int", 20), ("address_y", "int", 24),
              ("filter", "int", 28), ("normalized", "int", 32), ("border", "float", 36),
              ("tiled", "int", 40))
DESCRIPTOR_BYTES = 48

PRELUDE = r'''
struct __gpuemu_texture {
    const float *data;
    int width, height, tiles_x;
    int address_x, address_y;     /* 0 wrap, 1 clamp, 2 mirror, 3 border */
    int filter;                   /* 0 point, 1 linear */
    int normalized;
    float border;
    int tiled;                    /* 2D data in 8x4-texel tiles */
};

/* a texel index after the address mode; -1 means the border */
__device__ int __gpuemu_tex_address(int i, int n, int mode)
{
    if (mode == 0) {
        i = i % n;
        if (i < 0) i += n;
    } else if (mode == 2) {
        int p = 2 * n;
        i = i % p;
        if (i < 0) i += p;
        if (i >= n) i = p - 1 - i;
    } else if (mode == 3) {
        if (i < 0 || i >= n) i = -1;
    } else {
        if (i < 0) i = 0;
        if (i >= n) i = n - 1;
    }
    return i;
}

__device__ float __gpuemu_texel(const __gpuemu_texture *d, int i, int j)
{
    if (i < 0 || j < 0)
        return d->border;
    int k = j * d->width + i;
    if (d->tiled) {
        int line = (j >> 2) * d->tiles_x + (i >> 3);
        int xx = i & 7, yy = j & 3;
        k = line * 32 + (((yy >> 1) * 2 + (xx >> 2)) * 8) + (yy & 1) * 4 + (xx & 3);
    }
    return __ldg(&d->data[k]);
}

__device__ float __gpuemu_frac8(float f)
{
    return rintf(f * 256.0f) / 256.0f;
}

__device__ float __gpuemu_tex1Dfetch(unsigned long long t, int i)
{
    const __gpuemu_texture *d = (const __gpuemu_texture *)t;
    if (i < 0 || i >= d->width)
        return 0.0f;
    return __ldg(&d->data[i]);
}

__device__ float __gpuemu_tex1D(unsigned long long t, float x)
{
    const __gpuemu_texture *d = (const __gpuemu_texture *)t;
    int w = d->width;
    if (d->normalized) x = x * w;
    if (d->filter == 0)
        return __gpuemu_texel(d, __gpuemu_tex_address((int)floorf(x), w, d->address_x), 0);
    float xb = x - 0.5f;
    float fx = floorf(xb);
    float a = __gpuemu_frac8(xb - fx);
    int i = (int)fx;
    float t0 = __gpuemu_texel(d, __gpuemu_tex_address(i, w, d->address_x), 0);
    float t1 = __gpuemu_texel(d, __gpuemu_tex_address(i + 1, w, d->address_x), 0);
    return (1.0f - a) * t0 + a * t1;
}

__device__ float __gpuemu_tex2D(unsigned long long t, float x, float y)
{
    const __gpuemu_texture *d = (const __gpuemu_texture *)t;
    int w = d->width, h = d->height;
    if (d->normalized) {
        x = x * w;
        y = y * h;
    }
    if (d->filter == 0)
        return __gpuemu_texel(d, __gpuemu_tex_address((int)floorf(x), w, d->address_x),
                              __gpuemu_tex_address((int)floorf(y), h, d->address_y));
    float xb = x - 0.5f, yb = y - 0.5f;
    float fx = floorf(xb), fy = floorf(yb);
    float a = __gpuemu_frac8(xb - fx), b = __gpuemu_frac8(yb - fy);
    int i = (int)fx, j = (int)fy;
    int i0 = __gpuemu_tex_address(i, w, d->address_x), i1 = __gpuemu_tex_address(i + 1, w, d->address_x);
    int j0 = __gpuemu_tex_address(j, h, d->address_y), j1 = __gpuemu_tex_address(j + 1, h, d->address_y);
    return (1.0f - a) * (1.0f - b) * __gpuemu_texel(d, i0, j0) + a * (1.0f - b) * __gpuemu_texel(d, i1, j0)
         + (1.0f - a) * b * __gpuemu_texel(d, i0, j1) + a * b * __gpuemu_texel(d, i1, j1);
}
'''


@lru_cache(maxsize=None)
def prelude_functions() -> dict:
    """The prelude's device functions by name (compiled once)."""
    from .frontend import compile_source
    mod = compile_source(PRELUDE, "<gpuemu texture fetch>")
    return {f.name: f for f in mod.functions}


class _AtCall:
    """A copy of a function body placed at the call's source position, with
    its __ldg loads marked as texture fetches; callees copied the same way."""

    def __init__(self, loc):
        self.loc = loc
        self.funcs: dict = {}

    def func(self, f: ir.Function) -> ir.Function:
        if id(f) not in self.funcs:
            self.funcs[id(f)] = new = replace(f, loc=self.loc, one_instruction=True)
            new.body = self.node(f.body)
        return self.funcs[id(f)]

    def node(self, n):
        if isinstance(n, list):
            return [self.node(x) for x in n]
        if isinstance(n, tuple):
            return tuple(self.node(x) for x in n)
        if isinstance(n, (ir.Expr, ir.Stmt)) and is_dataclass(n):
            changes = {"loc": self.loc}
            for f in fields(n):
                v = getattr(n, f.name)
                if isinstance(v, (ir.Expr, ir.Stmt, list, tuple)):
                    changes[f.name] = self.node(v)
                elif isinstance(v, ir.Function):
                    changes[f.name] = self.func(v)
            if isinstance(n, ir.Load):
                # texel loads (__ldg: readonly) and reads of the descriptor, which
                # the texture unit holds (the memory system does not charge them)
                changes["texture"] = True
            return replace(n, **changes)
        return n


def _float_type(low, e) -> None:
    targs = e.func.targs
    words = [str(t) for t in targs[0]] if targs and len(targs) == 1 else None
    if words != ["float"]:
        raise low.error(f"'{e.func.name}' is supported for float texels only: write "
                        f"{e.func.name}<float>(...)", e.func.loc)


def lower_texture_fetch(low, e: A.CallExpr) -> ir.Expr:
    """`tex2D<float>(tex, x, y)` and friends -> an inlined call of the prelude."""
    name = e.func.name
    fname, ncoords = FETCHES[name]
    _float_type(low, e)
    if len(e.args) != 1 + ncoords:
        raise low.error(f"'{name}' takes {1 + ncoords} arguments (texture object, "
                        f"{ncoords} coordinate{'s' if ncoords > 1 else ''}), got {len(e.args)}", e.loc)
    fn = _AtCall(e.loc).func(prelude_functions()[fname])
    args = []
    for a_ast, p in zip(e.args, fn.params):
        v = low.rvalue(a_ast)
        args.append(low.convert(v, p.type, a_ast.loc, "pass"))
    return ir.Call(fn.ret, e.loc, fn, args)
