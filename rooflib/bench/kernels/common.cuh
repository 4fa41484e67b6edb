// common.cuh: helpers shared by rooflib's microbenchmark programs (p2p, latency, ceilings, multimem).
//
// Header-only on purpose: each program stays one translation unit, built with one nvcc command
// (rooflib/bench/build.py). Output is JSON Lines on stdout: a first {"record":"meta",...} line, then one
// {"record":"point",...} per measured point; problems go to stderr and to an {"record":"error",...} line.
// Units are in the keys (time_s, bytes, bytes_per_s, ns); GB = 1e9 bytes, GiB = 2**30 bytes.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace rl {

// ------------------------------------------------------------------------------------------------ JSON out
inline std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char b[8];
          snprintf(b, sizeof b, "\\u%04x", c);
          o += b;
        } else {
          o += c;
        }
    }
  }
  return o;
}

// A tiny builder for one flat JSON object; values are appended already encoded.
struct Json {
  std::string body;
  Json& raw(const char* k, const std::string& v) {
    if (!body.empty()) body += ",";
    body += "\"";
    body += k;
    body += "\":";
    body += v;
    return *this;
  }
  Json& str(const char* k, const std::string& v) { return raw(k, "\"" + json_escape(v) + "\""); }
  Json& num(const char* k, double v) {
    char b[64];
    if (v != v) return raw(k, "null");  // NaN
    snprintf(b, sizeof b, "%.9g", v);
    return raw(k, b);
  }
  Json& integer(const char* k, long long v) { return raw(k, std::to_string(v)); }
  Json& boolean(const char* k, bool v) { return raw(k, v ? "true" : "false"); }
  Json& null(const char* k) { return raw(k, "null"); }
  std::string text() const { return "{" + body + "}"; }
  void print() const {
    printf("%s\n", text().c_str());
    fflush(stdout);
  }
};

[[noreturn]] inline void fail(const char* program, const std::string& what, int code = 1) {
  Json j;
  j.str("record", "error").str("program", program).str("error", what);
  j.print();
  fprintf(stderr, "%s: error: %s\n", program, what.c_str());
  exit(code);
}

extern const char* g_program;  // each program defines it

#define RL_CHECK(call)                                                                                   \
  do {                                                                                                   \
    cudaError_t rl_err_ = (call);                                                                        \
    if (rl_err_ != cudaSuccess) {                                                                        \
      ::rl::fail(::rl::g_program, std::string(#call) + " failed at " __FILE__ ":" + std::to_string(__LINE__) + \
                                      ": " + cudaGetErrorName(rl_err_) + ": " + cudaGetErrorString(rl_err_)); \
    }                                                                                                    \
  } while (0)

#define RL_CHECK_LAUNCH() RL_CHECK(cudaGetLastError())

// ------------------------------------------------------------------------------------------------ args
// Options are `--key value` or `--flag`; lists are comma separated; sizes take K/M/G (powers of 1024)
// suffixes: 128, 4K, 1M, 1G, 1GiB, 256MiB.
struct Args {
  std::vector<std::string> argv;
  explicit Args(int argc, char** a) {
    for (int i = 1; i < argc; ++i) argv.emplace_back(a[i]);
  }
  bool has(const char* key) const {
    for (const auto& s : argv)
      if (s == key) return true;
    return false;
  }
  const char* get(const char* key) const {
    for (size_t i = 0; i + 1 < argv.size(); ++i)
      if (argv[i] == key) return argv[i + 1].c_str();
    return nullptr;
  }
  std::string str(const char* key, const char* def) const {
    const char* v = get(key);
    return v ? std::string(v) : std::string(def);
  }
  long long integer(const char* key, long long def) const {
    const char* v = get(key);
    return v ? parse_size(v) : def;
  }
  std::vector<std::string> list(const char* key, const char* def) const {
    std::string v = str(key, def);
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= v.size()) {
      size_t end = v.find(',', start);
      if (end == std::string::npos) end = v.size();
      if (end > start) out.push_back(v.substr(start, end - start));
      start = end + 1;
    }
    return out;
  }
  std::vector<long long> sizes(const char* key, const char* def) const {
    std::vector<long long> out;
    for (const auto& s : list(key, def)) out.push_back(parse_size(s));
    return out;
  }
  std::string joined() const {
    std::string o;
    for (const auto& s : argv) o += (o.empty() ? "" : " ") + s;
    return o;
  }
  static long long parse_size(const std::string& s) {
    char* end = nullptr;
    double v = strtod(s.c_str(), &end);
    if (end == s.c_str()) fail(g_program, "not a number: '" + s + "'", 2);
    std::string suf(end);
    long long mul = 1;
    if (suf.empty() || suf == "B") mul = 1;
    else if (suf == "K" || suf == "KiB" || suf == "k") mul = 1LL << 10;
    else if (suf == "M" || suf == "MiB") mul = 1LL << 20;
    else if (suf == "G" || suf == "GiB") mul = 1LL << 30;
    else fail(g_program, "bad size suffix in '" + s + "' (use K, M, G = powers of 1024)", 2);
    return static_cast<long long>(v * static_cast<double>(mul));
  }
};

