// overlap.cu: compute/communication overlap schedules on two GPUs that send their output tiles to each other
// (--direction scatter, the default: GEMM + reduce-scatter's shape) or gather their input blocks from each other
// (--direction gather: all-gather + GEMM's shape; see below).
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
//   intra_sm      one persistent block per SM: 8 compute warps produce a tile into one of --slots shared-memory slots
//                 (default: as many as the inter_sm comm blocks' stages, 4, or 3 for 64 KiB tiles);
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
//
// --direction gather (all-gather feeding a GEMM; the schedules above are --direction scatter, the default): each GPU
// holds --tiles T input blocks of B bytes (hash-filled before timing, word i of GPU g's input = hash32(seed_g, i))
// and computes T x C output tiles (C = --reuse) from the PEER's blocks: output tile (r, c) reads all of input block
// r, does the same K trips, and folds a checksum of the block into its words (compute warp w sums the 16-byte
// groups w*32 + lane, + 256, ... of the block it read and adds that warp-sum to its accumulator sum), so every
// output word proves its writer warp read its share of the right input. Output tile i runs on block i mod grid
// (row-major: r = i / C), written to local memory. Both GPUs gather from each other at once.
//   compute_only  the peer's blocks copied to local memory before timing; compute reads them locally (reference)
//   comm_only     only the T blocks moved to local memory: copy engine (one cudaMemcpyPeerAsync; and in --ce-chunk
//                 pieces with their flags, send_path copy_engine_chunks, as inter_ce issues them, per form) or
//                 TMA by S SMs (peer -> shared -> local, --stages deep)
//   sequential    cudaMemcpyPeerAsync of all blocks, then the compute kernel reading locally
//   intra_sm      one persistent block per SM; per tile its producer warp bulk-loads the needed block straight
//                 from PEER memory into one of 2 shared-memory slots (cp.async.bulk, mbarrier full/empty) and the
//                 8 compute warps consume it: remote bytes = T x C x B (each block read once per output tile)
//   inter_sm      S comm blocks copy the T blocks once from the peer into local memory (TMA through shared memory)
//                 and publish a flag per block (st.release.gpu) once its store has completed; compute blocks'
//                 producer warps wait for block r's flag (ld.acquire.gpu), then bulk-load it from local memory
//   inter_ce      no comm SMs: a side stream copies the blocks in --ce-chunk pieces (cudaMemcpyPeerAsync) and
//                 writes a ready flag after each piece (cuStreamWriteValue32, or a 1-thread kernel where stream
//                 memory operations fail); compute blocks wait for the flag of block r's piece, then bulk-load it
//                 from local memory. --ce-issue picks how the pieces are issued: per call inside the timed step
//                 (stream), as one captured CUDA graph (graph), or enqueued before the start event behind a
//                 cuStreamWaitValue32 that the main stream releases after it (preissued); one point per form
//                 and piece size (the preissued points run last)
// Verification: every output word on both GPUs (comm_only: every copied word).
#include <cuda.h>  // CUresult / CUdeviceptr only: cuStreamWriteValue32 comes through cudaGetDriverEntryPointByVersion
#include <cuda_bf16.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "common.cuh"

const char* rl::g_program = "overlap";
using namespace rl;

static const char* kHelp =
    "overlap: compute/communication overlap schedules, two GPUs sending output tiles to each other (scatter)\n"
    "or gathering each other's input blocks (gather)\n"
    "(JSON Lines on stdout)\n"
    "\n"
    "  --direction D        scatter (default): each GPU computes tiles and sends them to the peer (GEMM + RS);\n"
    "                       gather: each GPU computes T x C tiles from the peer's T input blocks (AG + GEMM)\n"
    "  --schedule LIST      compute_only,comm_only,sequential,intra_sm,inter_sm, and with gather inter_ce\n"
    "                       (default: all of the direction's)\n"
    "  --tiles T            scatter: output tiles per GPU (default 1056 = 132 x 8); gather: input blocks per GPU\n"
    "  --reuse C            gather: output tiles per input block, each reads the whole block (default 8):\n"
    "                       T x C output tiles; intra_sm reads T x C x B bytes from the peer, the others T x B\n"
    "  --ce-chunk LIST      gather inter_ce: input blocks per copy-engine piece and ready flag (default 32)\n"
    "  --ce-issue LIST      gather inter_ce: how the pieces are issued (default stream,graph,preissued):\n"
    "                       stream: cudaMemcpyPeerAsync + cuStreamWriteValue32 per piece inside the timed step;\n"
    "                       graph: that sequence as one CUDA graph; preissued: enqueued before the start event\n"
    "                       behind cuStreamWaitValue32 on a word the main stream writes after it\n"
    "  --tile-bytes B       bytes per tile (and per gather input block), a multiple of 4K (default 32K = 128 x 128\n"
    "                       bf16)\n"
    "  --iters LIST         tensor-core loop trips per tile, K (default 1,2,4,8,16,32,64,128,256,512)\n"
    "                       one trip = 524288 FLOP (a k=16 step of a 128 x 128 tile): flops_per_tile = K x 524288\n"
    "  --comm-sms LIST      inter_sm communication SMs S, and comm_only TMA SM counts (default 1,2,4,8,16,32)\n"
    "  --stages N           TMA pipeline depth of the comm blocks (inter_sm, comm_only), 2..8 (default 4,\n"
    "                       lowered to what fits in shared memory)\n"
    "  --slots N            scatter intra_sm: shared-memory tile slots between the compute warps and the\n"
    "                       producer, 2..8 (default: the --stages the comm blocks get, so both schedules\n"
    "                       buffer as deep)\n"
    "  --sms N              blocks = SMs used, one per SM (default: every SM)\n"
    "  --gpus A,B           the two devices (default 0,1)\n"
    "  --warmup N (default 3)   --iters-timing N timed runs per point (default 20)   --seed N (default: clock)\n"
    "  --help\n"
    "\n"
    "Each point: time_s = median over runs of max(GPU 0 time, GPU 1 time), CUDA events on each GPU around the\n"
    "whole step; verified/mismatches from a device-side compare of every received word on both GPUs.\n"
    "compute_only points carry flop_per_s and flop_per_s_per_sm; a final compute_rate record fits\n"
    "time = a + b K over the compute_only points (per-SM rate = 524288 FLOP / (b / tiles per SM)).\n"
    "Every record carries direction; gather records also reuse, input_blocks (T), tiles (= T x C output tiles),\n"
    "bytes (T x B, the gathered input), remote_bytes (what the schedule reads over the link) and output_bytes.\n";

