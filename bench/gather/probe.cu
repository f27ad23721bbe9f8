// Gather probe: which way of reading rows out of mapped host memory gets
// closest to the copy engine? An experiment kept with its results
// (bench/gather/results/*-probe.*), not part of the runtime.
//
// For tables of several sizes (mapped pinned host memory), it times gathers
// of n random rows of b bytes with
//   ldg/G   G lanes per row, 16-byte loads of the row's 16-byte hull, four
//           in flight per lane, circularly shifted (the runtime's kernels,
//           without the realignment on the way out: the probe stores the hull)
//   tma/K   one lane per warp issues cp.async.bulk (the Hopper bulk copy
//           engine) of each row's hull into shared memory, K rows in flight
//           per warp, completing on mbarriers; the warp stores the hull out
//   ideal   one cudaMemcpyAsync of the same byte count (the PCIe limit)
// with random and with sorted indices. Each gather's output is compared
// with the rows gathered on the CPU once per (table, config, method).
//
// `--reread` instead times repeated reads of a small set of host rows with
// plain and read-only (.nc) loads: does L2 keep host memory?
//
//   nvcc -O3 -arch=sm_90 -std=c++17 -o probe bench/gather/probe.cu
//   ./probe [table GiB list, default 0.0625,1,8] > probe.jsonl
//   ./probe --reread > reread.jsonl
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#define CHECK(x)                                                                      \
  do {                                                                                \
    cudaError_t e_ = (x);                                                             \
    if (e_ != cudaSuccess) {                                                          \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

struct Job {
  const uint8_t* src;  // device-visible address of the host table
  const int64_t* idx;
  uint8_t* dst;        // n rows of `hull` bytes
  int64_t n;
  int64_t row_bytes;   // table row stride (= row size)
  int64_t hull;        // bytes read per row: 16-aligned span covering the row
  int64_t offset;      // row start inside its 16-byte chunk (0 when aligned)
};

__device__ __forceinline__ const uint8_t* hull_of(const Job& j, int64_t r) {
  return j.src + r * j.row_bytes - j.offset;
}

template <int G>
__global__ void __launch_bounds__(kThreads) ldg_gather(Job j) {
  constexpr int U = 4;
  const int c0 = threadIdx.x % G;
  const int64_t chunks = j.hull / 16;
  const int64_t step = int64_t(gridDim.x) * (kThreads / G);
  for (int64_t g = (int64_t(blockIdx.x) * kThreads + threadIdx.x) / G; g < j.n; g += step) {
    const uint8_t* h = hull_of(j, j.idx[g]);
    const uint4* s = reinterpret_cast<const uint4*>(h);
    uint4* d = reinterpret_cast<uint4*>(j.dst + g * j.hull);
    // Circular shift: lane 0 starts on the first 128-byte line boundary.
    const int64_t shift = ((128 - (reinterpret_cast<uint64_t>(h) & 127)) & 127) / 16 % chunks;
    for (int64_t base = 0; base < chunks; base += G * U) {
      uint4 v[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        int64_t c = base + c0 + u * G;
        if (c < chunks) v[u] = __ldg(s + (c + shift) % chunks);
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        int64_t c = base + c0 + u * G;
        if (c < chunks) d[(c + shift) % chunks] = v[u];
      }
    }
  }
}

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void bar_init(uint64_t* bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(bar)));
}

__device__ __forceinline__ void bulk_load(void* smem, const void* gmem, uint32_t bytes,
                                          uint64_t* bar) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)),
               "r"(bytes)
               : "memory");
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
          "r"(smem_addr(smem)),
      "l"(gmem), "r"(bytes), "r"(smem_addr(bar))
      : "memory");
}

__device__ __forceinline__ void bar_wait(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      " @!p bra W;\n}" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
}

