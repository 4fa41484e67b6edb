// latency.cu: signal/wait latency, in ns, as a half round trip of a ping-pong.
//
// Tests (ParallelKittens, arXiv 2511.13940, section 3: intra-SM ~64 ns, inter-SM ~832 ns on H100):
//   intra_sm_mbarrier  two warps of one block alternate on two shared-memory mbarriers (arrive / try_wait)
//   inter_sm_flag      two blocks on different SMs of one GPU alternate on two global flags
//                      (st.release.gpu / ld.acquire.gpu); each block takes over half the SM's shared memory
//                      so the two cannot share an SM; their %smid is reported
//   peer_flag          one thread on each of two GPUs: each polls a flag in its own memory and writes the
//                      other GPU's flag (st.release.sys / ld.acquire.sys); with one GPU, two blocks on GPU 0
//                      do the same with sys scope ("peer": false)
// The pinger reads %globaltimer (ns) around `--iters` round trips after `--warmup` of them; one_way_ns is
// half the mean round trip; median/p10/p90 are over `--repeats` launches. Every spin loop gives up after
// 2 s and the point is then reported with "verified": false.
#include <limits>

#include "common.cuh"

const char* rl::g_program = "latency";
using namespace rl;

static const char* kHelp =
    "latency: one-way signal/wait latency in ns (JSON Lines on stdout)\n"
    "\n"
    "  --tests LIST    intra_sm_mbarrier,inter_sm_flag,peer_flag (default: all)\n"
    "  --src N --dst N GPUs for peer_flag (default 0 and 1; with one GPU: 0 and 0, loopback)\n"
    "  --iters N       round trips timed per launch (default 20000)\n"
    "  --warmup N      untimed round trips first (default 1000)\n"
    "  --repeats N     launches per test (default 7)\n"
    "  --help\n";

constexpr uint64_t kTimeoutNs = 2000000000ULL;