// ------------------------------------------------------------------------------------------------ constants
constexpr int kComputeWarps = 8;
constexpr int kComputeThreads = kComputeWarps * 32;  // 256
constexpr int kBlockThreads = kComputeThreads + 32;  // + one producer / communication warp
constexpr int kAcc = 16;                             // m16n8 accumulators per warp: 8 x 16 x (16 x 8) = 128 x 128
constexpr long long kFlopsPerTrip = 1LL * kComputeWarps * kAcc * 2 * 16 * 8 * 16;  // 524288
constexpr int kSlots = 2;      // gather's double buffer
constexpr int kMaxSlots = 8;  // scatter intra_sm --slots (default: as deep as the inter_sm comm blocks' --stages)
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
  for (uint32_t spins = 0; ld_acquire_gpu(p) != want; ++spins) trap_if_late(spins, since, kTimeoutNs);
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

// intra_sm: warp-specialised persistent block (8 compute warps + 1 producer warp), `slots` shared-memory tile slots
// (a slot goes back to the compute warps once the store of the next tile is issued and its own store has read it).
__global__ void __launch_bounds__(kBlockThreads, 1)
    intra_sm(char* __restrict__ peer_recv, int tiles, uint32_t tile_bytes, int iters, uint64_t seed, int slots) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ __align__(8) uint64_t full[kMaxSlots], empty[kMaxSlots];
  const int t = threadIdx.x;
  const uint32_t full0 = smem_addr(full), empty0 = smem_addr(empty), slot0 = smem_addr(smem);
  if (t == 0) {
    for (int s = 0; s < slots; ++s) {
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
      const int slot = i % slots;
      const uint32_t use = static_cast<uint32_t>(i / slots);
      mbar_wait(empty0 + 8 * slot, (use & 1u) ^ 1u, kTimeoutNs);  // first use of a slot passes at once
      write_tile(reinterpret_cast<uint4*>(smem + static_cast<size_t>(slot) * tile_bytes), tile_bytes / 16,
                 hash32(seed, tile), s, t);
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // generic writes -> async-proxy reads
      mbar_arrive(full0 + 8 * slot);
    }
  } else if (t == kComputeThreads) {  // the producer warp's elected thread
    for (int i = 0; i < mine; ++i) {
      const uint32_t tile = blockIdx.x + static_cast<uint32_t>(i) * gridDim.x;
      const int slot = i % slots;
      mbar_wait(full0 + 8 * slot, static_cast<uint32_t>(i / slots) & 1u, kTimeoutNs);
      bulk_store(peer_recv + static_cast<size_t>(tile) * tile_bytes, slot0 + slot * tile_bytes, tile_bytes);
      if (i >= 1) {  // the store of tile i - 1 has read its slot: hand the slot back to the compute warps
        asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
        mbar_arrive(empty0 + 8 * ((i - 1) % slots));
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
    mbar_wait(bar0 + 8 * s, static_cast<uint32_t>(k / stages) & 1u, kTimeoutNs);
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

// ------------------------------------------------------------------------------------------------ gather kernels
// Compute thread t reads the 16-byte groups t, t + 256, ... of an input block; the warp-sum of their words (mod 2^32)
// is what the warp folds into its output words.
__device__ __forceinline__ uint32_t block_part_smem(const unsigned char* slot, uint32_t groups, int t) {
  const uint4* p = reinterpret_cast<const uint4*>(slot);
  uint32_t s = 0;
  for (uint32_t g = t; g < groups; g += kComputeThreads) {
    const uint4 v = p[g];
    s += v.x + v.y + v.z + v.w;
  }
  return __reduce_add_sync(0xFFFFFFFFu, s);
}
// What block_part_smem returns for block `block` of an input filled with in_seed (the verifier).
__device__ __forceinline__ uint32_t block_part_expected(uint64_t in_seed, uint32_t block, uint32_t tile_bytes, int t) {
  const uint64_t base = static_cast<uint64_t>(block) * (tile_bytes / 4);
  uint32_t s = 0;
  for (uint32_t g = t; g < tile_bytes / 16; g += kComputeThreads)
    for (uint32_t e = 0; e < 4; ++e) s += hash32(in_seed, base + 4 * g + e);
  return __reduce_add_sync(0xFFFFFFFFu, s);
}

// One gather communication thread: input blocks first, first + step, ... of the peer's `peer_in` into the local
// `copy`, through `stages` shared-memory slots (bulk load from peer memory, bulk store to local memory); once a
// block's store has completed, flags[block] = want (st.release.gpu).
__device__ __forceinline__ void pull_thread(const char* __restrict__ peer_in, char* __restrict__ copy, uint32_t* flags,
                                            uint32_t want, int blocks, uint32_t tile_bytes, int first, int step,
                                            int stages, unsigned char* smem, uint64_t* bars) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const int mine = first < blocks ? (blocks - 1 - first) / step + 1 : 0;
  const uint32_t slot0 = smem_addr(smem), bar0 = smem_addr(bars);
  for (int s = 0; s < stages; ++s) mbar_init(bar0 + 8 * s, 1);
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  auto block_of = [&](int k) { return static_cast<size_t>(first) + static_cast<size_t>(k) * step; };
  auto load = [&](int k) {
    const int s = k % stages;
    bulk_load(slot0 + s * tile_bytes, peer_in + block_of(k) * tile_bytes, tile_bytes, bar0 + 8 * s);
  };
  auto publish = [&](int k) {
    asm volatile("fence.proxy.async.global;" ::: "memory");  // async-proxy writes before the generic flag store
    st_release_gpu(flags + block_of(k), want);
  };
  const int pre = min(stages - 1, mine);
  for (int k = 0; k < pre; ++k) load(k);
  for (int k = 0; k < mine; ++k) {
    const int s = k % stages;
    mbar_wait(bar0 + 8 * s, static_cast<uint32_t>(k / stages) & 1u, kTimeoutNs);
    bulk_store(copy + block_of(k) * tile_bytes, slot0 + s * tile_bytes, tile_bytes);
    if (k >= 1) {  // the store of block k - 1 (the older pending group) has completed: publish it, reuse its slot
      asm volatile("cp.async.bulk.wait_group 1;" ::: "memory");
      publish(k - 1);
    }
    const int j = k + stages - 1;  // goes into the slot of block k - 1
    if (j < mine) load(j);
  }
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  if (mine > 0) publish(mine - 1);
#else
  __trap();
#endif
}

// gather: blocks [0, comm_blocks) run pull_thread (inter_sm, comm_only tma); the others compute output tiles
// cb, cb + ncb, ... (cb = blockIdx - comm_blocks), tile i reading input block i / reuse from `src` (the peer's
// input for intra_sm, the local copy otherwise). The producer warp's elected thread waits, where flags is set, for
// flags[block / rows_per_flag] == want, then bulk-loads the block into one of 2 slots; the 8 compute warps fold its
// checksum into the tile and write the tile to `out`.
__global__ void __launch_bounds__(kBlockThreads, 1)
    gather_tiles(const char* __restrict__ src, char* __restrict__ out, const char* __restrict__ peer_in,
                 char* __restrict__ copy, uint32_t* __restrict__ flags, uint32_t want, int rows_per_flag, int blocks,
                 int reuse, uint32_t tile_bytes, int iters, uint64_t seed, int comm_blocks, int stages) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ __align__(8) uint64_t bars[kMaxStages], full[kSlots], empty[kSlots];
  const int t = threadIdx.x;
  if (static_cast<int>(blockIdx.x) < comm_blocks) {
    if (t == 0) pull_thread(peer_in, copy, flags, want, blocks, tile_bytes, blockIdx.x, comm_blocks, stages, smem, bars);
    return;
  }
  const uint32_t full0 = smem_addr(full), empty0 = smem_addr(empty), slot0 = smem_addr(smem);
  if (t == 0) {
    for (int s = 0; s < kSlots; ++s) {
      mbar_init(full0 + 8 * s, 1);                 // the producer's arrive.expect_tx; the bulk load completes it
      mbar_init(empty0 + 8 * s, kComputeThreads);  // every compute thread arrives once done with the slot
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  const int cb = static_cast<int>(blockIdx.x) - comm_blocks, ncb = static_cast<int>(gridDim.x) - comm_blocks;
  const int total = blocks * reuse;
  const int mine = cb < total ? (total - 1 - cb) / ncb + 1 : 0;
  const uint32_t groups = tile_bytes / 16;
  if (t < kComputeThreads) {
    const int warp = t / 32, lane = t % 32;
    for (int i = 0; i < mine; ++i) {
      const uint32_t tile = static_cast<uint32_t>(cb + i * ncb);
      const int slot = i % kSlots;
      mbar_wait(full0 + 8 * slot, static_cast<uint32_t>(i / kSlots) & 1u, kTimeoutNs);
      const uint32_t part = block_part_smem(smem + static_cast<size_t>(slot) * tile_bytes, groups, t);
      const uint32_t s = tile_compute(iters, seed, tile, warp, lane);  // the operand's slot is held meanwhile
      mbar_arrive(empty0 + 8 * slot);
      write_tile(reinterpret_cast<uint4*>(out + static_cast<size_t>(tile) * tile_bytes), groups, hash32(seed, tile),
                 s + part, t);
    }
  } else if (t == kComputeThreads) {  // the producer warp's elected thread
    for (int i = 0; i < mine; ++i) {
      const uint32_t block = static_cast<uint32_t>(cb + i * ncb) / static_cast<uint32_t>(reuse);
      const int slot = i % kSlots;
      mbar_wait(empty0 + 8 * slot, (static_cast<uint32_t>(i / kSlots) & 1u) ^ 1u, kTimeoutNs);  // first use passes at once
      if (flags) {
        wait_flag(flags + block / static_cast<uint32_t>(rows_per_flag), want);
        asm volatile("fence.proxy.async.global;" ::: "memory");  // the flag's data is next read by the async proxy
      }
      bulk_load(slot0 + slot * tile_bytes, src + static_cast<size_t>(block) * tile_bytes, tile_bytes,
                full0 + 8 * slot);
    }
  }
#else
  __trap();
#endif
}

// inter_ce's ready flag where stream memory operations are not available: one thread, after the copy in stream order.
__global__ void set_flag(uint32_t* flag, uint32_t v) {
  __threadfence_system();
  st_release_gpu(flag, v);
}

// Counts words of the T x C gather output tiles that differ from what the kernel computes for (seed, iters) on input
// blocks filled with in_seed.
__global__ void count_gather_mismatch(const char* __restrict__ out, int blocks, int reuse, uint32_t tile_bytes,
                                      int iters, uint64_t seed, uint64_t in_seed, unsigned long long* bad) {
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  unsigned long long local_bad = 0;
  const uint32_t groups = tile_bytes / 16, total = static_cast<uint32_t>(blocks) * static_cast<uint32_t>(reuse);
  for (uint32_t tile = blockIdx.x; tile < total; tile += gridDim.x) {
    const uint32_t s = tile_expected_sum(iters, seed, tile, warp, lane) +
                       block_part_expected(in_seed, tile / static_cast<uint32_t>(reuse), tile_bytes, t);
    const uint32_t h = hash32(seed, tile);
    const uint4* p = reinterpret_cast<const uint4*>(out + static_cast<size_t>(tile) * tile_bytes);
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
enum class Sched { ComputeOnly, CommOnly, Sequential, IntraSm, InterSm, InterCe };
constexpr int kNumSched = 6;
static const char* const kSchedNames[] = {"compute_only", "comm_only", "sequential", "intra_sm", "inter_sm", "inter_ce"};
enum class Path { None, CopyEngine, Tma, CopyEngineChunks };
static const char* const kPathNames[] = {"none", "copy_engine", "tma", "copy_engine_chunks"};

// gather inter_ce: how the side stream's pieces are issued (each piece a copy, then its ready flag).
//   stream     the brief's form: cudaMemcpyPeerAsync + cuStreamWriteValue32 per piece, called inside the timed step
//              (after the compute kernel's launch), so the host's issue rate is part of the time
//   graph      the same sequence captured once into a CUDA graph (cudaMemcpyAsync where cudaMemcpyPeerAsync does not
//              capture), one cudaGraphLaunch per step
//   preissued  the stream form enqueued before the step's start event behind cuStreamWaitValue32 on a go word
//              that the main stream writes right after the start event: the host's issue time stays out
enum class CeIssue { Stream, Graph, Preissued };
static const char* const kCeIssueNames[] = {"stream", "graph", "preissued"};

struct Point {
  Sched sched = Sched::ComputeOnly;
  Path path = Path::None;
  int comm_sms = 0;  // inter_sm: communication SMs; comm_only tma: SMs sending; else 0
  int iters = 0;     // K (0 for comm_only: the tiles are prepared, not computed)
  int ce = 0;        // gather inter_ce / copy_engine_chunks: index into Ctx::ce_chunks
  CeIssue issue = CeIssue::Stream;
};

struct Side {
  int dev = 0;
  cudaStream_t stream = nullptr;
  cudaStream_t side = nullptr;  // gather inter_ce / copy_engine_chunks: the copy-engine pieces and their flags
  cudaEvent_t start = nullptr, stop = nullptr, side_done = nullptr;
  std::vector<cudaGraphExec_t> ce_graphs;  // gather: per --ce-chunk entry, the pieces as one graph (or null)
  // scatter: this GPU's tiles (compute output; source of copy-engine and comm-block sends); gather: the T x C output
  char* local = nullptr;
  char* recv = nullptr;   // scatter: what the peer sends here; gather: the local copy of the peer's input blocks
  char* input = nullptr;  // gather: this GPU's T input blocks, which the peer reads
  uint32_t* flags = nullptr;  // tiles + 1 words: per tile (scatter) / block or piece (gather), then the go word
  uint32_t* go() const { return flags; }
  Counter bad;
};

struct CeGraph {  // how one --ce-chunk entry's graphs were built
  bool ok = false;
  const char* flag_write = "stream_write_value";
  const char* copy_call = "cudaMemcpyPeerAsync";
};

struct Ctx {
  Side side[2];
  bool gather = false;
  int tiles = 0;  // scatter: output tiles; gather: input blocks
  int reuse = 1;  // gather: output tiles per input block
  std::vector<int> ce_chunks;  // gather: input blocks per copy-engine piece, one entry per variant
  std::vector<CeGraph> ce_graph;
  uint32_t tile_bytes = 0;
  int sms = 0;
  int stages = 4;
  int slots = kSlots;  // scatter intra_sm tile slots
  size_t smem_floor = 0;  // dynamic shared memory that keeps every kernel at one block per SM
  uint64_t seed = 0;
  uint64_t runs = 0;
  uint32_t epoch = 0;
  size_t bytes() const { return static_cast<size_t>(tiles) * tile_bytes; }  // scatter: sent; gather: gathered
  int out_tiles() const { return gather ? tiles * reuse : tiles; }
  size_t out_bytes() const { return static_cast<size_t>(out_tiles()) * tile_bytes; }
  int ce_pieces(int chunk) const { return (tiles + chunk - 1) / chunk; }
  uint64_t seed_of(uint64_t run, int g) const { return (seed ^ (run * 0x9E3779B97F4A7C15ULL)) * 2 + g; }
};

// Stream memory operations through the runtime's driver entry points (no -lcuda at link time); null where unavailable.
using WriteValue32 = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
using WaitValue32 = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
static WriteValue32 g_write_value = nullptr;
static WaitValue32 g_wait_value = nullptr;

static void* driver_entry(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  const bool ok = cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &q) == cudaSuccess &&
                  q == cudaDriverEntryPointSuccess;
  cudaGetLastError();
  return ok ? fn : nullptr;
}

static CUdeviceptr dptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

static void prepare(Ctx& c, int g, const Point& p, uint64_t seed_g) {
  if (p.sched != Sched::CommOnly) return;
  Side& s = c.side[g];
  RL_CHECK(cudaSetDevice(s.dev));
  compute_store<<<c.sms, kComputeThreads, c.smem_floor, s.stream>>>(s.local, c.tiles, c.tile_bytes, 0, seed_g);
  RL_CHECK_LAUNCH();
}

// gather, untimed: both GPUs' inputs filled (their own seeds), then compute_only's local copy and cleared flags.
static void prepare_gather(Ctx& c, const Point& p, const uint64_t* seeds) {
  for (int g = 0; g < 2; ++g) fill_words_on(c.side[g].dev, c.side[g].input, c.bytes(), seeds[g], c.side[g].stream);
  for (Side& s : c.side) {
    RL_CHECK(cudaSetDevice(s.dev));
    RL_CHECK(cudaStreamSynchronize(s.stream));
  }
  for (int g = 0; g < 2; ++g) {
    Side &s = c.side[g], &peer = c.side[1 - g];
    RL_CHECK(cudaSetDevice(s.dev));
    RL_CHECK(cudaMemsetAsync(s.flags + 1, 0, sizeof(uint32_t) * c.tiles, s.stream));
    if (p.sched == Sched::ComputeOnly)
      RL_CHECK(cudaMemcpyPeerAsync(s.recv, s.dev, peer.input, peer.dev, c.bytes(), s.stream));
  }
}

static void copy_to_peer(Ctx& c, int g) {
  Side &s = c.side[g], &peer = c.side[1 - g];
  RL_CHECK(cudaMemcpyPeerAsync(peer.recv, peer.dev, s.local, s.dev, c.bytes(), s.stream));
}

// gather: the peer's input blocks into the local copy (copy engine), one call.
static void copy_from_peer(Ctx& c, int g) {
  Side &s = c.side[g], &peer = c.side[1 - g];
  RL_CHECK(cudaMemcpyPeerAsync(s.recv, s.dev, peer.input, peer.dev, c.bytes(), s.stream));
}

// gather inter_ce: the peer's input in pieces of `chunk` blocks, each followed by its ready flag (1) at
// flags[1 + piece]. Returns false on the first failing call instead of failing the program.
static bool issue_ce_pieces(Ctx& c, int g, cudaStream_t st, int chunk, bool memop, bool peer_call) {
  Side &s = c.side[g], &peer = c.side[1 - g];
  const size_t piece = static_cast<size_t>(chunk) * c.tile_bytes;
  for (int k = 0; k < c.ce_pieces(chunk); ++k) {
    const size_t off = static_cast<size_t>(k) * piece, len = std::min(piece, c.bytes() - off);
    const cudaError_t e = peer_call ? cudaMemcpyPeerAsync(s.recv + off, s.dev, peer.input + off, peer.dev, len, st)
                                    : cudaMemcpyAsync(s.recv + off, peer.input + off, len, cudaMemcpyDefault, st);
    if (e != cudaSuccess) return false;
    if (memop) {
      if (g_write_value(st, dptr(s.flags + 1 + k), 1u, 0) != CUDA_SUCCESS) return false;
    } else {
      set_flag<<<1, 1, 0, st>>>(s.flags + 1 + k, 1u);
      if (cudaPeekAtLastError() != cudaSuccess) return false;
    }
  }
  return true;
}

// Captures one chunk size's pieces on the side stream into a graph. False (errors cleared) where capture or
// instantiation fails.
static bool capture_ce(Ctx& c, int g, int ci, bool memop, bool peer_call) {
  Side& s = c.side[g];
  RL_CHECK(cudaSetDevice(s.dev));
  cudaGraph_t graph = nullptr;
  if (cudaStreamBeginCapture(s.side, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  const bool issued = issue_ce_pieces(c, g, s.side, c.ce_chunks[ci], memop, peer_call);
  const cudaError_t e = cudaStreamEndCapture(s.side, &graph);
  bool ok = issued && e == cudaSuccess && graph != nullptr;
  if (ok && cudaGraphInstantiate(&s.ce_graphs[ci], graph, 0) != cudaSuccess) {
    s.ce_graphs[ci] = nullptr;
    ok = false;
  }
  if (graph) cudaGraphDestroy(graph);
  cudaGetLastError();
  return ok;
}

// The graph issue form, per chunk size: flags by cuStreamWriteValue32 where it captures, else by a 1-thread kernel;
// copies by cudaMemcpyPeerAsync, else cudaMemcpyAsync (cudaMemcpyDefault, peer access on). A chunk size whose
// pieces capture in no form has no graph points.
static void setup_ce(Ctx& c, bool graphs) {
  g_write_value = reinterpret_cast<WriteValue32>(driver_entry("cuStreamWriteValue32"));
  g_wait_value = reinterpret_cast<WaitValue32>(driver_entry("cuStreamWaitValue32"));
  c.ce_graph.assign(c.ce_chunks.size(), CeGraph{});
  for (Side& s : c.side) s.ce_graphs.assign(c.ce_chunks.size(), nullptr);
  for (size_t ci = 0; graphs && ci < c.ce_chunks.size(); ++ci) {
    for (int form = 0; form < 4 && !c.ce_graph[ci].ok; ++form) {
      const bool memop = form < 2, peer_call = form % 2 == 0;
      if (memop && !g_write_value) continue;
      bool ok = true;
      for (int g = 0; g < 2 && ok; ++g) ok = capture_ce(c, g, static_cast<int>(ci), memop, peer_call);
      if (ok) {
        c.ce_graph[ci] = {true, memop ? "stream_write_value" : "kernel",
                          peer_call ? "cudaMemcpyPeerAsync" : "cudaMemcpyAsync"};
        continue;
      }
      for (Side& s : c.side)
        if (s.ce_graphs[ci]) cudaGraphExecDestroy(s.ce_graphs[ci]), s.ce_graphs[ci] = nullptr;
      fprintf(stderr, "overlap: inter_ce graph capture failed (chunk %d, %s flags, %s)\n", c.ce_chunks[ci],
              memop ? "stream_write_value" : "kernel", peer_call ? "cudaMemcpyPeerAsync" : "cudaMemcpyAsync");
    }
  }
}

// Whether a CE point can run here (graph: its capture succeeded; preissued: both stream memory operations exist).
static bool ce_runnable(const Ctx& c, const Point& p) {
  if (p.issue == CeIssue::Graph) return c.ce_graph[p.ce].ok;
  if (p.issue == CeIssue::Preissued) return g_write_value && g_wait_value;
  return true;
}

// preissued, before the step's start event: the side stream waits for go >= epoch, then runs the pieces.
static void ce_preissue(Ctx& c, int g, const Point& p) {
  Side& s = c.side[g];
  RL_CHECK(cudaSetDevice(s.dev));
  if (g_wait_value(s.side, dptr(s.go()), c.epoch, 0 /* CU_STREAM_WAIT_VALUE_GEQ */) != CUDA_SUCCESS)
    fail(g_program, "inter_ce preissued: cuStreamWaitValue32 failed");
  if (!issue_ce_pieces(c, g, s.side, c.ce_chunks[p.ce], true, true))
    fail(g_program, "inter_ce preissued: issuing the pieces failed");
  RL_CHECK(cudaEventRecord(s.side_done, s.side));
}

// The timed part of a CE point's side stream: stream and graph forms start after the step's start event;
// preissued writes the go word on the main stream. `first` runs on the main stream before the stream form's pieces
// (the compute kernel, which waits on their flags) and after the other forms' start.
template <typename F>
static void ce_step(Ctx& c, int g, const Point& p, F first) {
  Side& s = c.side[g];
  switch (p.issue) {
    case CeIssue::Stream:
      RL_CHECK(cudaStreamWaitEvent(s.side, s.start, 0));
      first();
      if (!issue_ce_pieces(c, g, s.side, c.ce_chunks[p.ce], g_write_value != nullptr, true))
        fail(g_program, "inter_ce: issuing the copy-engine pieces failed: " +
                            std::string(cudaGetErrorString(cudaGetLastError())));
      RL_CHECK(cudaEventRecord(s.side_done, s.side));
      break;
    case CeIssue::Graph:
      RL_CHECK(cudaStreamWaitEvent(s.side, s.start, 0));
      RL_CHECK(cudaGraphLaunch(s.ce_graphs[p.ce], s.side));
      first();
      RL_CHECK(cudaEventRecord(s.side_done, s.side));
      break;
    case CeIssue::Preissued:
      if (g_write_value(s.stream, dptr(s.go()), c.epoch, 0) != CUDA_SUCCESS)
        fail(g_program, "inter_ce preissued: cuStreamWriteValue32 failed");
      first();
      break;
  }
  RL_CHECK(cudaStreamWaitEvent(s.stream, s.side_done, 0));
}

static void launch_gather(Ctx& c, int g, const Point& p, uint64_t seed_g) {
  Side& s = c.side[g];
  const Side& peer = c.side[1 - g];
  RL_CHECK(cudaSetDevice(s.dev));
  const size_t slots_smem = std::max(c.smem_floor, static_cast<size_t>(kSlots) * c.tile_bytes);
  const size_t comm_smem = std::max(slots_smem, static_cast<size_t>(c.stages) * c.tile_bytes);
  auto kernel = [&](int grid, const char* src, uint32_t* flags, int rows_per_flag, int comm_blocks, size_t smem) {
    gather_tiles<<<grid, kBlockThreads, smem, s.stream>>>(src, s.local, peer.input, s.recv, flags, 1u, rows_per_flag,
                                                          c.tiles, c.reuse, c.tile_bytes, p.iters, seed_g,
                                                          comm_blocks, c.stages);
    RL_CHECK_LAUNCH();
  };
  uint32_t* const block_flags = s.flags + 1;  // flags[1 + block] (inter_sm, comm_only tma), flags[1 + piece] (CE)
  switch (p.sched) {
    case Sched::ComputeOnly:
      kernel(c.sms, s.recv, nullptr, 1, 0, slots_smem);
      break;
    case Sched::Sequential:
      copy_from_peer(c, g);
      kernel(c.sms, s.recv, nullptr, 1, 0, slots_smem);
      break;
    case Sched::CommOnly:
      if (p.path == Path::CopyEngine) {
        copy_from_peer(c, g);
      } else if (p.path == Path::CopyEngineChunks) {
        ce_step(c, g, p, [] {});
      } else {
        kernel(p.comm_sms, nullptr, block_flags, 1, p.comm_sms, comm_smem);
      }
      break;
    case Sched::IntraSm:
      kernel(c.sms, peer.input, nullptr, 1, 0, slots_smem);
      break;
    case Sched::InterSm:
      kernel(c.sms, s.recv, block_flags, 1, p.comm_sms, comm_smem);
      break;
    case Sched::InterCe:
      ce_step(c, g, p, [&] { kernel(c.sms, s.recv, block_flags, c.ce_chunks[p.ce], 0, slots_smem); });
      break;
  }
}

static void launch(Ctx& c, int g, const Point& p, uint64_t seed_g) {
  if (c.gather) return launch_gather(c, g, p, seed_g);
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
      intra_sm<<<c.sms, kBlockThreads, std::max(c.smem_floor, static_cast<size_t>(c.slots) * c.tile_bytes), s.stream>>>(
          peer_recv, c.tiles, c.tile_bytes, p.iters, seed_g, c.slots);
      RL_CHECK_LAUNCH();
      break;
    case Sched::InterSm:
      inter_sm<<<c.sms, kBlockThreads, comm_smem, s.stream>>>(s.local, peer_recv, s.flags, c.tiles, c.tile_bytes,
                                                             p.iters, seed_g, c.epoch, p.comm_sms, c.stages);
      RL_CHECK_LAUNCH();
      break;
    case Sched::InterCe:  // not planned for scatter (parse refuses it)
      fail(g_program, "inter_ce needs --direction gather");
  }
}

// gather: waits for a step's stop event, failing after 30 s instead of hanging (a stream memory operation that
// never completes would block the host forever; device-side waits trap after 10 s).
static void wait_step(cudaEvent_t stop, int g) {
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    const cudaError_t q = cudaEventQuery(stop);
    if (q == cudaSuccess) return;
    if (q != cudaErrorNotReady) RL_CHECK(q);
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(30))
      fail(g_program, "GPU " + std::to_string(g) + ": step not finished after 30 s (stream memory operations?)");
    std::this_thread::yield();
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
  for (int g = 0; g < 2; ++g) r.seeds[g] = c.seed_of(run, g);
  if (c.gather) {
    prepare_gather(c, p, r.seeds);
  } else {
    for (int g = 0; g < 2; ++g) prepare(c, g, p, r.seeds[g]);
  }
  for (Side& s : c.side) {
    RL_CHECK(cudaSetDevice(s.dev));
    RL_CHECK(cudaStreamSynchronize(s.stream));
  }
  if (c.gather && p.issue == CeIssue::Preissued && (p.sched == Sched::InterCe || p.path == Path::CopyEngineChunks))
    for (int g = 0; g < 2; ++g) ce_preissue(c, g, p);
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
    if (c.gather) {
      wait_step(s.stop, g);
    } else {
      RL_CHECK(cudaEventSynchronize(s.stop));
    }
    float ms = 0;
    RL_CHECK(cudaEventElapsedTime(&ms, s.start, s.stop));
    r.gpu[g] = ms * 1e-3;
  }
  return r;
}

// gather: poisons the output (and the local copy), runs once on fresh data and counts mismatching words on both GPUs:
// every output word (comm_only: every copied input word).
static unsigned long long verify_gather(Ctx& c, const Point& p) {
  const bool copy_only = p.sched == Sched::CommOnly;
  for (Side& s : c.side) {
    poison_on(s.dev, s.recv, c.bytes(), s.stream);
    if (!copy_only) poison_on(s.dev, s.local, c.out_bytes(), s.stream);
  }
  const RunTimes r = run_once(c, p);
  unsigned long long bad = 0;
  for (int g = 0; g < 2; ++g) {
    Side& s = c.side[g];
    RL_CHECK(cudaSetDevice(s.dev));
    s.bad.reset(s.stream);
    if (copy_only) {
      count_word_mismatch<<<1024, 256, 0, s.stream>>>(reinterpret_cast<const uint32_t*>(s.recv), c.bytes() / 4,
                                                     r.seeds[1 - g], s.bad.d);
    } else {
      const int grid = std::min(c.out_tiles(), 1024);
      count_gather_mismatch<<<grid, kComputeThreads, 0, s.stream>>>(s.local, c.tiles, c.reuse, c.tile_bytes, p.iters,
                                                                    r.seeds[g], r.seeds[1 - g], s.bad.d);
    }
    RL_CHECK_LAUNCH();
    bad += s.bad.read(s.stream);
  }
  return bad;
}

// Poisons the checked buffers, runs once on fresh data and counts mismatching words on both GPUs.
static unsigned long long verify(Ctx& c, const Point& p) {
  if (c.gather) return verify_gather(c, p);
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
  const double flops = static_cast<double>(flops_per_tile) * c.out_tiles();
  const double t = m.step.median;
  int compute_sms = c.sms;
  if (p.sched == Sched::CommOnly) compute_sms = 0;
  if (p.sched == Sched::InterSm) compute_sms = c.sms - p.comm_sms;
  Json j;
  j.str("record", "point")
      .str("program", g_program)
      .str("name", sched)
      .str("schedule", sched)
      .str("direction", c.gather ? "gather" : "scatter")
      .str("send_path", kPathNames[static_cast<int>(p.path)])
      .integer("comm_sms", p.comm_sms)
      .integer("compute_sms", compute_sms)
      .integer("sms", c.sms)
      .integer("gpus", 2)
      .integer("tiles", c.out_tiles())
      .integer("tile_bytes", c.tile_bytes)
      .integer("bytes", static_cast<long long>(c.bytes()));
  if (c.gather) {
    size_t remote = c.bytes();  // what crosses the link per GPU
    if (p.sched == Sched::ComputeOnly) remote = 0;
    if (p.sched == Sched::IntraSm) remote = c.out_bytes();
    j.integer("reuse", c.reuse)
        .integer("input_blocks", c.tiles)
        .integer("remote_bytes", static_cast<long long>(remote))
        .integer("output_bytes", p.sched == Sched::CommOnly ? 0 : static_cast<long long>(c.out_bytes()));
    if (p.sched == Sched::InterCe || p.path == Path::CopyEngineChunks) {
      const bool graph = p.issue == CeIssue::Graph;
      j.str("ce_issue", kCeIssueNames[static_cast<int>(p.issue)])
          .integer("ce_chunk", c.ce_chunks[p.ce])
          .integer("ce_pieces", c.ce_pieces(c.ce_chunks[p.ce]))
          .str("flag_write", graph ? c.ce_graph[p.ce].flag_write : g_write_value ? "stream_write_value" : "kernel")
          .str("ce_copy_call", graph ? c.ce_graph[p.ce].copy_call : "cudaMemcpyPeerAsync");
    }
    if (p.sched == Sched::IntraSm && m.step.median > 0)
      j.num("remote_bytes_per_s", static_cast<double>(remote) / t);
  }
  j.integer("iters", p.iters)
      .integer("flops_per_tile", flops_per_tile)
      .integer("flops_per_trip", kFlopsPerTrip)
      .num("flops", flops)
      .integer("compute_warps_per_sm", kComputeWarps)
      .str("instruction", kInstruction);
  if (p.path == Path::Tma) j.integer("stages", c.stages);
  if (p.sched == Sched::IntraSm) j.integer("slots", c.gather ? kSlots : c.slots);
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
  char variant[48] = "";
  if (p.sched == Sched::InterCe || p.path == Path::CopyEngineChunks)
    snprintf(variant, sizeof variant, " [%s, %d blocks/piece]", kCeIssueNames[static_cast<int>(p.issue)],
             c.ce_chunks[p.ce]);
  fprintf(stderr, "overlap %-7s %-12s %-18s S=%3d K=%4d  %10.2f us  (gpu0 %9.2f, gpu1 %9.2f)  verified=%s%s\n",
          c.gather ? "gather" : "scatter", sched, kPathNames[static_cast<int>(p.path)], p.comm_sms, p.iters, t * 1e6,
          m.gpu0.median * 1e6, m.gpu1.median * 1e6, m.bad == 0 ? "yes" : "NO", variant);
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
  const int tiles_per_sm = (c.out_tiles() + c.sms - 1) / c.sms;
  const double trip_s = b / tiles_per_sm;
  double best = 0;
  for (size_t i = 0; i < n; ++i)
    best = std::max(best, static_cast<double>(kFlopsPerTrip) * f.iters[i] * c.out_tiles() / f.time[i] / c.sms);
  Json j;
  j.str("record", "compute_rate")
      .str("program", g_program)
      .str("name", "compute_rate")
      .str("direction", c.gather ? "gather" : "scatter")
      .str("instruction", kInstruction)
      .integer("compute_warps_per_sm", kComputeWarps)
      .integer("flops_per_trip", kFlopsPerTrip)
      .integer("sms", c.sms)
      .integer("tiles", c.out_tiles())
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
                   "(the epilogue per tile plus launch cost spread over the tiles)");
  if (c.gather) j.integer("reuse", c.reuse).integer("input_blocks", c.tiles);
  j.boolean("verified", f.verified);
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
  std::vector<int> iters, comm_sms, ce_chunks;
  std::vector<CeIssue> ce_issue;
  bool gather = false;
  int tiles = 1056, reuse = 1, stages = 4, slots = 0, sms = 0, warmup = 3, repeats = 20, gpu[2] = {0, 1};
  long long tile_bytes = 32768;
  bool has(Sched s) const { return std::find(scheds.begin(), scheds.end(), s) != scheds.end(); }
};

static std::vector<int> int_list(const Args& a, const char* key, const char* def) {
  std::vector<int> out;
  for (long long v : a.sizes(key, def)) out.push_back(static_cast<int>(v));
  return out;
}

static Options parse(const Args& a) {
  Options o;
  const std::string direction = a.str("--direction", "scatter");
  if (direction != "scatter" && direction != "gather") fail(g_program, "--direction must be scatter or gather", 2);
  o.gather = direction == "gather";
  const char* all = o.gather ? "compute_only,comm_only,sequential,intra_sm,inter_sm,inter_ce"
                             : "compute_only,comm_only,sequential,intra_sm,inter_sm";
  for (const auto& n : a.list("--schedule", all)) {
    bool found = false;
    for (int i = 0; i < kNumSched; ++i)
      if (n == kSchedNames[i]) o.scheds.push_back(static_cast<Sched>(i)), found = true;
    if (!found) fail(g_program, "unknown schedule '" + n + "'", 2);
  }
  if (!o.gather && o.has(Sched::InterCe)) fail(g_program, "schedule inter_ce needs --direction gather", 2);
  if (!o.gather && (a.has("--reuse") || a.has("--ce-chunk") || a.has("--ce-issue")))
    fail(g_program, "--reuse, --ce-chunk and --ce-issue need --direction gather", 2);
  o.reuse = o.gather ? static_cast<int>(a.integer("--reuse", 8)) : 1;
  o.ce_chunks = int_list(a, "--ce-chunk", "32");
  for (const auto& n : a.list("--ce-issue", "stream,graph,preissued")) {
    bool found = false;
    for (int i = 0; i < 3; ++i)
      if (n == kCeIssueNames[i]) o.ce_issue.push_back(static_cast<CeIssue>(i)), found = true;
    if (!found) fail(g_program, "unknown --ce-issue '" + n + "' (stream, graph, preissued)", 2);
  }
  o.iters = int_list(a, "--iters", "1,2,4,8,16,32,64,128,256,512");
  o.comm_sms = int_list(a, "--comm-sms", "1,2,4,8,16,32");
  o.tiles = static_cast<int>(a.integer("--tiles", 1056));
  o.tile_bytes = a.integer("--tile-bytes", 32768);
  o.stages = static_cast<int>(a.integer("--stages", 4));
  o.slots = static_cast<int>(a.integer("--slots", 0));  // 0: as --stages
  o.sms = a.str("--sms", "all") == "all" ? 0 : static_cast<int>(a.integer("--sms", 0));
  o.warmup = static_cast<int>(a.integer("--warmup", 3));
  o.repeats = static_cast<int>(a.integer("--iters-timing", 20));
  const auto gpus = int_list(a, "--gpus", "0,1");
  if (gpus.size() != 2 || gpus[0] == gpus[1]) fail(g_program, "--gpus needs two different device ids", 2);
  o.gpu[0] = gpus[0];
  o.gpu[1] = gpus[1];
  if (o.tiles < 1 || o.tiles > (1 << 22)) fail(g_program, "--tiles must be 1..4194304", 2);
  if (o.reuse < 1 || o.reuse > 1024) fail(g_program, "--reuse must be 1..1024", 2);
  if (static_cast<long long>(o.tiles) * o.reuse > (1 << 22)) fail(g_program, "--tiles x --reuse must be <= 4194304", 2);
  for (int ch : o.ce_chunks)
    if (ch < 1) fail(g_program, "--ce-chunk values must be >= 1", 2);
  if (o.tile_bytes < 4096 || o.tile_bytes % 4096 || o.tile_bytes > (512 << 10))
    fail(g_program, "--tile-bytes must be a multiple of 4K, at most 512K", 2);
  if (o.stages < 2 || o.stages > kMaxStages) fail(g_program, "--stages must be 2..8", 2);
  if (o.slots != 0 && (o.slots < 2 || o.slots > kMaxSlots)) fail(g_program, "--slots must be 2..8", 2);
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
  c.gather = o.gather;
  c.tiles = o.tiles;
  c.reuse = o.reuse;
  for (int ch : o.ce_chunks) {
    const int clamped = std::min(ch, o.tiles);
    if (std::find(c.ce_chunks.begin(), c.ce_chunks.end(), clamped) == c.ce_chunks.end()) c.ce_chunks.push_back(clamped);
  }
  c.tile_bytes = static_cast<uint32_t>(o.tile_bytes);
  c.sms = o.sms > 0 ? std::min(o.sms, sms) : sms;
  c.smem_floor = static_cast<size_t>(per_sm / 2 + 1024);
  const int dynamic_max = optin - 1024;  // leaves room for the kernels' static shared memory (mbarriers)
  c.stages = std::min(o.stages, dynamic_max / static_cast<int>(c.tile_bytes));
  c.slots = o.slots > 0 ? o.slots : c.stages;
  if (!o.gather && static_cast<size_t>(c.slots) * c.tile_bytes > static_cast<size_t>(dynamic_max))
    fail(g_program, "--slots x --tile-bytes does not fit in shared memory", 2);
  if (c.stages < 2 || c.smem_floor > static_cast<size_t>(dynamic_max))
    fail(g_program, "--tile-bytes too large: two tiles must fit in " + std::to_string(optin) + " bytes of shared memory");
  enable_peer(o.gpu[0], o.gpu[1]);
  for (int g = 0; g < 2; ++g) {
    Side& s = c.side[g];
    s.dev = o.gpu[g];
    RL_CHECK(cudaSetDevice(s.dev));
    RL_CHECK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
    RL_CHECK(cudaStreamCreateWithFlags(&s.side, cudaStreamNonBlocking));
    RL_CHECK(cudaEventCreate(&s.start));
    RL_CHECK(cudaEventCreate(&s.stop));
    RL_CHECK(cudaEventCreateWithFlags(&s.side_done, cudaEventDisableTiming));
    RL_CHECK(cudaMalloc(&s.local, c.out_bytes()));
    RL_CHECK(cudaMalloc(&s.recv, c.bytes()));
    if (c.gather) RL_CHECK(cudaMalloc(&s.input, c.bytes()));
    RL_CHECK(cudaMalloc(&s.flags, sizeof(uint32_t) * (c.tiles + 1)));
    RL_CHECK(cudaMemset(s.flags, 0, sizeof(uint32_t) * (c.tiles + 1)));
    s.bad.init(s.dev);
    for (const void* f : {reinterpret_cast<const void*>(compute_store), reinterpret_cast<const void*>(intra_sm),
                          reinterpret_cast<const void*>(inter_sm), reinterpret_cast<const void*>(send_tiles),
                          reinterpret_cast<const void*>(gather_tiles)}) {
      cudaFuncAttributes at;  // the dynamic limit is what the block's static shared memory leaves
      RL_CHECK(cudaFuncGetAttributes(&at, f));
      RL_CHECK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    optin - static_cast<int>(at.sharedSizeBytes)));
    }
    RL_CHECK(cudaDeviceSynchronize());
  }
  const bool graphs = std::find(o.ce_issue.begin(), o.ce_issue.end(), CeIssue::Graph) != o.ce_issue.end();
  if (c.gather) setup_ce(c, graphs && (o.has(Sched::InterCe) || o.has(Sched::CommOnly)));
}

