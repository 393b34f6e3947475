"""Hardware database rules, and the roofline against hand-computed FLOPs/bytes from the trace itself."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from conftest import assert_one_error_line, run_kscope

from kernelscope import api
from kernelscope.analyses.roofline import causal_pairs, evaluate, from_calls, op_cost
from kernelscope.api._code import gpu_peaks
from kernelscope.data import demo_file
from kernelscope.hw.specs import database, identify, lookup
from kernelscope.model import DeviceInfo
from kernelscope.model.ops import OpCall

REQUIRED = {
    "h100_sxm",
    "h100_pcie",
    "h200",
    "b200",
    "a100_sxm",
    "l40s",
    "mi250x",
    "mi300x",
    "mi325x",
    "mi350x",
    "mi355x",
    "rx7900xtx",
    "r9700",
}


def test_every_value_is_cited_or_unknown() -> None:
    db = database()
    assert set(db) >= REQUIRED
    for key, spec in db.items():
        assert spec.vendor in ("amd", "nvidia") and spec.arch, key
        for field, v in spec.specs.items():
            if v.value == "UNKNOWN" or v.value is None:
                continue
            assert isinstance(v.value, (int, float)), (key, field)
            assert v.source.startswith("https://") and v.section, (key, field)


@pytest.mark.parametrize(
    ("device", "key"),
    [("NVIDIA H100 80GB HBM3", "h100_sxm"), ("h100 sxm", "h100_sxm"), ("AMD Instinct MI300X", "mi300x")],
)
def test_device_names_map_to_entries(device: str, key: str) -> None:
    assert lookup(device).key == key


_GIB = 2**30


@pytest.mark.parametrize(
    ("facts", "product"),
    [
        # ROCm's HIP reports gfx942 as 9.4: 304 CUs with 192 GiB is the MI300X, with 256 GiB the MI325X
        ({"compute_capability": "9.4", "compute_units": 304, "memory_bytes": 206141652992}, "Instinct MI300X"),
        ({"compute_capability": "9.4", "compute_units": 304, "memory_bytes": 256 * _GIB}, "Instinct MI325X"),
        ({"compute_capability": "9.4", "compute_units": 304, "memory_bytes": 205571227648}, "Instinct MI300X"),  # VF
        # the MI350X and MI355X differ only in clock: without one, no guess
        ({"compute_capability": "9.5", "compute_units": 256, "memory_bytes": 309220868096}, None),
        (
            {"compute_capability": "9.5", "compute_units": 256, "memory_bytes": 309220868096, "clock_mhz": 2400},
            "Instinct MI355X",
        ),
        (
            {"compute_capability": "9.5", "compute_units": 256, "memory_bytes": 309220868096, "clock_mhz": 2200},
            "Instinct MI350X",
        ),
        ({"compute_capability": "9.4", "compute_units": 228, "memory_bytes": 128 * _GIB}, None),  # an MI300A: not in it
        ({"compute_capability": "9.4"}, None),  # two entries fit
        ({"arch": "gfx1100", "compute_units": 96}, "Radeon RX 7900 XTX"),
    ],
)
def test_a_gpu_the_trace_does_not_name_is_identified_only_when_one_entry_fits(
    facts: dict[str, object], product: str | None
) -> None:
    found = identify(DeviceInfo(index=0, vendor="amd", **facts))  # type: ignore[arg-type]
    assert (found.name if found else None) == product


def test_a_rocm_trace_with_no_gpu_name_gets_its_roofline() -> None:
    """vLLM's ROCm trace names no product (``"name": ""``) but its properties (9.4, 304 CUs, 192 GiB) fit the
    MI300X alone: the roofline uses its cited peaks instead of asking for --gpu."""
    trace = Path(__file__).parent / "data" / "kineto" / "tracelens_vllm_decode_full.json.gz"
    props = json.loads(gzip.decompress(trace.read_bytes()))["deviceProperties"]
    assert {p["name"] for p in props} == {""}
    result = api.roofline(trace)
    assert result.peaks.gpu == "Instinct MI300X"
    assert result.peaks.datasheet_gbs == lookup("mi300x").number("memory_bandwidth_gbs")


def test_hw_cli(tmp_path: Path) -> None:
    proc = run_kscope("hw", "--json")
    doc = json.loads(proc.stdout)
    assert doc["schema"] == "kernelscope.hw.v1" and len(doc["gpus"]) >= 13
    one = run_kscope("hw", "H100 SXM")
    assert one.returncode == 0 and "memory_bandwidth_gbs" in one.stdout and "https://" in one.stdout
    assert_one_error_line(run_kscope("hw", "Voodoo 5"))


def test_expressions() -> None:
    assert evaluate("2*M*N*K", {"M": 2, "N": 3, "K": 4}) == 48
    with pytest.raises(Exception, match="has no value"):
        evaluate("2*M", {})
    with pytest.raises(Exception, match="only numbers"):
        evaluate("__import__('os')", {})


def test_roofline_from_trace_matches_hand_counts() -> None:
    trace = demo_file("h100_transformer_eager.json.gz")
    result = api.roofline(trace)
    with gzip.open(trace) as f:
        ev = json.load(f)["traceEvents"]
    # truth: the addmm [[4096], [8192, 1024], [1024, 4096]] op, counted from the raw events
    ops = {e["args"]["External id"]: e for e in ev if e.get("cat") == "cpu_op"}
    ns = 0.0
    calls = 0
    for e in ev:
        op = ops.get(e.get("args", {}).get("External id")) if e.get("cat") == "kernel" else None
        if op and op["name"] == "aten::addmm" and op["args"]["Input Dims"][1:3] == [[8192, 1024], [1024, 4096]]:
            ns += e["dur"] * 1000
            calls += 1
    pt = next(p for p in result.points if p.label.startswith("aten::addmm [[4096], [8192, 1024], [1024, 4096]]"))
    flops = 2 * 8192 * 1024 * 4096 + 8192 * 4096  # the product, and the bias added to each output element
    assert pt.calls == calls and pt.flops == pytest.approx(flops * calls)
    assert pt.time_us == pytest.approx(ns / 1e3, rel=1e-6)
    assert pt.achieved_tflops == pytest.approx(flops * calls / (ns / 1e9) / 1e12, rel=1e-6)
    assert pt.bound == "compute" and pt.peak_tflops == lookup("h100_sxm").number("bf16_matrix_tflops")


def test_causal_attention_counts_only_unmasked_pairs() -> None:
    """The H100 trace's SDPA is causal (is_causal=True in its concrete inputs): half the square, plus the diagonal."""
    trace = demo_file("h100_transformer_eager.json.gz")
    with gzip.open(trace) as f:
        ev = json.load(f)["traceEvents"]
    (fwd,) = {
        json.dumps(e["args"]["Input Dims"][:2]): e for e in ev if e.get("name") == "aten::_cudnn_attention_forward"
    }.values()
    assert fwd["args"]["Concrete Inputs"][10] == "True"  # is_causal, per the ATen schema
    (b, h, s, d), _ = fwd["args"]["Input Dims"][:2]
    kept = sum(min(i + 1, s) for i in range(s))  # query i sees keys 0..i
    pt = next(p for p in api.roofline(trace).points if p.label.startswith("aten::_cudnn_attention_forward"))
    assert pt.flops == pytest.approx(pt.calls * 4 * b * h * d * kept) and "causal" in pt.note