// ------------------------------------------------------------------------------------------------ stats
struct Stats {
  double median = 0, p10 = 0, p90 = 0, min = 0, max = 0;
};
inline double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  double pos = q * static_cast<double>(v.size() - 1);
  size_t lo = static_cast<size_t>(pos);
  size_t hi = std::min(lo + 1, v.size() - 1);
  double f = pos - static_cast<double>(lo);
  return v[lo] * (1 - f) + v[hi] * f;
}
inline Stats stats(const std::vector<double>& v) {
  Stats s;
  s.median = percentile(v, 0.5);
  s.p10 = percentile(v, 0.1);
  s.p90 = percentile(v, 0.9);
  s.min = percentile(v, 0.0);
  s.max = percentile(v, 1.0);
  return s;
}
inline void put_stats(Json& j, const char* prefix, const Stats& s) {
  std::string p(prefix);
  j.num((p + "_median").c_str(), s.median);
  j.num((p + "_p10").c_str(), s.p10);
  j.num((p + "_p90").c_str(), s.p90);
  j.num((p + "_min").c_str(), s.min);
  j.num((p + "_max").c_str(), s.max);
}

// ------------------------------------------------------------------------------------------------ meta
inline std::string utc_now() {
  time_t t = time(nullptr);
  struct tm g;
  gmtime_r(&t, &g);
  char b[32];
  strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &g);
  return b;
}

// The kernel driver's release ("580.159.04") from /proc, or "" (cudaDriverGetVersion gives the CUDA version).
inline std::string driver_release() {
  FILE* f = fopen("/proc/driver/nvidia/version", "r");
  if (!f) return "";
  char line[512] = {0};
  std::string out;
  if (fgets(line, sizeof line, f)) {
    const char* k = strstr(line, "Kernel Module");
    // "... Kernel Module  580.159.04  ..." or "... Open Kernel Module for x86_64  580.159.04  Release ..."
    for (k = k ? k + strlen("Kernel Module") : nullptr; k && *k && out.empty();) {
      while (*k == ' ' || *k == '\t') ++k;
      std::string tok;
      while (*k && *k != ' ' && *k != '\t' && *k != '\n') tok += *k++;
      if (!tok.empty() && tok[0] >= '0' && tok[0] <= '9' && tok.find('.') != std::string::npos) out = tok;
      if (*k == '\n') break;
    }
  }
  fclose(f);
  return out;
}

inline int attr(cudaDeviceAttr a, int dev) {
  int v = 0;
  RL_CHECK(cudaDeviceGetAttribute(&v, a, dev));
  return v;
}

