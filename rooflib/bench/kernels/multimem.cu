// multimem.cu: NVLink SHARP / multicast (NVLS) register instructions over a multicast object.
//
// SAFETY: NVLink multicast can take a shared host's GPUs out of service for a day or more. This program
// refuses to run (exit code 3, one {"record":"refused",...} line) unless it is given --allow-multicast AND
// the environment variable NCCL_NVLS_ENABLE is a nonzero integer. The check comes before any CUDA call, so
// it also works on machines without a GPU. Never run it where multicast is switched off on purpose.
// Status: compiled in CI; never run by rooflib's authors on a lent machine (multicast is off there).
//
// Ops (ParallelKittens, arXiv 2511.13940: only register multimem instructions use in-switch reduction):
//   ld_reduce  every GPU reads the switch-reduced sum of all GPUs' buffers: multimem.ld_reduce.add.v4.f32
//   st         every GPU broadcasts its 1/N slice to all GPUs' buffers: multimem.st.v4.f32
//   red        every GPU adds its whole source into all GPUs' buffers: multimem.red.add.v4.f32
// One process drives all GPUs; the multicast object and its memory are made with the driver API, reached
// through cudaGetDriverEntryPointByVersion (no link against libcuda).
#include <cerrno>
#include <cstdlib>

#include <cuda.h>

#include "common.cuh"

const char* rl::g_program = "multimem";
using namespace rl;

static const char* kHelp =
    "multimem: NVLS multicast ld_reduce / st / red bandwidth (JSON Lines on stdout)\n"
    "\n"
    "  REFUSES TO RUN (exit 3) unless --allow-multicast is given AND NCCL_NVLS_ENABLE is a nonzero integer:\n"
    "  NVLink multicast can take a shared host's GPUs out of service.\n"
    "\n"
    "  --allow-multicast  required to run at all\n"
    "  --ops LIST         ld_reduce,st,red (default: all)\n"
    "  --devices LIST     GPU ids (default: all visible, at least 2)\n"
    "  --bytes LIST       sizes per GPU buffer (default 1M,16M,256M)\n"
    "  --sms N            blocks per GPU (default: all SMs)   --threads N (default 512)\n"
    "  --warmup N (default 3)   --iters N (default 20)   --seed N\n"
    "  --help\n";

// ------------------------------------------------------------------------------------------------ refusal
// NCCL reads NCCL_NVLS_ENABLE with strtoll(value, NULL, 0): "false", "no" or "" read as 0 there. Only a plain
// nonzero integer ("1", "2", " 0x1 ") counts as a request for multicast (rooflib.bench.multicast does the same).
static bool nvls_requested(const char* env) {
  if (env == nullptr) return false;
  errno = 0;
  char* end = nullptr;
  long long value = strtoll(env, &end, 0);
  if (end == env || errno != 0) return false;
  while (*end == ' ' || *end == '\t' || *end == '\n') ++end;
  return *end == '\0' && value != 0;
}

static void refuse_unless_allowed(const Args& a) {
  const char* env = getenv("NCCL_NVLS_ENABLE");
  std::string reason;
  if (!a.has("--allow-multicast"))
    reason = "multicast not allowed: pass --allow-multicast (and set NCCL_NVLS_ENABLE=1) only on a machine you own";
  else if (!nvls_requested(env))
    reason = "multicast not allowed: NCCL_NVLS_ENABLE is not a nonzero integer in the environment (unset, 0, or "
             "a word such as false)";
  if (reason.empty()) return;
  Json j;
  j.str("record", "refused").str("program", g_program).str("reason", reason);
  j.str("nccl_nvls_enable", env ? env : "").boolean("allow_multicast_flag", a.has("--allow-multicast"));
  j.print();
  fprintf(stderr, "multimem: refused: %s\n", reason.c_str());
  exit(3);
}

