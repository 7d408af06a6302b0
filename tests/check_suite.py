"""The check-mode suite: buggy kernels (each bug marked in its source) and
correct ones. A line holding `// BUG` is where the finding must point
(Finding.line); `// OTHER` marks a race's other access (Finding.other_line).
Used by tests/test_check_suite.py."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

import gpuemu


@dataclass
class Case:
    name: str
    src: str
    grid: tuple
    block: tuple
    args: Callable          # () -> tuple of launch arguments
    kind: str = ""          # expected finding kind ('' = a correct kernel)
    arch: str = "sm_90"
    shared_mem: int = 0
    options: dict = field(default_factory=dict)

    def marked(self, tag: str):
        for i, text in enumerate(self.src.splitlines(), start=1):
            if f"// {tag}" in text:
                return i
        return None


def i32(n, v=None):
    return np.arange(n, dtype=np.int32) if v is None else np.full(n, v, np.int32)


def f32(n):
    return np.arange(n, dtype=np.float32)


# warp 0 hands shared data to warp 1 behind a block-scope fence and a volatile
# flag (PTX memory model: release pattern, then the flag's read observes it)
SHARED_HANDOVER = r"""
extern "C" __global__ void k(int* out) {
    __shared__ volatile int flag;
    __shared__ int buf[32];
    int lane = threadIdx.x % 32;
    if (threadIdx.x == 0) flag = 0;
    __syncthreads();
    if (threadIdx.x < 32) {
        buf[lane] = lane * 7;  // BUG
        __threadfence_block();
        if (lane == 0) flag = 1;
    } else {
        while (flag == 0) { }
        out[lane] = buf[lane];  // OTHER
    }
}"""


# blocks 0 and 1 each publish data behind a fence and a flag of their own;
# block 2 waits for block 0's flag only, then reads both: ordered after block
# 0's write, racing with block 1's (PTX memory model: a flag orders the writes
# of the block that published it)
TWO_PRODUCERS = r"""
extern "C" __global__ void k(int* data, volatile int* flag, int* out) {
    if (blockIdx.x < 2) {
        if (threadIdx.x == 0) {
            data[blockIdx.x] = 42 + blockIdx.x;  // BUG
            __threadfence();
            flag[blockIdx.x] = 1;
        }
    } else if (threadIdx.x == 0) {
        while (flag[0] == 0) { }
        __threadfence();
        out[0] = data[0];
        out[1] = data[1];  // OTHER
    }
}"""

# the same between the warps of a block: warps 0 and 1 each publish their half
# of a shared tile behind __threadfence_block() and a flag of their own; warp 2
# waits for warp 0's flag only, then reads both halves
SHARED_TWO_PRODUCERS = r"""
extern "C" __global__ void k(int* out) {
    __shared__ volatile int flag[2];
    __shared__ int buf[64];
    int lane = threadIdx.x % 32, w = threadIdx.x / 32;
    if (threadIdx.x < 2) flag[threadIdx.x] = 0;
    __syncthreads();
    if (w < 2) {
        buf[threadIdx.x] = lane * 7 + w;  // BUG
        __threadfence_block();
        if (lane == 0) flag[w] = 1;
    } else {
        while (flag[0] == 0) { }
        out[lane] = buf[lane] + buf[32 + lane];  // OTHER
    }
}"""

# block 0 publishes flag 0, then writes data, fences and publishes flag 1;
# block 1 waits for flag 0 only: it saw a publication from before the write
EARLY_FLAG = r"""
extern "C" __global__ void k(int* data, volatile int* flag, int* out) {
    if (blockIdx.x == 0) {
        if (threadIdx.x == 0) {
            __threadfence();
            flag[0] = 1;
            data[0] = 42;  // BUG
            __threadfence();
            flag[1] = 1;
        }
    } else if (threadIdx.x == 0) {
        while (flag[0] == 0) { }
        __threadfence();
        out[0] = data[0];  // OTHER
    }
}"""

# a warp writes data, then its lane 0 fences and raises the flag: from sm_70
# on nothing orders the other lanes' writes before lane 0's fence (a
# __syncwarp or __syncthreads between would; before sm_70 the warp runs in
# lock-step)
LANE_ZERO_PUBLISHES = r"""
extern "C" __global__ void k(int* data, volatile int* flag, int* out) {
    int t = threadIdx.x;
    if (blockIdx.x == 0) {
        data[t] = t * 3;  // BUG
        if (t == 0) {
            __threadfence();
            flag[0] = 1;
        }
    } else if (t == 0) {
        while (flag[0] == 0) { }
        __threadfence();
        for (int i = 0; i < 32; ++i) out[i] = data[i];  // OTHER
    }
}"""

# thread 0 of block 1 waits for block 0's flag and fences; the block's other
# threads then read the data with no __syncthreads after the wait: nothing
# orders their reads after the flag (a barrier after the wait would; in one
# warp a __syncwarp would)
WAIT_THEN_READ = r"""
extern "C" __global__ void k(int* data, volatile int* flag, int* out) {
    int t = threadIdx.x;
    if (blockIdx.x == 0) {
        data[t] = t * 3;  // BUG
        __syncthreads();
        if (t == 0) {
            __threadfence();
            flag[0] = 1;
        }
    } else {
        if (t == 0) {
            while (flag[0] == 0) { }
            __threadfence();
        }
        out[t] = data[t];  // OTHER
    }
}"""

WAIT_FOR_BOTH = ("while (flag[0] == 0) { }", "while (flag[0] == 0 || flag[1] == 0) { }")

BUGGY = [
    Case("shared_missing_barrier", r"""
