// p2p.cu: peer-to-peer transfer bandwidth between two GPUs of one node, from one process.
//
// Mechanisms (ParallelKittens, arXiv 2511.13940, Table 1):
//   copy_engine  cudaMemcpyPeerAsync (no SMs: reported sms=0)
//   tma          bulk async copies: cp.async.bulk global->shared (local source), then
//                cp.async.bulk shared->global into the PEER buffer; one thread per block issues, mbarrier
//                completion, --stages deep pipeline of --chunk byte pieces (sm_90)
//   ldst_push    16-byte register loads from local memory, stores to the peer (kernel on the sender)
//   ldst_pull    16-byte register loads from the peer, stores to local memory (kernel on the receiver)
//   tma_reduce   cp.reduce.async.bulk .add (f32 or bf16) into the peer buffer (sm_90)
//   red          red.global.add (f32, or bf16x2 .noftz) into the peer buffer, 4-byte or 16-byte (.v4) ops
// Kernels use one block per SM; --sms sets how many blocks. --direction bidirectional runs both GPUs sending
// to each other at once on two streams (bytes_per_s stays per direction; aggregate_bytes_per_s counts both).
// Every point is verified after timing: the destination is poisoned (reductions: re-seeded), one transfer
// runs, and a device kernel counts mismatching elements against the expected data (sum for reductions).
// With one visible GPU the same kernels run GPU 0 -> GPU 0 ("peer": false) and the meta record says so.
#include <cuda_bf16.h>

#include "common.cuh"

const char* rl::g_program = "p2p";
using namespace rl;

static const char* kHelp =
    "p2p: peer-to-peer transfer bandwidth between two GPUs (JSON Lines on stdout)\n"
    "\n"
    "  --mechanism LIST   copy_engine,tma,ldst_push,ldst_pull,tma_reduce,red  (default: all)\n"
    "  --bytes LIST       message sizes, multiples of 16 (K/M/G = 1024^n)    (default: 128,4K,64K,1M,16M,256M,1G)\n"
    "  --sms LIST         blocks = SMs used, one block per SM; 'all' = every SM (default: 1,2,4,8,16,32,66,all)\n"
    "  --direction LIST   one_way,bidirectional                               (default: one_way)\n"
    "  --src N --dst N    device ids (default 0 and 1; with one GPU: 0 and 0, loopback)\n"
    "  --dtype f32|bf16   element type of tma_reduce and red                  (default: f32)\n"
    "  --red-width 4|16   bytes per red instruction (16 = .v4 vector form)     (default: 16)\n"
    "  --chunk BYTES      TMA piece size (default 32K)   --stages N  TMA pipeline depth, >= 2 (default 3)\n"
    "  --threads N        threads per block for ldst and red (default 1024)\n"
    "  --warmup N (default 3)   --iters N (default 20)   --seed N (default: from the clock)\n"
    "  --help\n"
    "\n"
    "Each point: per-op time median/p10/p90 over --iters timed batches (CUDA events around a batch of\n"
    "back-to-back ops; batch grows for small messages), bytes_per_s = bytes / median time, and\n"
    "verified/mismatches from a device-side compare after a poisoned destination.\n";

enum class Mech { CopyEngine, Tma, LdstPush, LdstPull, TmaReduce, Red };
struct MechName {
  Mech m;
  const char* name;
};
static const MechName kMechs[] = {{Mech::CopyEngine, "copy_engine"}, {Mech::Tma, "tma"},
                                  {Mech::LdstPush, "ldst_push"},     {Mech::LdstPull, "ldst_pull"},
                                  {Mech::TmaReduce, "tma_reduce"},   {Mech::Red, "red"}};
static bool is_reduction(Mech m) { return m == Mech::TmaReduce || m == Mech::Red; }
static bool uses_sms(Mech m) { return m != Mech::CopyEngine; }

// ------------------------------------------------------------------------------------------------ kernels
constexpr int kUnroll = 4;


__device__ __forceinline__ void red16(void* p, int4 v, bool bf16) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (bf16)
    asm volatile("red.global.add.noftz.v4.bf16x2 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z),
                 "r"(v.w)
                 : "memory");
  else
    asm volatile("red.global.add.v4.f32 [%0], {%1,%2,%3,%4};" ::"l"(p), "f"(__int_as_float(v.x)),
                 "f"(__int_as_float(v.y)), "f"(__int_as_float(v.z)), "f"(__int_as_float(v.w))
                 : "memory");
#else
  __trap();