inline std::string gpu_json(int dev) {
  cudaDeviceProp p;
  RL_CHECK(cudaGetDeviceProperties(&p, dev));
  char bus[32] = {0};
  cudaDeviceGetPCIBusId(bus, sizeof bus, dev);
  Json j;
  j.integer("id", dev)
      .str("name", p.name)
      .str("pci_bus_id", bus)
      .str("compute_capability", std::to_string(p.major) + "." + std::to_string(p.minor))
      .integer("sms", p.multiProcessorCount)
      .integer("l2_bytes", p.l2CacheSize)
      .integer("persisting_l2_max_bytes", p.persistingL2CacheMaxSize)
      .integer("smem_per_sm_bytes", static_cast<long long>(p.sharedMemPerMultiprocessor))
      .integer("smem_per_block_optin_bytes", static_cast<long long>(p.sharedMemPerBlockOptin))
      .integer("global_mem_bytes", static_cast<long long>(p.totalGlobalMem))
      .integer("mem_bus_width_bits", p.memoryBusWidth)
      .integer("sm_clock_peak_khz", attr(cudaDevAttrClockRate, dev))
      .integer("mem_clock_peak_khz", attr(cudaDevAttrMemoryClockRate, dev));
  return j.text();
}

// The first line of every program's output. `devices` are the ids the run will touch.
inline void print_meta(const char* program, const Args& args, const std::vector<int>& devices,
                       const std::string& note = "") {
  int drv = 0, rt = 0;
  cudaDriverGetVersion(&drv);
  cudaRuntimeGetVersion(&rt);
  int count = 0;
  cudaGetDeviceCount(&count);
  std::string gpus = "[";
  for (size_t i = 0; i < devices.size(); ++i) gpus += (i ? "," : "") + gpu_json(devices[i]);
  gpus += "]";
  Json j;
  j.str("record", "meta")
      .str("program", program)
      .str("argv", args.joined())
      .str("date", utc_now())
      .integer("driver_version", drv)
      .integer("runtime_version", rt)
      .str("driver_release", driver_release())
      .str("nvcc_version", std::to_string(__CUDACC_VER_MAJOR__) + "." + std::to_string(__CUDACC_VER_MINOR__) +
                               "." + std::to_string(__CUDACC_VER_BUILD__))
#ifdef RL_ARCH
      .str("built_for", RL_ARCH)
#endif
      .integer("visible_gpus", count)
      .raw("gpus", gpus);
  if (!note.empty()) j.str("note", note);
  j.print();
}

// ------------------------------------------------------------------------------------------------ data
// Hash-based fill (no curand): word i of a buffer seeded with s is hash32(s, i). Fresh per run: the
// programs draw the seed from the clock unless --seed is given, and report it.
__host__ __device__ __forceinline__ uint32_t hash32(uint64_t seed, uint64_t i) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ULL + i * 0xBF58476D1CE4E5B9ULL + 0x94D049BB133111EBULL;
  x ^= x >> 31;
  x *= 0xD6E8FEB86659FD93ULL;
  x ^= x >> 29;
  x *= 0x94D049BB133111EBULL;
  x ^= x >> 32;
  return static_cast<uint32_t>(x);
}

// Small integers in [-127, 127]: exactly representable in bf16 and f32, and so are sums of two.
__host__ __device__ __forceinline__ int small_int(uint64_t seed, uint64_t i) {
  return static_cast<int>(hash32(seed, i) % 255u) - 127;
}

__global__ void fill_words(uint32_t* p, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    p[i] = hash32(seed, i);
}
__global__ void fill_const(uint32_t* p, size_t n, uint32_t v) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    p[i] = v;
}
// Counts words that differ from hash32(seed, i).
__global__ void count_word_mismatch(const uint32_t* p, size_t n, uint64_t seed, unsigned long long* bad) {
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    local += (p[i] != hash32(seed, i));
  if (local) atomicAdd(bad, local);
}

