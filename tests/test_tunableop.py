"""``kscope tune --tunableop``: the parts that need no GPU, then the whole flow against a stand-in
``torch.cuda.tunable`` (a workload and a tuner that write TunableOp's files), then the real thing on a GPU.

On a GPU machine (the lead's H100) the last test runs the real flow:
    PYTHONPATH=. python -m pytest tests/test_tunableop.py -q -k real_gpu
"""

from __future__ import annotations

import importlib.util
import os
import sys
import textwrap
from pathlib import Path

import pytest

from kernelscope.errors import InputError, ToolFailedError
from kernelscope.model.tunableop import Gemm, Results, Solution
from kernelscope.tune import tunableop
from kernelscope.tune.executors import DeviceList
from kernelscope.tune.space import read_space
from kernelscope.tune.tunableop import INDUCTOR_SPACE, gemm_shape, merge, split, tune_tunableop, write_inductor_space

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "tune"
LINEAR = Gemm(op="GemmTunableOp_BFloat16_TN", params="tn_4096_16_1024_ld_1024_1024_4096")


@pytest.mark.parametrize(
    ("op", "params", "layout"),
    [
        # BLAS letters (A then B of the column-major call) are torch's B then A
        ("GemmTunableOp_float_NN", "nn_30_20_10_ld_30_10_30", "NN"),
        ("GemmTunableOp_float_TN", "tn_30_20_10_ld_10_10_30", "NT"),
        ("GemmTunableOp_float_NT", "nt_30_20_10_ld_30_20_30", "TN"),
        ("GemmTunableOp_float_TT", "tt_30_20_10_ld_10_20_30", "TT"),
    ],
)
def test_gemm_shape_layouts(op: str, params: str, layout: str) -> None:
    shape = gemm_shape(Gemm(op=op, params=params))
    assert shape == {"op": "mm", "M": 20, "N": 30, "K": 10, "batch": 1, "dtype": "float32", "layout": layout}


def test_gemm_shape_other_ops() -> None:
    bmm = gemm_shape(Gemm(op="GemmStridedBatchedTunableOp_Half_NN", params="nn_128_64_32_B_12_ld_128_32_128"))
    assert bmm == {"op": "bmm", "M": 64, "N": 128, "K": 32, "batch": 12, "dtype": "float16", "layout": "NN"}
    addmm = gemm_shape(Gemm(op="GemmAndBiasTunableOp_BFloat16_TN", params="tn_4096_16_1024_ld_1024_1024_4096"))
    assert addmm is not None and addmm["op"] == "addmm" and addmm["layout"] == "NT" and addmm["M"] == 16
    scaled = Gemm(
        op="ScaledGemmTunableOp_Float8_e4m3fn_Float8_e4m3fn_BFloat16_TN",
        params="tn_4096_16_1024_ld_1024_1024_4096_rw_0_bias_None",
    )
    assert gemm_shape(scaled) is None
    assert gemm_shape(Gemm(op="GemmTunableOp_c10::complex<float>_NN", params="nn_2_2_2_ld_2_2_2")) is None


def gemm(m: int, n: int = 64, k: int = 64) -> Gemm:
    return Gemm(op="GemmTunableOp_float_NN", params=f"nn_{n}_{m}_{k}_ld_{n}_{k}_{n}")


def test_split_balances_work_and_covers_every_gemm() -> None:
    gemms = [gemm(m) for m in (1024, 2048, 4096, 1024, 2048)]
    shares = split(gemms, 3)
    assert sorted(g.params for s in shares for g in s) == sorted(g.params for g in gemms)
    work = [sum(int(g.params.split("_")[2]) for g in s) for s in shares]
    assert work == [4096, 2048 + 1024, 2048 + 1024]  # largest first, each to the least loaded share
    assert len(split(gemms[:2], 8)) == 2
    with pytest.raises(InputError):
        split(gemms, 0)


def results(validators: dict[str, str], *rows: tuple[Gemm, str]) -> Results:
    return Results(validators=validators, solutions=[Solution(gemm=g, solution=s, time_ms=0.1) for g, s in rows])