#endif
}
__device__ __forceinline__ void red4(uint32_t* p, uint32_t v, bool bf16) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (bf16)
    asm volatile("red.global.add.noftz.bf16x2 [%0], %1;" ::"l"(p), "r"(v) : "memory");
  else
    asm volatile("red.global.add.f32 [%0], %1;" ::"l"(p), "f"(__uint_as_float(v)) : "memory");
#else
  __trap();
#endif
}

// dst += src with red instructions; width 16 uses the .v4 forms, width 4 one 32-bit red per word.
__global__ void red_add(int4* __restrict__ dst, const int4* __restrict__ src, size_t n, int bf16, int width) {
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  for (; i + (kUnroll - 1) * stride < n; i += kUnroll * stride) {
    int4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = src[i + u * stride];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (width == 16) {
        red16(dst + i + u * stride, v[u], bf16);
      } else {
        uint32_t* w = reinterpret_cast<uint32_t*>(dst + i + u * stride);
        red4(w + 0, v[u].x, bf16);
        red4(w + 1, v[u].y, bf16);
        red4(w + 2, v[u].z, bf16);
        red4(w + 3, v[u].w, bf16);
      }
    }
  }
  for (; i < n; i += stride) {
    int4 v = src[i];
    if (width == 16) {
      red16(dst + i, v, bf16);
    } else {
      uint32_t* w = reinterpret_cast<uint32_t*>(dst + i);
      red4(w + 0, v.x, bf16);
      red4(w + 1, v.y, bf16);
      red4(w + 2, v.z, bf16);
      red4(w + 3, v.w, bf16);
    }
  }
}

// TMA (bulk async copy) pipeline. op: 0 = copy, 1 = reduce-add f32, 2 = reduce-add bf16.
// Block b handles pieces b, b + grid, b + 2 grid, ... of `chunk` bytes. Thread 0 alone issues:
// load piece k into stage k % stages (mbarrier complete_tx), wait, bulk-store (or bulk-reduce) it to dst,
// commit a bulk group; before refilling a stage, wait until the store that last read it has read smem.
constexpr int kMaxStages = 8;
__global__ void __launch_bounds__(32, 1)
    tma_pipe(char* __restrict__ dst, const char* __restrict__ src, size_t bytes, uint32_t chunk, int stages, int op) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(128) char smem[];
  __shared__ __align__(8) uint64_t bar[kMaxStages];
  if (threadIdx.x != 0) return;
  const size_t nchunks = (bytes + chunk - 1) / chunk;
  if (blockIdx.x >= nchunks) return;
  const size_t mine = (nchunks - 1 - blockIdx.x) / gridDim.x + 1;
  const uint32_t smem0 = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const uint32_t bar0 = static_cast<uint32_t>(__cvta_generic_to_shared(bar));
  for (int s = 0; s < stages; ++s) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar0 + 8 * s));
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");

  auto piece = [&](size_t k, size_t& off, uint32_t& len) {
    off = (blockIdx.x + k * gridDim.x) * (size_t)chunk;
    len = static_cast<uint32_t>(min((size_t)chunk, bytes - off));
  };
  auto load = [&](size_t k) {
    size_t off;
    uint32_t len;
    piece(k, off, len);
    const int s = static_cast<int>(k % stages);
    const uint32_t b = bar0 + 8 * s;
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(len) : "memory");
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
            smem0 + s * chunk),
        "l"(src + off), "r"(len), "r"(b)
        : "memory");
  };
  const size_t pre = min((size_t)(stages - 1), mine);
  for (size_t k = 0; k < pre; ++k) load(k);
  for (size_t k = 0; k < mine; ++k) {
    const int s = static_cast<int>(k % stages);
    const uint32_t b = bar0 + 8 * s;
    const uint32_t parity = static_cast<uint32_t>((k / stages) & 1);
    mbar_wait(b, parity, 2000000000ULL);  // piece k; trap (rather than hang) if nothing arrives for 2 s
    size_t off;
    uint32_t len;
    piece(k, off, len);
    const uint32_t sa = smem0 + s * chunk;
    if (op == 0)
      asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst + off), "r"(sa), "r"(len)
                   : "memory");
    else if (op == 1)
      asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;" ::"l"(dst + off),
                   "r"(sa), "r"(len)
                   : "memory");
    else
      asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.noftz.bf16 [%0], [%1], %2;" ::"l"(
                       dst + off),
                   "r"(sa), "r"(len)
                   : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    const size_t j = k + stages - 1;  // goes into the stage of piece k - 1, whose store is the older group
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