extern "C" __global__ void k(const int* in, int* out) {
    __shared__ int s[64];
    int t = threadIdx.x;
    s[t] = in[t];  // BUG
    out[t] = s[63 - t];  // OTHER
}""", 1, 64, lambda: (i32(64), i32(64, 0)), "race"),
    Case("tile_transpose_2d_missing_barrier", r"""
extern "C" __global__ void k(const float* in, float* out, int n) {
    __shared__ float tile[16][17];
    int x = blockIdx.x * 16 + threadIdx.x, y = blockIdx.y * 16 + threadIdx.y;
    tile[threadIdx.y][threadIdx.x] = in[y * n + x];  // BUG
    x = blockIdx.y * 16 + threadIdx.x;
    y = blockIdx.x * 16 + threadIdx.y;
    out[y * n + x] = tile[threadIdx.x][threadIdx.y];  // OTHER
}""", (2, 2), (16, 16), lambda: (f32(1024), np.zeros(1024, np.float32), np.int32(32)), "race"),
    Case("reduction_loop_missing_barrier", r"""
extern "C" __global__ void k(const int* in, int* out) {
    __shared__ int s[128];
    int t = threadIdx.x;
    s[t] = in[blockIdx.x * 128 + t];
    __syncthreads();
    for (int d = 64; d > 0; d >>= 1) {
        if (t < d) s[t] += s[t + d];  // BUG OTHER
    }
    if (t == 0) out[blockIdx.x] = s[0];
}""", 2, 128, lambda: (i32(256), i32(2, 0)), "race"),
    Case("warp_synchronous_reduce_without_syncwarp_on_sm90", r"""
extern "C" __global__ void k(const int* in, int* out) {
    __shared__ int s[64];
    int t = threadIdx.x;
    s[t] = in[t];
    __syncthreads();
    if (t < 32) {
        s[t] += s[t + 32];  // BUG
        s[t] += s[t + 16];  // OTHER
        s[t] += s[t + 8];
        s[t] += s[t + 4];
        s[t] += s[t + 2];
        s[t] += s[t + 1];
    }
    if (t == 0) out[0] = s[0];
}""", 1, 64, lambda: (i32(64), i32(1, 0)), "race"),
    Case("device_function_store_then_read_without_barrier", r"""
__device__ void put(int* s, int i, int v) {
    s[i] = v;  // BUG
}
extern "C" __global__ void k(const int* in, int* out) {
    __shared__ int s[64];
    int t = threadIdx.x;
    put(s, t, in[t] * 2);
    out[t] = s[(t + 32) % 64];  // OTHER
}""", 1, 64, lambda: (i32(64), i32(64, 0)), "race"),
    Case("all_threads_write_one_shared_word", r"""
extern "C" __global__ void k(int* out) {
    __shared__ int last;
    last = threadIdx.x;  // BUG OTHER
    __syncthreads();
    out[threadIdx.x] = last;
}""", 1, 64, lambda: (i32(64, 0),), "race"),
    Case("global_read_modify_write_across_blocks", r"""
extern "C" __global__ void k(const int* in, int* out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x == 0) out[0] = out[0] + in[t];  // BUG OTHER
}""", 4, 32, lambda: (i32(128), i32(1, 0)), "race"),
    Case("last_block_reduction_missing_threadfence", r"""
extern "C" __global__ void k(const int* in, int* partial, unsigned* count, int* out) {
    int b = blockIdx.x;
    if (threadIdx.x == 0) {
        partial[b] = in[b] * 3;  // BUG
        unsigned ticket = atomicAdd(count, 1u);
        if (ticket == gridDim.x - 1) {
            int sum = 0;
            for (int i = 0; i < gridDim.x; i++) sum += partial[i];  // OTHER
            out[0] = sum;
        }
    }
}""", 4, 32, lambda: (i32(4), i32(4, 0), np.zeros(1, np.uint32), i32(1, 0)), "race"),
    Case("fence_and_an_unrelated_atomic_order_nothing_across_blocks", r"""