// K stages of `stage` bytes per warp; row j of this warp goes to stage j % K.
template <int K>
__global__ void __launch_bounds__(kThreads) tma_gather(Job j, int64_t stage) {
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ uint64_t bars[kWarps][K];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  uint8_t* buf = smem + int64_t(warp) * K * stage;
  if (lane == 0)
    for (int k = 0; k < K; ++k) bar_init(&bars[warp][k]);
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  __syncwarp();
  const int64_t gw = int64_t(blockIdx.x) * kWarps + warp;
  const int64_t nw = int64_t(gridDim.x) * kWarps;
  auto row = [&](int64_t jj) { return gw + jj * nw; };
  if (lane == 0)
    for (int k = 0; k < K && row(k) < j.n; ++k)
      bulk_load(buf + k * stage, hull_of(j, j.idx[row(k)]), uint32_t(j.hull), &bars[warp][k]);
  const int64_t chunks = j.hull / 16;
  for (int64_t jj = 0; row(jj) < j.n; ++jj) {
    const int k = int(jj % K);
    bar_wait(&bars[warp][k], uint32_t((jj / K) & 1));
    const uint4* s = reinterpret_cast<const uint4*>(buf + k * stage);
    uint4* d = reinterpret_cast<uint4*>(j.dst + row(jj) * j.hull);
    for (int64_t c = lane; c < chunks; c += 32) d[c] = s[c];
    // The stage is refilled by the async proxy after these generic reads.
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncwarp();
    if (lane == 0 && row(jj + K) < j.n)
      bulk_load(buf + k * stage, hull_of(j, j.idx[row(jj + K)]), uint32_t(j.hull),
                &bars[warp][k]);
  }
}

// Reread experiment: 32 lanes per row, every lane loading 4-byte words
// (the generated GEMM/traversal kernels' pattern) or 16-byte vectors, with a
// plain ld.global or the read-only ld.global.nc. Does L2 keep host rows that
// are read again?
template <int MODE>  // 0: ld.global.b32, 1: ld.global.nc.b32, 2: ld.global.v4, 3: ld.global.nc.v4
__global__ void __launch_bounds__(kThreads) reread_gather(Job j) {
  const int lane = threadIdx.x % 32;
  const int64_t step = int64_t(gridDim.x) * (kThreads / 32);
  for (int64_t g = (int64_t(blockIdx.x) * kThreads + threadIdx.x) / 32; g < j.n; g += step) {
    const uint8_t* s = hull_of(j, j.idx[g]);
    uint8_t* d = j.dst + g * j.hull;
    if constexpr (MODE < 2) {
      for (int64_t c = lane; c < j.hull / 4; c += 32) {
        uint32_t v;
        if constexpr (MODE == 0)
          asm volatile("ld.global.b32 %0, [%1];" : "=r"(v) : "l"(s + 4 * c));
        else
          asm volatile("ld.global.nc.b32 %0, [%1];" : "=r"(v) : "l"(s + 4 * c));
        reinterpret_cast<uint32_t*>(d)[c] = v;
      }
    } else {
      for (int64_t c = lane; c < j.hull / 16; c += 32) {
        uint4 v;
        if constexpr (MODE == 2)
          asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                       : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(s + 16 * c));
        else
          asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
                       : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(s + 16 * c));
        reinterpret_cast<uint4*>(d)[c] = v;
      }
    }
  }
}

struct Config {
  int64_t n, bytes;
};

static double median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median GPU time (ms) of launch(i) for i = warmup .. warmup + runs - 1,
// after `warmup` untimed calls, each timed alone with events.
template <typename F>
static double median_ms(cudaStream_t stream, int warmup, int runs, F&& launch) {
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  std::vector<float> ms;
  for (int r = 0; r < warmup + runs; ++r) {
    CHECK(cudaEventRecord(e0, stream));
    launch(r);
    CHECK(cudaEventRecord(e1, stream));
    CHECK(cudaEventSynchronize(e1));
    float t;
    CHECK(cudaEventElapsedTime(&t, e0, e1));
    if (r >= warmup) ms.push_back(t);
  }
  CHECK(cudaGetLastError());
  CHECK(cudaEventDestroy(e0));
  CHECK(cudaEventDestroy(e1));
  return median(ms);
}

