// Reduction step 6: many elements per thread (grid-stride), templated on
// the element type, the block size and whether n is a power of two.
#include "reduce_cg_steps.cuh"

template <class T, unsigned int blockSize, bool nIsPow2>
__global__ void reduce6(const T *__restrict__ g_idata, T *__restrict__ g_odata, unsigned int n)
{
    cg::thread_block cta = cg::this_thread_block();
    __shared__ T sdata[blockSize];
    unsigned int gridSize = blockSize * gridDim.x;
    T mySum = 0;
    if (nIsPow2) {
        unsigned int i = blockIdx.x * blockSize * 2 + threadIdx.x;
        gridSize = gridSize << 1;
        while (i < n) {
            mySum += g_idata[i];
            if ((i + blockSize) < n) mySum += g_idata[i + blockSize];
            i += gridSize;
        }
    } else {
        unsigned int i = blockIdx.x * blockSize + threadIdx.x;
        while (i < n) {
            mySum += g_idata[i];
            i += gridSize;
        }
    }
    unrolledBlockSum<T, blockSize>(cta, sdata, mySum, &g_odata[blockIdx.x]);
}

template __global__ void reduce6<float, 256, true>(const float *, float *, unsigned int);
template __global__ void reduce6<float, 128, false>(const float *, float *, unsigned int);
template __global__ void reduce6<double, 64, false>(const double *, double *, unsigned int);
template __global__ void reduce6<int, 512, true>(const int *, int *, unsigned int);