template <int SCOPE>  // 0 = gpu, 1 = sys
__device__ __forceinline__ void st_release(unsigned* p, unsigned v) {
  if (SCOPE)
    asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
  else
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
template <int SCOPE>
__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
  unsigned v;
  if (SCOPE)
    asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  else
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// Spins until *flag == want; false on timeout.
template <int SCOPE>
__device__ bool wait_for(const unsigned* flag, unsigned want, uint64_t deadline) {
  unsigned spins = 0;
  while (ld_acquire<SCOPE>(flag) != want) {
    if ((++spins & 1023u) == 0 && globaltimer_ns() > deadline) return false;
  }
  return true;
}

// role 0 pings and times, role 1 answers. `mine` is polled, `theirs` is written.
template <int SCOPE>
__device__ void ping_pong(int role, unsigned* mine, unsigned* theirs, int warmup, int iters, uint64_t* t_out,
                          int* err, uint32_t* sm_out) {
  const uint64_t deadline = globaltimer_ns() + kTimeoutNs;
  sm_out[role] = smid();
  const unsigned total = static_cast<unsigned>(warmup + iters);
  uint64_t t0 = 0;
  for (unsigned i = 1; i <= total; ++i) {
    if (role == 0) {
      if (i == static_cast<unsigned>(warmup) + 1) t0 = globaltimer_ns();
      st_release<SCOPE>(theirs, i);
      if (!wait_for<SCOPE>(mine, i, deadline)) {
        atomicExch(err, 1);
        return;
      }
    } else {
      if (!wait_for<SCOPE>(mine, i, deadline)) {
        atomicExch(err, 1);
        return;
      }
      st_release<SCOPE>(theirs, i);
    }
  }
  if (role == 0) *t_out = globaltimer_ns() - t0;
}

// One GPU: block 0 pings, block 1 answers; flags[0] is block 0's, flags[32] block 1's (separate lines).
template <int SCOPE>
__global__ void two_block_pingpong(unsigned* flags, int warmup, int iters, uint64_t* t_out, int* err,
                                   uint32_t* sm_out) {
  if (threadIdx.x != 0) return;
  const int role = blockIdx.x;
  ping_pong<SCOPE>(role, flags + 32 * role, flags + 32 * (1 - role), warmup, iters, t_out, err, sm_out);
}

// Two GPUs: one single-thread kernel on each.
__global__ void peer_pingpong(int role, unsigned* mine, unsigned* theirs, int warmup, int iters, uint64_t* t_out,
                              int* err, uint32_t* sm_out) {
  if (threadIdx.x != 0) return;
  ping_pong<1>(role, mine, theirs, warmup, iters, t_out, err, sm_out);
}

// Two warps of one block alternate on two mbarriers (count 1, lane 0 of each warp).
__global__ void mbarrier_pingpong(int warmup, int iters, uint64_t* t_out, int* err, uint32_t* sm_out) {
  __shared__ __align__(8) uint64_t bar[2];
  const uint32_t b0 = static_cast<uint32_t>(__cvta_generic_to_shared(&bar[0]));
  const uint32_t b1 = static_cast<uint32_t>(__cvta_generic_to_shared(&bar[1]));
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(b0));
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(b1));
  }
  __syncthreads();
  if (threadIdx.x % 32 != 0) return;
  const int warp = threadIdx.x / 32;
  sm_out[warp] = smid();
  const uint64_t deadline = globaltimer_ns() + kTimeoutNs;
  const int total = warmup + iters;
  uint64_t t0 = 0;
  auto arrive = [](uint32_t b) { asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(b) : "memory"); };
  auto wait = [&](uint32_t b, uint32_t parity) -> bool {
    uint32_t ok = 0;
    unsigned spins = 0;
    while (true) {
#if __CUDA_ARCH__ >= 900
      asm volatile(
          "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
          : "=r"(ok)
          : "r"(b), "r"(parity)
          : "memory");
#else
      asm volatile(
          "{\n .reg .pred p;\n mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
          : "=r"(ok)
          : "r"(b), "r"(parity)
          : "memory");
#endif
      if (ok) return true;
      if ((++spins & 255u) == 0 && globaltimer_ns() > deadline) return false;
    }
  };
  for (int i = 0; i < total; ++i) {
    const uint32_t parity = static_cast<uint32_t>(i & 1);
    if (warp == 0) {
      if (i == warmup) t0 = globaltimer_ns();
      arrive(b0);
      if (!wait(b1, parity)) {
        atomicExch(err, 1);
        return;
      }
    } else {
      if (!wait(b0, parity)) {
        atomicExch(err, 1);
        return;
      }
      arrive(b1);
    }
  }
  if (warp == 0) *t_out = globaltimer_ns() - t0;
}

struct Scratch {  // per-device result slots
  int dev = 0;
  uint64_t* t = nullptr;
  int* err = nullptr;
  uint32_t* sm = nullptr;
  void init(int d) {
    dev = d;
    RL_CHECK(cudaSetDevice(d));
    RL_CHECK(cudaMalloc(&t, sizeof(uint64_t)));
    RL_CHECK(cudaMalloc(&err, sizeof(int)));
    RL_CHECK(cudaMalloc(&sm, 2 * sizeof(uint32_t)));
  }
  void reset() {
    RL_CHECK(cudaSetDevice(dev));
    RL_CHECK(cudaMemset(t, 0, sizeof(uint64_t)));
    RL_CHECK(cudaMemset(err, 0, sizeof(int)));
    RL_CHECK(cudaMemset(sm, 0xff, 2 * sizeof(uint32_t)));
  }
  void read(uint64_t& th, int& eh, uint32_t smh[2]) {
    RL_CHECK(cudaSetDevice(dev));
    RL_CHECK(cudaDeviceSynchronize());
    RL_CHECK(cudaMemcpy(&th, t, sizeof th, cudaMemcpyDeviceToHost));
    RL_CHECK(cudaMemcpy(&eh, err, sizeof eh, cudaMemcpyDeviceToHost));
    RL_CHECK(cudaMemcpy(smh, sm, 2 * sizeof(uint32_t), cudaMemcpyDeviceToHost));
  }
};

