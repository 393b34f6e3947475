"""``kscope tune`` for ``@triton.autotune`` kernels, without a GPU: the autotuner's configs as a space, the
target's config matching and errors, and the offline screen for gfx942 and sm_90 — checked against Triton's
own account of the same compiles (the AMDGPU assembly's metadata, ptxas's report, ``metadata.shared``).

The fixture is tests/data/tune/matmul_autotune.py: two small configs, one whose pipelined tiles need far more
shared memory/LDS than either GPU has, one that spills.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

triton = pytest.importorskip("triton")

from kernelscope.analyses.occupancy import arch_limits  # noqa: E402
from kernelscope.errors import InputError  # noqa: E402
from kernelscope.model.codeobj import KernelCode  # noqa: E402
from kernelscope.model.tune import Candidate, Params, Space  # noqa: E402
from kernelscope.tune.protocol import Setup  # noqa: E402
from kernelscope.tune.screen import Planner, Screening, gpu_target, hip_linker, jit_function, screen  # noqa: E402
from kernelscope.tune.triton_target import (  # noqa: E402
    TritonTarget,
    autotune_keys,
    autotune_space,
    config_params,
)

FIXTURE = Path(__file__).parent / "data" / "tune" / "matmul_autotune.py"
SPEC = f"{FIXTURE}:matmul_kernel"
SHAPE: Params = {"M": 4096, "N": 4096, "K": 4096}
# the JIT sees a contiguous row-major operand's inner stride as 1 and the outer one as a multiple of 16
SIGNATURE = {
    "a_ptr": "*fp16",
    "b_ptr": "*fp16",
    "c_ptr": "*fp16",
    "stride_am": "i32:16",
    "stride_ak": "i32:1",
    "stride_bk": "i32:16",
    "stride_bn": "i32:1",
    "stride_cm": "i32:16",
    "stride_cn": "i32:1",
}
SMALL: list[Params] = [
    {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8, "num_warps": 4, "num_stages": 2},
    {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8, "num_warps": 4, "num_stages": 2},
]
TOO_BIG: Params = {
    "BLOCK_SIZE_M": 256,
    "BLOCK_SIZE_N": 256,
    "BLOCK_SIZE_K": 128,
    "GROUP_SIZE_M": 8,
    "num_warps": 8,
    "num_stages": 5,
}
SPILLS: Params = {
    "BLOCK_SIZE_M": 256,
    "BLOCK_SIZE_N": 256,
    "BLOCK_SIZE_K": 32,
    "GROUP_SIZE_M": 8,
    "num_warps": 4,
    "num_stages": 2,
}


def cid(config: Params) -> str:
    return Candidate(shape=SHAPE, config=config).id


@pytest.fixture(scope="module")
def cache() -> Iterator[Path]:
    """One Triton cache for the screens' compile processes and this process, so the ground-truth compiles
    below are the screens' own (cache hits), not a second compile that might differ."""
    with tempfile.TemporaryDirectory(prefix="kscope-triton-cache-") as tmp, pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRITON_CACHE_DIR", tmp)
        yield Path(tmp)


@pytest.fixture(scope="module")
def screens(cache: Path) -> Callable[[str], Screening]:
    """The fixture's autotune space screened for an architecture, once per module."""
    done: dict[str, Screening] = {}

    def get(arch: str) -> Screening:
        if arch not in done:
            done[arch] = screen(SPEC, autotune_space(SPEC), [SHAPE], signature=SIGNATURE, arch=arch)
        return done[arch]

    return get


