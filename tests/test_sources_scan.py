"""The per-file readers of the source index, on snippets written the way the real projects write them."""

from __future__ import annotations

from kernelscope.sources import scan


def test_global_kernels_with_bounds_namespaces_and_declarations() -> None:
    code = """
namespace vllm {
namespace moe {
template <int N>
__global__ void __launch_bounds__(256, 2) topkGating(const float* x);   // declaration only
template <int N>
__global__ void __launch_bounds__(256, 2)
    topkGating(const float* x) {
}
}  // namespace moe
static __global__ C10_LAUNCH_BOUNDS_1(128) void plain_kernel(int n) {}
}  // namespace vllm
__global__ void Marlin(MARLIN_KERNEL_PARAMS);
"""
    defs = [(d.symbol, d.line, d.kind, d.namespace) for d in scan.cxx_definitions(code, "csrc/moe/k.cu")]
    assert ("topkGating", 8, "global", "vllm::moe") in defs
    assert ("plain_kernel", 11, "global", "vllm") in defs
    assert all(d[0] != "Marlin" for d in defs) and [d for d in defs if d[0] == "topkGating"] == [defs[0]]


def test_kernels_written_the_way_faiss_raft_and_mooncake_write_them() -> None:
    """Finder set 6 (RESULTS.md): FAISS's ``__launch_bounds__(getLaunchBound(), 3)`` was read as the kernel
    ``getLaunchBound``; RAFT declares every kernel through ``RAFT_KERNEL`` (``static __global__ void``); a
    template default in parentheses that compares (``kNumScaleoutRanks > 1``) closed Mooncake's template list
    early, so its 13-parameter kernel read as no template."""
    code = """
#define RAFT_KERNEL static __global__ void
namespace faiss { namespace gpu {
template <typename OutCodeT, int DimsPerSubQuantizer, bool L2Distance>
__global__ void __launch_bounds__(getLaunchBound(), 3) pqCodeDistances(Tensor<float, 2> x) {
}
}}
namespace raft::linalg::detail {
template <typename Policy, typename InType, typename OutType>
RAFT_KERNEL __launch_bounds__(Policy::ThreadsPerBlock) coalescedSumThinKernel(OutType* dots, const InType* data) {
}
RAFT_KERNEL map_kernel(float* out, int len);
}
namespace mooncake::elastic {
template <bool kCachedMode, int kNumRanks, int kNumChannels,
          int kNumThreads = kNumRanks * 32,
          bool kDoCreateLinkedList = (kNumRanks > 1 and not kCachedMode)>
__global__ void __launch_bounds__(kNumThreads, 1) dispatch_copy_epilogue_impl(void* buffer) {
}
}
"""
    defs = {d.symbol: (d.line, d.kind, d.namespace, d.arity) for d in scan.cxx_definitions(code, "include/k.cuh")}
    assert defs["pqCodeDistances"] == (5, "global", "faiss::gpu", 3) and "getLaunchBound" not in defs
    assert defs["coalescedSumThinKernel"] == (10, "global", "raft::linalg::detail", 3)
    assert "map_kernel" not in defs  # declared, not defined
    assert defs["dispatch_copy_epilogue_impl"] == (18, "global", "mooncake::elastic", 5)


def test_a_macro_defined_as_global_marks_kernels_where_used_not_where_defined() -> None:
    """``#define RAFT_KERNEL static __global__ void`` holds a ``__global__`` of its own: read there, it named the next
    kernel of the file a second time with no template parameters; a project macro whose name does not say KERNEL
    (``#define DEVICE_ENTRY __global__``) hid the kernels declared through it."""
    code = """#define RAFT_KERNEL static __global__ void
#define DEVICE_ENTRY __global__ \\
    __launch_bounds__(256)
namespace raft {
template <typename T>
RAFT_KERNEL scale_kernel(T* x) { }
DEVICE_ENTRY void copy_rows(int* y) { }
}
"""
    defs = [(d.symbol, d.line, d.namespace, d.arity) for d in scan.cxx_definitions(code, "include/k.cuh")]
    assert sorted(defs) == [("copy_rows", 7, "raft", 0), ("scale_kernel", 6, "raft", 1)]


