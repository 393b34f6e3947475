typedef struct dim3 { unsigned x, y, z; } dim3;
typedef struct ihipStream_t* hipStream_t;
typedef int hipError_t;
extern "C" hipError_t hipLaunchKernel(const void*, dim3, dim3, void**, unsigned long, hipStream_t);
