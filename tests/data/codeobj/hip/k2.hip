#define __global__ __attribute__((global))
// a second translation unit: the host library's .hip_fatbin gets a second offload bundle
extern "C" __global__ void add_kernel(float* x, const float* y, int n) {
  int i = __builtin_amdgcn_workitem_id_x() + __builtin_amdgcn_workgroup_id_x() * 256;
  if (i < n) x[i] += y[i];
}
