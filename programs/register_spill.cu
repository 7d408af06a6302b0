// register_spill: the same loop with 40 live accumulators, once with every
// register it wants and once under __launch_bounds__(1024, 2), which caps it
// at 32 registers per thread so that 2 blocks of 1024 threads fit on an SM
// (65536 registers). The values beyond the cap live in local memory: every
// use reloads them (spill loads) and every update stores them (spill
// stores), local traffic that `launch.stats["spill_bytes"]` counts.
// `gpuemu info programs/register_spill.cu` prints the ptxas -v-like lines.

extern "C" __global__ void wide(float *out, const float *x, const float *y, int n, int m)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m) return;
    float a0 = x[i] + 0.0f, a1 = x[i] + 1.0f, a2 = x[i] + 2.0f, a3 = x[i] + 3.0f, a4 = x[i] + 4.0f;
    float a5 = x[i] + 5.0f, a6 = x[i] + 6.0f, a7 = x[i] + 7.0f, a8 = x[i] + 8.0f, a9 = x[i] + 9.0f;
    float a10 = x[i] + 10.0f, a11 = x[i] + 11.0f, a12 = x[i] + 12.0f, a13 = x[i] + 13.0f, a14 = x[i] + 14.0f;
    float a15 = x[i] + 15.0f, a16 = x[i] + 16.0f, a17 = x[i] + 17.0f, a18 = x[i] + 18.0f, a19 = x[i] + 19.0f;
    float a20 = x[i] + 20.0f, a21 = x[i] + 21.0f, a22 = x[i] + 22.0f, a23 = x[i] + 23.0f, a24 = x[i] + 24.0f;
    float a25 = x[i] + 25.0f, a26 = x[i] + 26.0f, a27 = x[i] + 27.0f, a28 = x[i] + 28.0f, a29 = x[i] + 29.0f;
    float a30 = x[i] + 30.0f, a31 = x[i] + 31.0f, a32 = x[i] + 32.0f, a33 = x[i] + 33.0f, a34 = x[i] + 34.0f;
    float a35 = x[i] + 35.0f, a36 = x[i] + 36.0f, a37 = x[i] + 37.0f, a38 = x[i] + 38.0f, a39 = x[i] + 39.0f;
    for (int k = 0; k < n; ++k) {
        float v = y[k];
        a0 = a0 * v + a1; a1 = a1 * v + a2; a2 = a2 * v + a3; a3 = a3 * v + a4;
        a4 = a4 * v + a5; a5 = a5 * v + a6; a6 = a6 * v + a7; a7 = a7 * v + a8;
        a8 = a8 * v + a9; a9 = a9 * v + a10; a10 = a10 * v + a11; a11 = a11 * v + a12;
        a12 = a12 * v + a13; a13 = a13 * v + a14; a14 = a14 * v + a15; a15 = a15 * v + a16;
        a16 = a16 * v + a17; a17 = a17 * v + a18; a18 = a18 * v + a19; a19 = a19 * v + a20;
        a20 = a20 * v + a21; a21 = a21 * v + a22; a22 = a22 * v + a23; a23 = a23 * v + a24;
        a24 = a24 * v + a25; a25 = a25 * v + a26; a26 = a26 * v + a27; a27 = a27 * v + a28;
        a28 = a28 * v + a29; a29 = a29 * v + a30; a30 = a30 * v + a31; a31 = a31 * v + a32;
        a32 = a32 * v + a33; a33 = a33 * v + a34; a34 = a34 * v + a35; a35 = a35 * v + a36;
        a36 = a36 * v + a37; a37 = a37 * v + a38; a38 = a38 * v + a39; a39 = a39 * v + a0;
    }
    out[i] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9
           + a10 + a11 + a12 + a13 + a14 + a15 + a16 + a17 + a18 + a19
           + a20 + a21 + a22 + a23 + a24 + a25 + a26 + a27 + a28 + a29
           + a30 + a31 + a32 + a33 + a34 + a35 + a36 + a37 + a38 + a39;
}

extern "C" __launch_bounds__(1024, 2) __global__ void wide_capped(float *out, const float *x, const float *y, int n, int m)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m) return;
    float a0 = x[i] + 0.0f, a1 = x[i] + 1.0f, a2 = x[i] + 2.0f, a3 = x[i] + 3.0f, a4 = x[i] + 4.0f;
    float a5 = x[i] + 5.0f, a6 = x[i] + 6.0f, a7 = x[i] + 7.0f, a8 = x[i] + 8.0f, a9 = x[i] + 9.0f;
    float a10 = x[i] + 10.0f, a11 = x[i] + 11.0f, a12 = x[i] + 12.0f, a13 = x[i] + 13.0f, a14 = x[i] + 14.0f;
    float a15 = x[i] + 15.0f, a16 = x[i] + 16.0f, a17 = x[i] + 17.0f, a18 = x[i] + 18.0f, a19 = x[i] + 19.0f;
    float a20 = x[i] + 20.0f, a21 = x[i] + 21.0f, a22 = x[i] + 22.0f, a23 = x[i] + 23.0f, a24 = x[i] + 24.0f;
    float a25 = x[i] + 25.0f, a26 = x[i] + 26.0f, a27 = x[i] + 27.0f, a28 = x[i] + 28.0f, a29 = x[i] + 29.0f;
    float a30 = x[i] + 30.0f, a31 = x[i] + 31.0f, a32 = x[i] + 32.0f, a33 = x[i] + 33.0f, a34 = x[i] + 34.0f;
    float a35 = x[i] + 35.0f, a36 = x[i] + 36.0f, a37 = x[i] + 37.0f, a38 = x[i] + 38.0f, a39 = x[i] + 39.0f;
    for (int k = 0; k < n; ++k) {
        float v = y[k];
        a0 = a0 * v + a1; a1 = a1 * v + a2; a2 = a2 * v + a3; a3 = a3 * v + a4;
        a4 = a4 * v + a5; a5 = a5 * v + a6; a6 = a6 * v + a7; a7 = a7 * v + a8;
        a8 = a8 * v + a9; a9 = a9 * v + a10; a10 = a10 * v + a11; a11 = a11 * v + a12;
        a12 = a12 * v + a13; a13 = a13 * v + a14; a14 = a14 * v + a15; a15 = a15 * v + a16;
        a16 = a16 * v + a17; a17 = a17 * v + a18; a18 = a18 * v + a19; a19 = a19 * v + a20;
        a20 = a20 * v + a21; a21 = a21 * v + a22; a22 = a22 * v + a23; a23 = a23 * v + a24;
        a24 = a24 * v + a25; a25 = a25 * v + a26; a26 = a26 * v + a27; a27 = a27 * v + a28;
        a28 = a28 * v + a29; a29 = a29 * v + a30; a30 = a30 * v + a31; a31 = a31 * v + a32;
        a32 = a32 * v + a33; a33 = a33 * v + a34; a34 = a34 * v + a35; a35 = a35 * v + a36;
        a36 = a36 * v + a37; a37 = a37 * v + a38; a38 = a38 * v + a39; a39 = a39 * v + a0;
    }
    out[i] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9
           + a10 + a11 + a12 + a13 + a14 + a15 + a16 + a17 + a18 + a19
           + a20 + a21 + a22 + a23 + a24 + a25 + a26 + a27 + a28 + a29
           + a30 + a31 + a32 + a33 + a34 + a35 + a36 + a37 + a38 + a39;
}
