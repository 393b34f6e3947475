#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
extern "C" __global__ void scale_kernel(float* x, float a, int n) {
  int i = __builtin_amdgcn_workitem_id_x() + __builtin_amdgcn_workgroup_id_x() * 256;
  if (i < n) x[i] *= a;
}
template <typename T, int N> __global__ void tiled(T* x) {
  __shared__ T buf[N];
  buf[__builtin_amdgcn_workitem_id_x()] = x[__builtin_amdgcn_workitem_id_x()];
  __builtin_amdgcn_s_barrier();
  x[1] = buf[N - 1 - __builtin_amdgcn_workitem_id_x()];
}
template __global__ void tiled<float, 1024>(float*);
