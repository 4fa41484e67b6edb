// ceilings.cu: single-GPU ceilings that the transfer and compute models are calibrated against.
//
// Tests:
//   hbm_read, hbm_write, hbm_copy  16-byte vector accesses, grid-stride, over --bytes (default 2 GiB, many
//                                  times the L2); copy counts bytes read + bytes written (METHOD.md)
//   l2_read                        a working set of --l2-fraction of the L2 (default 1/4), read --passes
//                                  times per launch after a warming pass
//   mma_sync_bf16, mma_sync_fp8    register-only loops of mma.sync.m16n8k16 bf16 and m16n8k32 e4m3 (f32
//                                  accumulate), 8 independent accumulators per warp. mma.sync cannot reach
//                                  the wgmma peak on Hopper: the record says so
//   wgmma_bf16, wgmma_fp8          wgmma.mma_async m64n256k16 bf16 / m64n256k32 e4m3 (sm_90a), A and B tiles in
//                                  shared memory (no swizzle), f32 accumulators in registers, --warpgroups
//                                  per block, one block per SM
//   tma_stream                     a GEMM mainloop's operand supply without the math: one block per SM on
//                                  --tma-blocks SMs (default every SM, and one alone), one thread keeping --depths bulk loads (cp.async.bulk global ->
//                                  shared, mbarrier completion) of --stage-bytes in flight, from HBM (--bytes,
//                                  streamed once) and from L2 (the l2_read working set, --passes times). Gives
//                                  the per-SM operand rate against the bytes in flight (Little's law: the
//                                  loaded latency) that the schedule model's shared-memory pressure uses
// Every test checks its result: copy and write compare the destination; the matrix loops first run on
// all-ones tiles and check every accumulator equals iters * K, then are timed on random data.
#include <cuda_bf16.h>

#include "common.cuh"

const char* rl::g_program = "ceilings";
using namespace rl;

static const char* kHelp =
    "ceilings: HBM, L2 and tensor-core ceilings of one GPU (JSON Lines on stdout)\n"
    "\n"
    "  --tests LIST        hbm_read,hbm_write,hbm_copy,l2_read,mma_sync_bf16,mma_sync_fp8,wgmma_bf16,wgmma_fp8,\n"
    "                      tma_stream (default: all)\n"
    "  --depths LIST       tma_stream loads in flight per SM (default 1,2,3,4,6,8)\n"
    "  --stage-bytes LIST  tma_stream bytes per load (default 16K,32K,64K; depth x stage <= 200 KiB)\n"
    "  --tma-blocks LIST   tma_stream blocks, one per SM: 'all' (every SM) or a count (default all,1)\n"
    "  --device N          GPU (default 0)\n"
    "  --bytes SIZE        HBM buffer size (default 2G)\n"
    "  --l2-fraction F     L2 working set as a fraction of the L2 size (default 0.25)\n"
    "  --passes N          L2 passes per launch (default 40)\n"
    "  --blocks-per-sm N   memory and mma.sync tests (default 4)   --threads N (default 512)\n"
    "  --mma-iters N       mma.sync loop trips (default 20000)   --wgmma-iters N (default 5000)\n"
    "  --warpgroups N      wgmma warpgroups per block, 1..3 (default 2)\n"
    "  --warmup N (default 3)   --iters N timed launches (default 20)   --seed N\n"
    "  --help\n";

constexpr int kUnroll = 4;

// ------------------------------------------------------------------------------------------------ memory
__global__ void hbm_read(const int4* __restrict__ p, size_t n, int4* sink) {
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  int4 acc = make_int4(0, 0, 0, 0);
  for (; i + (kUnroll - 1) * stride < n; i += kUnroll * stride) {
    int4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = p[i + u * stride];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) acc.x ^= v[u].x, acc.y ^= v[u].y, acc.z ^= v[u].z, acc.w ^= v[u].w;
  }
  for (; i < n; i += stride) {
    int4 v = p[i];
    acc.x ^= v.x, acc.y ^= v.y, acc.z ^= v.z, acc.w ^= v.w;
  }
  if ((acc.x ^ acc.y ^ acc.z ^ acc.w) == 0x5eed1234) sink[0] = acc;  // keeps the loads; practically never true
}

