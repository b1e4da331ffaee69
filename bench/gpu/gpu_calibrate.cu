// gpu_calibrate: measures, on the local NVIDIA GPU, the machine facts behind three of the
// simulator's topology fields (docs/simulator.md "Calibration on a GPU"):
//
//   launch_us      one collective call's fixed cost: an empty kernel launch, alone (launch and
//                  wait, the latency a call pays) and back to back (the launch rate);
//   memory_gbps    the bandwidth of local copies and reductions, counted as the simulator counts
//                  them: memory traffic (read + write bytes) per second, copy and fp16/fp32 sum;
//   per threadblock the payload bandwidth one threadblock (NCCL's 512 threads) copies, and how
//                  it grows with the number of threadblocks: the reason one NCCL channel cannot
//                  fill a link and NCCL runs many.
//
// It is not part of the build (no CUDA toolchain is required by ccsynth); scripts/gpu_calibrate.sh
// compiles it with nvcc when one is present. Output: CSV on stdout, `metric,config,value,unit`.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

void check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  std::fprintf(stderr, "gpu_calibrate: %s: %s\n", what, cudaGetErrorString(status));
  std::exit(1);
}

__global__ void empty_kernel() {}

// Grid-stride 16-byte copy: the access pattern of NCCL's Simple protocol primitives.
__global__ void copy_kernel(const int4* __restrict__ in, int4* __restrict__ out, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    out[i] = in[i];
}

// The same copy with kUnroll independent 16-byte loads in flight per thread before the stores,
// as NCCL's primitives unroll (COLL_UNROLL 4): one threadblock is bound by the loads it keeps in
// flight, so this is the per-threadblock figure to compare with NCCL's channels.
constexpr int kUnroll = 4;
__global__ void copy_unrolled_kernel(const int4* __restrict__ in, int4* __restrict__ out,
                                     size_t n) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t base = blockIdx.x * blockDim.x + threadIdx.x; base < n; base += stride * kUnroll) {
    int4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (base + u * stride < n) v[u] = in[base + u * stride];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (base + u * stride < n) out[base + u * stride] = v[u];
  }
}

// out = a + b, fp32 lanes of 16-byte vectors (the reduce step of `rrc`/`re`).
__global__ void sum_f32_kernel(const float4* __restrict__ a, const float4* __restrict__ b,
                               float4* __restrict__ out, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    float4 x = a[i], y = b[i];
    out[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
}

// A timer over one stream: median of `reps` runs of `body`, in microseconds.
template <class Body>
double median_us(int reps, Body body) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "event");
  check(cudaEventCreate(&stop), "event");
  std::vector<float> ms;
  body();  // warm-up
  check(cudaDeviceSynchronize(), "warm-up");
  for (int r = 0; r < reps; ++r) {
    check(cudaEventRecord(start), "record");
    body();
    check(cudaEventRecord(stop), "record");
    check(cudaEventSynchronize(stop), "sync");
    float t = 0;
    check(cudaEventElapsedTime(&t, start, stop), "elapsed");
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return 1000.0 * ms[ms.size() / 2];
}

void row(const char* metric, const char* config, double value, const char* unit) {
  std::printf("%s,%s,%.3f,%s\n", metric, config, value, unit);
}

void measure_launch() {
  // Latency: one launch and the host waiting for it, as a blocking collective call does.
  constexpr int kCalls = 2000;
  double latency = median_us(5, [] {
    for (int i = 0; i < kCalls; ++i) {
      empty_kernel<<<1, 1>>>();
      check(cudaStreamSynchronize(nullptr), "sync");
    }
  });
  row("launch_us", "launch+sync", latency / kCalls, "us");
  double rate = median_us(5, [] {
    for (int i = 0; i < kCalls; ++i) empty_kernel<<<1, 1>>>();
  });
  row("launch_us", "back-to-back", rate / kCalls, "us");
}

