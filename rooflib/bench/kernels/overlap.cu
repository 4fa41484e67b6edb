// overlap.cu: compute/communication overlap schedules on two GPUs that send their output tiles to each other.
//
// Work per GPU: --tiles T output tiles of --tile-bytes B (default 32 KiB = a 128 x 128 bf16 tile). Computing one
// tile = --iters K trips of a register-resident tensor-core loop: 8 compute warps per block, each issuing 16
// independent mma.sync.m16n8k16 bf16 (f32 accumulate) per trip, i.e. one k=16 step of a 128 x 128 output tile:
// 8 x 16 x 2 x 16 x 8 x 16 = 524288 FLOP per trip, K x 524288 per tile. The tile's bytes come from the tile index,
// the run's seed and the warp-sum of the accumulators (exact small-integer arithmetic), so every byte can be
// checked on the receiver. GPU 0 sends its tiles to GPU 1 and GPU 1 to GPU 0 at the same time (tensor parallel).
//
// Schedules (ParallelKittens, arXiv 2511.13940, section 3: intra-SM vs inter-SM overlap):
//   compute_only  all SMs compute, tiles stored to local memory (no communication)
//   comm_only     no compute: the tiles (prepared before timing) sent to the peer by the copy engine
//                 (cudaMemcpyPeerAsync, send_path copy_engine) or by TMA bulk copies from comm_sms SMs
//                 (send_path tma: global -> shared -> peer, --stages deep); one point per path and SM count
//   sequential    compute kernel on all SMs into local memory, then cudaMemcpyPeerAsync of the whole buffer
//   intra_sm      one persistent block per SM: 8 compute warps produce a tile into one of 2 shared-memory slots;
//                 one producer warp (an elected thread) bulk-copies it to the peer (cp.async.bulk.global.
//                 shared::cta) while the compute warps go on with the next tile; mbarrier handshake (full/empty)
//   inter_sm      --comm-sms S blocks only communicate, the other SMs only compute: compute blocks store
//                 finished tiles to local memory and publish a per-tile flag (st.release.gpu); each comm block
//                 waits for its tiles in order (ld.acquire.gpu) and moves them to the peer with TMA bulk copies
//                 through shared memory (global -> shared -> peer, --stages deep)
// Every kernel runs one block per SM (dynamic shared memory above half the SM's forces it), --sms blocks.
//
// Timing: both GPUs' work is launched (GPU 0 then GPU 1), CUDA events on each GPU's stream around its work, both
// synchronised; a run's time is the larger of the two GPUs' times. Fresh data (a new seed) every run, warm-up
// runs first, median (and p10/p90) over --iters-timing runs. Then one more run on fresh data after poisoning the
// destination, and a device kernel compares every received word on both GPUs (compute_only: the local tiles).
#include <cuda_bf16.h>

#include <cmath>

#include "common.cuh"

const char* rl::g_program = "overlap";
using namespace rl;

static const char* kHelp =
    "overlap: compute/communication overlap schedules, two GPUs sending output tiles to each other\n"
    "(JSON Lines on stdout)\n"
    "\n"
    "  --schedule LIST      compute_only,comm_only,sequential,intra_sm,inter_sm (default: all)\n"
    "  --tiles T            output tiles per GPU (default 1056 = 132 x 8)\n"
    "  --tile-bytes B       bytes per tile, a multiple of 4K (default 32K = 128 x 128 bf16)\n"
    "  --iters LIST         tensor-core loop trips per tile, K (default 1,2,4,8,16,32,64,128,256,512)\n"
    "                       one trip = 524288 FLOP (a k=16 step of a 128 x 128 tile): flops_per_tile = K x 524288\n"
    "  --comm-sms LIST      inter_sm communication SMs S, and comm_only TMA SM counts (default 1,2,4,8,16,32)\n"
    "  --stages N           TMA pipeline depth of the comm blocks (inter_sm, comm_only), 2..8 (default 4,\n"
    "                       lowered to what fits in shared memory)\n"
    "  --sms N              blocks = SMs used, one per SM (default: every SM)\n"
    "  --gpus A,B           the two devices (default 0,1)\n"
    "  --warmup N (default 3)   --iters-timing N timed runs per point (default 20)   --seed N (default: clock)\n"
    "  --help\n"
    "\n"
    "Each point: time_s = median over runs of max(GPU 0 time, GPU 1 time), CUDA events on each GPU around the\n"
    "whole step; verified/mismatches from a device-side compare of every received word on both GPUs.\n"
    "compute_only points carry flop_per_s and flop_per_s_per_sm; a final compute_rate record fits\n"
    "time = a + b K over the compute_only points (per-SM rate = 524288 FLOP / (b / tiles per SM)).\n";

// ------------------------------------------------------------------------------------------------ constants
constexpr int kComputeWarps = 8;
constexpr int kComputeThreads = kComputeWarps * 32;  // 256
constexpr int kBlockThreads = kComputeThreads + 32;  // + one producer / communication warp
constexpr int kAcc = 16;                             // m16n8 accumulators per warp: 8 x 16 x (16 x 8) = 128 x 128
constexpr long long kFlopsPerTrip = 1LL * kComputeWarps * kAcc * 2 * 16 * 8 * 16;  // 524288
constexpr int kSlots = 2;                                                          // intra_sm double buffer
constexpr int kMaxStages = 8;
constexpr uint32_t kWordMul = 0x9E3779B1u;
constexpr uint32_t kOneBf16x2 = 0x3F803F80u;
constexpr uint64_t kTimeoutNs = 10000000000ULL;  // a wait longer than 10 s traps instead of hanging
constexpr const char* kInstruction = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32";

