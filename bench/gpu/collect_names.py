"""Kernel names of real PyTorch workloads on the device, for an identity test set (issue 16 deliverable 4).

Runs small models in pure torch (no kernelscope import: the names must not depend on the classifier), eager
and under ``torch.compile``, forward and backward, and writes every distinct GPU kernel name the profiler saw,
with the workload that launched it first, to ``$OUT/names.jsonl``; versions to ``$OUT/versions.json``.
Usage (device): ``python bench/gpu/collect_names.py``.
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from torch.profiler import ProfilerActivity, profile

OUT = Path(os.environ.get("OUT", "."))
DEV = "cuda"


class Block(nn.Module):
    """A decoder block: RMSNorm, attention by SDPA, SwiGLU MLP."""

    def __init__(self, d: int = 1024, heads: int = 16) -> None:
        super().__init__()
        self.heads = heads
        self.n1, self.n2 = nn.RMSNorm(d), nn.RMSNorm(d)
        self.qkv, self.o = nn.Linear(d, 3 * d, bias=False), nn.Linear(d, d, bias=False)
        self.up, self.gate, self.down = nn.Linear(d, 4 * d), nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(self.n1(x)).view(b, s, 3, self.heads, d // self.heads).unbind(2)
        a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, s, d))
        h = self.n2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


def gpt_step(compiled: bool) -> Callable[[], None]:
    emb, blocks = nn.Embedding(32000, 1024).to(DEV), nn.Sequential(*[Block() for _ in range(2)]).to(DEV)
    head = nn.Linear(1024, 32000, bias=False).to(DEV)
    params = [*emb.parameters(), *blocks.parameters(), *head.parameters()]
    opt = torch.optim.AdamW(params, fused=True)
    model = torch.compile(blocks) if compiled else blocks
    ids = torch.randint(0, 32000, (4, 512), device=DEV)

    def step() -> None:
        with torch.autocast(DEV, dtype=torch.bfloat16):
            logits = head(model(emb(ids)))
            loss = F.cross_entropy(logits.float().view(-1, 32000), ids.view(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad()

    return step


def convnet_step(compiled: bool) -> Callable[[], None]:
    layers: list[nn.Module] = [nn.Conv2d(3, 64, 7, 2, 3), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
    for cin, cout in ((64, 128), (128, 256)):
        layers += [
            nn.Conv2d(cin, cout, 3, 2, 1),
            nn.BatchNorm2d(cout),
            nn.GELU(),
            nn.Conv2d(cout, cout, 3, 1, 1, groups=8),
        ]
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.1), nn.Linear(256, 1000)]
    net = nn.Sequential(*layers).to(DEV).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    model = torch.compile(net) if compiled else net
    x = torch.randn(32, 3, 224, 224, device=DEV).to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (32,), device=DEV)

    def step() -> None:
        with torch.autocast(DEV, dtype=torch.float16):
            loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
        loss.backward()
        opt.step()
        opt.zero_grad()

    return step


def moe_step(compiled: bool) -> Callable[[], None]:
    d, experts, k = 512, 8, 2
    router = nn.Linear(d, experts).to(DEV, torch.bfloat16)
    w1 = torch.randn(experts, d, 2 * d, device=DEV, dtype=torch.bfloat16) / 30
    w2 = torch.randn(experts, 2 * d, d, device=DEV, dtype=torch.bfloat16) / 30
    x = torch.randn(2048, d, device=DEV, dtype=torch.bfloat16)

    def moe(x: torch.Tensor) -> torch.Tensor:
        scores, idx = torch.topk(torch.softmax(router(x).float(), -1), k)
        order = torch.argsort(idx.view(-1))
        counts = torch.bincount(idx.view(-1), minlength=experts).tolist()
        xs = x.repeat_interleave(k, 0)[order]
        outs, start = [], 0
        for e, c in enumerate(counts):
            outs.append(F.gelu(xs[start : start + c] @ w1[e]) @ w2[e])
            start += c
        y = torch.empty_like(xs).index_copy_(0, order, torch.cat(outs))
        return (y.view(-1, k, d) * scores.unsqueeze(-1).to(y.dtype)).sum(1)

    fn = torch.compile(moe) if compiled else moe
    return lambda: fn(x).sum().item() and None


def misc_ops(_: bool) -> Callable[[], None]:
    x = torch.randn(4096, 1024, device=DEV)
    img = torch.randn(8, 3, 256, 256, device=DEV)
    lstm = nn.LSTM(256, 512, num_layers=2, batch_first=True).to(DEV)
    seq = torch.randn(16, 64, 256, device=DEV)
    bag = nn.EmbeddingBag(10000, 128, mode="mean").to(DEV)
    a8 = torch.randn(256, 512, device=DEV).to(torch.float8_e4m3fn)
    b8 = torch.randn(256, 512, device=DEV).to(torch.float8_e4m3fn).t()
    one = torch.ones((), device=DEV)

    def step() -> None:
        torch.sort(x, dim=-1)
        torch.topk(x, 50)
        torch.cumsum(x, 0)
        torch.multinomial(torch.softmax(x[:64], -1), 4)
        torch.unique(torch.randint(0, 100, (100000,), device=DEV))
        torch.nonzero(x > 1)
        torch.fft.rfft2(img)
        F.interpolate(img, scale_factor=2, mode="bilinear", align_corners=False)
        F.grid_sample(img, torch.rand(8, 64, 64, 2, device=DEV) * 2 - 1, align_corners=False)
        F.layer_norm(x, (1024,))
        F.group_norm(img, 3)
        torch.linalg.qr(x[:256, :256])
        torch.linalg.solve(x[:128, :128] + 128 * torch.eye(128, device=DEV), x[:128, :4])
        lstm(seq)
        bag(torch.randint(0, 10000, (4096,), device=DEV), torch.arange(0, 4096, 32, device=DEV))
        torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        torch.where(x > 0, x, x * 0.1).clamp_(-3, 3).exp_().log1p_()
        x.to(torch.float16).to(torch.bfloat16).float().index_select(0, torch.arange(0, 4096, 7, device=DEV))

    return step


WORKLOADS = {
    "gpt_eager": (gpt_step, False),
    "gpt_compiled": (gpt_step, True),
    "convnet_eager": (convnet_step, False),
    "convnet_compiled": (convnet_step, True),
    "moe_eager": (moe_step, False),
    "moe_compiled": (moe_step, True),
    "misc_ops": (misc_ops, False),
}


def main() -> None:
    seen: dict[str, str] = {}
    for label, (make, compiled) in WORKLOADS.items():
        step = make(compiled)
        for _ in range(3):  # compile and warm up outside the profile
            step()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            step()
            torch.cuda.synchronize()
        for ev in prof.events():
            if ev.device_type == torch.autograd.DeviceType.CUDA and not ev.name.startswith(("Memcpy", "Memset")):
                seen.setdefault(ev.name, label)
        print(label, len(seen), flush=True)
    with (OUT / "names.jsonl").open("w") as f:
        for name, label in seen.items():
            f.write(json.dumps({"name": name, "workload": label}) + "\n")
    versions = {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "gpu": torch.cuda.get_device_name(),
        "python": platform.python_version(),
    }
    (OUT / "versions.json").write_text(json.dumps(versions, indent=2))


if __name__ == "__main__":
    main()