static void report(const char* test, const char* scope, int src, int dst, bool peer, int iters, int warmup,
                   const std::vector<double>& one_way, bool ok, const std::string& where, const std::string& note) {
  const Stats s = stats(one_way);
  Json j;
  j.str("record", "point")
      .str("program", g_program)
      .str("test", test)
      .str("scope", scope)
      .integer("src", src)
      .integer("dst", dst)
      .boolean("peer", peer)
      .integer("iters", iters)
      .integer("warmup", warmup)
      .integer("repeats", static_cast<long long>(one_way.size()));
  put_stats(j, "one_way_ns", s);
  j.num("round_trip_ns_median", 2 * s.median).boolean("verified", ok).str("placement", where);
  if (!note.empty()) j.str("note", note);
  j.print();
  fprintf(stderr, "latency %-18s %-4s one-way %8.1f ns (p10 %.1f, p90 %.1f)%s\n", test, scope, s.median, s.p10, s.p90,
          ok ? "" : "  TIMED OUT");
}

int main(int argc, char** argv) {
  Args a(argc, argv);
  if (a.has("--help") || a.has("-h")) {
    fputs(kHelp, stdout);
    return 0;
  }
  const auto tests = a.list("--tests", "intra_sm_mbarrier,inter_sm_flag,peer_flag");
  const int iters = static_cast<int>(a.integer("--iters", 20000));
  const int warmup = static_cast<int>(a.integer("--warmup", 1000));
  const int repeats = static_cast<int>(a.integer("--repeats", 7));
  if (iters < 1 || warmup < 0 || repeats < 1) fail(g_program, "--iters, --repeats >= 1 and --warmup >= 0", 2);
  for (const auto& t : tests)
    if (t != "intra_sm_mbarrier" && t != "inter_sm_flag" && t != "peer_flag") fail(g_program, "unknown test '" + t + "'", 2);

  const int ngpu = device_count_or_zero();
  if (ngpu == 0) fail(g_program, "no CUDA device visible");
  const int src = static_cast<int>(a.integer("--src", 0));
  const int dst = static_cast<int>(a.integer("--dst", ngpu > 1 ? 1 : 0));
  if (src >= ngpu || dst >= ngpu) fail(g_program, "device id out of range");
  const bool peer = src != dst;
  std::string note;
  if (!peer) note = "one GPU: peer_flag runs as two blocks on GPU " + std::to_string(src) + " with sys scope (peer: false)";
  print_meta(g_program, a, peer ? std::vector<int>{src, dst} : std::vector<int>{src}, note);

  Scratch sa, sb;
  sa.init(src);
  sb.init(dst);
  unsigned *flags_a = nullptr, *flags_b = nullptr;
  RL_CHECK(cudaSetDevice(src));
  RL_CHECK(cudaMalloc(&flags_a, 256));
  RL_CHECK(cudaSetDevice(dst));
  RL_CHECK(cudaMalloc(&flags_b, 256));
  if (peer) {
    for (auto [x, y] : {std::pair<int, int>{src, dst}, {dst, src}}) {
      RL_CHECK(cudaSetDevice(x));
      cudaError_t e = cudaDeviceEnablePeerAccess(y, 0);
      if (e == cudaErrorPeerAccessAlreadyEnabled) cudaGetLastError();
      else RL_CHECK(e);
    }
  }
  cudaDeviceProp prop;
  RL_CHECK(cudaGetDeviceProperties(&prop, src));
  // More than half an SM's shared memory per block: two blocks can't share an SM.
  const int big_smem = static_cast<int>(std::min(prop.sharedMemPerBlockOptin, prop.sharedMemPerMultiprocessor / 2 + 1024));
  RL_CHECK(cudaSetDevice(src));
  RL_CHECK(cudaFuncSetAttribute(two_block_pingpong<0>, cudaFuncAttributeMaxDynamicSharedMemorySize, big_smem));
  RL_CHECK(cudaFuncSetAttribute(two_block_pingpong<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, big_smem));

  for (const auto& test : tests) {
    std::vector<double> one_way;
    bool ok = true;
    std::string where;
    const char* scope = "cta";
    for (int r = 0; r < repeats; ++r) {
      uint64_t t = 0;
      int err = 0;
      uint32_t sm[2] = {0, 0};
      if (test == "intra_sm_mbarrier") {
        sa.reset();
        RL_CHECK(cudaSetDevice(src));
        mbarrier_pingpong<<<1, 64>>>(warmup, iters, sa.t, sa.err, sa.sm);
        RL_CHECK_LAUNCH();
        sa.read(t, err, sm);
        where = "gpu " + std::to_string(src) + " sm " + std::to_string(sm[0]) + " warps 0,1";
      } else if (test == "inter_sm_flag" || !peer) {
        const bool sys = test == "peer_flag";
        scope = sys ? "sys" : "gpu";
        sa.reset();
        RL_CHECK(cudaSetDevice(src));
        RL_CHECK(cudaMemset(flags_a, 0, 256));
        if (sys)
          two_block_pingpong<1><<<2, 32, big_smem>>>(flags_a, warmup, iters, sa.t, sa.err, sa.sm);
        else
          two_block_pingpong<0><<<2, 32, big_smem>>>(flags_a, warmup, iters, sa.t, sa.err, sa.sm);
        RL_CHECK_LAUNCH();
        sa.read(t, err, sm);
        where = "gpu " + std::to_string(src) + " sms " + std::to_string(sm[0]) + "," + std::to_string(sm[1]);
      } else {
        scope = "sys";
        sa.reset();
        sb.reset();
        RL_CHECK(cudaSetDevice(src));
        RL_CHECK(cudaMemset(flags_a, 0, 256));
        RL_CHECK(cudaSetDevice(dst));
        RL_CHECK(cudaMemset(flags_b, 0, 256));
        RL_CHECK(cudaDeviceSynchronize());
        RL_CHECK(cudaSetDevice(src));
        RL_CHECK(cudaDeviceSynchronize());
        // Answerer first, then the pinger; each polls its own GPU's flag and writes the other's.
        RL_CHECK(cudaSetDevice(dst));
        peer_pingpong<<<1, 32>>>(1, flags_b, flags_a, warmup, iters, sb.t, sb.err, sb.sm);
        RL_CHECK_LAUNCH();
        RL_CHECK(cudaSetDevice(src));
        peer_pingpong<<<1, 32>>>(0, flags_a, flags_b, warmup, iters, sa.t, sa.err, sa.sm);
        RL_CHECK_LAUNCH();
        uint64_t tb;
        int eb;
        uint32_t smb[2];
        sa.read(t, err, sm);
        sb.read(tb, eb, smb);
        err |= eb;
        where = "gpu " + std::to_string(src) + " sm " + std::to_string(sm[0]) + " <-> gpu " + std::to_string(dst) +
                " sm " + std::to_string(smb[1]);
      }
      if (err) ok = false;
      else one_way.push_back(static_cast<double>(t) / iters / 2.0);
    }
    if (one_way.empty()) one_way.push_back(std::numeric_limits<double>::quiet_NaN());
    std::string tnote;
    if (test == "inter_sm_flag") tnote = "two blocks of one GPU, more than half an SM's shared memory each";
    if (test == "peer_flag" && !peer) tnote = note;
    report(test.c_str(), scope, test == "peer_flag" ? src : src, test == "peer_flag" ? dst : src,
           test == "peer_flag" && peer, iters, warmup, one_way, ok, where, tnote);
  }
  return 0;
}