// Reduction data: small integers (exact in bf16 and f32, and so are sums of two).
__global__ void fill_small(void* p, size_t n, uint64_t seed, int bf16) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const float v = static_cast<float>(small_int(seed, i));
    if (bf16)
      static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16(v);
    else
      static_cast<float*>(p)[i] = v;
  }
}
__global__ void count_sum_mismatch(const void* p, size_t n, uint64_t seed_a, uint64_t seed_b, int bf16,
                                   unsigned long long* bad) {
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const float want = static_cast<float>(small_int(seed_a, i) + small_int(seed_b, i));
    const float got = bf16 ? __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]) : static_cast<const float*>(p)[i];
    local += (got != want);
  }
  if (local) atomicAdd(bad, local);
}

// ------------------------------------------------------------------------------------------------ host
struct Config {
  int threads = 1024;
  uint32_t chunk = 32768;
  int stages = 3;
  bool bf16 = false;
  int red_width = 16;
};

// One direction of traffic: sender's src buffer -> receiver's dst buffer; the op runs on `exec`.
struct Lane {
  int sender = 0, receiver = 0, exec = 0;
  char* src = nullptr;  // on sender
  char* dst = nullptr;  // on receiver
  cudaStream_t stream = nullptr;  // on exec
  cudaEvent_t start = nullptr, stop = nullptr;  // on exec
  Counter bad;  // on receiver
  uint64_t seed_src = 0, seed_dst = 0;
};

static void issue(Lane& L, Mech m, size_t bytes, int sms, const Config& c) {
  RL_CHECK(cudaSetDevice(L.exec));
  const size_t n16 = bytes / 16;
  switch (m) {
    case Mech::CopyEngine:
      if (L.sender == L.receiver)
        RL_CHECK(cudaMemcpyAsync(L.dst, L.src, bytes, cudaMemcpyDeviceToDevice, L.stream));
      else
        RL_CHECK(cudaMemcpyPeerAsync(L.dst, L.receiver, L.src, L.sender, bytes, L.stream));
      return;
    case Mech::LdstPush:
    case Mech::LdstPull:
      copy16<<<sms, c.threads, 0, L.stream>>>(reinterpret_cast<int4*>(L.dst), reinterpret_cast<const int4*>(L.src),
                                                n16);
      break;
    case Mech::Red:
      red_add<<<sms, c.threads, 0, L.stream>>>(reinterpret_cast<int4*>(L.dst), reinterpret_cast<const int4*>(L.src),
                                              n16, c.bf16 ? 1 : 0, c.red_width);
      break;
    case Mech::Tma:
    case Mech::TmaReduce: {
      // Spread small messages over the blocks; pieces stay multiples of 16 bytes, at least 256 bytes.
      size_t per_block = (bytes + sms - 1) / sms;
      per_block = std::max<size_t>(256, (per_block + 15) / 16 * 16);
      const uint32_t chunk = static_cast<uint32_t>(std::min<size_t>(c.chunk, per_block));
      const int op = m == Mech::Tma ? 0 : (c.bf16 ? 2 : 1);
      tma_pipe<<<sms, 32, (size_t)c.stages * c.chunk, L.stream>>>(L.dst, L.src, bytes, chunk, c.stages, op);
      break;
    }
  }
  RL_CHECK_LAUNCH();
}

static void prepare_source(Lane& L, Mech m, size_t bytes, const Config& c) {
  RL_CHECK(cudaSetDevice(L.sender));
  if (is_reduction(m)) {
    const size_t n = bytes / (c.bf16 ? 2 : 4);
    fill_small<<<1024, 256>>>(L.src, n, L.seed_src, c.bf16 ? 1 : 0);
    RL_CHECK_LAUNCH();
  } else {
    fill_words_on(L.sender, L.src, bytes, L.seed_src, nullptr);
  }
  RL_CHECK(cudaDeviceSynchronize());
}

// Destination before the verified op: poison for copies, the second operand for reductions.
static void prepare_dest(Lane& L, Mech m, size_t bytes, const Config& c) {
  RL_CHECK(cudaSetDevice(L.receiver));
  if (is_reduction(m)) {
    const size_t n = bytes / (c.bf16 ? 2 : 4);
    fill_small<<<1024, 256>>>(L.dst, n, L.seed_dst, c.bf16 ? 1 : 0);
    RL_CHECK_LAUNCH();
  } else {
    poison_on(L.receiver, L.dst, bytes, nullptr);
  }
  RL_CHECK(cudaDeviceSynchronize());
}