def compiled(arch: str, config: Params) -> Any:
    """The same compile the screen ran (same job, same cache), in this process: Triton's own result."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, make_backend

    job = planner(arch).job(config, SHAPE)
    if job.target[0] == "hip":
        hip_linker()  # Triton before 3.5 links AMD code with an external ld.lld
    jit, _ = jit_function(SPEC)
    target = GPUTarget(*job.target)
    backend = make_backend(target)
    attrs = {(jit.arg_names.index(n),): backend.parse_attr(d) for n, d in job.attrs.items()}
    src = ASTSource(jit, signature=job.signature, constexprs=job.constexprs, attrs=attrs)
    return triton.compile(src, target=target, options=dict(job.options))


def planner(arch: str) -> Planner:
    lim = arch_limits(arch)
    assert lim is not None
    return Planner(SPEC, SIGNATURE, gpu_target(lim))


# --- the autotuner as a space ---


def test_autotune_space_lists_the_configs_in_order() -> None:
    space = autotune_space(SPEC)
    assert space.configs == [*SMALL, TOO_BIG, SPILLS]
    assert not space.params
    assert autotune_keys(SPEC) == ["M", "N", "K"]


def test_config_params_keeps_non_default_launch_options_only() -> None:
    plain = triton.Config({"BLOCK": 64}, num_warps=2, num_stages=1)
    assert config_params(plain) == {"BLOCK": 64, "num_warps": 2, "num_stages": 1}
    cluster = triton.Config({"BLOCK": 64}, num_warps=8, num_stages=3, num_ctas=2, maxnreg=128)
    assert config_params(cluster) == {"BLOCK": 64, "num_warps": 8, "num_ctas": 2, "num_stages": 3, "maxnreg": 128}


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("matmul_jit", "plain @triton.jit kernel has no autotune configs; give a space with --space"),
        ("CONFIGS", "expected a @triton.autotune kernel, found list"),
    ],
)
def test_autotune_space_refuses_what_is_not_an_autotuner(name: str, message: str) -> None:
    with pytest.raises(InputError, match=re.escape(message)):
        autotune_space(f"{FIXTURE}:{name}")


# --- the target, up to the launch ---


def test_target_needs_a_launch_function() -> None:
    with pytest.raises(InputError, match=r"needs --launch FILE\.py:FUNC"):
        TritonTarget(Setup(kind="triton", spec=SPEC))


def test_target_finds_the_triton_config_of_each_params() -> None:
    target = TritonTarget(Setup(kind="triton", spec=SPEC, launch=f"{FIXTURE}:launch"))
    for config in autotune_space(SPEC).configs:
        assert config_params(target.find_config(config)) == config
    with pytest.raises(InputError, match="is not one of the 4 configs"):
        target.find_config({**SMALL[0], "num_warps": 16})


def test_target_refuses_a_launch_that_sets_a_config_knob() -> None:
    target = TritonTarget(Setup(kind="triton", spec=SPEC, launch=f"{FIXTURE}:launch_setting_a_config_knob"))
    with pytest.raises(InputError, match="'kwargs' sets BLOCK_SIZE_M, which the autotune configs set"):
        target.build(SMALL[0], SHAPE)


# --- the screen ---


@pytest.mark.parametrize("arch", ["gfx942", "sm_90"])
def test_screen_drops_the_oversized_and_the_spilling_config_with_reasons(
    arch: str, screens: Callable[[str], Screening]
) -> None:
    result = screens(arch)
    assert result.compiles == 4
    assert set(result.kernels) == {cid(c) for c in [*SMALL, TOO_BIG, SPILLS]}
    assert set(result.dropped) == {cid(TOO_BIG), cid(SPILLS)}
    big, spill = result.dropped[cid(TOO_BIG)], result.dropped[cid(SPILLS)]
    assert big.status == spill.status == "pruned"
    limit = {
        "gfx942": "LDS per workgroup 524,288 B > gfx942's limit 65,536 B",
        "sm_90": "shared memory per block 655,360 B > sm_90's limit 232,448 B",
    }
    assert big.detail == limit[arch]
    assert spill.detail.startswith("spills ") and spill.detail.endswith(
        "while a spill-free config of this shape compiled"
    )
    for config in SMALL:
        k = result.kernels[cid(config)]
        assert k.occupancy is not None and k.occupancy.pct > 0


def test_screen_reads_what_the_amd_compiler_reports(screens: Callable[[str], Screening]) -> None:
    """kscope's reading of each hsaco (ELF note) against the AMDGPU assembly's own metadata and Triton's."""
    result = screens("gfx942")
    for config in [*SMALL, TOO_BIG, SPILLS]:
        k: KernelCode = result.kernels[cid(config)]
        truth = compiled("gfx942", config)
        notes = dict(re.findall(r"^[\s-]+\.(\w+):\s+(\d+)$", truth.asm["amdgcn"], re.MULTILINE))
        assert (k.vgpr, k.agpr, k.sgpr) == (
            int(notes["vgpr_count"]),
            int(notes["agpr_count"]),
            int(notes["sgpr_count"]),
        )
        assert k.vgpr_spill == int(notes["vgpr_spill_count"])
        assert k.scratch_bytes == int(notes["private_segment_fixed_size"])
        assert k.lds_bytes == int(notes["group_segment_fixed_size"])
        assert k.metadata["shared"] == truth.metadata.shared
    assert result.kernels[cid(SPILLS)].vgpr_spill and not result.kernels[cid(SMALL[0])].vgpr_spill
    assert result.dropped[cid(TOO_BIG)].shared_bytes == compiled("gfx942", TOO_BIG).metadata.shared


