#include <hip/hip_runtime.h>

#if defined(__HIPCC__) && (defined(__gfx90a__) || defined(__gfx942__))
  #define __HIP__MI3XX__
#endif

// This version targets cases where A[] fits LDS capacity
template <typename scalar_t, int THRDS, int YTILE, int WvPrGrp, int A_CHUNK,
          int UNRL, int N>
__global__ void __launch_bounds__(WvPrGrp* THRDS)
    wvSplitK_hf_sml_(const int K, const int M, const scalar_t* B,
                     const scalar_t* __restrict__ A, scalar_t* C,
                     const int _WvPrGrp, const int CuCount) {
  constexpr int max_lds_len = 64 * 1024 / 2;
}

torch::Tensor wvSplitK(const at::Tensor& in_a, const at::Tensor& in_b, const int64_t CuCount) {
  wvSplitK_hf_sml_<fptype, 64, 4, 16, 8, 1, 4><<<grid, block, 0, stream>>>(K, M, af4, bf4, c, 16, CuCount);
}
