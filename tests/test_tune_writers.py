"""Winners written back: fused-MoE JSON named as vLLM/SGLang look it up, the generic file and its vendorable
loader, TunableOp results CSVs.

The expected file names are computed here from vLLM's and SGLang's documented rule (configs/README: spaces
in the device name become underscores; ``,dtype=`` and ``,block_shape=`` only when set), not by the writer.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from kernelscope.errors import FormatError, InputError
from kernelscope.model.tunableop import Gemm, Results, Solution
from kernelscope.model.tune import Best, Params, TuneResult
from kernelscope.tune import loader
from kernelscope.tune.writers import (
    GENERIC_SCHEMA,
    read_tunableop,
    read_untuned,
    write_generic,
    write_triton_json,
    write_tunableop,
)

H100 = "NVIDIA H100 80GB HBM3"


def moe_config(m: int) -> Params:
    return {"BLOCK_SIZE_M": m, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 1, "num_warps": 4,
            "num_stages": 3}  # fmt: skip


def result(shapes: list[Params], device: str = H100, configs: list[Params] | None = None) -> TuneResult:
    cfgs = configs or [moe_config(16 * (i + 1)) for i in range(len(shapes))]
    pairs = enumerate(zip(shapes, cfgs, strict=True))
    best = [Best(shape=s, config=c, median_us=10.0 + i, ci_us=[9.0, 11.0]) for i, (s, c) in pairs]
    return TuneResult(best=best, candidates=[], target="moe.py:factory", environment={"device": device})


def vllm_name(e: int, n: int, device: str, dtype: str | None = None, block: list[int] | None = None) -> str:
    """vLLM's rule: spaces -> underscores, any H200 part -> NVIDIA_H200, block shape without spaces."""
    dev = device.replace(" ", "_")
    dev = "NVIDIA_H200" if "H200" in dev.split("_") else dev
    tail = (f",dtype={dtype}" if dtype else "") + (f",block_shape={block}".replace(" ", "") if block else "")
    return f"E={e},N={n},device_name={dev}{tail}.json"


def sglang_name(e: int, n: int, device: str, dtype: str | None = None, block: list[int] | None = None) -> str:
    """SGLang's rule: spaces -> underscores, the block shape as Python prints the list."""
    tail = (f",dtype={dtype}" if dtype else "") + (f",block_shape={block}" if block else "")
    return f"E={e},N={n},device_name={device.replace(' ', '_')}{tail}.json"


def test_vllm_file_per_family_with_numeric_batch_keys(tmp_path: Path) -> None:
    batches = [1, 2, 16, 128, 4096]
    shapes: list[Params] = [{"E": 8, "N": 14336, "M": m} for m in reversed(batches)]
    shapes += [{"E": 8, "N": 7168, "M": 64}]
    res = result(shapes)
    paths = write_triton_json(res, tmp_path)
    assert sorted(p.name for p in paths) == sorted([vllm_name(8, 14336, H100), vllm_name(8, 7168, H100)])
    doc = json.loads((tmp_path / vllm_name(8, 14336, H100)).read_text())
    assert list(doc) == ["1", "2", "16", "128", "4096"]  # numeric order, not "128" < "16"
    want = {str(b.shape["M"]): b.config for b in res.best if b.shape["N"] == 14336}
    assert doc == want
    assert set(doc["1"]) == {"BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "num_warps", "num_stages"}


@pytest.mark.parametrize("device", ["NVIDIA H200", "NVIDIA H200 NVL", "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"])
def test_dtype_block_shape_and_device_names(tmp_path: Path, device: str) -> None:
    shape: Params = {"E": 256, "N": 256, "dtype": "fp8_w8a8", "block_shape": "[128, 128]", "M": 8}
    [vllm] = write_triton_json(result([shape], device), tmp_path / "vllm")
    [sglang] = write_triton_json(result([shape], device), tmp_path / "sglang", flavor="sglang")
    assert vllm.name == vllm_name(256, 256, device, "fp8_w8a8", [128, 128])
    assert sglang.name == sglang_name(256, 256, device, "fp8_w8a8", [128, 128])


def test_zero_block_shape_and_empty_dtype_are_left_out(tmp_path: Path) -> None:
    shape: Params = {"E": 8, "N": 4096, "dtype": "", "block_shape": "0,0", "M": 8}
    [path] = write_triton_json(result([shape]), tmp_path)
    assert path.name == vllm_name(8, 4096, H100)


def test_families_sharing_a_file_name_are_refused(tmp_path: Path) -> None:
    shapes: list[Params] = [{"E": 8, "N": 4096, "K": 1024, "M": 16}, {"E": 8, "N": 4096, "K": 2048, "M": 32}]
    with pytest.raises(InputError, match="K=1024") as err:
        write_triton_json(result(shapes), tmp_path)
    assert "\n" not in str(err.value)
    # with K left out of the family the two winners share the file, and their M values differ
    [path] = write_triton_json(result(shapes), tmp_path, family=["E", "N"])
    assert list(json.loads(path.read_text())) == ["16", "32"]


def test_user_errors_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="needs E"):
        write_triton_json(result([{"N": 1, "M": 1}]), tmp_path)
    with pytest.raises(InputError, match="num_stages"):
        write_triton_json(result([{"E": 1, "N": 1, "M": 1}], configs=[{"BLOCK_SIZE_M": 16}]), tmp_path)
    with pytest.raises(InputError, match="integer batch size M"):
        write_triton_json(result([{"E": 1, "N": 1, "M": "x"}]), tmp_path)
    with pytest.raises(InputError, match="no device"):
        write_triton_json(result([{"E": 1, "N": 1, "M": 1}], device=""), tmp_path)