static unsigned long long count_bad(Lane& L, Mech m, size_t bytes, const Config& c) {
  RL_CHECK(cudaSetDevice(L.receiver));
  L.bad.reset(nullptr);
  if (is_reduction(m)) {
    const size_t n = bytes / (c.bf16 ? 2 : 4);
    count_sum_mismatch<<<1024, 256>>>(L.dst, n, L.seed_src, L.seed_dst, c.bf16 ? 1 : 0, L.bad.d);
  } else {
    count_word_mismatch<<<1024, 256>>>(reinterpret_cast<const uint32_t*>(L.dst), bytes / 4, L.seed_src, L.bad.d);
  }
  RL_CHECK_LAUNCH();
  return L.bad.read(nullptr);
}

static void sync_all(std::vector<Lane*>& lanes) {
  for (Lane* L : lanes) {
    RL_CHECK(cudaSetDevice(L->exec));
    RL_CHECK(cudaStreamSynchronize(L->stream));
  }
}

// Times `iters` batches of `batch` ops on every lane, started together (lane 1 waits on lane 0's start
// event; lane 0's stop waits on lane 1's end); returns per-op seconds for each batch.
static std::vector<double> time_batches(std::vector<Lane*>& lanes, Mech m, size_t bytes, int sms, const Config& c,
                                        int warmup, int iters, int batch) {
  std::vector<double> out;
  Lane& L0 = *lanes[0];
  for (int it = 0; it < warmup + iters; ++it) {
    RL_CHECK(cudaSetDevice(L0.exec));
    RL_CHECK(cudaEventRecord(L0.start, L0.stream));
    for (size_t l = 1; l < lanes.size(); ++l) {
      RL_CHECK(cudaSetDevice(lanes[l]->exec));
      RL_CHECK(cudaStreamWaitEvent(lanes[l]->stream, L0.start, 0));
    }
    for (int b = 0; b < batch; ++b)
      for (Lane* L : lanes) issue(*L, m, bytes, sms, c);
    for (size_t l = 1; l < lanes.size(); ++l) {
      RL_CHECK(cudaSetDevice(lanes[l]->exec));
      RL_CHECK(cudaEventRecord(lanes[l]->stop, lanes[l]->stream));
      RL_CHECK(cudaSetDevice(L0.exec));
      RL_CHECK(cudaStreamWaitEvent(L0.stream, lanes[l]->stop, 0));
    }
    RL_CHECK(cudaSetDevice(L0.exec));
    RL_CHECK(cudaEventRecord(L0.stop, L0.stream));
    RL_CHECK(cudaEventSynchronize(L0.stop));
    float ms = 0;
    RL_CHECK(cudaEventElapsedTime(&ms, L0.start, L0.stop));
    if (it >= warmup) out.push_back(ms * 1e-3 / batch);
  }
  return out;
}

static void enable_peer(int a, int b) {
  if (a == b) return;
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

static void print_topology(int a, int b) {
  if (a == b) return;
  int perf = 0, access = 0, atomics = 0, cuda_array = 0;
  cudaDeviceGetP2PAttribute(&perf, cudaDevP2PAttrPerformanceRank, a, b);
  cudaDeviceGetP2PAttribute(&access, cudaDevP2PAttrAccessSupported, a, b);
  cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, a, b);
  cudaDeviceGetP2PAttribute(&cuda_array, cudaDevP2PAttrCudaArrayAccessSupported, a, b);
  Json j;
  j.str("record", "p2p_attributes")
      .integer("src", a)
      .integer("dst", b)
      .integer("performance_rank", perf)
      .boolean("access_supported", access)
      .boolean("native_atomics", atomics)
      .boolean("cuda_array_access", cuda_array);
  j.print();
}