extern "C" __global__ void k(int* data, int* counter, int* out) {
    if (blockIdx.x == 0) {
        if (threadIdx.x == 0) {
            data[0] = 42;  // BUG
            __threadfence();
        }
    } else if (threadIdx.x == 0) {
        atomicAdd(counter, 1);
        out[0] = data[0];  // OTHER
    }
}""", 2, 32, lambda: (i32(1, 0), i32(1, 0), i32(1, 0)), "race"),
    Case("fence_and_an_unrelated_atomic_order_nothing_between_warps", r"""
extern "C" __global__ void k(int* g, int* counter, int* out) {
    int t = threadIdx.x;
    if (t == 0) atomicAdd(counter, 1);
    if (t == 40) g[0] = 7;  // BUG
    if (t == 1) out[0] = g[0];  // OTHER
    __threadfence();
}""", 1, 64, lambda: (i32(1, 0), i32(1, 0), i32(1, 0)), "race"),
    Case("flag_another_block_published_orders_nothing_between_warps", r"""
extern "C" __global__ void k(int* g, int* counter, int* out) {
    int t = threadIdx.x;
    if (t == 0) atomicAdd(counter, 1);
    if (blockIdx.x == 1 && t == 40) g[0] = 7;  // BUG
    if (blockIdx.x == 1 && t == 1) out[0] = g[0];  // OTHER
    __threadfence();
    if (t == 0) atomicAdd(counter, 1);
}""", 2, 64, lambda: (i32(1, 0), i32(1, 0), i32(1, 0)), "race"),
    Case("volatile_read_of_a_plain_write_across_blocks", r"""
extern "C" __global__ void k(int* data, int* out) {
    if (blockIdx.x == 0) {
        if (threadIdx.x == 0) data[0] = 42;  // BUG
    } else if (threadIdx.x == 0) {
        out[0] = ((volatile int*)data)[0];  // OTHER
    }
}""", 2, 32, lambda: (i32(1, 0), i32(1, 0)), "race"),
    Case("shared_read_of_half_loaded_tile", r"""
extern "C" __global__ void k(const int* in, int* out) {
    __shared__ int s[64];
    int t = threadIdx.x;
    if (t < 32) s[t] = in[t];
    __syncthreads();
    out[t] = s[t];  // BUG
}""", 1, 64, lambda: (i32(64), i32(64, 0)), "uninitialized_read"),
    Case("stencil_2d_halo_never_loaded", r"""
#define B 8
extern "C" __global__ void k(const float* in, float* out, int n) {
    __shared__ float tile[B + 2][B + 2];
    int x = blockIdx.x * B + threadIdx.x, y = blockIdx.y * B + threadIdx.y;
    tile[threadIdx.y + 1][threadIdx.x + 1] = in[y * n + x];
    __syncthreads();
    float up = tile[threadIdx.y][threadIdx.x + 1];  // BUG
    out[y * n + x] = up + tile[threadIdx.y + 1][threadIdx.x + 1];
}""", (2, 2), (8, 8), lambda: (f32(256), np.zeros(256, np.float32), np.int32(16)), "uninitialized_read"),
    Case("local_array_half_initialised", r"""
extern "C" __global__ void k(const int* in, int* out, int m) {
    int a[8];
    int t = threadIdx.x;
    for (int i = 0; i < 4; i++) a[i] = in[t] + i;
    int s = 0;
    for (int i = 0; i < m; i++) s += a[i];  // BUG
    out[t] = s;
}""", 1, 32, lambda: (i32(32), i32(32, 0), np.int32(8)), "uninitialized_read"),
    Case("accumulate_into_fresh_global_buffer", r"""
extern "C" __global__ void k(const float* in, float* out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    out[t] += in[t];  // BUG
}""", 2, 64, lambda: (gpuemu.asarray(f32(128)), gpuemu.empty(128, np.float32)), "uninitialized_read"),
    Case("shared_histogram_not_zeroed", r"""
extern "C" __global__ void k(const int* in, int* out) {
    __shared__ int h[16];
    int t = threadIdx.x;
    atomicAdd(&h[in[t] % 16], 1);  // BUG
    __syncthreads();
    if (t < 16) out[t] = h[t];
}""", 1, 64, lambda: (i32(64), i32(16, 0)), "uninitialized_read"),
    Case("global_off_by_one", r"""
extern "C" __global__ void k(int* out, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t <= n) out[t] = t;  // BUG
}""", 2, 64, lambda: (i32(64, 0), np.int32(64)), "out_of_bounds"),
    Case("shared_2d_row_past_the_end", r"""