__device__ __forceinline__ int4 pattern(size_t i, uint32_t s) {
  const uint32_t x = static_cast<uint32_t>(i) * 4u;
  return make_int4(x ^ s, (x + 1) ^ s, (x + 2) ^ s, (x + 3) ^ s);
}
__global__ void hbm_write(int4* __restrict__ p, size_t n, uint32_t s) {
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride) p[i] = pattern(i, s);
}
__global__ void count_pattern_mismatch(const int4* p, size_t n, uint32_t s, unsigned long long* bad) {
  unsigned long long local = 0;
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride) {
    const int4 v = p[i], w = pattern(i, s);
    local += (v.x != w.x) + (v.y != w.y) + (v.z != w.z) + (v.w != w.w);
  }
  if (local) atomicAdd(bad, local);
}
// Reads a small buffer `passes` times; each thread keeps its slice, so after the first pass it hits L2.
__global__ void l2_read(const int4* __restrict__ p, size_t n, int passes, int4* sink) {
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  int4 acc = make_int4(0, 0, 0, 0);
  for (int r = 0; r < passes; ++r) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    for (; i + (kUnroll - 1) * stride < n; i += kUnroll * stride) {
      int4 v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) v[u] = __ldcg(p + i + u * stride);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) acc.x ^= v[u].x, acc.y ^= v[u].y, acc.z ^= v[u].z, acc.w ^= v[u].w;
    }
    for (; i < n; i += stride) {
      int4 v = __ldcg(p + i);
      acc.x ^= v.x, acc.y ^= v.y, acc.z ^= v.z, acc.w ^= v.w;
    }
  }
  if ((acc.x ^ acc.y ^ acc.z ^ acc.w) == 0x5eed1234) sink[0] = acc;
}

// ------------------------------------------------------------------------------------------------ mma
// Random operands: bf16 = small_int / 64 (|x| < 2, exact); e4m3 = random sign, exponent <= 7 (|x| < 2).
__device__ __forceinline__ uint32_t rand_bf16x2(uint64_t seed, uint64_t i) {
  const float lo = small_int(seed, 2 * i) / 64.0f, hi = small_int(seed, 2 * i + 1) / 64.0f;
  return (__float_as_uint(lo) >> 16) | (__float_as_uint(hi) & 0xffff0000u);
}
__device__ __forceinline__ uint32_t rand_e4m3x4(uint64_t seed, uint64_t i) { return hash32(seed, i) & 0xBFBFBFBFu; }
constexpr uint32_t kOneBf16x2 = 0x3F803F80u, kOneE4m3x4 = 0x38383838u;

constexpr int kAcc = 8;  // independent accumulators per warp
template <int FP8>
__global__ void mma_sync_loop(int iters, int ones, uint64_t seed, float* sink, unsigned long long* bad) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const uint64_t tid = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
  uint32_t a[4], b[2];
#pragma unroll
  for (int r = 0; r < 4; ++r)
    a[r] = ones ? (FP8 ? kOneE4m3x4 : kOneBf16x2) : (FP8 ? rand_e4m3x4(seed, tid * 8 + r) : rand_bf16x2(seed, tid * 8 + r));
#pragma unroll
  for (int r = 0; r < 2; ++r)
    b[r] = ones ? (FP8 ? kOneE4m3x4 : kOneBf16x2)
                : (FP8 ? rand_e4m3x4(seed, tid * 8 + 4 + r) : rand_bf16x2(seed, tid * 8 + 4 + r));
  float c[kAcc][4];