// ------------------------------------------------------------------------------------------------ kernels
__global__ void mm_ld_reduce(float4* __restrict__ out, const float4* mc, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    float4 v;
    asm volatile("multimem.ld_reduce.relaxed.sys.global.add.v4.f32 {%0,%1,%2,%3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "l"(mc + i)
                 : "memory");
    out[i] = v;
#else
    __trap();
#endif
  }
}
__global__ void mm_st(float4* mc, const float4* __restrict__ src, size_t begin, size_t end) {
  for (size_t i = begin + blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < end; i += (size_t)gridDim.x * blockDim.x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    const float4 v = src[i];
    asm volatile("multimem.st.relaxed.sys.global.v4.f32 [%0], {%1,%2,%3,%4};" ::"l"(mc + i), "f"(v.x), "f"(v.y),
                 "f"(v.z), "f"(v.w)
                 : "memory");
#else
    __trap();
#endif
  }
}
__global__ void mm_red(float4* mc, const float4* __restrict__ src, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    const float4 v = src[i];
    asm volatile("multimem.red.relaxed.sys.global.add.v4.f32 [%0], {%1,%2,%3,%4};" ::"l"(mc + i), "f"(v.x), "f"(v.y),
                 "f"(v.z), "f"(v.w)
                 : "memory");
#else
    __trap();
#endif
  }
}
__global__ void fill_small_f32(float* p, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    p[i] = static_cast<float>(small_int(seed, i));
}
// kind 0: p == sum_d small(seed+d); kind 1: p == small(seed + (slice owner of i)); kind 2: p == base + sum.
__global__ void count_mm_mismatch(const float* p, size_t n, uint64_t seed, int ndev, int kind, uint64_t base_seed,
                                  size_t slice, unsigned long long* bad) {
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    float want = 0.f;
    if (kind == 1) {
      want = static_cast<float>(small_int(seed + min((size_t)ndev - 1, (i / 4) / slice), i));
    } else {
      for (int d = 0; d < ndev; ++d) want += static_cast<float>(small_int(seed + d, i));
      if (kind == 2) want += static_cast<float>(small_int(base_seed, i));
    }
    local += (p[i] != want);
  }
  if (local) atomicAdd(bad, local);
}

