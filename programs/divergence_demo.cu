// divergence_demo: the same work split two ways.
// `divergent` branches on the lane's parity, so every warp runs both paths
// one after the other with half its lanes masked off (a divergent branch);
// `uniform` branches on the warp index, so all lanes of a warp agree and each
// warp runs one path. The last block is partial (n = 1000), so its tail lanes
// leave early through the return.
extern "C" __global__ void divergence_demo(int *divergent, int *uniform, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int lane = threadIdx.x % 32;
    int warp = threadIdx.x / 32;

    int v = 0;
    if (lane % 2 == 0) {
        for (int k = 0; k < lane; k++)
            v += k;
    } else {
        v = -lane;
    }
    divergent[i] = v;

    int u = 0;
    if (warp % 2 == 0) {
        for (int k = 0; k < warp; k++)
            u += k;
    } else {
        u = -warp;
    }
    uniform[i] = u;
}