#pragma unroll
  for (int k = 0; k < kAcc; ++k) c[k][0] = c[k][1] = c[k][2] = c[k][3] = 0.f;
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int k = 0; k < kAcc; ++k) {
      if constexpr (FP8) {
#if __CUDA_ARCH__ >= 890  // e4m3 mma.sync: sm_89 and later (the host skips the test below that)
        asm volatile(
            "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};"
            : "+f"(c[k][0]), "+f"(c[k][1]), "+f"(c[k][2]), "+f"(c[k][3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
        __trap();
#endif
      } else {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};"
            : "+f"(c[k][0]), "+f"(c[k][1]), "+f"(c[k][2]), "+f"(c[k][3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
      }
    }
  }
  if (ones) {
    const float want = static_cast<float>(iters) * (FP8 ? 32.f : 16.f);
    unsigned long long local = 0;
#pragma unroll
    for (int k = 0; k < kAcc; ++k)
      local += (c[k][0] != want) + (c[k][1] != want) + (c[k][2] != want) + (c[k][3] != want);
    if (local) atomicAdd(bad, local);
  } else {
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < kAcc; ++k) s += c[k][0] + c[k][1] + c[k][2] + c[k][3];
    if (s == 1234.5f) sink[0] = s;
  }
#else
  __trap();
#endif
}

// wgmma with 128 f32 accumulators per thread (m64n256), A and B from shared-memory descriptors, scale-d = 1.
#define RL_WGMMA_M64N256(INSTR, TAIL, d, da, db)                                       \
  asm volatile(                                                                       \
      "{\n .reg .pred p;\n setp.ne.b32 p, %130, 0;\n " INSTR " {"                  \
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"  \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"  \
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"  \
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"  \
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"  \
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"  \
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,"  \
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"  \
      "}, %128, %129, p" TAIL ";\n}\n"                                                \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), \
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), \
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127]) \
      : "l"(da), "l"(db), "r"(1))

// Shared-memory matrix descriptor, no swizzle: start address, leading (K) and stride (M/N) byte offsets
// between 8 x 16-byte core matrices (PTX ISA, "Matrix Descriptor Format" for wgmma).
__device__ __forceinline__ uint64_t smem_desc(const void* p, uint32_t lbo, uint32_t sbo) {
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  return static_cast<uint64_t>((a & 0x3FFFF) >> 4) | (static_cast<uint64_t>(lbo >> 4) << 16) |
         (static_cast<uint64_t>(sbo >> 4) << 32);
}

// Each warpgroup issues 4 wgmmas per trip into its 64 x 256 f32 accumulator tile, keeping one committed
// group in flight. A (64 x K) and B (256 x K) are 2 KiB and 8 KiB tiles shared by all warpgroups.
template <int FP8>
__global__ void __launch_bounds__(384, 1) wgmma_loop(int iters, int ones, uint64_t seed, float* sink,
                                                     unsigned long long* bad) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __shared__ __align__(1024) uint32_t tile[(2048 + 8192) / 4];
  for (int i = threadIdx.x; i < (2048 + 8192) / 4; i += blockDim.x)
    tile[i] = ones ? (FP8 ? kOneE4m3x4 : kOneBf16x2) : (FP8 ? rand_e4m3x4(seed, i) : rand_bf16x2(seed, i));
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  const uint64_t da = smem_desc(tile, 128, 256);
  const uint64_t db = smem_desc(tile + 2048 / 4, 128, 256);
  float d[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) d[i] = 0.f;
  for (int it = 0; it < iters; ++it) {
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      if constexpr (FP8)
        RL_WGMMA_M64N256("wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3", ", 1, 1", d, da, db);
      else
        RL_WGMMA_M64N256("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", ", 1, 1, 0, 0", d, da, db);
    }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  if (ones) {
    const float want = static_cast<float>(iters) * 4.f * (FP8 ? 32.f : 16.f);
    unsigned long long local = 0;
#pragma unroll
    for (int i = 0; i < 128; ++i) local += (d[i] != want);
    if (local) atomicAdd(bad, local);
  } else {
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < 128; ++i) s += d[i];
    if (s == 1234.5f) sink[0] = s;
  }
#else
  __trap();
#endif
}


// ------------------------------------------------------------------------------------------------ tma_stream
constexpr int kMaxDepth = 8;
constexpr uint64_t kStreamTimeoutNs = 2000000000ULL;