def test_a_kernel_stamping_macro_may_spell_global_through_an_alias() -> None:
    """A function-like macro that stamps kernels (``DEFINE_SCALE(name)``) may write ``__global__`` through the
    file's object-like alias for it (``DEVICE_ENTRY``): its invocations define the kernels they name."""
    code = """#define DEVICE_ENTRY static __global__
#define DEFINE_SCALE(name, T) DEVICE_ENTRY void name(T* x) { }
#define DEFINE_HELPER(name) __device__ void name(float* x) { }
namespace ops {
DEFINE_SCALE(scale_rows, float)
DEFINE_HELPER(not_a_kernel)
}
"""
    defs = [(d.symbol, d.line, d.kind, d.namespace) for d in scan.cxx_definitions(code, "csrc/k.cu")]
    assert [d for d in defs if d[2] in ("macro", "global")] == [("scale_rows", 5, "macro", "ops")]


def test_export_macro_namespaces_and_templated_kernel_names() -> None:
    """Finder set 7: cuGraph opens ``namespace CUGRAPH_EXPORT cugraph {`` (read as no namespace, so every
    ``cugraph::detail::`` kernel stayed ambiguous), and FBGEMM's embedding kernels are Jinja templates whose names
    are spelled with placeholders; the forward declaration, whose placeholder calls a function, is not a definition,
    and a name that is almost all placeholder names nothing."""
    code = """namespace CUGRAPH_EXPORT cugraph {
namespace detail {
template <typename GraphViewType>
__global__ static void decompress_to_edgelist_high_degree(GraphViewType g) {}
}  // namespace detail
}  // namespace CUGRAPH_EXPORT cugraph
namespace nbit {
template <typename index_t>
__global__ void
{%- if is_index_select %}
batch_index_select_kernel(
{%- else %}
{{ mdesc }}_embedding{{ ndesc }}_codegen_forward_{{ get_desc_suffix(gwd) }}_kernel(
{%- endif %}
    const index_t* indices);
template <typename index_t>
__global__ void @NBIT@(
    const index_t* indices) {
}
__global__ void {{ name }}_k(int* x) {}
}  // namespace nbit
""".replace(
        "@NBIT@",
        '{{ emb_weight_type.enum_name }}_split_embedding{{ "_nobag" if nobag else "" }}_codegen_forward_{{ wdesc }}'
        "_kernel_small_L",
    )
    defs = [(d.symbol, d.line, d.kind, d.namespace, d.arity) for d in scan.cxx_definitions(code, "codegen/t.cu")]
    assert ("decompress_to_edgelist_high_degree", 4, "global", "cugraph::detail", 1) in defs
    templated = [d for d in defs if d[2] == scan.TEMPLATED]
    symbol = "{{}}_split_embedding{{}}_codegen_forward_{{}}_kernel_small_L"
    assert templated == [(symbol, 17, "templated", "nbit", None)]
    assert scan.templated_match(templated[0][0], "INT4_split_embedding_nobag_codegen_forward_weighted_kernel_small_L")
    assert not scan.templated_match(templated[0][0], "INT4_split_embedding_codegen_backward_weighted_kernel_small_L")


def test_kernels_written_the_way_cccl_rocprim_and_nccl_write_them() -> None:
    """Finder set 8: CCCL declares CUB's kernels through ``_CCCL_KERNEL_ATTRIBUTES`` (after ``__launch_bounds__``
    and a C++20 ``requires`` clause), rocPRIM through ``ROCPRIM_KERNEL`` on a line of its own, and NCCL pastes its
    kernels' names in a macro (``ncclDevKernel_##suffix``), which is indexed as a name pattern."""
    code = """CUB_NAMESPACE_BEGIN
namespace detail::select {
template <typename PolicySelectorT, typename InputIteratorT, typename OffsetT>
  requires select_if_policy_selector<PolicySelectorT>
__launch_bounds__(int(policy<PolicySelectorT>::BLOCK_THREADS))
  _CCCL_KERNEL_ATTRIBUTES void DeviceSelectSweepKernel(const InputIteratorT d_in, OffsetT n)
{
}
}
CUB_NAMESPACE_END
template<class Config, bool Descending>
ROCPRIM_KERNEL
    __launch_bounds__(device_params<Config>().histogram.block_size) void onesweep_histograms_kernel(int* h)
{
}
#define DEFINE_ncclDevKernel(suffix, coll, redop, ty) \\
  __global__ void ncclDevKernel_##suffix(ncclDevKernelArgs4K const args4K) { \\
  }
"""
    defs = {d.symbol: (d.line, d.kind, d.namespace, d.arity) for d in scan.cxx_definitions(code, "cub/k.cuh")}
    assert defs["DeviceSelectSweepKernel"] == (6, "global", "CUB_NAMESPACE_BEGIN::detail::select", 3)
    assert defs["onesweep_histograms_kernel"] == (13, "global", "", 2)
    assert defs["ncclDevKernel_{{}}"] == (16, scan.TEMPLATED, "", None)