def test_copy_bytes_use_each_tensors_own_dtype() -> None:
    """copy_(self fp32, src bf16) reads 2 bytes and writes 4 per element; self is not read."""
    trace = demo_file("h100_transformer_eager.json.gz")
    with gzip.open(trace) as f:
        ops = [e for e in json.load(f)["traceEvents"] if e.get("name") == "aten::copy_" and e.get("cat") == "cpu_op"]
    assert {tuple(e["args"]["Input type"][:2]) for e in ops} == {("float", "c10::BFloat16")}
    pt = next(p for p in api.roofline(trace).points if p.label.startswith("aten::copy_"))
    n = 8 * 1024 * 1024
    assert pt.bytes == pt.calls * n * (2 + 4) and pt.calls == len(ops)


def test_16_bit_and_unsigned_integer_tensors_count_their_own_width() -> None:
    """``short int``/``unsigned short``/``unsigned int``/``unsigned long`` tensors were priced at 4 bytes."""
    from kernelscope.analyses.roofline import op_cost
    from kernelscope.model.ops import OpCall

    def copy(dst: str, src: str) -> float:
        call = OpCall(
            op="aten::copy_",
            input_dims=[[1000], [1000]],
            input_types=[dst, src],
            concrete=[],
            kernels=[],
            kernel_ns=1,
            external_id=1,
        )
        cost = op_cost(call)
        assert cost is not None
        return cost.bytes

    assert copy("short int", "unsigned short") == 1000 * (2 + 2)
    assert copy("unsigned int", "unsigned long") == 1000 * (4 + 8)