static void release(Ctx& c) {
  for (Side& s : c.side) {
    s.bad.release();
    cudaSetDevice(s.dev);
    for (cudaGraphExec_t e : s.ce_graphs)
      if (e) cudaGraphExecDestroy(e);
    cudaFree(s.local);
    cudaFree(s.recv);
    cudaFree(s.input);
    cudaFree(s.flags);
    cudaStreamDestroy(s.stream);
    cudaStreamDestroy(s.side);
    cudaEventDestroy(s.start);
    cudaEventDestroy(s.stop);
    cudaEventDestroy(s.side_done);
  }
}

// The points in the order they run: comm_only once (it does not depend on K), then per K every other schedule;
// gather's preissued copy-engine points last (a stream memory operation that never completes ends the program).
static std::vector<Point> plan(const Options& o, const Ctx& c) {
  const int sms = c.sms;
  std::vector<Point> pts;
  auto has = [&](Sched s) { return o.has(s); };
  std::vector<int> sms_list;
  for (int s : o.comm_sms)
    if (s < sms && std::find(sms_list.begin(), sms_list.end(), s) == sms_list.end()) sms_list.push_back(s);
  auto ce_points = [&](Sched sched, Path path, int k, bool preissued) {
    for (CeIssue issue : o.ce_issue)
      if ((issue == CeIssue::Preissued) == preissued)
        for (size_t ci = 0; ci < c.ce_chunks.size(); ++ci)
          pts.push_back({sched, path, 0, k, static_cast<int>(ci), issue});
  };
  if (has(Sched::CommOnly)) {
    pts.push_back({Sched::CommOnly, Path::CopyEngine, 0, 0});
    if (o.gather) ce_points(Sched::CommOnly, Path::CopyEngineChunks, 0, false);
    for (int s : sms_list) pts.push_back({Sched::CommOnly, Path::Tma, s, 0});
    pts.push_back({Sched::CommOnly, Path::Tma, sms, 0});
  }
  for (int k : o.iters) {
    if (has(Sched::ComputeOnly)) pts.push_back({Sched::ComputeOnly, Path::None, 0, k});
    if (has(Sched::Sequential)) pts.push_back({Sched::Sequential, Path::CopyEngine, 0, k});
    if (has(Sched::IntraSm)) pts.push_back({Sched::IntraSm, Path::Tma, 0, k});
    if (has(Sched::InterSm))
      for (int s : sms_list) pts.push_back({Sched::InterSm, Path::Tma, s, k});
    if (has(Sched::InterCe)) ce_points(Sched::InterCe, Path::CopyEngine, k, false);
  }
  if (o.gather && has(Sched::CommOnly)) ce_points(Sched::CommOnly, Path::CopyEngineChunks, 0, true);
  if (has(Sched::InterCe))
    for (int k : o.iters) ce_points(Sched::InterCe, Path::CopyEngine, k, true);
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
  const std::vector<Point> pts = plan(o, c);
  size_t last_compute = pts.size();  // gather reports compute_rate right after its last compute_only point
  for (size_t i = 0; i < pts.size(); ++i)
    if (pts[i].sched == Sched::ComputeOnly) last_compute = i;
  for (size_t i = 0; i < pts.size(); ++i) {
    const Point& p = pts[i];
    if (c.gather && !ce_runnable(c, p)) {
      Json j;
      j.str("record", "skipped")
          .str("program", g_program)
          .str("direction", "gather")
          .str("schedule", kSchedNames[static_cast<int>(p.sched)])
          .str("ce_issue", kCeIssueNames[static_cast<int>(p.issue)])
          .integer("ce_chunk", c.ce_chunks[p.ce])
          .integer("iters", p.iters)
          .str("reason", p.issue == CeIssue::Graph ? "the pieces did not capture into a CUDA graph"
                                                   : "stream memory operations unavailable");
      j.print();
      continue;
    }
    const Measured m = measure(c, p, o.warmup, o.repeats);
    report(c, p, m, o.warmup, o.repeats, fit);
    if (c.gather && i == last_compute) report_compute_rate(c, fit);
  }
  if (!c.gather) report_compute_rate(c, fit);
  release(c);
  return 0;
}