def test_merge_keeps_validators_and_every_gemm() -> None:
    v = {"PT_VERSION": "2.11.0"}
    merged = merge([("w0", results(v, (gemm(1), "Default"))), ("w1", results(v, (gemm(2), "Default"), (gemm(1), "x")))])
    assert merged.validators == v
    assert [(s.gemm, s.solution) for s in merged.solutions] == [(gemm(1), "Default"), (gemm(2), "Default")]
    with pytest.raises(ToolFailedError, match="w0 and w1 report different TunableOp validators"):
        merge([("w0", results(v)), ("w1", results({"PT_VERSION": "2.10.0"}))])


def test_only_default_on_cuda_is_said_not_hidden(tmp_path: Path) -> None:
    gemms = [gemm(16), gemm(32)]
    cuda = tunableop.outcomes(gemms, results({"PT_VERSION": "2.11.0"}, (gemm(16), "Default")), {})
    assert [t.alternatives for t in cuda] == [False, False] and cuda[1].solution is None
    notes = tunableop._notes(cuda, [], tmp_path / "s.yaml")
    assert "only the Default solution for all 1 GEMMs" in notes[0] and "Inductor" in notes[0]
    assert "1 of 2 GEMMs were not tuned" in notes[1]
    rocm = {"PT_VERSION": "2.7.0", "ROCBLAS_VERSION": "4.3", "HIPBLASLT_VERSION": "0.12"}
    amd = tunableop.outcomes(gemms, results(rocm, (gemm(16), "Default"), (gemm(32), "Gemm_Rocblas_7")), {})
    assert [t.alternatives for t in amd] == [True, True]
    assert tunableop._notes(amd, [], tmp_path / "s.yaml") == ["1 of 2 GEMMs chose a solution other than Default"]


def test_inductor_space_matches_the_example(tmp_path: Path) -> None:
    shapes = [gemm_shape(LINEAR), gemm_shape(gemm(8))]
    space = read_space(write_inductor_space([s for s in shapes if s], tmp_path / "space.yaml"))
    assert space.shapes == shapes and space.params == INDUCTOR_SPACE.params
    example = read_space(EXAMPLES / "inductor_mm_space.yaml")
    assert example.params == INDUCTOR_SPACE.params and example.incumbent == INDUCTOR_SPACE.incumbent
    assert all(set(s) == set(shapes[0] or {}) for s in example.shapes)


# A stand-in for torch: the workload appends its GEMMs where TunableOp would (the device ordinal before the
# extension); the tuner answers Default for each under a PT_VERSION validator, or dies when told to.
WORKLOAD = """
import os, sys
want = {"ENABLED": "1", "TUNING": "0", "RECORD_UNTUNED": "1"}
if any(os.environ.get("PYTORCH_TUNABLEOP_" + k) != v for k, v in want.items()):
    sys.exit(3)
root, dot, ext = os.environ["PYTORCH_TUNABLEOP_UNTUNED_FILENAME"].rpartition(".")
with open(f"{root}0.{ext}", "a") as f:
    f.write(os.environ["FAKE_GEMMS"])
"""
TUNABLE = """
import os
rows = []
def tune_gemm_in_file(path):
    assert os.environ["PYTORCH_TUNABLEOP_TUNING"] == "1" and os.environ["PYTORCH_TUNABLEOP_RECORD_UNTUNED"] == "0"
    if os.environ.get("CUDA_VISIBLE_DEVICES") == os.environ.get("FAKE_CRASH_GPU"):
        os._exit(9)
    rows.extend(line.strip() + ",Default,0.5" for line in open(path))
def write_file(path):
    with open(path, "w") as f:
        f.write("Validator,PT_VERSION,2.11.0\\n" + "".join(r + "\\n" for r in rows))
"""


@pytest.fixture
def fake_torch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    pkg = tmp_path / "fake" / "torch" / "cuda"
    pkg.mkdir(parents=True)
    (pkg.parent / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "tunable.py").write_text(textwrap.dedent(TUNABLE))
    (tmp_path / "workload.py").write_text(WORKLOAD)
    monkeypatch.setattr(tunableop, "probe_devices", lambda: DeviceList("nvidia", ["GPU-a", "GPU-b"], ["H100"] * 2))
    gemms = "".join(f"{g.op},{g.params}\n" for g in [LINEAR, gemm(16), gemm(4096), gemm(16)])
    return {**os.environ, "PYTHONPATH": str(tmp_path / "fake"), "FAKE_GEMMS": gemms, "PYTORCH_TUNABLEOP_VERBOSE": "3"}


