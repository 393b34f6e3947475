"""Run one project's copy of ``_reduce_stage2`` (``--project a|b``) 50 times: under ``kscope profile`` the trace
names the kernel, the launch ledger names the module it came from, and ``kscope gap --find-sources --repo
proj_a --repo proj_b`` tells the two copies apart (docs/find.md). ``--torch-trace FILE`` records the loop with
the PyTorch profiler itself, Python stacks on (as vLLM's and SGLang's profilers do): no ledger, the trace's
Python frames say which copy ran."""

import argparse
import contextlib
import importlib
import sys
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--project", choices=["a", "b"], required=True)
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--torch-trace", type=Path, help="write a Kineto trace with Python stacks here")
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).parent / f"proj_{args.project}"))
    decode = importlib.import_module(f"kernels_{args.project}.decode")
    mid = torch.randn(4096, 384, device="cuda")
    want = torch.logsumexp(mid, dim=1)
    decode.reduce_stage2(mid)  # compiled before the trace
    activities = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    tracing = profile(activities=activities, with_stack=True) if args.torch_trace else contextlib.nullcontext()
    with tracing as prof:
        for _ in range(args.calls):
            got = decode.reduce_stage2(mid)
        torch.cuda.synchronize()
    if prof is not None:
        prof.export_chrome_trace(str(args.torch_trace))
    print(f"project {args.project}: max |error| vs torch.logsumexp {float((got - want).abs().max()):.2e}")


if __name__ == "__main__":
    main()