// ------------------------------------------------------------------------------------------------ driver
template <class F>
static F driver_fn(const char* name) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult q;
  RL_CHECK(cudaGetDriverEntryPointByVersion(name, &p, 12010, cudaEnableDefault, &q));
  if (p == nullptr || q != cudaDriverEntryPointSuccess) fail(g_program, std::string("driver entry point missing: ") + name);
  return reinterpret_cast<F>(p);
}
#define RL_DRV(fn) static const auto p_##fn = driver_fn<decltype(&fn)>(#fn)
#define RL_CU(call)                                                                                     \
  do {                                                                                                  \
    CUresult rl_r_ = (call);                                                                            \
    if (rl_r_ != CUDA_SUCCESS)                                                                          \
      fail(g_program, std::string(#call) + " failed with CUresult " + std::to_string(static_cast<int>(rl_r_))); \
  } while (0)

struct Multicast {
  std::vector<int> devs;
  size_t size = 0;
  CUmemGenericAllocationHandle mc = 0;
  CUdeviceptr mc_va = 0;
  std::vector<CUmemGenericAllocationHandle> mem;
  std::vector<CUdeviceptr> uc;  // unicast view of each GPU's buffer

  void create(const std::vector<int>& d, size_t bytes) {
    RL_DRV(cuDeviceGet);
    RL_DRV(cuDeviceGetAttribute);
    RL_DRV(cuMulticastGetGranularity);
    RL_DRV(cuMulticastCreate);
    RL_DRV(cuMulticastAddDevice);
    RL_DRV(cuMemGetAllocationGranularity);
    RL_DRV(cuMemCreate);
    RL_DRV(cuMemAddressReserve);
    RL_DRV(cuMemMap);
    RL_DRV(cuMemSetAccess);
    RL_DRV(cuMulticastBindMem);
    devs = d;
    std::vector<CUmemAccessDesc> access;
    for (int dev : devs) {
      RL_CHECK(cudaSetDevice(dev));
      RL_CHECK(cudaFree(nullptr));  // primary context
      CUdevice cu;
      RL_CU(p_cuDeviceGet(&cu, dev));
      int ok = 0;
      RL_CU(p_cuDeviceGetAttribute(&ok, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, cu));
      if (!ok) fail(g_program, "GPU " + std::to_string(dev) + " does not support multicast");
      CUmemAccessDesc a = {};
      a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      a.location.id = dev;
      a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
      access.push_back(a);
    }
    CUmulticastObjectProp prop = {};
    prop.numDevices = static_cast<unsigned>(devs.size());
    prop.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    prop.size = bytes;
    size_t gran = 0;
    RL_CU(p_cuMulticastGetGranularity(&gran, &prop, CU_MULTICAST_GRANULARITY_RECOMMENDED));
    CUmemAllocationProp ap = {};
    ap.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    ap.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    ap.location.id = devs[0];
    size_t agran = 0;
    RL_CU(p_cuMemGetAllocationGranularity(&agran, &ap, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    gran = std::max(gran, agran);
    size = (bytes + gran - 1) / gran * gran;
    prop.size = size;
    RL_CU(p_cuMulticastCreate(&mc, &prop));
    for (int dev : devs) {
      CUdevice cu;
      RL_CU(p_cuDeviceGet(&cu, dev));
      RL_CU(p_cuMulticastAddDevice(mc, cu));
    }
    for (size_t k = 0; k < devs.size(); ++k) {
      RL_CHECK(cudaSetDevice(devs[k]));
      ap.location.id = devs[k];
      CUmemGenericAllocationHandle h;
      RL_CU(p_cuMemCreate(&h, size, &ap, 0));
      CUdeviceptr va;
      RL_CU(p_cuMemAddressReserve(&va, size, gran, 0, 0));
      RL_CU(p_cuMemMap(va, size, 0, h, 0));
      RL_CU(p_cuMemSetAccess(va, size, &access[k], 1));
      RL_CU(p_cuMulticastBindMem(mc, 0, h, 0, size, 0));
      mem.push_back(h);
      uc.push_back(va);
    }
    RL_CU(p_cuMemAddressReserve(&mc_va, size, gran, 0, 0));
    RL_CU(p_cuMemMap(mc_va, size, 0, mc, 0));
    RL_CU(p_cuMemSetAccess(mc_va, size, access.data(), access.size()));
  }

  void destroy() {
    RL_DRV(cuMemUnmap);
    RL_DRV(cuMemAddressFree);
    RL_DRV(cuMemRelease);
    RL_DRV(cuMulticastUnbind);
    RL_DRV(cuDeviceGet);
    for (int d : devs) {
      cudaSetDevice(d);
      cudaDeviceSynchronize();
    }
    if (mc_va) {
      p_cuMemUnmap(mc_va, size);
      p_cuMemAddressFree(mc_va, size);
    }
    for (size_t k = 0; k < uc.size(); ++k) {
      CUdevice cu;
      p_cuDeviceGet(&cu, devs[k]);
      p_cuMulticastUnbind(mc, cu, 0, size);
      p_cuMemUnmap(uc[k], size);
      p_cuMemAddressFree(uc[k], size);
      p_cuMemRelease(mem[k]);
    }
    if (mc) p_cuMemRelease(mc);
    mc = 0;
    mc_va = 0;
    uc.clear();
    mem.clear();
  }
};

// ------------------------------------------------------------------------------------------------ host
int main(int argc, char** argv) {
  Args a(argc, argv);
  if (a.has("--help") || a.has("-h")) {
    fputs(kHelp, stdout);
    return 0;
  }
  refuse_unless_allowed(a);  // before any CUDA call

  const auto ops = a.list("--ops", "ld_reduce,st,red");
  const auto sizes = a.sizes("--bytes", "1M,16M,256M");
  const int threads = static_cast<int>(a.integer("--threads", 512));
  const int warmup = static_cast<int>(a.integer("--warmup", 3));
  const int iters = static_cast<int>(a.integer("--iters", 20));
  for (const auto& op : ops)
    if (op != "ld_reduce" && op != "st" && op != "red") fail(g_program, "unknown op '" + op + "'", 2);
  const int ngpu = device_count_or_zero();
  std::vector<int> devs;
  for (const auto& s : a.list("--devices", "")) devs.push_back(static_cast<int>(Args::parse_size(s)));
  if (devs.empty())
    for (int d = 0; d < ngpu; ++d) devs.push_back(d);
  if (devs.size() < 2) fail(g_program, "multicast needs at least 2 GPUs");
  for (int d : devs)
    if (d >= ngpu) fail(g_program, "device id out of range");
  print_meta(g_program, a, devs, "NVLink multicast enabled by --allow-multicast and NCCL_NVLS_ENABLE");
  const int ndev = static_cast<int>(devs.size());
  cudaDeviceProp p;
  RL_CHECK(cudaGetDeviceProperties(&p, devs[0]));
  const int sms = static_cast<int>(a.integer("--sms", p.multiProcessorCount));
  const uint64_t seed = seed_from(a);

  std::vector<float*> src(ndev), out(ndev);
  std::vector<cudaStream_t> st(ndev);
  std::vector<cudaEvent_t> e0(ndev), e1(ndev);
  std::vector<Counter> bad(ndev);
  long long max_bytes = 0;
  for (long long b : sizes) {
    if (b < 16 * ndev || b % (16LL * ndev)) fail(g_program, "--bytes must be multiples of 16 x GPUs", 2);
    max_bytes = std::max(max_bytes, b);
  }
  for (int k = 0; k < ndev; ++k) {
    RL_CHECK(cudaSetDevice(devs[k]));
    RL_CHECK(cudaMalloc(&src[k], max_bytes));
    RL_CHECK(cudaMalloc(&out[k], max_bytes));
    RL_CHECK(cudaStreamCreateWithFlags(&st[k], cudaStreamNonBlocking));
    RL_CHECK(cudaEventCreate(&e0[k]));
    RL_CHECK(cudaEventCreate(&e1[k]));
    bad[k].init(devs[k]);
  }
  const uint64_t base_seed = seed * 7 + 1000;

  for (long long bytes_ll : sizes) {
    const size_t bytes = static_cast<size_t>(bytes_ll);
    const size_t n4 = bytes / 16, n = bytes / 4, slice = n4 / ndev;
    Multicast m;
    m.create(devs, bytes);
    for (const auto& op : ops) {
      auto seed_buffers = [&] {
        for (int k = 0; k < ndev; ++k) {
          RL_CHECK(cudaSetDevice(devs[k]));
          fill_small_f32<<<1024, 256>>>(src[k], n, seed + k);
          fill_small_f32<<<1024, 256>>>(reinterpret_cast<float*>(m.uc[k]), n, base_seed);
          RL_CHECK_LAUNCH();
          RL_CHECK(cudaDeviceSynchronize());
        }
        if (op == "ld_reduce")  // the multicast buffers hold the operands
          for (int k = 0; k < ndev; ++k) {
            RL_CHECK(cudaSetDevice(devs[k]));
            RL_CHECK(cudaMemcpy(reinterpret_cast<void*>(m.uc[k]), src[k], bytes, cudaMemcpyDeviceToDevice));
          }
      };
      auto launch = [&](int k) {
        RL_CHECK(cudaSetDevice(devs[k]));
        float4* mc = reinterpret_cast<float4*>(m.mc_va);
        if (op == "ld_reduce") mm_ld_reduce<<<sms, threads, 0, st[k]>>>(reinterpret_cast<float4*>(out[k]), mc, n4);
        else if (op == "st")
          mm_st<<<sms, threads, 0, st[k]>>>(mc, reinterpret_cast<float4*>(src[k]), k * slice,
                                             k == ndev - 1 ? n4 : (k + 1) * slice);
        else mm_red<<<sms, threads, 0, st[k]>>>(mc, reinterpret_cast<float4*>(src[k]), n4);
        RL_CHECK_LAUNCH();
      };
      seed_buffers();
      std::vector<double> t;
      for (int it = 0; it < warmup + iters; ++it) {
        for (int k = 0; k < ndev; ++k) {
          RL_CHECK(cudaSetDevice(devs[k]));
          RL_CHECK(cudaEventRecord(e0[k], st[k]));
          launch(k);
          RL_CHECK(cudaEventRecord(e1[k], st[k]));
        }
        double worst = 0;
        for (int k = 0; k < ndev; ++k) {
          RL_CHECK(cudaSetDevice(devs[k]));
          RL_CHECK(cudaEventSynchronize(e1[k]));
          float ms = 0;
          RL_CHECK(cudaEventElapsedTime(&ms, e0[k], e1[k]));
          worst = std::max(worst, ms * 1e-3);
        }
        if (it >= warmup) t.push_back(worst);
      }
      // Verified run on freshly seeded buffers.
      seed_buffers();
      for (int k = 0; k < ndev; ++k) launch(k);
      for (int k = 0; k < ndev; ++k) {
        RL_CHECK(cudaSetDevice(devs[k]));
        RL_CHECK(cudaStreamSynchronize(st[k]));
      }
      unsigned long long nbad = 0;
      for (int k = 0; k < ndev; ++k) {
        RL_CHECK(cudaSetDevice(devs[k]));
        bad[k].reset(nullptr);
        const float* check = op == "ld_reduce" ? out[k] : reinterpret_cast<const float*>(m.uc[k]);
        const int kind = op == "ld_reduce" ? 0 : (op == "st" ? 1 : 2);
        count_mm_mismatch<<<1024, 256>>>(check, n, seed, ndev, kind, base_seed, slice, bad[k].d);
        RL_CHECK_LAUNCH();
        nbad += bad[k].read(nullptr);
      }
      const Stats s = stats(t);
      Json j;
      j.str("record", "point").str("program", g_program).str("op", op).integer("gpus", ndev);
      j.integer("bytes", bytes_ll).integer("sms", sms).integer("threads_per_block", threads).str("dtype", "f32");
      j.integer("iters", iters).integer("warmup", warmup);
      put_stats(j, "time_s", s);
      j.num("bytes_per_s", bytes / s.median).boolean("verified", nbad == 0).integer("mismatches", static_cast<long long>(nbad));
      j.print();
    }
    m.destroy();
  }
  return 0;
}