inline void fill_words_on(int dev, void* p, size_t bytes, uint64_t seed, cudaStream_t s) {
  RL_CHECK(cudaSetDevice(dev));
  fill_words<<<1024, 256, 0, s>>>(static_cast<uint32_t*>(p), bytes / 4, seed);
  RL_CHECK_LAUNCH();
}
inline void poison_on(int dev, void* p, size_t bytes, cudaStream_t s) {
  RL_CHECK(cudaSetDevice(dev));
  fill_const<<<1024, 256, 0, s>>>(static_cast<uint32_t*>(p), bytes / 4, 0xDEADBEEFu);
  RL_CHECK_LAUNCH();
}

// A device counter for mismatch kernels.
struct Counter {
  int dev = -1;
  unsigned long long* d = nullptr;
  void init(int device) {
    dev = device;
    RL_CHECK(cudaSetDevice(dev));
    RL_CHECK(cudaMalloc(&d, sizeof(unsigned long long)));
  }
  void reset(cudaStream_t s) {
    RL_CHECK(cudaSetDevice(dev));
    RL_CHECK(cudaMemsetAsync(d, 0, sizeof(unsigned long long), s));
  }
  unsigned long long read(cudaStream_t s) {
    unsigned long long h = 0;
    RL_CHECK(cudaSetDevice(dev));
    RL_CHECK(cudaMemcpyAsync(&h, d, sizeof h, cudaMemcpyDeviceToHost, s));
    RL_CHECK(cudaStreamSynchronize(s));
    return h;
  }
  void release() {
    if (d) {
      cudaSetDevice(dev);
      cudaFree(d);
    }
    d = nullptr;
  }
};

inline uint64_t seed_from(const Args& a) {
  long long s = a.integer("--seed", -1);
  if (s >= 0) return static_cast<uint64_t>(s);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_nsec) ^ (static_cast<uint64_t>(ts.tv_sec) << 20);
}

// Number of visible devices without failing when there is no driver or no GPU.
inline int device_count_or_zero() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

// ------------------------------------------------------------------------------------------------ PTX
__device__ __forceinline__ uint64_t globaltimer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ uint32_t smid() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
  return r;
}
__device__ __forceinline__ uint32_t smem_addr(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

// Called in a spin loop: after every 1024 spins, trap (rather than hang) once `timeout_ns` has passed.
__device__ __forceinline__ void trap_if_late(uint32_t spins, uint64_t& since, uint64_t timeout_ns) {
  if ((spins & 1023u) != 1023u) return;
  const uint64_t now = globaltimer_ns();
  if (since == 0) since = now;
  else if (now - since > timeout_ns) __trap();
}

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
// Wait for phase `parity` of a shared-memory mbarrier; trap after `timeout_ns` without progress.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity, uint64_t timeout_ns) {
  uint64_t since = 0;
  for (uint32_t spins = 0;; ++spins) {
    uint32_t done;
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
    if (done) return;
    trap_if_late(spins, since, timeout_ns);
  }
}

// Bulk copy global -> shared, completing on an mbarrier (transaction bytes).
__device__ __forceinline__ void bulk_load(uint32_t dst_smem, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   dst_smem),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}

// Grid-stride 16-byte copy with kCopyUnroll independent loads in flight per thread (HBM copy, peer ld/st).
constexpr int kCopyUnroll = 4;
__global__ void copy16(int4* __restrict__ dst, const int4* __restrict__ src, size_t n) {
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  for (; i + (kCopyUnroll - 1) * stride < n; i += kCopyUnroll * stride) {
    int4 v[kCopyUnroll];
#pragma unroll
    for (int u = 0; u < kCopyUnroll; ++u) v[u] = src[i + u * stride];
#pragma unroll
    for (int u = 0; u < kCopyUnroll; ++u) dst[i + u * stride] = v[u];
  }
  for (; i < n; i += stride) dst[i] = src[i];
}

}  // namespace rl
