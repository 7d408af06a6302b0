// Structs in every space, arrays inside and of them, by value and by pointer.
struct Particle {
    float3 pos;
    float mass;
    int ids[3];
};

typedef struct {
    double w;
    char tag;
} Weight;

__constant__ Weight weights[2] = {{0.5, 'a'}, {1.5, 'b'}};
__device__ Particle pool[4];

__device__ float energy(Particle p, const Weight *w)
{
    return p.mass * (p.pos.x * p.pos.x + p.pos.y * p.pos.y) * (float)w->w;
}

__device__ void shift(Particle *p, float d)
{
    p->pos.x += d;
    p->ids[0]++;
}

__global__ void structs(Particle *ps, float *out, int n)
{
    __shared__ Particle cache[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Particle local = ps[i];
    Particle copies[2];
    copies[0] = local;
    copies[1] = pool[i & 3];
    shift(&copies[0], 1.0f);
    cache[threadIdx.x & 31] = copies[0];
    __syncthreads();
    Weight w = weights[i & 1];
    out[i] = energy(cache[threadIdx.x & 31], &w) + copies[1].ids[2] + (w.tag == 'a');
    ps[i].mass = sizeof(Particle);
}