void measure_bandwidth(size_t bytes, int sms) {
  size_t n = bytes / sizeof(int4);
  int4 *a, *b, *c;
  check(cudaMalloc(&a, bytes), "malloc");
  check(cudaMalloc(&b, bytes), "malloc");
  check(cudaMalloc(&c, bytes), "malloc");
  check(cudaMemset(a, 1, bytes), "memset");
  check(cudaMemset(b, 2, bytes), "memset");
  const int threads = 512;  // NCCL's threads per channel for the Simple protocol
  const double gb = bytes / 1e9;

  // Whole GPU: enough blocks to fill every SM several times.
  int grid = sms * 8;
  double copy = median_us(5, [&] { copy_kernel<<<grid, threads>>>(a, c, n); });
  row("memory_gbps", "copy all SMs (traffic)", 2 * gb / (copy * 1e-6), "GB/s");
  double sum = median_us(5, [&] {
    sum_f32_kernel<<<grid, threads>>>(reinterpret_cast<float4*>(a), reinterpret_cast<float4*>(b),
                                      reinterpret_cast<float4*>(c), n);
  });
  row("memory_gbps", "fp32 sum all SMs (traffic)", 3 * gb / (sum * 1e-6), "GB/s");
  double memcpy_us = median_us(5, [&] { cudaMemcpyAsync(c, a, bytes, cudaMemcpyDeviceToDevice); });
  row("memory_gbps", "cudaMemcpy D2D (traffic)", 2 * gb / (memcpy_us * 1e-6), "GB/s");

  // Per threadblock: payload GB/s copied by 1, 2, 4, ... blocks of 512 threads.
  for (int blocks = 1; blocks <= 2 * sms; blocks *= 2) {
    size_t part = std::min(n, size_t(blocks) * (size_t(64) << 20) / sizeof(int4));
    double t = median_us(3, [&] { copy_kernel<<<blocks, threads>>>(a, c, part); });
    char config[64];
    std::snprintf(config, sizeof config, "copy %d threadblock(s) x %d threads (payload)", blocks,
                  threads);
    row("threadblock_gbps", config, part * sizeof(int4) / 1e9 / (t * 1e-6), "GB/s");
  }
  // One threadblock of 128 .. 1024 threads (NCCL uses 512 for Simple, up to 640 in all).
  for (int block_threads = 128; block_threads <= 1024; block_threads *= 2) {
    size_t part = std::min(n, (size_t(64) << 20) / sizeof(int4));
    double t = median_us(3, [&] { copy_kernel<<<1, block_threads>>>(a, c, part); });
    char config[64];
    std::snprintf(config, sizeof config, "copy 1 threadblock x %d threads (payload)",
                  block_threads);
    row("threadblock_gbps", config, part * sizeof(int4) / 1e9 / (t * 1e-6), "GB/s");
  }
  // Unrolled as NCCL's primitives: 1, 2, 4 and 8 threadblocks of 512 threads.
  for (int blocks = 1; blocks <= 8; blocks *= 2) {
    size_t part = std::min(n, size_t(blocks) * (size_t(64) << 20) / sizeof(int4));
    double t = median_us(3, [&] { copy_unrolled_kernel<<<blocks, threads>>>(a, c, part); });
    char config[80];
    std::snprintf(config, sizeof config, "copy unrolled x%d %d threadblock(s) x %d threads (payload)",
                  kUnroll, blocks, threads);
    row("threadblock_gbps", config, part * sizeof(int4) / 1e9 / (t * 1e-6), "GB/s");
  }
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
}

}  // namespace

int main(int argc, char** argv) {
  size_t bytes = size_t(1) << 30;
  if (argc > 1) bytes = std::strtoull(argv[1], nullptr, 10);
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "device properties");
  std::printf("metric,config,value,unit\n");
  std::printf("device,%s,%d,SMs\n", prop.name, prop.multiProcessorCount);
  measure_launch();
  measure_bandwidth(bytes, prop.multiProcessorCount);
  return 0;
}