// ------------------------------------------------------------------------------------------------ tile data
// A fragment of warp `warp` for tile `tile`: 4 registers of 2 bf16 small integers in [-8, 8] each. B = all ones,
// so every accumulator of the warp's 16 x 8 output is a row sum of A and the warp-sum of all its accumulators is
// K x kAcc x 8 x (sum of the 256 A values), whatever the fragment layout: exact in f32 for K < 131072.
__device__ __forceinline__ void a_values(uint64_t seed, uint32_t tile, int warp, int lane, int r, int& lo, int& hi) {
  const uint64_t i = ((static_cast<uint64_t>(tile) * kComputeWarps + warp) * 32 + lane) * 4 + r;
  const uint32_t h = hash32(seed ^ 0x5EEDA11CEULL, i);
  lo = static_cast<int>((h & 0xFFFFu) % 17u) - 8;
  hi = static_cast<int>((h >> 16) % 17u) - 8;
}
__device__ __forceinline__ uint32_t bf16x2_of(int lo, int hi) {  // small integers are exact in bf16
  return (__float_as_uint(static_cast<float>(lo)) >> 16) | (__float_as_uint(static_cast<float>(hi)) & 0xFFFF0000u);
}
// Word w of a tile: depends on the tile (through htile), the position, and its writer warp's accumulator sum s.
__device__ __forceinline__ uint32_t word_value(uint32_t htile, uint32_t w, uint32_t s) {
  return (htile ^ (w * kWordMul)) + s;
}

// K trips of kAcc independent mma.sync per warp; returns the warp-sum of all accumulators (as integers, mod 2^32).
__device__ __forceinline__ uint32_t tile_compute(int iters, uint64_t seed, uint32_t tile, int warp, int lane) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  uint32_t a[4];
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    int lo, hi;
    a_values(seed, tile, warp, lane, r, lo, hi);
    a[r] = bf16x2_of(lo, hi);
  }
  const uint32_t b = kOneBf16x2;
  float c[kAcc][4];
#pragma unroll
  for (int k = 0; k < kAcc; ++k) c[k][0] = c[k][1] = c[k][2] = c[k][3] = 0.f;
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int k = 0; k < kAcc; ++k)
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
          "{%0,%1,%2,%3};"
          : "+f"(c[k][0]), "+f"(c[k][1]), "+f"(c[k][2]), "+f"(c[k][3])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b), "r"(b));
  }
  uint32_t s = 0;
#pragma unroll
  for (int k = 0; k < kAcc; ++k)
#pragma unroll
    for (int e = 0; e < 4; ++e) s += static_cast<uint32_t>(__float2int_rn(c[k][e]));
  return __reduce_add_sync(0xFFFFFFFFu, s);
#else
  __trap();
  return 0;
#endif
}

// What tile_compute returns, without the loop (the verifier).
__device__ __forceinline__ uint32_t tile_expected_sum(int iters, uint64_t seed, uint32_t tile, int warp, int lane) {
  int s = 0;
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    int lo, hi;
    a_values(seed, tile, warp, lane, r, lo, hi);
    s += lo + hi;
  }
  s = __reduce_add_sync(0xFFFFFFFFu, s);
  return static_cast<uint32_t>(static_cast<long long>(iters) * kAcc * 8 * s);
}

// Compute thread t (0..255) writes the 16-byte groups g = t, t + 256, ... of the tile (coalesced, conflict-free in
// shared memory); every word of its groups carries its own warp's sum s.
__device__ __forceinline__ void write_tile(uint4* dst, uint32_t groups, uint32_t htile, uint32_t s, int t) {
  for (uint32_t g = t; g < groups; g += kComputeThreads) {
    const uint32_t w = 4 * g;
    dst[g] = make_uint4(word_value(htile, w, s), word_value(htile, w + 1, s), word_value(htile, w + 2, s),
                        word_value(htile, w + 3, s));
  }
}