// Block b loads chunks b, b + grid, ... (`per_block` of them; chunk c lives at (c mod span) x stage) with
// `depth` bulk loads in flight from one thread. CHECK: the warp compares every word of each landed chunk with
// the fill (hash32(seed, word index)) before its slot is reloaded.
template <int CHECK>
__global__ void __launch_bounds__(32, 1) tma_stream(const char* __restrict__ src, long long span, long long per_block,
                                                    uint32_t stage, int depth, uint64_t seed,
                                                    unsigned long long* bad) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ __align__(8) uint64_t bars[kMaxDepth];
  if (!CHECK && threadIdx.x != 0) return;
  const uint32_t slot0 = smem_addr(smem), bar0 = smem_addr(bars);
  if (threadIdx.x == 0) {
    for (int s = 0; s < depth; ++s) mbar_init(bar0 + 8 * s, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  if (CHECK) __syncwarp();
  auto chunk = [&](long long k) { return (blockIdx.x + k * gridDim.x) % span; };
  auto load = [&](long long k) {
    const int s = static_cast<int>(k % depth);
    bulk_load(slot0 + s * stage, src + chunk(k) * stage, stage, bar0 + 8 * s);
  };
  if (threadIdx.x == 0)
    for (long long k = 0; k < min(static_cast<long long>(depth), per_block); ++k) load(k);
  unsigned long long local = 0;
  for (long long k = 0; k < per_block; ++k) {
    const int s = static_cast<int>(k % depth);
    mbar_wait(bar0 + 8 * s, static_cast<uint32_t>((k / depth) & 1), kStreamTimeoutNs);
    if (CHECK) {
      const uint32_t* w = reinterpret_cast<const uint32_t*>(smem + static_cast<size_t>(s) * stage);
      const size_t base = static_cast<size_t>(chunk(k)) * (stage / 4);
      for (uint32_t i = threadIdx.x; i < stage / 4; i += 32) local += (w[i] != hash32(seed, base + i));
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // generic reads before the async refill
      __syncwarp();
    }
    if (threadIdx.x == 0 && k + depth < per_block) load(k + depth);
  }
  if (local) atomicAdd(bad, local);
#else
  __trap();
#endif
}

// ------------------------------------------------------------------------------------------------ host
struct Timer {
  cudaEvent_t a, b;
  Timer() {
    RL_CHECK(cudaEventCreate(&a));
    RL_CHECK(cudaEventCreate(&b));
  }
  template <class F>
  std::vector<double> run(F launch, int warmup, int iters) {
    std::vector<double> t;
    for (int i = 0; i < warmup + iters; ++i) {
      RL_CHECK(cudaEventRecord(a));
      launch();
      RL_CHECK_LAUNCH();
      RL_CHECK(cudaEventRecord(b));
      RL_CHECK(cudaEventSynchronize(b));
      float ms = 0;
      RL_CHECK(cudaEventElapsedTime(&ms, a, b));
      if (i >= warmup) t.push_back(ms * 1e-3);
    }
    return t;
  }
};

static Json point(const std::string& test, int dev, const std::vector<double>& t) {
  Json j;
  j.str("record", "point").str("program", g_program).str("test", test).integer("device", dev);
  j.integer("iters", static_cast<long long>(t.size()));
  put_stats(j, "time_s", stats(t));
  return j;
}

static void print_bw(Json& j, const std::string& test, double bytes, double median, bool ok, long long bad) {
  j.num("bytes_moved", bytes).num("bytes_per_s", bytes / median).boolean("verified", ok).integer("mismatches", bad);
  j.print();
  fprintf(stderr, "ceilings %-14s %9.1f GB/s%s\n", test.c_str(), bytes / median / 1e9, ok ? "" : "  NOT VERIFIED");
}

static void print_flops(Json& j, const std::string& test, double flops, double median, bool ok, long long bad,
                        const char* instr, const char* note) {
  j.num("flops", flops).num("flop_per_s", flops / median).str("instruction", instr).str("note", note);
  j.boolean("verified", ok).integer("mismatches", bad);
  j.print();
  fprintf(stderr, "ceilings %-14s %9.1f TFLOP/s (%s)%s\n", test.c_str(), flops / median / 1e12, instr,
          ok ? "" : "  NOT VERIFIED");
}

int main(int argc, char** argv) {
  Args a(argc, argv);
  if (a.has("--help") || a.has("-h")) {
    fputs(kHelp, stdout);
    return 0;
  }
  const auto tests = a.list(
      "--tests", "hbm_read,hbm_write,hbm_copy,l2_read,mma_sync_bf16,mma_sync_fp8,wgmma_bf16,wgmma_fp8,tma_stream");
  const auto depths = a.list("--depths", "1,2,3,4,6,8");
  const auto stage_list = a.list("--stage-bytes", "16K,32K,64K");
  const auto tma_blocks = a.list("--tma-blocks", "all,1");
  const int dev = static_cast<int>(a.integer("--device", 0));
  const size_t bytes = static_cast<size_t>(a.integer("--bytes", 2LL << 30)) / 64 * 64;
  const double l2_fraction = atof(a.str("--l2-fraction", "0.25").c_str());
  const int passes = static_cast<int>(a.integer("--passes", 40));
  const int bpm = static_cast<int>(a.integer("--blocks-per-sm", 4));
  const int threads = static_cast<int>(a.integer("--threads", 512));
  const int mma_iters = static_cast<int>(a.integer("--mma-iters", 20000));
  const int wg_iters = static_cast<int>(a.integer("--wgmma-iters", 5000));
  const int warpgroups = static_cast<int>(a.integer("--warpgroups", 2));
  const int warmup = static_cast<int>(a.integer("--warmup", 3));
  const int iters = static_cast<int>(a.integer("--iters", 20));
  for (const auto& t : tests)
    if (t != "hbm_read" && t != "hbm_write" && t != "hbm_copy" && t != "l2_read" && t != "mma_sync_bf16" &&
        t != "mma_sync_fp8" && t != "wgmma_bf16" && t != "wgmma_fp8" && t != "tma_stream")
      fail(g_program, "unknown test '" + t + "'", 2);
  if (warpgroups < 1 || warpgroups > 3) fail(g_program, "--warpgroups must be 1..3", 2);
  if (iters < 1 || warmup < 0 || passes < 1 || bpm < 1 || threads < 32 || bytes < 64)
    fail(g_program, "bad --iters/--warmup/--passes/--blocks-per-sm/--threads/--bytes", 2);
  if (mma_iters * 4.0 * 32 > 16777216.0 || wg_iters * 4.0 * 4 * 32 > 16777216.0)
    fail(g_program, "--mma-iters or --wgmma-iters too large for the exact all-ones check", 2);

  const int ngpu = device_count_or_zero();
  if (ngpu == 0) fail(g_program, "no CUDA device visible");
  if (dev >= ngpu) fail(g_program, "device id out of range");
  print_meta(g_program, a, {dev});
  RL_CHECK(cudaSetDevice(dev));
  cudaDeviceProp p;
  RL_CHECK(cudaGetDeviceProperties(&p, dev));
  const int sms = p.multiProcessorCount;
  const int cc = p.major * 10 + p.minor;
  const uint64_t seed = seed_from(a);
  Timer timer;
  Counter bad;
  bad.init(dev);
  int4* sink = nullptr;
  RL_CHECK(cudaMalloc(&sink, 64));
  const int grid = sms * bpm;

  for (const auto& test : tests) {
    if (test.rfind("hbm_", 0) == 0) {
      char *x = nullptr, *y = nullptr;
      RL_CHECK(cudaMalloc(&x, bytes));
      fill_words_on(dev, x, bytes, seed, nullptr);
      const size_t n = bytes / 16;
      std::vector<double> t;
      double moved = static_cast<double>(bytes);
      unsigned long long nbad = 0;
      if (test == "hbm_read") {
        t = timer.run([&] { hbm_read<<<grid, threads>>>(reinterpret_cast<int4*>(x), n, sink); }, warmup, iters);
      } else if (test == "hbm_write") {
        const uint32_t s = static_cast<uint32_t>(seed);
        t = timer.run([&] { hbm_write<<<grid, threads>>>(reinterpret_cast<int4*>(x), n, s); }, warmup, iters);
        poison_on(dev, x, bytes, nullptr);
        hbm_write<<<grid, threads>>>(reinterpret_cast<int4*>(x), n, s);
        RL_CHECK_LAUNCH();
        bad.reset(nullptr);
        count_pattern_mismatch<<<1024, 256>>>(reinterpret_cast<int4*>(x), n, s, bad.d);
        RL_CHECK_LAUNCH();
        nbad = bad.read(nullptr);
      } else {
        RL_CHECK(cudaMalloc(&y, bytes));
        moved = 2.0 * static_cast<double>(bytes);
        t = timer.run([&] { copy16<<<grid, threads>>>(reinterpret_cast<int4*>(y), reinterpret_cast<int4*>(x), n); },
                      warmup, iters);
        poison_on(dev, y, bytes, nullptr);
        copy16<<<grid, threads>>>(reinterpret_cast<int4*>(y), reinterpret_cast<int4*>(x), n);
        RL_CHECK_LAUNCH();
        bad.reset(nullptr);
        count_word_mismatch<<<1024, 256>>>(reinterpret_cast<uint32_t*>(y), bytes / 4, seed, bad.d);
        RL_CHECK_LAUNCH();
        nbad = bad.read(nullptr);
      }
      Json j = point(test, dev, t);
      j.integer("buffer_bytes", static_cast<long long>(bytes)).integer("blocks", grid).integer("threads_per_block", threads);
      print_bw(j, test, moved, stats(t).median, nbad == 0, static_cast<long long>(nbad));
      RL_CHECK(cudaFree(x));
      if (y) RL_CHECK(cudaFree(y));
    } else if (test == "l2_read") {
      const size_t ws = static_cast<size_t>(p.l2CacheSize * l2_fraction) / 64 * 64;
      char* x = nullptr;
      RL_CHECK(cudaMalloc(&x, ws));
      fill_words_on(dev, x, ws, seed, nullptr);
      const size_t n = ws / 16;
      const std::vector<double> t = timer.run(
          [&] { l2_read<<<grid, threads>>>(reinterpret_cast<int4*>(x), n, passes, sink); }, warmup, iters);
      Json j = point(test, dev, t);
      j.integer("buffer_bytes", static_cast<long long>(ws)).integer("passes", passes).integer("l2_bytes", p.l2CacheSize);
      j.integer("blocks", grid).integer("threads_per_block", threads);
      j.str("note", "bytes_moved = passes x working set; the first pass of each launch may come from HBM");
      print_bw(j, test, static_cast<double>(ws) * passes, stats(t).median, true, 0);
      RL_CHECK(cudaFree(x));
    } else if (test == "tma_stream") {
      if (cc < 90) {
        Json j;
        j.str("record", "skipped").str("program", g_program).str("test", test).str("reason", "cp.async.bulk needs sm_90");
        j.print();
        continue;
      }
      const size_t l2_ws = static_cast<size_t>(p.l2CacheSize * l2_fraction);
      char* x = nullptr;
      RL_CHECK(cudaMalloc(&x, bytes));
      fill_words_on(dev, x, bytes, seed, nullptr);
      for (const char* source : {"hbm", "l2"}) {
        for (const auto& gb : tma_blocks) {
          const int grid_blocks = gb == "all" ? sms : atoi(gb.c_str());
          if (grid_blocks < 1 || grid_blocks > sms) fail(g_program, "--tma-blocks must be 'all' or 1..SMs", 2);
          for (const auto& st : stage_list) {
            const uint32_t stage = static_cast<uint32_t>(Args::parse_size(st));
            if (stage < 1024 || stage % 16 != 0) fail(g_program, "--stage-bytes must be multiples of 16, >= 1K", 2);
            for (const auto& ds : depths) {
              const int depth = atoi(ds.c_str());
              if (depth < 1 || depth > kMaxDepth) fail(g_program, "--depths must be 1..8", 2);
              const size_t smem = static_cast<size_t>(depth) * stage;
              if (smem > 200 * 1024) continue;
              const bool l2 = std::string(source) == "l2";
              const long long span = static_cast<long long>((l2 ? l2_ws : bytes) / stage);
              // HBM: each chunk at most once per launch, each block at most 1/64 of the buffer (one block
              // alone: 1/64); L2: the working set `passes` times (one block alone: 4 passes of 64 chunks)
              const long long per_block = grid_blocks == 1 ? (l2 ? 256 : span / 64)
                                          : l2         ? span * passes / grid_blocks
                                                       : std::min(span / 64, span / grid_blocks);
              const long long span_used = grid_blocks == 1 && l2 ? 64 : span;
              RL_CHECK(cudaFuncSetAttribute(tma_stream<0>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
              RL_CHECK(cudaFuncSetAttribute(tma_stream<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
              bad.reset(nullptr);
              tma_stream<1><<<grid_blocks, 32, smem>>>(x, span_used, per_block, stage, depth, seed, bad.d);
              RL_CHECK_LAUNCH();
              const unsigned long long nbad = bad.read(nullptr);
              const std::vector<double> t = timer.run(
                  [&] { tma_stream<0><<<grid_blocks, 32, smem>>>(x, span_used, per_block, stage, depth, seed, bad.d); },
                  warmup, iters);
              const double moved = static_cast<double>(grid_blocks) * per_block * stage;
              const double med = stats(t).median;
              Json j = point(test, dev, t);
              j.str("source", source).integer("blocks", grid_blocks).integer("stage_bytes", stage);
              j.integer("depth", depth).integer("in_flight_bytes", static_cast<long long>(depth) * stage);
              j.integer("span_bytes", span_used * static_cast<long long>(stage));
              j.num("bytes_per_s_per_sm", moved / med / grid_blocks);
              j.str("note", "one thread per SM keeps depth bulk loads in flight; verified in a separate checked run");
              j.num("bytes_moved", moved).num("bytes_per_s", moved / med).boolean("verified", nbad == 0);
              j.integer("mismatches", static_cast<long long>(nbad));
              j.print();
              fprintf(stderr, "ceilings tma_stream %-3s blocks=%3d stage=%6u depth=%d %8.1f GB/s (%6.1f GB/s per SM)%s\n",
                      source, grid_blocks, stage, depth, moved / med / 1e9, moved / med / grid_blocks / 1e9,
                      nbad == 0 ? "" : "  NOT VERIFIED");
            }
          }
        }
      }
      RL_CHECK(cudaFree(x));
    } else if (test.rfind("mma_sync_", 0) == 0) {
      const bool fp8 = test == "mma_sync_fp8";
      if (cc < (fp8 ? 89 : 80)) {
        Json j;
        j.str("record", "skipped").str("program", g_program).str("test", test).str("reason", "needs sm_80 (bf16) / sm_89 (fp8)");
        j.print();
        continue;
      }
      auto launch = [&](int it, int ones) {
        if (fp8) mma_sync_loop<1><<<grid, 256>>>(it, ones, seed, reinterpret_cast<float*>(sink), bad.d);
        else mma_sync_loop<0><<<grid, 256>>>(it, ones, seed, reinterpret_cast<float*>(sink), bad.d);
      };
      bad.reset(nullptr);
      launch(64, 1);
      RL_CHECK_LAUNCH();
      const unsigned long long nbad = bad.read(nullptr);
      const std::vector<double> t = timer.run([&] { launch(mma_iters, 0); }, warmup, iters);
      const double flops = static_cast<double>(grid) * (256 / 32) * mma_iters * kAcc * 2.0 * 16 * 8 * (fp8 ? 32 : 16);
      Json j = point(test, dev, t);
      j.integer("blocks", grid).integer("threads_per_block", 256).integer("loop_iters", mma_iters);
      print_flops(j, test, flops, stats(t).median, nbad == 0, static_cast<long long>(nbad),
                  fp8 ? "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32" : "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
                  "register-only mma.sync loop: on Hopper mma.sync cannot reach the wgmma (datasheet) peak; "
                  "use wgmma_* for the tensor-core ceiling");
    } else {
      const bool fp8 = test == "wgmma_fp8";
      if (cc != 90) {
        Json j;
        j.str("record", "skipped").str("program", g_program).str("test", test).str("reason", "wgmma needs sm_90a");
        j.print();
        continue;
      }
      const int threads_wg = 128 * warpgroups;
      auto launch = [&](int it, int ones) {
        if (fp8) wgmma_loop<1><<<sms, threads_wg>>>(it, ones, seed, reinterpret_cast<float*>(sink), bad.d);
        else wgmma_loop<0><<<sms, threads_wg>>>(it, ones, seed, reinterpret_cast<float*>(sink), bad.d);
      };
      bad.reset(nullptr);
      launch(16, 1);
      RL_CHECK_LAUNCH();
      const unsigned long long nbad = bad.read(nullptr);
      const std::vector<double> t = timer.run([&] { launch(wg_iters, 0); }, warmup, iters);
      const double flops = static_cast<double>(sms) * warpgroups * wg_iters * 4 * 2.0 * 64 * 256 * (fp8 ? 32 : 16);
      Json j = point(test, dev, t);
      j.integer("blocks", sms).integer("warpgroups_per_block", warpgroups).integer("loop_iters", wg_iters);
      print_flops(j, test, flops, stats(t).median, nbad == 0, static_cast<long long>(nbad),
                  fp8 ? "wgmma.mma_async.m64n256k32.f32.e4m3.e4m3" : "wgmma.mma_async.m64n256k16.f32.bf16.bf16",
                  "operands from shared memory (no swizzle), re-used every trip: a tensor-core issue ceiling, "
                  "not a GEMM (no global loads)");
    }
  }
  bad.release();
  cudaFree(sink);
  return 0;
}