int main(int argc, char** argv) {
  Args a(argc, argv);
  if (a.has("--help") || a.has("-h")) {
    fputs(kHelp, stdout);
    return 0;
  }
  const auto mech_names = a.list("--mechanism", "copy_engine,tma,ldst_push,ldst_pull,tma_reduce,red");
  const auto sizes = a.sizes("--bytes", "128,4K,64K,1M,16M,256M,1G");
  const auto sms_list = a.list("--sms", "1,2,4,8,16,32,66,all");
  const auto directions = a.list("--direction", "one_way");
  Config c;
  c.threads = static_cast<int>(a.integer("--threads", 1024));
  c.chunk = static_cast<uint32_t>(a.integer("--chunk", 32768));
  c.stages = static_cast<int>(a.integer("--stages", 3));
  c.red_width = static_cast<int>(a.integer("--red-width", 16));
  const std::string dtype = a.str("--dtype", "f32");
  c.bf16 = dtype == "bf16";
  const int warmup = static_cast<int>(a.integer("--warmup", 3));
  const int iters = static_cast<int>(a.integer("--iters", 20));
  if (dtype != "f32" && dtype != "bf16") fail(g_program, "--dtype must be f32 or bf16", 2);
  if (c.red_width != 4 && c.red_width != 16) fail(g_program, "--red-width must be 4 or 16", 2);
  if (c.stages < 2 || c.stages > kMaxStages) fail(g_program, "--stages must be 2..8", 2);
  if (c.chunk % 16 || c.chunk == 0 || c.chunk >= (1u << 20)) fail(g_program, "--chunk must be a multiple of 16, < 1 MiB", 2);
  if (iters < 1 || warmup < 0) fail(g_program, "--iters must be >= 1 and --warmup >= 0", 2);
  std::vector<Mech> mechs;
  for (const auto& n : mech_names) {
    bool found = false;
    for (const auto& mn : kMechs)
      if (n == mn.name) mechs.push_back(mn.m), found = true;
    if (!found) fail(g_program, "unknown mechanism '" + n + "'", 2);
  }
  for (const auto& d : directions)
    if (d != "one_way" && d != "bidirectional") fail(g_program, "unknown direction '" + d + "'", 2);
  long long max_bytes = 0;
  for (long long b : sizes) {
    if (b < 16 || b % 16) fail(g_program, "--bytes must be positive multiples of 16, got " + std::to_string(b), 2);
    max_bytes = std::max(max_bytes, b);
  }

  const int ngpu = device_count_or_zero();
  if (ngpu == 0) fail(g_program, "no CUDA device visible");
  int src = static_cast<int>(a.integer("--src", 0));
  int dst = static_cast<int>(a.integer("--dst", ngpu > 1 ? 1 : 0));
  std::string note;
  if (src >= ngpu || dst >= ngpu) fail(g_program, "device id out of range: " + std::to_string(ngpu) + " visible");
  const bool peer = src != dst;
  if (!peer)
    note = ngpu == 1 ? "only one GPU visible: loopback GPU 0 -> GPU 0 (peer: false); same kernels and code paths, "
                       "but the numbers are local memory bandwidth, not NVLink"
                     : "src == dst: loopback on one GPU (peer: false)";
  print_meta(g_program, a, peer ? std::vector<int>{src, dst} : std::vector<int>{src}, note);
  print_topology(src, dst);
  enable_peer(src, dst);
  const uint64_t seed = seed_from(a);

  int min_cc = 100, max_sms = 1 << 20;
  for (int d : {src, dst}) {
    cudaDeviceProp p;
    RL_CHECK(cudaGetDeviceProperties(&p, d));
    min_cc = std::min(min_cc, p.major * 10 + p.minor);
    max_sms = std::min(max_sms, p.multiProcessorCount);
    RL_CHECK(cudaSetDevice(d));
    RL_CHECK(cudaFuncSetAttribute(tma_pipe, cudaFuncAttributeMaxDynamicSharedMemorySize, c.stages * (int)c.chunk));
  }

  // Lanes: 0 = src -> dst, 1 = dst -> src (bidirectional only). Buffers sized for the largest message.
  Lane lanes[2];
  for (int l = 0; l < 2; ++l) {
    Lane& L = lanes[l];
    L.sender = l == 0 ? src : dst;
    L.receiver = l == 0 ? dst : src;
    RL_CHECK(cudaSetDevice(L.sender));
    RL_CHECK(cudaMalloc(&L.src, max_bytes));
    RL_CHECK(cudaSetDevice(L.receiver));
    RL_CHECK(cudaMalloc(&L.dst, max_bytes));
    L.bad.init(L.receiver);
    L.seed_src = seed * 4 + 2 * l;
    L.seed_dst = seed * 4 + 2 * l + 1;
  }

  for (Mech m : mechs) {
    const char* mname = "";
    for (const auto& mn : kMechs)
      if (mn.m == m) mname = mn.name;
    if ((m == Mech::Tma || m == Mech::TmaReduce || m == Mech::Red) && min_cc < 90) {
      Json j;
      j.str("record", "skipped").str("program", g_program).str("mechanism", mname).str("reason", "needs sm_90");
      j.print();
      continue;
    }
    for (int l = 0; l < 2; ++l) {
      Lane& L = lanes[l];
      const bool pull = m == Mech::LdstPull;
      const int exec = pull ? L.receiver : L.sender;
      if (L.stream && L.exec != exec) {
        RL_CHECK(cudaSetDevice(L.exec));
        RL_CHECK(cudaStreamDestroy(L.stream));
        RL_CHECK(cudaEventDestroy(L.start));
        RL_CHECK(cudaEventDestroy(L.stop));
        L.stream = nullptr;
      }
      L.exec = exec;
      if (!L.stream) {
        RL_CHECK(cudaSetDevice(L.exec));
        RL_CHECK(cudaStreamCreateWithFlags(&L.stream, cudaStreamNonBlocking));
        RL_CHECK(cudaEventCreate(&L.start));
        RL_CHECK(cudaEventCreate(&L.stop));
      }
    }
    for (const auto& dir : directions) {
      std::vector<Lane*> active{&lanes[0]};
      if (dir == "bidirectional") active.push_back(&lanes[1]);
      for (long long bytes_ll : sizes) {
        const size_t bytes = static_cast<size_t>(bytes_ll);
        for (Lane* L : active) prepare_source(*L, m, bytes, c);
        std::vector<int> sms_values;
        if (!uses_sms(m)) {
          sms_values.push_back(0);
        } else {
          for (const auto& s : sms_list) {
            int v = s == "all" ? max_sms : static_cast<int>(Args::parse_size(s));
            v = std::min(std::max(v, 1), max_sms);
            if (std::find(sms_values.begin(), sms_values.end(), v) == sms_values.end()) sms_values.push_back(v);
          }
        }
        for (int sms : sms_values) {
          // Reductions accumulate into dst while timing: start from the seeded second operand.
          if (is_reduction(m))
            for (Lane* L : active) prepare_dest(*L, m, bytes, c);
          const int batch = static_cast<int>(std::min<size_t>(512, std::max<size_t>(1, (32u << 20) / bytes)));
          const std::vector<double> t = time_batches(active, m, bytes, std::max(sms, 1), c, warmup, iters, batch);
          sync_all(active);
          // Verified run.
          unsigned long long bad = 0;
          for (Lane* L : active) prepare_dest(*L, m, bytes, c);
          for (Lane* L : active) issue(*L, m, bytes, std::max(sms, 1), c);
          sync_all(active);
          for (Lane* L : active) bad += count_bad(*L, m, bytes, c);
          const Stats s = stats(t);
          const double nlanes = static_cast<double>(active.size());
          Json j;
          j.str("record", "point")
              .str("program", g_program)
              .str("mechanism", mname)
              .str("direction", dir)
              .integer("src", src)
              .integer("dst", dst)
              .boolean("peer", peer)
              .integer("bytes", bytes_ll)
              .integer("sms", sms);
          if (m == Mech::LdstPush || m == Mech::LdstPull || m == Mech::Red) j.integer("threads_per_block", c.threads);
          if (m == Mech::Tma || m == Mech::TmaReduce) j.integer("chunk_bytes", c.chunk).integer("stages", c.stages);
          if (is_reduction(m)) j.str("dtype", dtype);
          if (m == Mech::Red) j.integer("red_width_bytes", c.red_width);
          j.str("exec", m == Mech::LdstPull ? "receiver" : "sender").integer("batch", batch).integer("iters", iters).integer("warmup", warmup);
          put_stats(j, "time_s", s);
          j.num("bytes_per_s", bytes / s.median)
              .num("bytes_per_s_p10", bytes / s.p90)
              .num("bytes_per_s_p90", bytes / s.p10)
              .num("aggregate_bytes_per_s", nlanes * bytes / s.median)
              .boolean("verified", bad == 0)
              .integer("mismatches", static_cast<long long>(bad))
              .integer("seed", static_cast<long long>(seed & 0x7fffffffffffffffULL));
          j.print();
          fprintf(stderr, "p2p %-11s %-13s %11lld B sms=%3d  %9.3f us  %8.2f GB/s  verified=%s\n", mname, dir.c_str(),
                  bytes_ll, sms, s.median * 1e6, bytes / s.median / 1e9, bad == 0 ? "yes" : "NO");
        }
      }
    }
  }
  for (Lane& L : lanes) {
    L.bad.release();
    cudaSetDevice(L.sender);
    cudaFree(L.src);
    cudaSetDevice(L.receiver);
    cudaFree(L.dst);
  }
  return 0;
}