// ------------------------------------------------------------------------------------------------ PTX helpers
__device__ __forceinline__ uint32_t smem_addr(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

__device__ __forceinline__ void trap_if_late(uint32_t spins, uint64_t& since) {
  if ((spins & 1023u) != 1023u) return;
  const uint64_t now = globaltimer_ns();
  if (since == 0) since = now;
  else if (now - since > kTimeoutNs) __trap();
}

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  uint64_t since = 0;
  for (uint32_t spins = 0;; ++spins) {
    uint32_t done;
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
    if (done) return;
    trap_if_late(spins, since);
  }
}
__device__ __forceinline__ uint32_t ld_acquire_gpu(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_release_gpu(uint32_t* p, uint32_t v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void wait_flag(const uint32_t* p, uint32_t want) {
  uint64_t since = 0;
  for (uint32_t spins = 0; ld_acquire_gpu(p) != want; ++spins) trap_if_late(spins, since);
}
// Bulk copy global -> shared, completing on an mbarrier (transaction bytes).
__device__ __forceinline__ void bulk_load(uint32_t dst_smem, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   dst_smem),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}
// Bulk copy shared -> global (here: the peer GPU's memory), in a bulk group.
__device__ __forceinline__ void bulk_store(void* dst, uint32_t src_smem, uint32_t bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(src_smem), "r"(bytes)
               : "memory");
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

// ------------------------------------------------------------------------------------------------ kernels
// compute_only, sequential's compute, and (iters = 0) the prepared tiles of comm_only: tiles to local memory.
__global__ void __launch_bounds__(kComputeThreads, 1)
    compute_store(char* __restrict__ out, int tiles, uint32_t tile_bytes, int iters, uint64_t seed) {
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  for (uint32_t tile = blockIdx.x; tile < static_cast<uint32_t>(tiles); tile += gridDim.x) {
    const uint32_t s = tile_compute(iters, seed, tile, warp, lane);
    write_tile(reinterpret_cast<uint4*>(out + static_cast<size_t>(tile) * tile_bytes), tile_bytes / 16,
               hash32(seed, tile), s, t);
  }
}

// intra_sm: warp-specialised persistent block (8 compute warps + 1 producer warp), 2 shared-memory tile slots.
__global__ void __launch_bounds__(kBlockThreads, 1)
    intra_sm(char* __restrict__ peer_recv, int tiles, uint32_t tile_bytes, int iters, uint64_t seed) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ __align__(8) uint64_t full[kSlots], empty[kSlots];
  const int t = threadIdx.x;
  const uint32_t full0 = smem_addr(full), empty0 = smem_addr(empty), slot0 = smem_addr(smem);
  if (t == 0) {
    for (int s = 0; s < kSlots; ++s) {
      mbar_init(full0 + 8 * s, kComputeThreads);  // every compute thread arrives after writing its part
      mbar_init(empty0 + 8 * s, 1);               // the producer arrives once the bulk store has read the slot
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  const int mine = static_cast<int>(blockIdx.x) < tiles ? (tiles - 1 - static_cast<int>(blockIdx.x)) / gridDim.x + 1 : 0;
  if (t < kComputeThreads) {
    const int warp = t / 32, lane = t % 32;
    for (int i = 0; i < mine; ++i) {
      const uint32_t tile = blockIdx.x + static_cast<uint32_t>(i) * gridDim.x;
      const uint32_t s = tile_compute(iters, seed, tile, warp, lane);
      const int slot = i % kSlots;
      const uint32_t use = static_cast<uint32_t>(i / kSlots);
      mbar_wait(empty0 + 8 * slot, (use & 1u) ^ 1u);  // first use of a slot passes at once
      write_tile(reinterpret_cast<uint4*>(smem + static_cast<size_t>(slot) * tile_bytes), tile_bytes / 16,
                 hash32(seed, tile), s, t);
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // generic writes -> async-proxy reads
      mbar_arrive(full0 + 8 * slot);
    }
  } else if (t == kComputeThreads) {  // the producer warp's elected thread
    for (int i = 0; i < mine; ++i) {
      const uint32_t tile = blockIdx.x + static_cast<uint32_t>(i) * gridDim.x;
      const int slot = i % kSlots;
      mbar_wait(full0 + 8 * slot, static_cast<uint32_t>(i / kSlots) & 1u);
      bulk_store(peer_recv + static_cast<size_t>(tile) * tile_bytes, slot0 + slot * tile_bytes, tile_bytes);
      if (i >= 1) {  // the store of tile i - 1 has read its slot: hand the slot back to the compute warps
        asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
        mbar_arrive(empty0 + 8 * ((i - 1) % kSlots));
      }
    }
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  }
#else
  __trap();
#endif
}

// One communication thread: tiles first, first + step, ... of `local` to `peer_recv`, through `stages` shared-memory
// slots (bulk load, then bulk store to the peer). With flags, waits for flags[tile] == epoch before loading a tile.
__device__ __forceinline__ void comm_thread(const char* __restrict__ local, char* __restrict__ peer_recv,
                                            const uint32_t* flags, uint32_t epoch, int tiles, uint32_t tile_bytes,
                                            int first, int step, int stages, unsigned char* smem, uint64_t* bars) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const int mine = first < tiles ? (tiles - 1 - first) / step + 1 : 0;
  const uint32_t slot0 = smem_addr(smem), bar0 = smem_addr(bars);
  for (int s = 0; s < stages; ++s) mbar_init(bar0 + 8 * s, 1);
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  auto load = [&](int k) {
    const size_t tile = static_cast<size_t>(first) + static_cast<size_t>(k) * step;
    if (flags) {
      wait_flag(flags + tile, epoch);
      asm volatile("fence.proxy.async.global;" ::: "memory");  // the flag's data is next read by the async proxy
    }
    const int s = k % stages;
    bulk_load(slot0 + s * tile_bytes, local + tile * tile_bytes, tile_bytes, bar0 + 8 * s);
  };
  const int pre = min(stages - 1, mine);
  for (int k = 0; k < pre; ++k) load(k);
  for (int k = 0; k < mine; ++k) {
    const int s = k % stages;
    mbar_wait(bar0 + 8 * s, static_cast<uint32_t>(k / stages) & 1u);
    const size_t tile = static_cast<size_t>(first) + static_cast<size_t>(k) * step;
    bulk_store(peer_recv + tile * tile_bytes, slot0 + s * tile_bytes, tile_bytes);
    const int j = k + stages - 1;  // goes into the slot of tile k - 1, whose store is the older pending group
    if (j < mine) {
      asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
      load(j);
    }
  }
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
#else
  __trap();
#endif
}

// comm_only with send_path tma: every block is a communication block (one thread issues).
__global__ void __launch_bounds__(32, 1)
    send_tiles(const char* __restrict__ local, char* __restrict__ peer_recv, int tiles, uint32_t tile_bytes, int stages) {
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ __align__(8) uint64_t bars[kMaxStages];
  if (threadIdx.x != 0) return;
  comm_thread(local, peer_recv, nullptr, 0, tiles, tile_bytes, blockIdx.x, gridDim.x, stages, smem, bars);
}

// inter_sm: blocks [0, comm_blocks) communicate, the others compute.
__global__ void __launch_bounds__(kBlockThreads, 1)
    inter_sm(char* __restrict__ local, char* __restrict__ peer_recv, uint32_t* __restrict__ flags, int tiles,
             uint32_t tile_bytes, int iters, uint64_t seed, uint32_t epoch, int comm_blocks, int stages) {
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ __align__(8) uint64_t bars[kMaxStages];
  const int t = threadIdx.x;
  if (static_cast<int>(blockIdx.x) < comm_blocks) {
    if (t == 0)
      comm_thread(local, peer_recv, flags, epoch, tiles, tile_bytes, blockIdx.x, comm_blocks, stages, smem, bars);
    return;
  }
  if (t >= kComputeThreads) return;
  const int warp = t / 32, lane = t % 32;
  const uint32_t compute_blocks = gridDim.x - comm_blocks;
  for (uint32_t tile = blockIdx.x - comm_blocks; tile < static_cast<uint32_t>(tiles); tile += compute_blocks) {
    const uint32_t s = tile_compute(iters, seed, tile, warp, lane);
    write_tile(reinterpret_cast<uint4*>(local + static_cast<size_t>(tile) * tile_bytes), tile_bytes / 16,
               hash32(seed, tile), s, t);
    asm volatile("fence.proxy.async.global;" ::: "memory");
    asm volatile("bar.sync 1, %0;" ::"n"(kComputeThreads) : "memory");  // the producer warp has left
    if (t == 0) st_release_gpu(flags + tile, epoch);
  }
}

// Counts words of `tiles` tiles that differ from what the writer of (seed, iters) produces.
__global__ void count_tile_mismatch(const char* __restrict__ buf, int tiles, uint32_t tile_bytes, int iters,
                                    uint64_t seed, unsigned long long* bad) {
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  unsigned long long local_bad = 0;
  const uint32_t groups = tile_bytes / 16;
  for (uint32_t tile = blockIdx.x; tile < static_cast<uint32_t>(tiles); tile += gridDim.x) {
    const uint32_t s = tile_expected_sum(iters, seed, tile, warp, lane);
    const uint32_t h = hash32(seed, tile);
    const uint4* p = reinterpret_cast<const uint4*>(buf + static_cast<size_t>(tile) * tile_bytes);
    for (uint32_t g = t; g < groups; g += kComputeThreads) {
      const uint4 v = p[g];
      const uint32_t w = 4 * g;
      local_bad += (v.x != word_value(h, w, s)) + (v.y != word_value(h, w + 1, s)) +
                   (v.z != word_value(h, w + 2, s)) + (v.w != word_value(h, w + 3, s));
    }
  }
  if (local_bad) atomicAdd(bad, local_bad);
}

// ------------------------------------------------------------------------------------------------ host
enum class Sched { ComputeOnly, CommOnly, Sequential, IntraSm, InterSm };
static const char* const kSchedNames[] = {"compute_only", "comm_only", "sequential", "intra_sm", "inter_sm"};
enum class Path { None, CopyEngine, Tma };
static const char* const kPathNames[] = {"none", "copy_engine", "tma"};

struct Point {
  Sched sched = Sched::ComputeOnly;
  Path path = Path::None;
  int comm_sms = 0;  // inter_sm: communication SMs; comm_only tma: SMs sending; else 0
  int iters = 0;     // K (0 for comm_only: the tiles are prepared, not computed)
};

struct Side {
  int dev = 0;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  char* local = nullptr;  // this GPU's tiles (compute output; source of copy-engine and comm-block sends)
  char* recv = nullptr;   // what the peer sends here
  uint32_t* flags = nullptr;
  Counter bad;
};

struct Ctx {
  Side side[2];
  int tiles = 0;
  uint32_t tile_bytes = 0;
  int sms = 0;
  int stages = 4;
  size_t smem_floor = 0;  // dynamic shared memory that keeps every kernel at one block per SM
  uint64_t seed = 0;
  uint64_t runs = 0;
  uint32_t epoch = 0;
  size_t bytes() const { return static_cast<size_t>(tiles) * tile_bytes; }
  uint64_t seed_of(uint64_t run, int g) const { return (seed ^ (run * 0x9E3779B97F4A7C15ULL)) * 2 + g; }
};

static void prepare(Ctx& c, int g, const Point& p, uint64_t seed_g) {
  if (p.sched != Sched::CommOnly) return;
  Side& s = c.side[g];
  RL_CHECK(cudaSetDevice(s.dev));
  compute_store<<<c.sms, kComputeThreads, c.smem_floor, s.stream>>>(s.local, c.tiles, c.tile_bytes, 0, seed_g);
  RL_CHECK_LAUNCH();
}

static void copy_to_peer(Ctx& c, int g) {
  Side &s = c.side[g], &peer = c.side[1 - g];
  RL_CHECK(cudaMemcpyPeerAsync(peer.recv, peer.dev, s.local, s.dev, c.bytes(), s.stream));
}

static void launch(Ctx& c, int g, const Point& p, uint64_t seed_g) {
  Side& s = c.side[g];
  char* peer_recv = c.side[1 - g].recv;
  RL_CHECK(cudaSetDevice(s.dev));
  const size_t comm_smem = std::max(c.smem_floor, static_cast<size_t>(c.stages) * c.tile_bytes);
  switch (p.sched) {
    case Sched::ComputeOnly:
    case Sched::Sequential:
      compute_store<<<c.sms, kComputeThreads, c.smem_floor, s.stream>>>(s.local, c.tiles, c.tile_bytes, p.iters,
                                                                        seed_g);
      RL_CHECK_LAUNCH();
      if (p.sched == Sched::Sequential) copy_to_peer(c, g);
      break;
    case Sched::CommOnly:
      if (p.path == Path::CopyEngine) {
        copy_to_peer(c, g);
      } else {
        send_tiles<<<p.comm_sms, 32, comm_smem, s.stream>>>(s.local, peer_recv, c.tiles, c.tile_bytes, c.stages);
        RL_CHECK_LAUNCH();
      }
      break;
    case Sched::IntraSm:
      intra_sm<<<c.sms, kBlockThreads, std::max(c.smem_floor, static_cast<size_t>(kSlots) * c.tile_bytes), s.stream>>>(
          peer_recv, c.tiles, c.tile_bytes, p.iters, seed_g);
      RL_CHECK_LAUNCH();
      break;
    case Sched::InterSm:
      inter_sm<<<c.sms, kBlockThreads, comm_smem, s.stream>>>(s.local, peer_recv, s.flags, c.tiles, c.tile_bytes,
                                                             p.iters, seed_g, c.epoch, p.comm_sms, c.stages);
      RL_CHECK_LAUNCH();
      break;
  }
}

struct RunTimes {
  double gpu[2] = {0, 0};
  uint64_t seeds[2] = {0, 0};
};

// One two-GPU step on fresh data: prepare (untimed), synchronise both, then on each GPU record start, launch its
// work, record stop; wait for both.
static RunTimes run_once(Ctx& c, const Point& p) {
  RunTimes r;
  const uint64_t run = ++c.runs;
  ++c.epoch;
  for (int g = 0; g < 2; ++g) {
    r.seeds[g] = c.seed_of(run, g);
    prepare(c, g, p, r.seeds[g]);
  }
  for (Side& s : c.side) {
    RL_CHECK(cudaSetDevice(s.dev));
    RL_CHECK(cudaStreamSynchronize(s.stream));
  }
  for (int g = 0; g < 2; ++g) {
    Side& s = c.side[g];
    RL_CHECK(cudaSetDevice(s.dev));
    RL_CHECK(cudaEventRecord(s.start, s.stream));
    launch(c, g, p, r.seeds[g]);
    RL_CHECK(cudaEventRecord(s.stop, s.stream));
  }
  for (int g = 0; g < 2; ++g) {
    Side& s = c.side[g];
    RL_CHECK(cudaSetDevice(s.dev));
    RL_CHECK(cudaEventSynchronize(s.stop));
    float ms = 0;
    RL_CHECK(cudaEventElapsedTime(&ms, s.start, s.stop));
    r.gpu[g] = ms * 1e-3;
  }
  return r;
}

// Poisons the checked buffers, runs once on fresh data and counts mismatching words on both GPUs.
static unsigned long long verify(Ctx& c, const Point& p) {
  const bool local = p.sched == Sched::ComputeOnly;
  for (Side& s : c.side) poison_on(s.dev, local ? s.local : s.recv, c.bytes(), s.stream);
  const RunTimes r = run_once(c, p);
  unsigned long long bad = 0;
  for (int g = 0; g < 2; ++g) {
    Side& s = c.side[g];
    RL_CHECK(cudaSetDevice(s.dev));
    s.bad.reset(s.stream);
    const uint64_t seed = local ? r.seeds[g] : r.seeds[1 - g];  // received tiles were made by the peer
    const int grid = std::min(c.tiles, 1024);
    count_tile_mismatch<<<grid, kComputeThreads, 0, s.stream>>>(local ? s.local : s.recv, c.tiles, c.tile_bytes,
                                                                 p.iters, seed, s.bad.d);
    RL_CHECK_LAUNCH();
    bad += s.bad.read(s.stream);
  }
  return bad;
}

struct Measured {
  Stats step, gpu0, gpu1;
  unsigned long long bad = 0;
};

static Measured measure(Ctx& c, const Point& p, int warmup, int repeats) {
  std::vector<double> step, g0, g1;
  for (int i = 0; i < warmup + repeats; ++i) {
    const RunTimes r = run_once(c, p);
    if (i < warmup) continue;
    step.push_back(std::max(r.gpu[0], r.gpu[1]));
    g0.push_back(r.gpu[0]);
    g1.push_back(r.gpu[1]);
  }
  Measured m;
  m.step = stats(step);
  m.gpu0 = stats(g0);
  m.gpu1 = stats(g1);
  m.bad = verify(c, p);
  return m;
}

struct Fit {  // compute_only points, for the compute_rate record
  std::vector<double> iters, time;
  bool verified = true;
};

static void report(Ctx& c, const Point& p, const Measured& m, int warmup, int repeats, Fit& fit) {
  const char* sched = kSchedNames[static_cast<int>(p.sched)];
  const long long flops_per_tile = kFlopsPerTrip * p.iters;
  const double flops = static_cast<double>(flops_per_tile) * c.tiles;
  const double t = m.step.median;
  int compute_sms = c.sms;
  if (p.sched == Sched::CommOnly) compute_sms = 0;
  if (p.sched == Sched::InterSm) compute_sms = c.sms - p.comm_sms;
  Json j;
  j.str("record", "point")
      .str("program", g_program)
      .str("name", sched)
      .str("schedule", sched)
      .str("send_path", kPathNames[static_cast<int>(p.path)])
      .integer("comm_sms", p.comm_sms)
      .integer("compute_sms", compute_sms)
      .integer("sms", c.sms)
      .integer("gpus", 2)
      .integer("tiles", c.tiles)
      .integer("tile_bytes", c.tile_bytes)
      .integer("bytes", static_cast<long long>(c.bytes()))
      .integer("iters", p.iters)
      .integer("flops_per_tile", flops_per_tile)
      .integer("flops_per_trip", kFlopsPerTrip)
      .num("flops", flops)
      .integer("compute_warps_per_sm", kComputeWarps)
      .str("instruction", kInstruction);
  if (p.path == Path::Tma) j.integer("stages", c.stages);
  if (p.sched == Sched::IntraSm) j.integer("slots", kSlots);
  j.integer("warmup", warmup).integer("repeats", repeats).num("time_s", t);
  put_stats(j, "time_s", m.step);
  j.num("time_s_gpu0", m.gpu0.median).num("time_s_gpu1", m.gpu1.median);
  if (p.sched == Sched::ComputeOnly) {
    j.num("flop_per_s", flops / t).num("flop_per_s_per_sm", flops / t / c.sms);
    fit.iters.push_back(p.iters);
    fit.time.push_back(t);
    fit.verified = fit.verified && m.bad == 0;
  }
  if (p.path != Path::None) j.num("bytes_per_s", static_cast<double>(c.bytes()) / t);
  j.boolean("verified", m.bad == 0)
      .integer("mismatches", static_cast<long long>(m.bad))
      .integer("seed", static_cast<long long>(c.seed & 0x7fffffffffffffffULL));
  j.print();
  fprintf(stderr, "overlap %-12s %-11s S=%3d K=%4d  %10.2f us  (gpu0 %9.2f, gpu1 %9.2f)  verified=%s\n", sched,
          kPathNames[static_cast<int>(p.path)], p.comm_sms, p.iters, t * 1e6, m.gpu0.median * 1e6,
          m.gpu1.median * 1e6, m.bad == 0 ? "yes" : "NO");
}

// Least squares time = a + b K over the compute_only points: b / (tiles per SM) is one trip's time on one SM.
static void report_compute_rate(const Ctx& c, const Fit& f) {
  const size_t n = f.iters.size();
  if (n < 2) return;
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; ++i) mx += f.iters[i] / n, my += f.time[i] / n;
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < n; ++i) sxx += (f.iters[i] - mx) * (f.iters[i] - mx), sxy += (f.iters[i] - mx) * (f.time[i] - my);
  if (sxx <= 0) return;
  const double b = sxy / sxx, a = my - b * mx;
  const int tiles_per_sm = (c.tiles + c.sms - 1) / c.sms;
  const double trip_s = b / tiles_per_sm;
  double best = 0;
  for (size_t i = 0; i < n; ++i) best = std::max(best, static_cast<double>(kFlopsPerTrip) * f.iters[i] * c.tiles / f.time[i] / c.sms);
  Json j;
  j.str("record", "compute_rate")
      .str("program", g_program)
      .str("name", "compute_rate")
      .str("instruction", kInstruction)
      .integer("compute_warps_per_sm", kComputeWarps)
      .integer("flops_per_trip", kFlopsPerTrip)
      .integer("sms", c.sms)
      .integer("tiles", c.tiles)
      .integer("tile_bytes", c.tile_bytes)
      .integer("tiles_per_sm", tiles_per_sm)
      .integer("fit_points", static_cast<long long>(n))
      .num("intercept_s", a)
      .num("slope_s_per_iter", b)
      .num("trip_s", trip_s)
      .num("tile_overhead_s", a / tiles_per_sm)
      .num("flop_per_s_per_sm", kFlopsPerTrip / trip_s)
      .num("flop_per_s", kFlopsPerTrip / trip_s * c.sms)
      .num("best_point_flop_per_s_per_sm", best)
      .str("note", "fit of compute_only time = intercept + slope K; tile_overhead_s = intercept / tiles_per_sm "
                   "(the epilogue per tile plus launch cost spread over the tiles)")
      .boolean("verified", f.verified);
  j.print();
  fprintf(stderr, "overlap compute rate: %.3f TFLOP/s per SM (%.1f TFLOP/s on %d SMs), trip %.1f ns, intercept %.2f us\n",
          kFlopsPerTrip / trip_s / 1e12, kFlopsPerTrip / trip_s * c.sms / 1e12, c.sms, trip_s * 1e9, a * 1e6);
}