def test_screen_reads_what_ptxas_reports(screens: Callable[[str], Screening]) -> None:
    """kscope's reading of each cubin (cuobjdump) against ptxas's own report on the same PTX."""
    from triton import knobs

    result = screens("sm_90")
    for config in [*SMALL, TOO_BIG, SPILLS]:
        k = result.kernels[cid(config)]
        truth = compiled("sm_90", config)
        with tempfile.NamedTemporaryFile("w", suffix=".ptx") as ptx:
            ptx.write(truth.asm["ptx"])
            ptx.flush()
            cmd = [knobs.nvidia.ptxas.path, "-v", "--gpu-name=sm_90a", ptx.name, "-o", "/dev/null"]
            report = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=120).stderr
        assert k.registers == int(re.findall(r"Used (\d+) registers", report)[-1])
        spilled = int(re.findall(r"(\d+) bytes spill stores", report)[-1])
        assert bool(spilled) == bool(k.stack_bytes or k.local_bytes)
    assert result.dropped[cid(TOO_BIG)].shared_bytes == compiled("sm_90", TOO_BIG).metadata.shared


def test_screen_reports_the_compilers_message_and_a_timeout(cache: Path) -> None:
    bad = {**SMALL[0], "BLOCK_SIZE_M": 48}
    result = screen(SPEC, Space(configs=[bad]), [SHAPE], signature=SIGNATURE, arch="sm_90")
    error = result.dropped[cid(bad)]
    assert error.status == "compile_error"
    assert re.fullmatch(r"CompilationError at \d+:\d+: arange's range must be a power of 2", error.detail)
    slow = screen(SPEC, Space(configs=[SMALL[0]]), [SHAPE], signature=SIGNATURE, arch="gfx942", timeout_s=0.01)
    assert slow.dropped[cid(SMALL[0])].detail == "compile timed out after 0.01 s"
    assert slow.dropped[cid(SMALL[0])].status == "compile_error"


@pytest.mark.parametrize(
    ("arch", "signature", "message"),
    [
        ("gfx000", SIGNATURE, "--arch gfx000: kscope has no limits for this architecture (it has gfx1100"),
        ("sm_90", {}, "no Triton type for a_ptr, b_ptr, c_ptr, stride_am"),
        ("sm_90", {**SIGNATURE, "alpha": "fp32"}, "signature names alpha, not arguments of _matmul"),
        ("sm_90", {**SIGNATURE, "a_ptr": "*fp16:8"}, "hints are :16 or :1"),
    ],
)
def test_screen_input_errors_are_one_line(arch: str, signature: dict[str, str], message: str) -> None:
    with pytest.raises(InputError, match=re.escape(message)) as caught:
        screen(SPEC, autotune_space(SPEC), [SHAPE], signature=signature, arch=arch)
    assert "\n" not in str(caught.value)


def test_planner_specializes_shape_ints_as_the_jit_does() -> None:
    """A shape's 1 becomes a constant, a multiple of 16 is marked divisible, anything else is a plain i32."""
    job = planner("sm_90").job(SMALL[0], {"M": 1, "N": 4096, "K": 1000})
    assert job.constexprs["M"] == 1 and job.signature["M"] == "constexpr"
    assert (job.signature["N"], job.attrs["N"]) == ("i32", "D")
    assert job.signature["K"] == "i32" and "K" not in job.attrs
    assert job.constexprs["stride_ak"] == 1 and job.attrs["stride_am"] == "D" and job.attrs["a_ptr"] == "D"
    assert job.options == {"num_warps": 4, "num_stages": 2}


def test_the_store_key_follows_the_kernels_source_not_only_the_named_file(tmp_path: Path) -> None:
    """A target file that imports its kernel from elsewhere: an edit there must start fresh results."""
    from kernelscope.tune.triton_target import kernel_key

    body = (
        "import triton\nimport triton.language as tl\n\n"
        "@triton.autotune(configs=[triton.Config({'B': 16})], key=['n'])\n@triton.jit\n"
        "def k(x, n, B: tl.constexpr):\n    tl.store(x + tl.arange(0, B), tl.arange(0, B) * {scale})\n"
    )
    keys = []
    for i, scale in enumerate((2, 2, 3)):
        f = tmp_path / f"kern{i}.py"
        f.write_text(body.replace("{scale}", str(scale)))
        keys.append(kernel_key(f"{f}:k"))
    assert keys[0] == keys[1] != keys[2]