def test_flow_records_tunes_on_each_gpu_and_merges(tmp_path: Path, fake_torch: dict[str, str]) -> None:
    out = tmp_path / "out"
    res = tune_tunableop([sys.executable, str(tmp_path / "workload.py")], out, cwd=tmp_path, env=fake_torch)
    assert [g.gemm for g in res.gemms] == [LINEAR, gemm(16), gemm(4096)]  # duplicates recorded once
    assert [w.gpu for w in res.workers] == ["GPU-a", "GPU-b"] and all(w.returncode == 0 for w in res.workers)
    assert sum(w.gemms for w in res.workers) == 3
    assert all(g.solution == "Default" and not g.alternatives for g in res.gemms)
    assert res.validators == {"PT_VERSION": "2.11.0"}
    assert res.env["PYTORCH_TUNABLEOP_FILENAME"] == str(out / "tunableop_results%d.csv")
    copies = [out / "tunableop_results0.csv", out / "tunableop_results1.csv"]
    assert copies[0].read_text() == copies[1].read_text()
    assert copies[0].read_text().startswith("Validator,PT_VERSION,2.11.0\n") and str(copies[0]) == res.results_path
    assert res.ab is not None and res.ab.skipped == "every GEMM runs Default on both sides" and not res.ab.baseline
    assert any("only the Default solution" in n for n in res.notes)
    assert read_space(Path(res.inductor_space or "")).shapes == res.inductor_shapes
    assert res.inductor_shapes[0] == gemm_shape(LINEAR)


def test_a_crashed_worker_costs_only_its_share(tmp_path: Path, fake_torch: dict[str, str]) -> None:
    env = {**fake_torch, "FAKE_CRASH_GPU": "GPU-a"}
    res = tune_tunableop([sys.executable, str(tmp_path / "workload.py")], tmp_path / "out", cwd=tmp_path, env=env)
    crashed, ok = res.workers
    assert crashed.returncode == 9 and crashed.tuned == 0 and ok.returncode == 0 and ok.tuned == ok.gemms
    assert [g.solution is None for g in res.gemms].count(True) == crashed.gemms
    assert any(f"were not tuned: workers {crashed.name} failed" in n for n in res.notes)


def test_workload_failures_are_one_line(tmp_path: Path, fake_torch: dict[str, str]) -> None:
    with pytest.raises(ToolFailedError, match="exited with status 3 while recording"):
        tune_tunableop([sys.executable, "-c", "import sys; sys.exit(3)"], tmp_path / "o", cwd=tmp_path, env=fake_torch)
    with pytest.raises(InputError, match="ran no GEMM through TunableOp"):
        tune_tunableop([sys.executable, "-c", "pass"], tmp_path / "o", cwd=tmp_path, env=fake_torch)
    with pytest.raises(InputError, match="at least 5"):
        tune_tunableop(["true"], tmp_path / "o", ab_runs=2)


def _cuda() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


GPU_WORKLOAD = """
import torch
a = torch.randn(256, 512, device="cuda", dtype=torch.bfloat16)
w = torch.randn(1024, 512, device="cuda", dtype=torch.bfloat16)
for _ in range(3):
    (a @ w.t()).sum().item()
    torch.bmm(torch.randn(4, 64, 32, device="cuda"), torch.randn(4, 32, 16, device="cuda")).sum().item()
"""


@pytest.mark.skipif(not _cuda(), reason="needs a CUDA GPU and torch")
def test_real_gpu(tmp_path: Path) -> None:
    (tmp_path / "w.py").write_text(GPU_WORKLOAD)
    res = tune_tunableop([sys.executable, str(tmp_path / "w.py")], tmp_path / "out", cwd=tmp_path, gpus=1)
    shapes = [g.shape for g in res.gemms]
    assert {"op": "mm", "M": 256, "N": 1024, "K": 512, "batch": 1, "dtype": "bfloat16", "layout": "NT"} in shapes
    assert any(s and s["op"] == "bmm" and s["batch"] == 4 for s in shapes)
    assert all(g.solution is not None for g in res.gemms), res.workers
    assert "PT_VERSION" in res.validators
    if "ROCBLAS_VERSION" not in res.validators:  # CUDA: only Default exists, and the result says so
        assert all(g.solution == "Default" for g in res.gemms)
        assert any("only the Default solution" in n for n in res.notes)