static void enable_peer(int a, int b) {
  int ab = 0, ba = 0;
  RL_CHECK(cudaDeviceCanAccessPeer(&ab, a, b));
  RL_CHECK(cudaDeviceCanAccessPeer(&ba, b, a));
  if (!ab || !ba) fail(g_program, "GPUs " + std::to_string(a) + " and " + std::to_string(b) + " cannot access each other");
  for (auto [x, y] : {std::pair<int, int>{a, b}, {b, a}}) {
    RL_CHECK(cudaSetDevice(x));
    cudaError_t e = cudaDeviceEnablePeerAccess(y, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) cudaGetLastError();
    else RL_CHECK(e);
  }
}

struct Options {
  std::vector<Sched> scheds;
  std::vector<int> iters, comm_sms;
  int tiles = 1056, stages = 4, sms = 0, warmup = 3, repeats = 20, gpu[2] = {0, 1};
  long long tile_bytes = 32768;
};

static std::vector<int> int_list(const Args& a, const char* key, const char* def) {
  std::vector<int> out;
  for (long long v : a.sizes(key, def)) out.push_back(static_cast<int>(v));
  return out;
}

static Options parse(const Args& a) {
  Options o;
  for (const auto& n : a.list("--schedule", "compute_only,comm_only,sequential,intra_sm,inter_sm")) {
    bool found = false;
    for (int i = 0; i < 5; ++i)
      if (n == kSchedNames[i]) o.scheds.push_back(static_cast<Sched>(i)), found = true;
    if (!found) fail(g_program, "unknown schedule '" + n + "'", 2);
  }
  o.iters = int_list(a, "--iters", "1,2,4,8,16,32,64,128,256,512");
  o.comm_sms = int_list(a, "--comm-sms", "1,2,4,8,16,32");
  o.tiles = static_cast<int>(a.integer("--tiles", 1056));
  o.tile_bytes = a.integer("--tile-bytes", 32768);
  o.stages = static_cast<int>(a.integer("--stages", 4));
  o.sms = a.str("--sms", "all") == "all" ? 0 : static_cast<int>(a.integer("--sms", 0));
  o.warmup = static_cast<int>(a.integer("--warmup", 3));
  o.repeats = static_cast<int>(a.integer("--iters-timing", 20));
  const auto gpus = int_list(a, "--gpus", "0,1");
  if (gpus.size() != 2 || gpus[0] == gpus[1]) fail(g_program, "--gpus needs two different device ids", 2);
  o.gpu[0] = gpus[0];
  o.gpu[1] = gpus[1];
  if (o.tiles < 1 || o.tiles > (1 << 22)) fail(g_program, "--tiles must be 1..4194304", 2);
  if (o.tile_bytes < 4096 || o.tile_bytes % 4096 || o.tile_bytes > (512 << 10))
    fail(g_program, "--tile-bytes must be a multiple of 4K, at most 512K", 2);
  if (o.stages < 2 || o.stages > kMaxStages) fail(g_program, "--stages must be 2..8", 2);
  if (o.warmup < 0 || o.repeats < 1) fail(g_program, "--warmup must be >= 0 and --iters-timing >= 1", 2);
  for (int k : o.iters)
    if (k < 1 || k > 100000) fail(g_program, "--iters values must be 1..100000 (exact check needs K < 131072)", 2);
  for (int s : o.comm_sms)
    if (s < 1) fail(g_program, "--comm-sms values must be >= 1", 2);
  return o;
}