def test_tensor_list_inputs_count_every_tensor() -> None:
    """A training step's ``aten::_foreach_*`` ops take TensorLists (a list of shapes per input); the roofline
    read them as one shape and crashed. Their elements are summed, each at its dtype."""
    trace = demo_file("h100_train_steps.json.gz")
    with gzip.open(trace) as f:
        ops = [
            e
            for e in json.load(f)["traceEvents"]
            if e.get("cat") == "cpu_op" and any(d and isinstance(d[0], list) for d in e["args"].get("Input Dims", []))
        ]
    assert ops, "the fixture has no TensorList op"
    result = api.roofline(trace)  # no crash; every op with a known cost model is placed
    assert result.points


@pytest.mark.parametrize("bottom_right", [False, True])
def test_causal_pairs_against_a_brute_force_mask(bottom_right: bool) -> None:
    for sq in range(9):
        for sk in range(9):
            shift = sk - sq if bottom_right else 0
            truth = sum(1 for i in range(sq) for j in range(sk) if j <= i + shift)
            assert causal_pairs(sq, sk, bottom_right=bottom_right) == truth, (sq, sk)


def test_roofline_given_numbers_and_plot(tmp_path: Path) -> None:
    svg = tmp_path / "r.svg"
    proc = run_kscope(
        "roofline",
        "--gpu",
        "H100 SXM",
        "--flops",
        "2*M*N*K",
        "--bytes",
        "2*(M*K+K*N+M*N)",
        "--var",
        "M=8192",
        "--var",
        "N=8192",
        "--var",
        "K=8192",
        "--time-us",
        "1500",
        "-o",
        svg,
    )
    assert proc.returncode == 0, proc.stderr
    assert svg.read_text().startswith("<svg") and "<circle" in svg.read_text()
    doc = json.loads(
        run_kscope(
            "roofline", "--gpu", "H100 SXM", "--flops", "1e12", "--bytes", "1e9", "--time-us", "2000", "--json"
        ).stdout
    )
    (pt,) = doc["points"]
    assert pt["achieved_tflops"] == pytest.approx(500.0) and pt["intensity"] == pytest.approx(1000.0)
    assert_one_error_line(
        run_kscope("roofline", "--gpu", "H100 SXM", "--flops", "2*M", "--bytes", "1", "--time-us", "1")
    )


NCU = Path(__file__).parent / "data" / "ncu"


