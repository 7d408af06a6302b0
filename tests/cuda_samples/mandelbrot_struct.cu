// Escape counts of the Mandelbrot set with a small complex-number struct
// whose member functions run on the device (as in the Mandelbrot sample).
struct Complex {
    float re, im;
    __device__ Complex add(const Complex &o) const { Complex r = {re + o.re, im + o.im}; return r; }
    __device__ Complex square() const { Complex r = {re * re - im * im, 2.0f * re * im}; return r; }
    __device__ float abs2() const { return re * re + im * im; }
};

__global__ void mandelbrot(int *counts, int width, int height, float x0, float y0, float step, int maxIter)
{
    int px = blockIdx.x * blockDim.x + threadIdx.x;
    int py = blockIdx.y * blockDim.y + threadIdx.y;
    if (px >= width || py >= height) return;
    Complex c = {x0 + px * step, y0 + py * step};
    Complex z = {0.0f, 0.0f};
    int n = 0;
    while (n < maxIter && z.abs2() <= 4.0f) {
        z = z.square().add(c);
        ++n;
    }
    counts[py * width + px] = n;
}