static void setup(Ctx& c, const Options& o) {
  int optin = 1 << 30, per_sm = 1 << 30, sms = 1 << 30;
  for (int g = 0; g < 2; ++g) {
    cudaDeviceProp p;
    RL_CHECK(cudaGetDeviceProperties(&p, o.gpu[g]));
    if (p.major < 9) fail(g_program, "needs sm_90 (TMA bulk copies); device " + std::to_string(o.gpu[g]) + " is " +
                                         std::to_string(p.major) + "." + std::to_string(p.minor));
    optin = std::min(optin, static_cast<int>(p.sharedMemPerBlockOptin));
    per_sm = std::min(per_sm, static_cast<int>(p.sharedMemPerMultiprocessor));
    sms = std::min(sms, p.multiProcessorCount);
  }
  c.tiles = o.tiles;
  c.tile_bytes = static_cast<uint32_t>(o.tile_bytes);
  c.sms = o.sms > 0 ? std::min(o.sms, sms) : sms;
  c.smem_floor = static_cast<size_t>(per_sm / 2 + 1024);
  const int dynamic_max = optin - 1024;  // leaves room for the kernels' static shared memory (mbarriers)
  c.stages = std::min(o.stages, dynamic_max / static_cast<int>(c.tile_bytes));
  if (c.stages < 2 || c.smem_floor > static_cast<size_t>(dynamic_max))
    fail(g_program, "--tile-bytes too large: two tiles must fit in " + std::to_string(optin) + " bytes of shared memory");
  enable_peer(o.gpu[0], o.gpu[1]);
  for (int g = 0; g < 2; ++g) {
    Side& s = c.side[g];
    s.dev = o.gpu[g];
    RL_CHECK(cudaSetDevice(s.dev));
    RL_CHECK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
    RL_CHECK(cudaEventCreate(&s.start));
    RL_CHECK(cudaEventCreate(&s.stop));
    RL_CHECK(cudaMalloc(&s.local, c.bytes()));
    RL_CHECK(cudaMalloc(&s.recv, c.bytes()));
    RL_CHECK(cudaMalloc(&s.flags, sizeof(uint32_t) * c.tiles));
    RL_CHECK(cudaMemset(s.flags, 0, sizeof(uint32_t) * c.tiles));
    s.bad.init(s.dev);
    for (const void* f : {reinterpret_cast<const void*>(compute_store), reinterpret_cast<const void*>(intra_sm),
                          reinterpret_cast<const void*>(inter_sm), reinterpret_cast<const void*>(send_tiles)}) {
      cudaFuncAttributes at;  // the dynamic limit is what the block's static shared memory leaves
      RL_CHECK(cudaFuncGetAttributes(&at, f));
      RL_CHECK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    optin - static_cast<int>(at.sharedSizeBytes)));
    }
    RL_CHECK(cudaDeviceSynchronize());
  }
}

