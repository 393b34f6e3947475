// Ground truth for NVIDIA occupancy on compute capability 7.0 (Volta) and 7.5 (Turing): NVIDIA's own
// cuda_occupancy.h, compiled on the host (the header is standalone C++; no GPU, no CUDA toolkit).
//
// The device properties are filled by hand from the values cited in kernelscope/data/arch/sm_70.yaml and
// sm_75.yaml (the header itself holds the per-capability tables: block limit, register and shared
// allocation granularity, sub-partitions, carve-out sizes). Each case is one kernel (registers per thread,
// static shared bytes) launched with one block size and dynamic shared size, and the result is
// cudaOccMaxActiveBlocksPerMultiprocessor()'s activeBlocksPerMultiprocessor.
//
// Kernel attributes: the kernel opted in to the per-block maximum (FUNC_SHMEM_LIMIT_OPTIN,
// maxDynamicSharedSizeBytes = sharedMemPerBlockOptin - static), 1 block barrier (the runtime's
// default), no partitioned global caching. Device state: cacheConfig PREFER_NONE, carve-out DEFAULT (-1).
//
// Build and run (the header comes from the nvidia-cuda-runtime-cu12 wheel on PyPI):
//   pip download --no-deps nvidia-cuda-runtime-cu12==12.8.90 -d /tmp/wheel && cd /tmp/wheel && unzip -q *.whl
//   g++ -std=c++17 -O2 -Wall -I/tmp/wheel/nvidia/cuda_runtime/include bench/occupancy_reference.cpp -o /tmp/occref
//   /tmp/occref "nvidia-cuda-runtime-cu12==12.8.90" "<the g++ line>" > tests/data/occupancy/cuda_occupancy_h_sm70_sm75.json
#include <cstdio>
#include <cstdint>
#include <string>
#include <vector>

#include "cuda_occupancy.h"

struct Arch {
    const char *name;
    int major, minor;
    int threads_per_sm;
    size_t smem_per_sm, smem_per_block_optin;
};

// max threads per SM and shared memory per SM / per block (opt-in) as cited in the YAML files;
// the rest is common to both: 1024 threads per block, 64 K registers per SM and per block, warp 32,
// 48 KB per block without the opt-in, no per-block reservation before compute capability 8.0.
static const Arch ARCHS[] = {
    {"sm_70", 7, 0, 2048, 96 * 1024, 96 * 1024},
    {"sm_75", 7, 5, 1024, 64 * 1024, 64 * 1024},
};

struct Case {
    int regs, block;
    size_t static_smem, dynamic_smem;
};

static uint64_t lcg = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(uint32_t n) {
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)((lcg >> 33) % n);
}

static std::vector<Case> cases_for(const Arch &a) {
    std::vector<Case> out;
    const int regs[] = {0, 16, 24, 32, 40, 48, 56, 64, 72, 80, 96, 128, 168, 200, 255};
    const int blocks[] = {32, 64, 96, 128, 160, 192, 256, 384, 512, 640, 768, 1024};
    // 1. registers x block size, no shared memory
    for (int r : regs)
        for (int b : blocks) out.push_back({r, b, 0, 0});
    // 2. shared memory sweep near the 256-byte allocation unit, the carve-out sizes and the per-block limit
    std::vector<size_t> smem = {1, 255, 256, 257, 1024, 4096, 6143, 6144, 8191, 8192, 8193, 12288, 16383, 16384,
                                16385, 21846, 24576, 32767, 32768, 32769, 40000, 49151, 49152, 49153};
    for (size_t kb : {64, 96}) {
        size_t x = kb * 1024;
        if (x <= a.smem_per_block_optin) smem.insert(smem.end(), {x - 257, x - 256, x - 1, x});
    }
    smem.push_back(a.smem_per_block_optin + 1);  // over the per-block limit: 0 blocks
    for (size_t s : smem)
        for (int b : {32, 128, 256, 1024}) out.push_back({32, b, 0, s});
    // 3. static + dynamic split (static at most 48 KB, as the compiler allows)
    for (size_t st : {100, 2048, 12000, 49152})
        for (size_t dy : {0, 156, 8192, 16384, 30000}) out.push_back({64, 256, st, dy});
    // 4. random kernels and launches
    for (int i = 0; i < 120; ++i) {
        int r = (int)rnd(256);
        int b = 32 * (1 + (int)rnd(32));
        if (rnd(4) == 0) b -= (int)rnd(31);  // block sizes that are not a multiple of the warp
        size_t st = rnd(3) == 0 ? rnd(49153) : 0;
        size_t dy = rnd(2) == 0 ? rnd((uint32_t)(a.smem_per_block_optin - st + 1)) : 0;
        out.push_back({r, b, st, dy});
    }
    return out;
}