def test_generic_file(tmp_path: Path) -> None:
    res = result([{"M": 16, "K": 64}, {"M": 256, "K": 64}])
    res.best[1].tie = [moe_config(1)]
    doc = json.loads(write_generic(res, tmp_path / "t.json").read_text())
    assert doc["schema"] == GENERIC_SCHEMA and doc["device"] == H100 and doc["kernel"] == "moe.py:factory"
    assert [c["shape"] for c in doc["configs"]] == [{"M": 16, "K": 64}, {"M": 256, "K": 64}]
    assert [c["tie"] for c in doc["configs"]] == [False, True]
    assert doc["configs"][0]["config"] == res.best[0].config and doc["configs"][0]["median_us"] == 10.0


def test_loader_exact_then_nearest_batch(tmp_path: Path) -> None:
    res = result([{"M": 16, "K": 64}, {"M": 256, "K": 64}, {"M": 64, "K": 128}])
    path = write_generic(res, tmp_path / "t.json")
    cfg = {str(b.shape["M"]) + "/" + str(b.shape["K"]): b.config for b in res.best}
    assert loader.configs_for(path, M=256, K=64) == [cfg["256/64"]]
    assert loader.configs_for(path, M=100, K=64) == [cfg["16/64"]]  # |100-16| = 84 < |100-256| = 156
    assert loader.configs_for(path, M=200, K=64) == [cfg["256/64"]]
    assert loader.configs_for(path, M=136, K=64) == [cfg["16/64"]]  # equidistant: the smaller batch
    assert loader.configs_for(path, M=1, K=128) == [cfg["64/128"]]  # only shapes of the same K compete
    assert loader.configs_for(path, M=16, K=32) == []


def test_loader_reads_the_vllm_file_like_vllm(tmp_path: Path) -> None:
    batches = [1, 8, 64, 512]
    [path] = write_triton_json(result([{"E": 8, "N": 1024, "M": m} for m in batches]), tmp_path)
    stored = {int(k): v for k, v in json.loads(path.read_text()).items()}
    for m in [1, 3, 5, 40, 100, 300, 5000]:
        want = stored[min(stored, key=lambda x: abs(x - m))]  # vLLM's lookup
        assert loader.configs_for(path, M=m) == [want]


class FakeConfig:
    """triton.Config's surface the pruner touches."""

    def __init__(self, kwargs: dict[str, Any], num_warps: int = 4, num_stages: int = 3) -> None:
        self.kwargs, self.num_warps, self.num_stages = kwargs, num_warps, num_stages


def test_prune_configs_keeps_or_builds_the_tuned_config(tmp_path: Path) -> None:
    res = result([{"M": 16}, {"M": 1024}], configs=[{"BLOCK": 32, "num_warps": 4}, {"BLOCK": 128, "num_warps": 8}])
    prune = loader.prune_configs(write_generic(res, tmp_path / "t.json"))
    space = [FakeConfig({"BLOCK": b}, num_warps=w) for b in (32, 64) for w in (4, 8)]
    [kept] = prune(space, {"M": 20, "x_ptr": object()})
    assert kept is space[0]
    [built] = prune(space, {"M": 900})  # BLOCK=128 is not in the autotune list: made with its class
    assert isinstance(built, FakeConfig) and built.kwargs == {"BLOCK": 128} and built.num_warps == 8
    assert prune(space, {"N": 5}) == space  # no stored shape applies: the autotuner searches as before
    by_arg = loader.prune_configs(tmp_path / "t.json", shape=lambda args: {"M": args["rows"]})
    assert by_arg(space, {"rows": 16}) == [space[0]]


