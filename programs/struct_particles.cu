// struct_particles: one Euler step for particles stored as an array of
// structs (AoS). Shows C structs in global memory: a warp reading p[i].x
// touches every 16th word, so each request spans 4x the sectors of the
// float-array (SoA) layout, the classic reason to prefer SoA on GPUs.
struct Particle {
    float x, y;
    float vx, vy;
};

extern "C" __global__ void struct_particles(Particle *p, float dt, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    Particle q = p[i];
    q.x += q.vx * dt;
    q.y += q.vy * dt;
    p[i] = q;
}
