"""A small real PyTorch workload: a bf16 decoder-only transformer.

It trains for ``--train-steps`` optimizer steps, then generates: one "prefill" pass over the prompt and
``--decode-steps`` single-token "decode" passes, each phase wrapped in ``torch.profiler.record_function``
so that ``kscope gap --phase-by`` can split them. A side stream runs an independent elementwise
kernel during training so that traces hold concurrent kernels on two streams.

Used by ``kscope profile`` on the GPU machine (``bench/gpu/``) and to make the test fixtures there.
Run it plainly for the unprofiled baseline: ``python examples/workloads/transformer.py``.
"""

from __future__ import annotations

import argparse
import time

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.RMSNorm(dim)
        self.ff1 = nn.Linear(dim, 4 * dim)
        self.ff2 = nn.Linear(4 * dim, dim)
        self.heads = heads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, d // self.heads).unbind(2)
        a = nn.functional.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=t > 1
        )
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.ff2(nn.functional.gelu(self.ff1(self.norm2(x))))


class Model(nn.Module):
    def __init__(self, vocab: int, dim: int, heads: int, layers: int) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.emb(tokens)
        for blk in self.blocks:
            x = blk(x)
        return self.head(x)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--train-steps", type=int, default=40)
    p.add_argument("--decode-steps", type=int, default=16)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--dim", type=int, default=1024)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--vocab", type=int, default=8192)
    args = p.parse_args()

    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = Model(args.vocab, args.dim, 16, args.layers).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    tokens = torch.randint(0, args.vocab, (args.batch, args.seq), device=dev)
    side = torch.cuda.Stream()
    side_buf = torch.randn(1 << 22, device=dev)

    t0 = time.perf_counter()
    for _ in range(args.train_steps):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(tokens[:, :-1])
            loss = nn.functional.cross_entropy(logits.reshape(-1, args.vocab).float(), tokens[:, 1:].reshape(-1))
        with torch.cuda.stream(side):  # independent work overlapping the backward pass
            side_buf.mul_(0.999).add_(1e-3)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()

    model.eval()
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
        prompt = tokens[:1, : args.seq // 2]
        with torch.profiler.record_function("prefill"):
            nxt = model(prompt)[:, -1].argmax(-1, keepdim=True)
        for _ in range(args.decode_steps):
            with torch.profiler.record_function("decode"):
                # No KV cache: each decode step re-reads a short window, enough to make decode kernels differ.
                nxt = model(torch.cat([prompt[:, -63:], nxt], 1))[:, -1].argmax(-1, keepdim=True)
    torch.cuda.synchronize()
    print(f"workload done in {time.perf_counter() - t0:.3f} s, loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