// 1M reads of 256-byte rows (a width-64 fp32 feature) out of a 64 MB host
// table, drawn from `distinct` rows, so that a small working set is read
// many times; the same bytes from device memory for comparison.
static void reread_experiment(const cudaDeviceProp& prop, cudaStream_t stream) {
  const int64_t rows = 1 << 18, bytes = 256, n = 1 << 20;
  uint8_t *host, *host_dev, *devtab, *out;
  CHECK(cudaHostAlloc(&host, rows * bytes, cudaHostAllocMapped));
  memset(host, 7, rows * bytes);
  CHECK(cudaHostGetDevicePointer(&host_dev, host, 0));
  CHECK(cudaMalloc(&devtab, rows * bytes));
  CHECK(cudaMalloc(&out, n * bytes));
  int64_t* idx;
  CHECK(cudaMalloc(&idx, n * sizeof(int64_t)));
  const char* names[] = {"b32", "nc.b32", "v4", "nc.v4"};
  void (*kernels[])(Job) = {reread_gather<0>, reread_gather<1>, reread_gather<2>,
                            reread_gather<3>};
  for (int64_t distinct : {int64_t(8192), int64_t(65536), rows}) {
    std::mt19937_64 rng(distinct);
    std::vector<int64_t> h(n);
    for (auto& v : h) v = int64_t(rng() % uint64_t(distinct)) * (rows / distinct);
    CHECK(cudaMemcpy(idx, h.data(), n * sizeof(int64_t), cudaMemcpyHostToDevice));
    for (int where = 0; where < 2; ++where)
      for (int m = 0; m < 4; ++m) {
        int per_sm;
        CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernels[m], kThreads, 0));
        Job j{where ? devtab : host_dev, idx, out, n, bytes, bytes, 0};
        const double ms = median_ms(stream, 2, 10, [&](int) {
          kernels[m]<<<per_sm * prop.multiProcessorCount, kThreads, 0, stream>>>(j);
        });
        printf("{\"experiment\": \"reread\", \"table\": \"%s\", \"distinct_rows\": %lld, "
               "\"reads\": %lld, \"row_bytes\": %lld, \"load\": \"%s\", \"ms\": %.5f}\n",
               where ? "device" : "host", (long long)distinct, (long long)n, (long long)bytes,
               names[m], ms);
        fflush(stdout);
      }
  }
  CHECK(cudaFreeHost(host));
  CHECK(cudaFree(devtab));
  CHECK(cudaFree(out));
  CHECK(cudaFree(idx));
}

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--reread") {
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    cudaStream_t stream;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    reread_experiment(prop, stream);
    return 0;
  }
  std::vector<double> tables_gib = {0.0625, 1, 8};
  if (argc > 1) {
    tables_gib.clear();
    for (char* t = strtok(argv[1], ","); t; t = strtok(nullptr, ",")) tables_gib.push_back(atof(t));
  }
  // Every timed run reads its own index set, so that no run finds the rows
  // of an earlier one in L2: set 0 is checked, then each of at most 8
  // methods takes reps + 2 fresh sets.
  const int reps = 20, sets = 1 + 8 * (reps + 2);
  const std::vector<Config> configs = {{8192, 256}, {65536, 1024}, {262144, 2048}, {262144, 2052}};
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  fprintf(stderr, "# %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const int64_t max_out = 262144LL * 2080;
  uint8_t *out, *copy_dst;
  CHECK(cudaMalloc(&out, max_out));
  CHECK(cudaMalloc(&copy_dst, max_out));
  uint8_t* copy_src;
  CHECK(cudaHostAlloc(&copy_src, max_out, cudaHostAllocDefault));
  memset(copy_src, 1, max_out);
  int64_t* idx_dev;
  CHECK(cudaMalloc(&idx_dev, sizeof(int64_t) * 262144 * size_t(sets)));
  std::vector<uint8_t> got(max_out), want(max_out);

  for (double gib : tables_gib) {
    const int64_t tbytes = int64_t(gib * (1LL << 30)) / 4096 * 4096;
    uint8_t* table;
    CHECK(cudaHostAlloc(&table, tbytes + 4096, cudaHostAllocMapped));
    {  // Fill with a position-dependent pattern, in parallel.
      const int T = std::max(1u, std::thread::hardware_concurrency());
      std::vector<std::thread> ts;
      for (int t = 0; t < T; ++t)
        ts.emplace_back([=] {
          const int64_t words = (tbytes + 4096) / 8, a = words * t / T, b = words * (t + 1) / T;
          uint64_t* w = reinterpret_cast<uint64_t*>(table);
          for (int64_t i = a; i < b; ++i) w[i] = i * 0x9E3779B97F4A7C15ULL;
        });
      for (auto& t : ts) t.join();
    }
    uint8_t* table_dev;
    CHECK(cudaHostGetDevicePointer(&table_dev, table, 0));
    for (const Config& cf : configs) {
      const int64_t rows = tbytes / cf.bytes - 1;
      for (int sorted = 0; sorted < 2; ++sorted) {
        std::mt19937_64 rng(cf.n * 31 + cf.bytes);
        std::vector<int64_t> idx(cf.n * sets);
        for (int s = 0; s < sets; ++s) {
          for (int64_t i = 0; i < cf.n; ++i) {
            int64_t r = int64_t(rng() % uint64_t(rows));
            if (cf.bytes % 16) r = r / 4 * 4 + 1;  // same misalignment for every row
            idx[s * cf.n + i] = r;
          }
          if (sorted) std::sort(idx.begin() + s * cf.n, idx.begin() + (s + 1) * cf.n);
        }
        CHECK(cudaMemcpy(idx_dev, idx.data(), sizeof(int64_t) * idx.size(), cudaMemcpyHostToDevice));
        const int64_t offset = cf.bytes % 16;  // rows r = 4k + 1 of 2052 B start at 4 mod 16
        const int64_t hull = (offset + cf.bytes + 15) / 16 * 16;
        // CPU reference of set 0 (hull bytes).
        for (int64_t i = 0; i < cf.n; ++i)
          memcpy(&want[i * hull], table + idx[i] * cf.bytes - offset, hull);

        int next_set = 1;
        auto time_it = [&](auto&& run_set) {
          return median_ms(stream, 2, reps, [&](int) { run_set(next_set++); });
        };
        auto verify = [&](auto&& run_set) {
          CHECK(cudaMemset(out, 0xEE, cf.n * hull));
          run_set(0);
          CHECK(cudaStreamSynchronize(stream));
          CHECK(cudaMemcpy(got.data(), out, cf.n * hull, cudaMemcpyDeviceToHost));
          return memcmp(got.data(), want.data(), cf.n * hull) == 0;
        };
        auto emit = [&](const std::string& method, double ms, int correct) {
          printf("{\"table_gib\": %g, \"n\": %lld, \"row_bytes\": %lld, \"sorted\": %d, "
                 "\"method\": \"%s\", \"ms\": %.5f, \"correct\": %s}\n",
                 gib, (long long)cf.n, (long long)cf.bytes, sorted, method.c_str(), ms,
                 correct < 0 ? "null" : (correct ? "true" : "false"));
          fflush(stdout);
        };

        // ideal: one copy of the same bytes.
        if (!sorted) {
          double ms = time_it([&](int) {
            CHECK(cudaMemcpyAsync(copy_dst, copy_src, cf.n * cf.bytes, cudaMemcpyHostToDevice, stream));
          });
          emit("ideal", ms, -1);
        }
        auto run_ldg = [&](auto kern, const std::string& name) {
          int per_sm;
          CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, kThreads, 0));
          const int blocks = per_sm * prop.multiProcessorCount;
          auto go = [&](int s) {
            Job j{table_dev, idx_dev + s * cf.n, out, cf.n, cf.bytes, hull, offset};
            kern<<<blocks, kThreads, 0, stream>>>(j);
          };
          bool ok = verify(go);
          emit(name, time_it(go), ok);
        };
        run_ldg(ldg_gather<8>, "ldg/8");
        run_ldg(ldg_gather<16>, "ldg/16");
        run_ldg(ldg_gather<32>, "ldg/32");
        auto run_tma = [&](auto kern, int K, const std::string& name) {
          const int64_t stage = (hull + 127) / 128 * 128;
          const size_t smem = size_t(kWarps) * K * stage;
          if (smem > size_t(prop.sharedMemPerBlockOptin)) return;
          CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
          int per_sm;
          CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, kThreads, smem));
          const int blocks = std::max(1, per_sm) * prop.multiProcessorCount;
          auto go = [&](int s) {
            Job j{table_dev, idx_dev + s * cf.n, out, cf.n, cf.bytes, hull, offset};
            kern<<<blocks, kThreads, smem, stream>>>(j, stage);
          };
          bool ok = verify(go);
          emit(name, time_it(go), ok);
        };
        run_tma(tma_gather<2>, 2, "tma/2");
        run_tma(tma_gather<4>, 4, "tma/4");
        run_tma(tma_gather<8>, 8, "tma/8");
      }
    }
    CHECK(cudaFreeHost(table));
  }
  return 0;
}
