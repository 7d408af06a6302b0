#include <stdint.h>
#include <limits.h>
typedef struct { float x; int y[3]; } P;
struct Q { int a; float b; };
enum Color { RED, GREEN = 5, BLUE };
__constant__ float coeff[4] = {1.0f, 2.0f, 3, 4};
__device__ int counter;
__device__ __forceinline__ float sq(float v) { return v * v; }
__device__ int addq(Q q, int k) { return q.a + k; }
extern "C" __global__ void __launch_bounds__(256, 2) k(float * __restrict__ out, const float *in, int n, P pp)
{
    __shared__ float tile[32][33];
    __shared__ int cnt;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    P p; Q q = {1, 2.0f}; p.x = 1.0f; p.y[2] = 3;
    int arr[2][3] = {{1, 2, 3}, {4, 5, 6}};
    float4 v = make_float4(1, 2, 3, 4);
    v.x += 1.0f;
    for (int j = 0; j < n; ++j) { out[i] += (float)in[j] * coeff[j & 3]; }
    for (;;) break;
    if (!(i < n)) return; else i++;
    unsigned u = sizeof(int) + sizeof i;
    switch (i) { case 1: u = 2; break; case RED: case BLUE: u++; default: ; }
    do { i--; } while (i > 0);
    int *ptr = &i, **ppp = &ptr;
    **ppp = 3;
    out[i] = i > 2 ? -1.0 : 1e5f;
    out[0] = float(u) + sq(v.w) + addq(q, arr[1][2]) + pp.y[1];
    atomicAdd(&counter, 1);
    int old = atomicCAS(&cnt, 0, 1);
    float s = __shfl_down_sync(0xffffffff, out[0], 16);
    uint32_t m = __ballot_sync(0xffffffff, s > 0.0f);
    out[1] = sqrtf(s) + __expf(s) + fminf(s, 1.0f) + max(i, 3) + min(u, 2u) + __popc(m) + INT_MAX;
    long long d = ptr - &i;
    i = (i, 5);
    u <<= 2; u = ~u; i = -i % 7;
    char c = 'a'; c++;
    bool b = c; 
    out[2] = b ? 1 : 0;
    __syncthreads();
}