def test_roofline_from_nsight_compute_counters() -> None:
    """Bytes, time and FLOPs equal ncu's own raw-page export of the same report (MB/us units as printed)."""
    import csv

    pytest.importorskip("ncu_report")  # the optional [ncu] extra reads .ncu-rep files

    with gzip.open(NCU / "h100_softmax_slow_raw.csv.gz", "rt") as f:
        header, units, row = list(csv.reader(f))[:3]
    raw = dict(zip(header, row, strict=True))
    scale = {"Mbyte": 1e6, "Kbyte": 1e3, "byte": 1.0, "Gbyte": 1e9}
    dram = sum(float(raw[m]) * scale[units[header.index(m)]] for m in ("dram__bytes_read.sum", "dram__bytes_write.sum"))
    # --set full keeps rates: count = rate x elapsed cycles; weights as ncu's derived__*_x2/_x4 metrics
    # name them (packed half: add/mul x2, fma x4; single/double: fma x2)
    cycles = float(raw["smsp__cycles_elapsed.avg"].replace(",", ""))
    weights = {"h": (2, 2, 4), "f": (1, 1, 2), "d": (1, 1, 2)}
    flops = 0.0
    for p, ws in weights.items():
        for op, w in zip(("add", "mul", "fma"), ws, strict=True):
            rate = raw[f"smsp__sass_thread_inst_executed_op_{p}{op}_pred_on.sum.per_cycle_elapsed"]
            flops += w * float(rate.replace(",", "")) * cycles
    (pt,) = api.roofline(NCU / "h100_softmax_slow.ncu-rep").points
    assert pt.bytes == pytest.approx(dram) and pt.flops == pytest.approx(flops) and flops > 0
    assert pt.time_us == pytest.approx(float(raw["gpu__time_duration.sum"])) and pt.bound == "memory"
    mm = next(p for p in api.roofline(NCU / "h100_triton_softmax_mm.ncu-rep").points if p.label == "mm_k")
    assert mm.flops == 2 * 4096**3 and mm.matrix  # a 4096^3 GEMM, counted on the tensor cores


def test_an_ncu_export_without_roofline_counters_is_one_error_line() -> None:
    """A details-page export holds durations and speed of light, no FLOP or DRAM-byte counters: the roofline
    says what to read instead of printing an empty table with exit 0."""
    proc = run_kscope("roofline", NCU / "h100_softmax_fast_details.csv.gz", "--gpu", "H100 SXM")
    assert_one_error_line(proc)
    assert "--page raw" in proc.stderr and "--set full" in proc.stderr


def test_roofline_png_draws_roofs_and_points(tmp_path: Path) -> None:
    from matplotlib.image import imread

    png = tmp_path / "r.png"
    proc = run_kscope("roofline", str(demo_file("h100_transformer_eager.json.gz")), "--gpu", "H100 SXM", "-o", png)
    assert proc.returncode == 0, proc.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rgb = (imread(png)[:, :, :3] * 255).round()
    dots = ((abs(rgb - (0x1F, 0x77, 0xB4)).sum(axis=2)) < 10).sum()  # the points' colour
    roofs = ((abs(rgb - (0x55, 0x55, 0x55)).sum(axis=2)) < 10).sum()  # the datasheet roofs' colour
    n = len(api.roofline(demo_file("h100_transformer_eager.json.gz")).points)
    assert dots > 20 * (n - 1) and roofs > 500  # every plotted point is a disc of dozens of pixels


def test_ceilings_without_a_gpu_is_one_error_line() -> None:
    try:
        import torch

        if torch.cuda.is_available():
            pytest.skip("a GPU is present: kscope ceilings would measure it")
    except ImportError:
        pass
    assert_one_error_line(run_kscope("ceilings", "--no-save"))


@pytest.mark.parametrize(
    "dims",
    [
        [[64, "x"], [2048, 8192]],  # a dimension that is not a number
        [[[64, 2048], 3], [2048, 8192]],  # a TensorList mixed with a number
        [[-1, 2048], [2048, 8192]],  # a negative dimension
        [[True, 2048], [2048, 8192]],  # a bool is no dimension
        [[2048], [2048, 8192]],  # not a matrix
    ],
)
def test_shapes_a_cost_model_cannot_read_leave_the_op_unmodeled(dims: list[object]) -> None:
    """Found by bench/fuzz.py (the kineto-capture target): a damaged trace's Input Dims made the GEMM model
    raise TypeError/ValueError. Such a call now has no cost (it is listed as unmodeled), never a wrong one."""
    call = OpCall(op="aten::mm", input_dims=dims, input_types=["c10::BFloat16"] * 2, concrete=["", ""], kernels=["k"],
                  kernel_ns=1000, external_id=1)  # fmt: skip
    assert op_cost(call) is None
    assert from_calls([call], gpu_peaks("H100 SXM", None, None)).unmodeled == {"aten::mm": 1.0}