def test_macro_stamped_kernels() -> None:
    code = (
        "#define DEFINE_FLASH_FORWARD_KERNEL(kernelName, ...) \\\n"
        "template<typename Kernel_traits, __VA_ARGS__> \\\n"
        "__global__ void kernelName(KERNEL_PARAM_MODIFIER const Flash_fwd_params params)\n\n"
        "DEFINE_FLASH_FORWARD_KERNEL(flash_fwd_kernel, bool Is_dropout) {\n}\n"
    )
    defs = scan.cxx_definitions(code, "csrc/flash_attn/src/flash_fwd_launch_template.h")
    assert [(d.symbol, d.line, d.kind) for d in defs] == [("flash_fwd_kernel", 5, "macro")]


def test_headers_without_gpu_code_are_skipped() -> None:
    assert scan.cxx_definitions("struct Options { int x; };", "include/options.h") == []
    assert [d.symbol for d in scan.cxx_definitions("struct Options { int x; };", "src/k.cu")] == ["Options"]


def test_triton_decorators_spanning_lines() -> None:
    code = """
@triton.autotune(
    configs=[triton.Config({"BLOCK": 64})],
    key=["n"],
)
@triton.jit
def _kernel(x_ptr, n, BLOCK: tl.constexpr):
    pass


def helper():
    pass


@jit
def other_kernel(x):
    pass
"""
    defs = [(d.symbol, d.line, d.kind) for d in scan.python_definitions(code)]
    assert defs == [("_kernel", 7, "triton"), ("other_kernel", 16, "triton")]


def test_python_test_references_know_their_test() -> None:
    code = """from vllm import _custom_ops as ops


class TestNorm:
    def test_rms_norm(self):
        ops.rms_norm(1)


def test_fused():
    ops.fused_add_rms_norm(2)
    ops.rms_norm(3)
"""
    refs = {(r.token, r.test) for r in scan.python_test_refs(code, frozenset({"rms_norm", "fused_add_rms_norm"}))}
    assert refs == {
        ("rms_norm", "TestNorm::test_rms_norm"),
        ("fused_add_rms_norm", "test_fused"),
        ("rms_norm", "test_fused"),
    }


def test_cmake_targets_and_test_paths() -> None:
    cmake = "add_gtest_executable(test_gemm_universal test_gemm_universal_bf16.cpp test_util.cpp)\n"
    assert scan.cmake_targets(cmake) == [("test_gemm_universal", ["test_gemm_universal_bf16.cpp", "test_util.cpp"])]
    assert scan.is_test_path("tests/kernels/core/test_layernorm.py")
    assert scan.is_test_path("test/gemm/gemm_bf16.cpp")
    assert not scan.is_test_path("tests/utils.py")
    assert not scan.is_test_path("vllm/model_executor/layers/layernorm.py")


def test_aiter_symbols_in_tables_and_code_objects() -> None:
    table = "arch,knl_name\ngfx942,_ZN5aiter19fmha_fwd_hd128_bf16E\n"
    assert [(d.symbol, d.line) for d in scan.asm_definitions(table)] == [("fmha_fwd_hd128_bf16", 2)]
    elf = "\x7fELF\x00\x00_ZN5aiter19fmha_fwd_hd128_bf16E\x00_ZN5aiter19fmha_fwd_hd128_bf16E.kd\x00"
    assert [d.symbol for d in scan.asm_definitions(elf)] == ["fmha_fwd_hd128_bf16"]


def test_cutlass_headers_count_as_gpu_sources() -> None:
    code = (
        "namespace flash {\ntemplate <class M>\nclass FlashAttnFwdSm90 {\n"
        "  CUTLASS_DEVICE void operator()() {}\n};\n}\n"
    )
    defs = [
        (d.symbol, d.line, d.kind, d.namespace) for d in scan.cxx_definitions(code, "hopper/flash_fwd_kernel_sm90.h")
    ]
    assert defs == [("FlashAttnFwdSm90", 3, "struct", "flash")]
