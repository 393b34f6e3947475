"""Run one project's copy of ``_reduce_stage2`` (``--project a|b``) 50 times: under ``kscope profile`` the trace
names the kernel, the launch ledger names the module it came from, and ``kscope gap --find-sources --repo
proj_a --repo proj_b`` tells the two copies apart (docs/find.md)."""

import argparse
import importlib
import sys
from pathlib import Path

import torch


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--project", choices=["a", "b"], required=True)
    ap.add_argument("--calls", type=int, default=50)
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).parent / f"proj_{args.project}"))
    decode = importlib.import_module(f"kernels_{args.project}.decode")
    mid = torch.randn(4096, 384, device="cuda")
    want = torch.logsumexp(mid, dim=1)
    for _ in range(args.calls):
        got = decode.reduce_stage2(mid)
    torch.cuda.synchronize()
    print(f"project {args.project}: max |error| vs torch.logsumexp {float((got - want).abs().max()):.2e}")


if __name__ == "__main__":
    main()
