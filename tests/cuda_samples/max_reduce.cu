// Maximum and minimum of each block with cg::reduce(cg::greater / cg::less).
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <float.h>
namespace cg = cooperative_groups;

__global__ void minmax(const float *in, float *mins, float *maxs, int n)
{
    cg::thread_block block = cg::this_thread_block();
    auto warp = cg::tiled_partition<32>(block);
    __shared__ float wmin[8], wmax[8];
    unsigned int i = block.group_index().x * block.size() + block.thread_rank();
    float v = i < n ? in[i] : in[0];
    float lo = cg::reduce(warp, v, cg::less<float>());
    float hi = cg::reduce(warp, v, cg::greater<float>());
    if (warp.thread_rank() == 0) { wmin[warp.meta_group_rank()] = lo; wmax[warp.meta_group_rank()] = hi; }
    block.sync();
    if (block.thread_rank() == 0) {
        for (int w = 1; w < (int)warp.meta_group_size(); ++w) {
            lo = fminf(lo, wmin[w]);
            hi = fmaxf(hi, wmax[w]);
        }
        mins[blockIdx.x] = lo;
        maxs[blockIdx.x] = hi;
    }
}