static std::string esc(const char *s) {
    std::string o;
    for (; *s; ++s) {
        if (*s == '"' || *s == '\\') o += '\\';
        o += *s;
    }
    return o;
}

int main(int argc, char **argv) {
    const char *wheel = argc > 1 ? argv[1] : "unknown";
    const char *cmd = argc > 2 ? argv[2] : "unknown";
    std::printf("{\n \"source\": \"cuda_occupancy.h cudaOccMaxActiveBlocksPerMultiprocessor(), compiled on the host\",\n");
    std::printf(" \"header\": \"nvidia/cuda_runtime/include/cuda_occupancy.h from the PyPI wheel %s\",\n", esc(wheel).c_str());
    std::printf(" \"program\": \"bench/occupancy_reference.cpp\",\n \"compile\": \"%s\",\n", esc(cmd).c_str());
    std::printf(" \"function_attributes\": \"maxThreadsPerBlock 1024, shmemLimitConfig FUNC_SHMEM_LIMIT_OPTIN, "
                "maxDynamicSharedSizeBytes = sharedMemPerBlockOptin - static, numBlockBarriers 1, partitionedGCConfig OFF\",\n");
    std::printf(" \"device_state\": \"cacheConfig CACHE_PREFER_NONE, carveoutConfig SHAREDMEM_CARVEOUT_DEFAULT\",\n");
    std::printf(" \"devices\": {");
    for (size_t i = 0; i < sizeof(ARCHS) / sizeof(ARCHS[0]); ++i) {
        const Arch &a = ARCHS[i];
        std::printf("%s\n  \"%s\": {\"computeMajor\": %d, \"computeMinor\": %d, \"maxThreadsPerBlock\": 1024, "
                    "\"maxThreadsPerMultiprocessor\": %d, \"regsPerBlock\": 65536, \"regsPerMultiprocessor\": 65536, "
                    "\"warpSize\": 32, \"sharedMemPerBlock\": 49152, \"sharedMemPerMultiprocessor\": %zu, "
                    "\"sharedMemPerBlockOptin\": %zu, \"reservedSharedMemPerBlock\": 0}",
                    i ? "," : "", a.name, a.major, a.minor, a.threads_per_sm, a.smem_per_sm, a.smem_per_block_optin);
    }
    std::printf("\n },\n \"cases\": [");
    bool first = true;
    for (const Arch &a : ARCHS) {
        cudaOccDeviceProp prop;
        prop.computeMajor = a.major;
        prop.computeMinor = a.minor;
        prop.maxThreadsPerBlock = 1024;
        prop.maxThreadsPerMultiprocessor = a.threads_per_sm;
        prop.regsPerBlock = 65536;
        prop.regsPerMultiprocessor = 65536;
        prop.warpSize = 32;
        prop.sharedMemPerBlock = 49152;
        prop.sharedMemPerMultiprocessor = a.smem_per_sm;
        prop.numSms = 1;
        prop.sharedMemPerBlockOptin = a.smem_per_block_optin;
        prop.reservedSharedMemPerBlock = 0;
        cudaOccDeviceState state;
        state.cacheConfig = CACHE_PREFER_NONE;
        state.carveoutConfig = SHAREDMEM_CARVEOUT_DEFAULT;
        for (const Case &c : cases_for(a)) {
            cudaOccFuncAttributes attr;
            attr.maxThreadsPerBlock = 1024;
            attr.numRegs = c.regs;
            attr.sharedSizeBytes = c.static_smem;
            attr.partitionedGCConfig = PARTITIONED_GC_OFF;
            attr.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;
            attr.maxDynamicSharedSizeBytes = a.smem_per_block_optin - c.static_smem;
            attr.numBlockBarriers = 1;
            cudaOccResult res;
            cudaOccError err = cudaOccMaxActiveBlocksPerMultiprocessor(&res, &prop, &attr, &state, c.block, c.dynamic_smem);
            std::printf("%s\n  {\"arch\": \"%s\", \"registers\": %d, \"block\": %d, \"static_shared\": %zu, "
                        "\"dynamic_shared\": %zu, \"status\": %d, \"blocks_per_sm\": %d, \"limiting\": %u}",
                        first ? "" : ",", a.name, c.regs, c.block, c.static_smem, c.dynamic_smem, (int)err,
                        err == CUDA_OCC_SUCCESS ? res.activeBlocksPerMultiprocessor : -1,
                        err == CUDA_OCC_SUCCESS ? res.limitingFactors : 0u);
            first = false;
        }
    }
    std::printf("\n ]\n}\n");
    return 0;
}