def test_loader_refuses_other_json(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text('{"a": 1}')
    with pytest.raises(ValueError, match=r"expected a kernelscope\.tune-configs\.v1 file"):
        loader.load(bad)


def test_loader_imports_only_the_standard_library() -> None:
    tree = ast.parse(Path(loader.__file__).read_text())
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert {n.split(".")[0] for n in names} <= set(sys.stdlib_module_names) | {"__future__"}


CUDA_RESULTS = """\
Validator,PT_VERSION,2.11.0+cu128
GemmTunableOp_BFloat16_TN,tn_4096_16_4096_ld_4096_4096_4096,Default,0.0291
GemmStridedBatchedTunableOp_Half_NN,nn_128_128_64_B_32_ld_128_64_128,Default,0.011
"""
ROCM_BLAS_LOG = """\
Validator,PT_VERSION,2.7.0
Validator,ROCM_VERSION,6.3.1.0-48-e0e6a87
Validator,GCN_ARCH_NAME,gfx942:sramecc+:xnack-
Validator,ROCBLAS_VERSION,4.3.0-8e4ac59b
Validator,HIPBLASLT_VERSION,0.12.1-a66e0b3d
GemmTunableOp_BFloat16_TN,tn_4096_16_4096_ld_4096_4096_4096,Gemm_Hipblaslt_1219,0.0197,\
BLAS_PARAMS: - { function: matmul, M: 4096, N: 16, K: 4096, transA: T, transB: N }
GemmTunableOp_float_NN,nn_64_64_64_ld_64_64_64,Gemm_Rocblas_21,0.004
"""


@pytest.mark.parametrize("text", [CUDA_RESULTS, ROCM_BLAS_LOG])
def test_tunableop_round_trip(tmp_path: Path, text: str) -> None:
    src = tmp_path / "in.csv"
    src.write_text(text)
    first = read_tunableop(src)
    validators = [line.split(",")[1] for line in text.splitlines() if line.startswith("Validator,")]
    assert list(first.validators) == validators
    out = write_tunableop(first, tmp_path / "out.csv")
    assert out.read_text() == text  # PyTorch's own line format, validators first
    assert read_tunableop(out) == first


def test_tunableop_fields(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_text(ROCM_BLAS_LOG)
    rows = read_tunableop(path)
    assert rows.solutions[0].gemm.blas.startswith("- { function: matmul, M: 4096")
    assert rows.solutions[0].solution == "Gemm_Hipblaslt_1219" and rows.solutions[0].time_ms == 0.0197
    assert rows.validators["GCN_ARCH_NAME"] == "gfx942:sramecc+:xnack-"


def test_tunableop_without_validators_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_text("GemmTunableOp_float_NN,nn_64_64_64_ld_64_64_64,Default,0.004\n")
    with pytest.raises(FormatError, match="Validator lines") as err:
        read_tunableop(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(InputError, match="PT_VERSION"):
        write_tunableop(Results(validators={}, solutions=[]), tmp_path / "w.csv")


@pytest.mark.parametrize(
    "row", ["GemmTunableOp_float_NN,nn_64_64_64_ld_64_64_64", "GemmTunableOp_float_NN,,Default", "a,b,Default,fast"]
)
def test_tunableop_malformed_row_names_its_line(tmp_path: Path, row: str) -> None:
    path = tmp_path / "r.csv"
    path.write_text(f"Validator,PT_VERSION,2.11.0\n\n{row}\n")
    with pytest.raises(FormatError) as err:
        read_tunableop(path)
    assert str(err.value).startswith(f"{path}:3: expected OpSignature,ParamSignature,SolutionName")
    assert "\n" not in str(err.value)


def test_untuned_file(tmp_path: Path) -> None:
    path = tmp_path / "u.csv"
    path.write_text(
        "GemmTunableOp_BFloat16_TN,tn_4096_16_4096_ld_4096_4096_4096\n"
        "GemmTunableOp_BFloat16_TN,tn_4096_16_4096_ld_4096_4096_4096\n"
        "GemmTunableOp_float_NN,nn_8_8_8_ld_8_8_8,BLAS_PARAMS: - { function: matmul, M: 8 }\n"
    )
    assert read_untuned(path) == [
        Gemm(op="GemmTunableOp_BFloat16_TN", params="tn_4096_16_4096_ld_4096_4096_4096"),
        Gemm(op="GemmTunableOp_float_NN", params="nn_8_8_8_ld_8_8_8", blas="- { function: matmul, M: 8 }"),
    ]
    path.write_text("GemmTunableOp_float_NN\n")
    with pytest.raises(FormatError, match=r"u.csv:1: expected OpSignature,ParamSignature"):
        read_untuned(path)


def test_solution_without_time_round_trips(tmp_path: Path) -> None:
    res = Results(validators={"PT_VERSION": "2.6.0"}, solutions=[Solution(gemm=Gemm(op="a", params="b"), solution="c")])
    assert read_tunableop(write_tunableop(res, tmp_path / "r.csv")) == res