extern "C" __global__ void k(int* out) {
    __shared__ int tile[16][16];
    tile[threadIdx.y][threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[threadIdx.y * 16 + threadIdx.x] = tile[threadIdx.y + 1][threadIdx.x];  // BUG
}""", 1, (16, 16), lambda: (i32(256, 0),), "out_of_bounds"),
    Case("dynamic_shared_beyond_shared_mem", r"""
extern "C" __global__ void k(int* out) {
    extern __shared__ int s[];
    int t = threadIdx.x;
    s[t + blockDim.x] = t;  // BUG
    out[t] = t;
}""", 1, 64, lambda: (i32(64, 0),), "out_of_bounds", shared_mem=64 * 4),
    Case("local_array_index_past_the_end", r"""
extern "C" __global__ void k(int* out) {
    int a[4];
    for (int i = 0; i < 4; i++) a[i] = i;
    a[threadIdx.x % 8] = 7;  // BUG
    out[threadIdx.x] = a[0];
}""", 1, 32, lambda: (i32(32, 0),), "out_of_bounds"),
    Case("misaligned_int_through_char_pointer", r"""
extern "C" __global__ void k(const int* in, int* out) {
    const int* p = (const int*)((const char*)in + 2);
    out[threadIdx.x] = p[threadIdx.x];  // BUG
}""", 1, 32, lambda: (i32(64), i32(32, 0)), "misaligned_access"),
    Case("syncthreads_in_divergent_branch_of_a_warp", r"""
extern "C" __global__ void k(int* out) {
    int t = threadIdx.x;
    if (t % 32 < 16) {
        __syncthreads();  // BUG
    }
    out[t] = t;
}""", 1, 64, lambda: (i32(64, 0),), "barrier_divergence"),
    Case("different_syncthreads_in_two_branches_2d", r"""
extern "C" __global__ void k(int* out) {
    __shared__ int s[64];
    int t = threadIdx.y * 32 + threadIdx.x;
    if (threadIdx.y == 0) {
        s[t] = 1;
        __syncthreads();  // BUG
    } else {
        s[t] = 2;
        __syncthreads();
    }
    out[t] = s[63 - t];
}""", 1, (32, 2), lambda: (i32(64, 0),), "barrier_divergence"),
    Case("barrier_in_loop_with_thread_dependent_trip_count", r"""
extern "C" __global__ void k(int* out) {
    __shared__ int s[64];
    int t = threadIdx.x;
    s[t] = 0;
    for (int i = 0; i < t / 32 + 1; i++) {
        s[t] += 1;
        __syncthreads();  // BUG
    }
    __syncthreads();
    out[t] = s[t];
}""", 1, 64, lambda: (i32(64, 0),), "barrier_divergence"),
    Case("full_mask_shuffle_in_divergent_code", r"""
extern "C" __global__ void k(int* out) {
    int v = threadIdx.x;
    if (threadIdx.x < 16)
        v = __shfl_down_sync(0xffffffff, v, 1);  // BUG
    out[threadIdx.x] = v;
}""", 1, 32, lambda: (i32(32, 0),), "invalid_shuffle"),
    Case("shuffle_reads_an_inactive_lane", r"""
extern "C" __global__ void k(int* out) {
    int v = threadIdx.x * 10;
    if (threadIdx.x % 2 == 0) {
        unsigned m = __activemask();
        v = __shfl_sync(m, v, threadIdx.x + 1);  // BUG
    }
    out[threadIdx.x] = v;
}""", 1, 32, lambda: (i32(32, 0),), "invalid_shuffle"),
    Case("syncwarp_naming_lanes_that_do_not_arrive", r"""
extern "C" __global__ void k(int* out) {
    __shared__ int s[32];
    int lane = threadIdx.x;
    if (lane < 16) {
        s[lane] = lane;
        __syncwarp();  // BUG
        out[lane] = s[15 - lane];
    }
}""", 1, 32, lambda: (i32(32, 0),), "barrier_divergence"),
    Case("ballot_with_full_mask_in_a_branch", r"""
extern "C" __global__ void k(const int* in, unsigned* out) {
    int t = threadIdx.x;
    if (t < 8) {
        out[t] = __ballot_sync(0xffffffff, in[t] > 3);  // BUG
    }
}""", 1, 32, lambda: (i32(32), np.zeros(32, np.uint32)), "barrier_divergence"),
    Case("wait_for_a_flag_nobody_sets", r"""
extern "C" __global__ void k(volatile int* flag, int* out) {
    while (flag[0] == 0) { }  // BUG
    out[threadIdx.x] = 1;
}""", 1, 32, lambda: (i32(1, 0), i32(32, 0)), "timeout", options={"budget": 20000}),
    Case("intra_warp_spin_lock_on_sm60", r"""
extern "C" __global__ void k(int* lock, int* counter) {
    while (atomicCAS(lock, 0, 1) != 0) { }  // BUG
    counter[0] = counter[0] + 1;
    __threadfence();
    atomicExch(lock, 0);
}""", 1, 32, lambda: (i32(1, 0), i32(1, 0)), "deadlock", arch="sm_60",
         options={"budget": 20000, "stats": False}),
    Case("warp_spins_on_flag_set_after_a_barrier", r"""
extern "C" __global__ void k(volatile int* flag) {
    if (threadIdx.x < 32) {
        __syncthreads();
        flag[0] = 1;
    } else {
        while (flag[0] == 0) { }  // BUG
    }
}""", 1, 64, lambda: (i32(1, 0),), "deadlock", options={"budget": 20000, "stats": False}),
    Case("plain_shared_read_of_a_volatile_flag_write_between_warps", r"""
extern "C" __global__ void k(int* out) {
    __shared__ int flag;
    if (threadIdx.x == 0) flag = 0;
    __syncthreads();
    if (threadIdx.x == 32) {
        ((volatile int*)&flag)[0] = 7;  // BUG
    } else if (threadIdx.x == 0) {
        out[0] = flag;  // OTHER
    }
}""", 1, 64, lambda: (i32(1, 0),), "race"),
    Case("shared_data_handed_between_warps_with_no_fence_before_the_flag",
         SHARED_HANDOVER.replace("        __threadfence_block();\n", ""), 1, 64, lambda: (i32(32, 0),), "race",
         options={"budget": 200000}),
    Case("block_fence_orders_nothing_across_blocks", r"""
extern "C" __global__ void k(int* data, volatile int* flag, int* out) {
    if (blockIdx.x == 0) {
        if (threadIdx.x == 0) {
            data[0] = 42;  // BUG
            __threadfence_block();
            flag[0] = 1;
        }
    } else if (threadIdx.x == 0) {
        while (flag[0] == 0) { }
        __threadfence();
        out[0] = data[0];  // OTHER
    }
}""", 2, 32, lambda: (i32(1, 0), i32(1, 0), i32(1, 0)), "race"),
    Case("a_flag_orders_only_the_writes_of_the_block_that_published_it", TWO_PRODUCERS, 3, 32,
         lambda: (i32(2, 0), i32(2, 0), i32(2, 0)), "race"),
    Case("a_shared_flag_orders_only_the_writes_of_the_warp_that_published_it", SHARED_TWO_PRODUCERS,
         1, 96, lambda: (i32(32, 0),), "race", options={"budget": 200000}),
    Case("a_flag_published_before_the_write_was_fenced_orders_nothing", EARLY_FLAG, 2, 32,
         lambda: (i32(1, 0), i32(2, 0), i32(1, 0)), "race"),
    Case("lane_zero_fences_and_raises_the_flag_before_its_warps_other_lanes_are_synced", LANE_ZERO_PUBLISHES,
         2, 32, lambda: (i32(32, 0), i32(1, 0), i32(32, 0)), "race", options={"budget": 500000}),
    Case("a_block_reads_the_data_one_thread_waited_for_with_no_barrier_after_the_wait", WAIT_THEN_READ,
         2, 64, lambda: (i32(64, 0), i32(1, 0), i32(64, 0)), "race", options={"budget": 500000}),
]

def _unmarked(name: str) -> str:
    src = next(c.src for c in BUGGY if c.name == name)
    return src.replace("  // BUG", "").replace("  // OTHER", "")


# block 0 publishes data behind a fence and a volatile flag; block 1 waits for
# the flag, fences, reads (PTX memory model: fence-fence synchronisation)
MESSAGE_PASSING = r"""
extern "C" __global__ void k(int* data, volatile int* flag, int* out) {
    if (blockIdx.x == 0) {
        if (threadIdx.x == 0) {
            data[0] = 42;
            __threadfence();
            flag[0] = 1;
        }
    } else if (threadIdx.x == 0) {
        while (flag[0] == 0) { }
        __threadfence();
        out[0] = data[0];
    }
}"""


CORRECT = [
    Case("a_block_reads_the_data_one_thread_waited_for_after_a_barrier", _unmarked(
        "a_block_reads_the_data_one_thread_waited_for_with_no_barrier_after_the_wait").replace(
        "        out[t] = data[t];", "        __syncthreads();\n        out[t] = data[t];"), 2, 64,
        lambda: (i32(64, 0), i32(1, 0), i32(64, 0)), options={"budget": 500000}),
    Case("a_warp_reads_the_data_its_lane_zero_waited_for_after_a_syncwarp", _unmarked(
        "a_block_reads_the_data_one_thread_waited_for_with_no_barrier_after_the_wait").replace(
        "        out[t] = data[t];", "        __syncwarp();\n        out[t] = data[t];"), 2, 32,
        lambda: (i32(64, 0), i32(1, 0), i32(64, 0)), options={"budget": 500000}),
    Case("lane_zero_fences_and_raises_the_flag_after_a_syncwarp", _unmarked(
        "lane_zero_fences_and_raises_the_flag_before_its_warps_other_lanes_are_synced").replace(
        "        data[t] = t * 3;\n", "        data[t] = t * 3;\n        __syncwarp();\n"), 2, 32,
        lambda: (i32(32, 0), i32(1, 0), i32(32, 0)), options={"budget": 500000}),
    Case("lane_zero_fences_and_raises_the_flag_of_a_warp_in_lock_step_sm60", _unmarked(
        "lane_zero_fences_and_raises_the_flag_before_its_warps_other_lanes_are_synced"), 2, 32,
        lambda: (i32(32, 0), i32(1, 0), i32(32, 0)), arch="sm_60", options={"budget": 500000}),
    Case("a_value_handed_down_a_chain_of_blocks_behind_their_flags", r"""
extern "C" __global__ void k(int* g, volatile int* flag, int* out) {
    int b = blockIdx.x;
    if (threadIdx.x == 0) {
        if (b > 0) {
            while (flag[b - 1] == 0) { }
            __threadfence();
        }
        out[b] = g[0];
        g[0] = b + 1;
        __threadfence();
        flag[b] = 1;
    }
}""", 4, 32, lambda: (i32(1, 0), i32(4, 0), i32(4, 0))),
    Case("data_read_after_the_flag_published_after_it", _unmarked(
        "a_flag_published_before_the_write_was_fenced_orders_nothing").replace(
        "while (flag[0] == 0) { }", "while (flag[1] == 0) { }"), 2, 32,
        lambda: (i32(1, 0), i32(2, 0), i32(1, 0))),
    Case("data_of_two_blocks_read_after_both_their_flags", _unmarked(
        "a_flag_orders_only_the_writes_of_the_block_that_published_it").replace(*WAIT_FOR_BOTH), 3, 32,
        lambda: (i32(2, 0), i32(2, 0), i32(2, 0))),
    Case("shared_data_of_two_warps_read_after_both_their_flags", _unmarked(
        "a_shared_flag_orders_only_the_writes_of_the_warp_that_published_it").replace(*WAIT_FOR_BOTH), 1, 96,
        lambda: (i32(32, 0),), options={"budget": 200000}),
    Case("shared_with_barrier", r"""
extern "C" __global__ void k(const int* in, int* out) {
    __shared__ int s[64];
    int t = threadIdx.x;
    s[t] = in[t];
    __syncthreads();
    out[t] = s[63 - t];
}""", 1, 64, lambda: (i32(64), i32(64, 0))),
    Case("tile_transpose_2d", r"""
extern "C" __global__ void k(const float* in, float* out, int n) {
    __shared__ float tile[16][17];
    int x = blockIdx.x * 16 + threadIdx.x, y = blockIdx.y * 16 + threadIdx.y;
    tile[threadIdx.y][threadIdx.x] = in[y * n + x];
    __syncthreads();
    x = blockIdx.y * 16 + threadIdx.x;
    y = blockIdx.x * 16 + threadIdx.y;
    out[y * n + x] = tile[threadIdx.x][threadIdx.y];
}""", (2, 2), (16, 16), lambda: (f32(1024), np.zeros(1024, np.float32), np.int32(32))),
    Case("reduction_with_barrier_in_loop", r"""
extern "C" __global__ void k(const int* in, int* out) {
    __shared__ int s[128];
    int t = threadIdx.x;
    s[t] = in[blockIdx.x * 128 + t];
    __syncthreads();
    for (int d = 64; d > 0; d >>= 1) {
        if (t < d) s[t] += s[t + d];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}""", 2, 128, lambda: (i32(256), i32(2, 0))),
    Case("warp_synchronous_reduce_on_sm60_lockstep", _unmarked("warp_synchronous_reduce_without_syncwarp_on_sm90"),
         1, 64, lambda: (i32(64), i32(1, 0)), arch="sm_60"),
    Case("warp_reduce_with_syncwarp", r"""
extern "C" __global__ void k(const int* in, int* out) {
    __shared__ int s[64];
    int t = threadIdx.x;
    s[t] = in[t];
    __syncthreads();
    if (t < 32) {
        for (int d = 32; d > 0; d >>= 1) {
            int v = s[t] + s[t + d];
            __syncwarp();
            s[t] = v;
            __syncwarp();
        }
    }
    if (t == 0) out[0] = s[0];
}""", 1, 64, lambda: (i32(64), i32(1, 0))),
    Case("shuffle_reduction", r"""
extern "C" __global__ void k(const int* in, int* out) {
    int v = in[blockIdx.x * 64 + threadIdx.x];
    for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(0xffffffff, v, d);
    if (threadIdx.x % 32 == 0) atomicAdd(out, v);
}""", 2, 64, lambda: (i32(128), i32(1, 0))),
    Case("shuffle_with_partial_mask_in_branch", r"""
extern "C" __global__ void k(int* out) {
    int v = threadIdx.x;
    if (threadIdx.x < 16) v += __shfl_xor_sync(0x0000ffff, v, 1);
    out[threadIdx.x] = v;
}""", 1, 32, lambda: (i32(32, 0),)),
    Case("shared_histogram_zeroed", r"""
extern "C" __global__ void k(const int* in, int* out) {
    __shared__ int h[16];
    int t = threadIdx.x;
    if (t < 16) h[t] = 0;
    __syncthreads();
    atomicAdd(&h[in[t] % 16], 1);
    __syncthreads();
    if (t < 16) atomicAdd(&out[t], h[t]);
}""", 2, 64, lambda: (i32(64), i32(16, 0))),
    Case("last_block_reduction_with_threadfence", r"""
extern "C" __global__ void k(const int* in, int* partial, unsigned* count, int* out) {
    int b = blockIdx.x;
    if (threadIdx.x == 0) {
        partial[b] = in[b] * 3;
        __threadfence();
        unsigned ticket = atomicAdd(count, 1u);
        if (ticket == gridDim.x - 1) {
            int sum = 0;
            for (int i = 0; i < gridDim.x; i++) sum += partial[i];
            out[0] = sum;
        }
    }
}""", 4, 32, lambda: (i32(4), i32(4, 0), np.zeros(1, np.uint32), i32(1, 0))),
    Case("message_passing_with_atomic_flag_accesses_across_blocks", r"""
extern "C" __global__ void k(int* data, int* flag, int* out) {
    if (blockIdx.x == 0) {
        if (threadIdx.x == 0) {
            data[0] = 42;
            __threadfence();
            atomicExch(flag, 1);
        }
    } else if (threadIdx.x == 0) {
        while (atomicAdd(flag, 0) == 0) { }
        __threadfence();
        out[0] = data[0];
    }
}""", 2, 32, lambda: (i32(1, 0), i32(1, 0), i32(1, 0))),
    Case("message_passing_with_a_volatile_flag_across_blocks", MESSAGE_PASSING, 2, 32,
         lambda: (i32(1, 0), i32(1, 0), i32(1, 0))),
    Case("message_passing_with_an_atomic_flag_across_blocks",
         MESSAGE_PASSING.replace("flag[0] = 1;", "atomicExch((int*)flag, 1);"), 2, 32,
         lambda: (i32(1, 0), i32(1, 0), i32(1, 0))),
    Case("message_passing_with_a_volatile_flag_between_warps", r"""
extern "C" __global__ void k(int* data, volatile int* flag, int* out) {
    if (threadIdx.x == 32) {
        data[0] = 42;
        __threadfence();
        flag[0] = 1;
    } else if (threadIdx.x == 0) {
        while (flag[0] == 0) { }
        __threadfence();
        out[0] = data[0];
    }
}""", 1, 64, lambda: (i32(1, 0), i32(1, 0), i32(1, 0)), options={"budget": 200000}),
    Case("volatile_shared_flag_between_warps", r"""
extern "C" __global__ void k(int* out) {
    __shared__ volatile int flag;
    if (threadIdx.x == 0) flag = 0;
    __syncthreads();
    if (threadIdx.x == 32) {
        flag = 7;
    } else if (threadIdx.x == 0) {
        while (flag == 0) { }
        out[0] = flag;
    }
}""", 1, 64, lambda: (i32(1, 0),), options={"budget": 200000}),
    Case("shared_data_handed_between_warps_behind_a_block_fence_and_a_volatile_flag", SHARED_HANDOVER,
         1, 64, lambda: (i32(32, 0),), options={"budget": 200000}),
    Case("global_atomic_counter", r"""
extern "C" __global__ void k(unsigned* count, int* slots) {
    unsigned i = atomicAdd(count, 1u);
    slots[i] = blockIdx.x * blockDim.x + threadIdx.x;
}""", 4, 64, lambda: (np.zeros(1, np.uint32), i32(256, 0))),
    Case("votes_on_a_full_warp", r"""
extern "C" __global__ void k(const int* in, unsigned* out) {
    int p = in[threadIdx.x] > 10;
    unsigned b = __ballot_sync(0xffffffff, p);
    int a = __all_sync(0xffffffff, p), y = __any_sync(0xffffffff, p);
    out[threadIdx.x] = b + a + y;
}""", 1, 32, lambda: (i32(32), np.zeros(32, np.uint32))),
    Case("local_array_fully_initialised", r"""
extern "C" __global__ void k(const int* in, int* out, int m) {
    int a[8];
    int t = threadIdx.x;
    for (int i = 0; i < 8; i++) a[i] = in[t] + i;
    int s = 0;
    for (int i = 0; i < m; i++) s += a[(i + t) % 8];
    out[t] = s;
}""", 1, 32, lambda: (i32(32), i32(32, 0), np.int32(8))),
    Case("dynamic_shared_within_shared_mem", r"""
extern "C" __global__ void k(int* out) {
    extern __shared__ int s[];
    int t = threadIdx.x;
    s[t] = t * 2;
    __syncthreads();
    out[t] = s[blockDim.x - 1 - t];
}""", 1, 64, lambda: (i32(64, 0),), shared_mem=64 * 4),
    Case("lock_with_critical_section_inside_the_loop_sm60", r"""
extern "C" __global__ void k(int* lock, int* counter) {
    bool done = false;
    while (!done) {
        if (atomicCAS(lock, 0, 1) == 0) {
            counter[0] = counter[0] + 1;
            __threadfence();
            atomicExch(lock, 0);
            done = true;
        }
    }
}""", 2, 32, lambda: (i32(1, 0), i32(1, 0)), arch="sm_60"),
    Case("intra_warp_spin_lock_on_sm90", _unmarked("intra_warp_spin_lock_on_sm60"),
         1, 32, lambda: (i32(1, 0), i32(1, 0)), options={"stats": False}),
    Case("stencil_1d_with_halo", r"""
#define R 2
extern "C" __global__ void k(const float* in, float* out, int n) {
    __shared__ float s[64 + 2 * R];
    int g = blockIdx.x * 64 + threadIdx.x;
    int l = threadIdx.x + R;
    s[l] = in[g];
    if (threadIdx.x < R) {
        s[l - R] = g >= R ? in[g - R] : 0.0f;
        s[l + 64] = g + 64 < n ? in[g + 64] : 0.0f;
    }
    __syncthreads();
    float v = 0.0f;
    for (int o = -R; o <= R; o++) v += s[l + o];
    out[g] = v;
}""", 2, 64, lambda: (f32(128), np.zeros(128, np.float32), np.int32(128))),
    Case("stencil_2d_with_halo", r"""
#define B 8
extern "C" __global__ void k(const float* in, float* out, int n) {
    __shared__ float tile[B + 2][B + 2];
    int x = blockIdx.x * B + threadIdx.x, y = blockIdx.y * B + threadIdx.y;
    tile[threadIdx.y + 1][threadIdx.x + 1] = in[y * n + x];
    if (threadIdx.y == 0) tile[0][threadIdx.x + 1] = y > 0 ? in[(y - 1) * n + x] : 0.0f;
    __syncthreads();
    out[y * n + x] = tile[threadIdx.y][threadIdx.x + 1] + tile[threadIdx.y + 1][threadIdx.x + 1];
}""", (2, 2), (8, 8), lambda: (f32(256), np.zeros(256, np.float32), np.int32(16))),
    Case("device_function_then_barrier", r"""
__device__ void put(int* s, int i, int v) { s[i] = v; }
extern "C" __global__ void k(const int* in, int* out) {
    __shared__ int s[64];
    int t = threadIdx.x;
    put(s, t, in[t] * 2);
    __syncthreads();
    out[t] = s[(t + 32) % 64];
}""", 1, 64, lambda: (i32(64), i32(64, 0))),
    Case("grid_stride_loop", r"""
extern "C" __global__ void k(const float* x, float* y, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = 2.0f * x[i] + y[i];
}""", 2, 64, lambda: (f32(1000), f32(1000), np.int32(1000))),
    Case("fresh_buffer_written_before_read", r"""
extern "C" __global__ void k(const float* in, float* out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    out[t] = 0.0f;
    out[t] += in[t];
}""", 2, 64, lambda: (gpuemu.asarray(f32(128)), gpuemu.empty(128, np.float32))),
    Case("warp_scan_shfl_up", r"""
extern "C" __global__ void k(const int* in, int* out) {
    int v = in[threadIdx.x];
    for (int d = 1; d < 32; d <<= 1) {
        int u = __shfl_up_sync(0xffffffff, v, d);
        if (threadIdx.x % 32 >= d) v += u;
    }
    out[threadIdx.x] = v;
}""", 1, 64, lambda: (i32(64), i32(64, 0))),
    Case("barrier_after_early_exit", r"""
extern "C" __global__ void k(int* out, int n) {
    __shared__ int s[128];
    int t = threadIdx.x;
    if (t >= n) return;
    s[t] = t;
    __syncthreads();
    out[t] = s[n - 1 - t];
}""", 1, 128, lambda: (i32(128, 0), np.int32(64))),
]
