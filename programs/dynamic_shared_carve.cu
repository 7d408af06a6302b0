// dynamic_shared_carve: the CUDA C Programming Guide's example of several
// arrays carved from one `extern __shared__` array ("Shared", in the
// variable memory space specifiers): short array0[128], float array1[64] and
// int array2[256] share the dynamic allocation, sized by the launch
// (128*2 + 64*4 + 256*4 = 1536 bytes). Each block writes them, then reads
// them back reversed after a barrier.
extern "C" __global__ void dynamic_shared_carve(short *o0, float *o1, int *o2)
{
    extern __shared__ float array[];
    short *array0 = (short *)array;
    float *array1 = (float *)&array0[128];
    int *array2 = (int *)&array1[64];
    int t = threadIdx.x;
    int b = blockIdx.x;
    if (t < 128) array0[t] = (short)(t * 3 + b);
    if (t < 64) array1[t] = t * 0.5f + b;
    array2[t] = t * t + b;
    __syncthreads();
    if (t < 128) o0[b * 128 + t] = array0[127 - t];
    if (t < 64) o1[b * 64 + t] = array1[63 - t];
    o2[b * 256 + t] = array2[255 - t];
}
