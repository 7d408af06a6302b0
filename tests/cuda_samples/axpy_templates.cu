// y = a*x + y for several element types, with the operation in a device
// function template whose type is deduced, and a reference parameter.
#include <cuda_runtime.h>

namespace blas {
template <typename T>
__device__ __forceinline__ void axpy_one(T &y, const T a, const T &x) { y = a * x + y; }
}

template <typename T>
__global__ void axpy(T *__restrict__ y, const T *__restrict__ x, T a, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        blas::axpy_one(y[i], a, x[i]);
}

template __global__ void axpy<float>(float *, const float *, float, int);
template __global__ void axpy<double>(double *, const double *, double, int);
template __global__ void axpy<int>(int *, const int *, int, int);