static void release(Ctx& c) {
  for (Side& s : c.side) {
    s.bad.release();
    cudaSetDevice(s.dev);
    cudaFree(s.local);
    cudaFree(s.recv);
    cudaFree(s.flags);
    cudaStreamDestroy(s.stream);
    cudaEventDestroy(s.start);
    cudaEventDestroy(s.stop);
  }
}

// The points in the order they run: comm_only once (it does not depend on K), then per K every other schedule.
static std::vector<Point> plan(const Options& o, int sms) {
  std::vector<Point> pts;
  auto has = [&](Sched s) { return std::find(o.scheds.begin(), o.scheds.end(), s) != o.scheds.end(); };
  std::vector<int> sms_list;
  for (int s : o.comm_sms)
    if (s < sms && std::find(sms_list.begin(), sms_list.end(), s) == sms_list.end()) sms_list.push_back(s);
  if (has(Sched::CommOnly)) {
    pts.push_back({Sched::CommOnly, Path::CopyEngine, 0, 0});
    for (int s : sms_list) pts.push_back({Sched::CommOnly, Path::Tma, s, 0});
    pts.push_back({Sched::CommOnly, Path::Tma, sms, 0});
  }
  for (int k : o.iters) {
    if (has(Sched::ComputeOnly)) pts.push_back({Sched::ComputeOnly, Path::None, 0, k});
    if (has(Sched::Sequential)) pts.push_back({Sched::Sequential, Path::CopyEngine, 0, k});
    if (has(Sched::IntraSm)) pts.push_back({Sched::IntraSm, Path::Tma, 0, k});
    if (has(Sched::InterSm))
      for (int s : sms_list) pts.push_back({Sched::InterSm, Path::Tma, s, k});
  }
  return pts;
}

int main(int argc, char** argv) {
  Args a(argc, argv);
  if (a.has("--help") || a.has("-h")) {
    fputs(kHelp, stdout);
    return 0;
  }
  const Options o = parse(a);
  const int ngpu = device_count_or_zero();
  if (ngpu == 0) fail(g_program, "no CUDA device visible");
  if (ngpu < 2) {
    print_meta(g_program, a, {0}, "needs two GPUs; one visible");
    Json j;
    j.str("record", "skipped").str("program", g_program).str("reason", "needs two GPUs (one visible)");
    j.print();
    return 0;
  }
  if (o.gpu[0] >= ngpu || o.gpu[1] >= ngpu || o.gpu[0] < 0 || o.gpu[1] < 0)
    fail(g_program, "device id out of range: " + std::to_string(ngpu) + " visible");
  print_meta(g_program, a, {o.gpu[0], o.gpu[1]});
  Ctx c;
  c.seed = seed_from(a);
  setup(c, o);
  Fit fit;
  for (const Point& p : plan(o, c.sms)) {
    const Measured m = measure(c, p, o.warmup, o.repeats);
    report(c, p, m, o.warmup, o.repeats, fit);
  }
  report_compute_rate(c, fit);
  release(c);
  return 0;
}
