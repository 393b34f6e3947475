// DON'T include this except from Binary*.cu files. It should not leak into
// headers.
#pragma once
#include <ATen/native/cuda/Loops.cuh>

namespace at::native {
namespace binary_internal {

template <typename scalar_t>
struct MulFunctor {
  __device__ scalar_t operator()(scalar_t a, scalar_t b) const {
    return a * b;
  }
};

} // namespace binary_internal
} // namespace at::native
