// Every statement form and the operators with C's conversions.
#include <stdint.h>
#define CLAMP(x, lo, hi) ((x) < (lo) ? (lo) : ((x) > (hi) ? (hi) : (x)))

enum Mode { ADD = 1, MUL, XOR = 8 };

__device__ __noinline__ int classify(int v)
{
    switch (v & 3) {
    case 0:
        return 10;
    case 1:
    case 2:
        v += 5;
    default:
        break;
    }
    return v;
}

static __device__ inline unsigned mix(unsigned a, unsigned b)
{
    unsigned h = a ^ (b << 7) ^ (b >> 3);
    h *= 0x9E3779B9u;
    return h;
}

extern "C" __global__ void control(int *data, unsigned *hash, long long *wide, int n, int mode)
{
    int tid = threadIdx.x + blockIdx.x * blockDim.x;
    int acc = 0;
    for (int i = 0, j = n; i < j; i++, j--) {
        if (i % 3 == 0) continue;
        acc += i * j;
        if (acc > 1000) break;
    }
    int k = 0;
    while (k < 10) { k += 3; }
    do { k--; } while (k > 5);
    int8_t small = (int8_t)(tid * 37);
    uint16_t half = (uint16_t)tid;
    unsigned u = (unsigned)small + half;
    long long big = (long long)u * 3000000000LL;
    data[tid] = CLAMP(acc + classify(tid) + k, -100, 100000);
    hash[tid] = mode == ADD ? mix(u, tid) : (mode == MUL ? u * 7u : u ^ XOR);
    wide[tid] = big >> 3;
    int *p = &data[tid];
    int *q = p + 2;
    wide[tid] += q - p;
    bool flag = !(tid & 1) && (u || big);
    data[tid] += flag ? 1 : -1;
    data[tid] <<= 1;
    data[tid] %= 1000;
    unsigned char c = 250;
    c += 10;
    data[tid] += c + (-7 / 2) + (-7 % 2) + ~tid;
}
