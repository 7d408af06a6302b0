// texture_walk: each thread sums one row of a 2D float image, so the lanes of
// a warp read 32 consecutive rows at one x: a column-wise walk. Through global
// memory (walk_global) each request touches 32 sectors, one per row; through a
// texture (walk_texture, tex2D on a gpuemu.Texture) the texels sit in 2D tiles
// (4x2 texels per 32-byte sector), so the same request touches 16.
// `python programs/texture_demo.py` runs both and prints the counters.

extern "C" __global__ void walk_global(float *out, const float *img, int w, int h)
{
    int y = blockIdx.x * blockDim.x + threadIdx.x;
    if (y >= h)
        return;
    float s = 0.0f;
    for (int x = 0; x < w; ++x)
        s += img[y * w + x];
    out[y] = s;
}

extern "C" __global__ void walk_texture(float *out, cudaTextureObject_t img, int w, int h)
{
    int y = blockIdx.x * blockDim.x + threadIdx.x;
    if (y >= h)
        return;
    float s = 0.0f;
    for (int x = 0; x < w; ++x)
        s += tex2D<float>(img, x + 0.5f, y + 0.5f);
    out[y] = s;
}
