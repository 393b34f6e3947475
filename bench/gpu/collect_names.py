"""Kernel names of real PyTorch workloads on the device, for an identity test set (issue 16 deliverable 4).

Runs small models in pure torch (no kernelscope import: the names must not depend on the classifier), eager
and under ``torch.compile``, forward and backward, and writes every distinct GPU kernel name the profiler saw,
with the workload that launched it first, to ``$OUT/names.jsonl``; versions to ``$OUT/versions.json``.
Suite 20 (set 20): decoder, convnet and MoE steps and a sweep of ops; suite 21 (set 21): a ViT encoder (compiled
with max-autotune), a small UNet, a decode step with RoPE, a KV-cache write and top-p sampling, and more ATen ops.
Suite 22 (set 22): an encoder with attention written out, a GRU language model, compiled FlexAttention, and
linear algebra, sparse products, FFTs and losses. Suite 28 (set 28): a Llama block (GQA by cuDNN attention, complex
RoPE, FP8 row-scaled MLP), a grouped-GEMM MoE, every SDPA backend and jagged attention, weight-only int4/int8 and 2:4
sparse GEMMs, every optimizer, special functions and distributions, vision resampling ops, Inductor extras, and more
losses and linear algebra. Suite 29 (set 29, two GPUs): tensor, sequence and expert parallelism, FSDP2, DDP,
point-to-point and other collectives, and a serving engine's decode step written in torch, replayed as a CUDA graph.
Suite 30 (set 30): the libraries' own search spaces, their trials profiled: cuDNN's benchmark mode over convolutions,
RNNs and normalization, TunableOp over cuBLAS/cuBLASLt, Inductor's max-autotune; cuFFT over sizes, cuSOLVER and MAGMA,
cuSPARSE, and cuBLAS beyond the plain GEMM. Suite 31 (set 31): Inductor's kernels for whole training steps
(forward, backward, compiled optimizer) over seven model families. Suite 32 (set 32): inference fast paths, a
convnet compiled with max-autotune, a decode step over a static KV cache under CUDA graphs, and tensor utilities.
Suite 33 (set 33): a recommender (EmbeddingBag, sparse gradients), message passing on a graph, how serving engines
sample tokens, and linear recurrences compiled by Inductor. Suite 34 (set 34): a PPO update (GAE, clipped surrogate),
a detector's post-processing and losses written in torch, and torch.distributions; each eager and compiled. Suite 35
(set 35): torch.sparse's own Triton BSR kernels, torch.func transforms and Fourier layers eager and compiled, and
control flow (cond, while_loop) compiled. Suite 36 (set 36): Liger-Kernel's Triton ops (its wheel installed for the
run). Suite 38 (set 38): flash-linear-attention's Triton ops and layers (fla-core's wheel installed for the run).
Usage (device): ``python bench/gpu/collect_names.py [20|21|22|28|30|31|32|33|34|35|36|38]``; suite 29:
``torchrun --nproc-per-node 2 bench/gpu/collect_names.py 29``.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import platform
import sys
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel
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


class Encoder(nn.Module):
    """A ViT-style encoder layer: LayerNorm, non-causal SDPA with dropout, tanh-GELU MLP."""

    def __init__(self, d: int = 768, heads: int = 12) -> None:
        super().__init__()
        self.heads, self.n1, self.n2 = heads, nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(self.n1(x)).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, dropout_p=0.1)
        x = x + F.dropout(self.o(a.transpose(1, 2).reshape(b, s, d)), 0.1)
        return x + self.fc2(F.gelu(self.fc1(self.n2(x)), approximate="tanh"))


def vit_step(compiled: bool) -> Callable[[], None]:
    patch = nn.Conv2d(3, 768, 16, 16).to(DEV)
    enc = nn.Sequential(*[Encoder() for _ in range(2)]).to(DEV)
    head = nn.Linear(768, 1000).to(DEV)
    opt = torch.optim.Adam([*patch.parameters(), *enc.parameters(), *head.parameters()], foreach=True)
    model = torch.compile(enc, mode="max-autotune-no-cudagraphs") if compiled else enc
    x, y = torch.randn(16, 3, 224, 224, device=DEV), torch.randint(0, 1000, (16,), device=DEV)

    def step() -> None:
        with torch.autocast(DEV, dtype=torch.bfloat16):
            h = patch(x).flatten(2).transpose(1, 2)
            loss = F.cross_entropy(head(model(h).mean(1)), y)
        loss.backward()
        opt.step()
        opt.zero_grad()

    return step


def unet_step(compiled: bool) -> Callable[[], None]:
    down = nn.Sequential(nn.Conv2d(4, 64, 3, 1, 1), nn.GroupNorm(8, 64), nn.SiLU(), nn.Conv2d(64, 128, 3, 2, 1))
    up = nn.Sequential(nn.ConvTranspose2d(128, 64, 4, 2, 1), nn.InstanceNorm2d(64), nn.Mish())
    out = nn.Conv2d(128, 4, 1)
    mods = nn.ModuleList([down, up, out]).to(DEV)
    opt = torch.optim.RMSprop(mods.parameters())

    def net(x: torch.Tensor) -> torch.Tensor:
        h = down(x)
        u = up(h)
        u2 = F.interpolate(h, scale_factor=2.0, mode="nearest")[:, :64]
        return out(torch.cat([u, u2], 1)).tanh()

    fn = torch.compile(net) if compiled else net
    x = torch.randn(8, 4, 64, 64, device=DEV)

    def step() -> None:
        with torch.autocast(DEV, dtype=torch.float16):
            loss = F.mse_loss(fn(x).float(), x) + F.smooth_l1_loss(fn(x).float(), x)
        loss.backward()
        opt.step()
        opt.zero_grad()

    return step


def decode_step(compiled: bool) -> Callable[[], None]:
    """One greedy-plus-sampling decode step: RoPE in torch, a KV-cache write, top-p sampling with penalties."""
    b, h, dh, vocab = 8, 16, 64, 32000
    cache_k = torch.zeros(b, h, 1024, dh, device=DEV, dtype=torch.float16)
    pos = torch.full((b,), 100, device=DEV)
    inv = 1.0 / (10000 ** (torch.arange(0, dh, 2, device=DEV).float() / dh))

    def decode(q: torch.Tensor, k: torch.Tensor, logits: torch.Tensor, prev: torch.Tensor) -> torch.Tensor:
        ang = pos[:, None].float() * inv
        cos, sin = ang.cos()[:, None].half(), ang.sin()[:, None].half()
        q1, q2 = q.chunk(2, -1)
        k1, k2 = k.chunk(2, -1)
        q = torch.cat([q1 * cos - q2 * sin, q1 * sin + q2 * cos], -1)
        k = torch.cat([k1 * cos - k2 * sin, k1 * sin + k2 * cos], -1)
        cache_k.index_copy_(2, pos[:1], k[:, :, None])
        att = torch.softmax((q[:, :, None] @ cache_k[:, :, :128].transpose(-1, -2)).float() / 8, -1)
        logits = logits.scatter_add(1, prev, -torch.ones_like(prev, dtype=logits.dtype))
        probs, idx = torch.sort(torch.softmax(logits / 0.7, -1), descending=True)
        probs = probs.masked_fill(probs.cumsum(-1) > 0.9, 0)
        pick = torch.multinomial(probs, 1)
        return idx.gather(1, pick) + att.argmax(-1)[:, :1]

    fn = torch.compile(decode) if compiled else decode
    q = torch.randn(b, h, dh, device=DEV, dtype=torch.float16)
    k = torch.randn(b, h, dh, device=DEV, dtype=torch.float16)
    logits = torch.randn(b, vocab, device=DEV)
    prev = torch.randint(0, vocab, (b, 32), device=DEV)
    return lambda: fn(q, k, logits, prev).sum().item() and None


def more_ops(_: bool) -> Callable[[], None]:
    x = torch.randn(2048, 512, device=DEV)
    img = torch.randn(4, 8, 32, 32, 32, device=DEV)
    i8a = torch.randint(-128, 127, (256, 512), device=DEV, dtype=torch.int8)
    i8b = torch.randint(-128, 127, (512, 256), device=DEV, dtype=torch.int8)
    emb = nn.Embedding(50000, 256, sparse=False).to(DEV)
    ids = torch.randint(0, 50000, (8192,), device=DEV)
    logp = torch.randn(50, 16, 20, device=DEV).log_softmax(2).detach().requires_grad_()
    tgt = torch.randint(1, 20, (16, 30), device=DEV)

    def step() -> None:
        torch.histc(x, 100)
        torch.bucketize(x, torch.linspace(-3, 3, 64, device=DEV))
        torch.searchsorted(torch.sort(x[0]).values, x[1])
        torch.cdist(x[:256], x[256:512])
        torch.kthvalue(x, 5, dim=1)
        torch.median(x, dim=1)
        torch.mode(x.round(), dim=1)
        torch.logsumexp(x, 1)
        torch.cumprod(x[:, :16].sigmoid(), 1)
        torch.flip(x, (0,)).roll(3, 1)
        F.pad(img[:, :, 0], (2, 2, 2, 2), mode="reflect")
        F.fold(F.unfold(img[:, :, 0], 3, padding=1), (32, 32), 3, padding=1)
        F.avg_pool3d(img, 2)
        F.conv3d(img, torch.randn(8, 8, 3, 3, 3, device=DEV), padding=1)
        F.pixel_shuffle(img[:, :, 0].repeat(1, 2, 1, 1), 4)
        torch._int_mm(i8a, i8b)
        emb(ids).sum().backward()
        F.ctc_loss(logp, tgt, torch.full((16,), 50), torch.full((16,), 30)).backward()
        torch.zeros(512, 512, device=DEV).scatter_reduce_(
            0, torch.randint(0, 512, (512, 512), device=DEV), x[:512], "amax"
        )
        torch.nn.functional.nll_loss(x[:, :100].log_softmax(1), torch.randint(0, 100, (2048,), device=DEV))
        torch.triu(x[:512]) @ torch.tril(x[:512]).t()
        torch.bernoulli(torch.rand_like(x)).mul_(torch.randn_like(x)).erfinv_()

    return step


def bert_step(compiled: bool) -> Callable[[], None]:
    """Post-LN encoder with attention written out (matmul, mask, softmax), fp16, masked-LM loss."""
    d, heads, vocab = 512, 8, 30522
    emb, pos = nn.Embedding(vocab, d).to(DEV), nn.Embedding(512, d).to(DEV)
    qkv, o = nn.Linear(d, 3 * d).to(DEV), nn.Linear(d, d).to(DEV)
    n1, n2 = nn.LayerNorm(d).to(DEV), nn.LayerNorm(d).to(DEV)
    ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d)).to(DEV)
    head = nn.Linear(d, vocab).to(DEV)
    mods = nn.ModuleList([emb, pos, qkv, o, n1, n2, ff, head])
    opt = torch.optim.AdamW(mods.parameters(), foreach=False)
    ids = torch.randint(0, vocab, (8, 256), device=DEV)
    pad = torch.rand(8, 256, device=DEV) < 0.1

    def layer(ids: torch.Tensor) -> torch.Tensor:
        x = emb(ids) + pos(torch.arange(ids.shape[1], device=DEV))
        b, s, _ = x.shape
        q, k, v = qkv(x).view(b, s, 3, heads, d // heads).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-1, -2)) / 8
        att = att.masked_fill(pad[:, None, None], float("-inf")).softmax(-1)
        x = n1(x + o((att @ v).transpose(1, 2).reshape(b, s, d)))
        return head(n2(x + ff(x)))

    fn = torch.compile(layer) if compiled else layer

    def step() -> None:
        with torch.autocast(DEV, dtype=torch.float16):
            loss = F.cross_entropy(fn(ids).float().view(-1, vocab), ids.view(-1), ignore_index=0)
        loss.backward()
        opt.step()
        opt.zero_grad()

    return step


def rnn_step(_: bool) -> Callable[[], None]:
    emb, gru, out = (
        nn.Embedding(10000, 256).to(DEV),
        nn.GRU(256, 512, 2, batch_first=True).to(DEV),
        nn.Linear(512, 10000).to(DEV),
    )
    opt = torch.optim.Adagrad([*emb.parameters(), *gru.parameters(), *out.parameters()])
    ids = torch.randint(0, 10000, (32, 64), device=DEV)

    def step() -> None:
        h, _ = gru(emb(ids))
        loss = F.nll_loss(F.log_softmax(out(h), -1).view(-1, 10000), ids.view(-1))
        loss.backward()
        torch.nn.utils.clip_grad_value_(gru.parameters(), 1.0)
        opt.step()
        opt.zero_grad()

    return step


def flex_step(_: bool) -> Callable[[], None]:
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    q, k, v = (torch.randn(2, 8, 1024, 64, device=DEV, dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    mask = create_block_mask(lambda b, h, qi, ki: (qi >= ki) & (qi - ki < 256), None, None, 1024, 1024, device=DEV)
    fa = torch.compile(flex_attention)
    return lambda: fa(q, k, v, block_mask=mask, score_mod=lambda s, b, h, qi, ki: s + (qi - ki) * 0.01).sum().backward()


def linalg_ops(_: bool) -> Callable[[], None]:
    a = torch.randn(256, 256, device=DEV, dtype=torch.float64)
    spd = a @ a.t() + 256 * torch.eye(256, device=DEV, dtype=torch.float64)
    sp = torch.randn(2048, 2048, device=DEV).relu_().clamp_max_(0.02).to_sparse()
    dense = torch.randn(2048, 64, device=DEV)
    x = torch.randn(64, 4096, device=DEV)
    logits = torch.randn(4096, 10, device=DEV)

    def step() -> None:
        torch.linalg.cholesky(spd)
        torch.linalg.eigh(spd)
        torch.linalg.svd(a[:64, :64])
        torch.linalg.inv(spd)
        torch.linalg.det(spd[:32, :32])
        torch.sparse.mm(sp, dense)
        sp.to_sparse_csr().matmul(dense)
        torch.stft(x[0], 256, window=torch.hann_window(256, device=DEV), return_complex=True).abs()
        torch.fft.ifft(torch.fft.fft(x.to(torch.complex64))).real.sum()
        F.binary_cross_entropy_with_logits(logits, torch.rand_like(logits))
        F.kl_div(logits.log_softmax(1), logits.softmax(1), reduction="batchmean")
        F.huber_loss(logits, torch.zeros_like(logits))
        F.triplet_margin_loss(x[:16].t(), x[16:32].t(), x[32:48].t())
        y, idx = F.max_pool2d(x.view(1, 64, 64, 64), 2, return_indices=True)
        F.max_unpool2d(y, idx, 2)
        F.adaptive_max_pool2d(x.view(1, 64, 64, 64), 7)
        x.masked_select(x > 1).sum()
        x.index_put_((torch.randint(0, 64, (100,), device=DEV),), torch.zeros(100, 4096, device=DEV), accumulate=True)
        x.to(torch.float8_e4m3fn).to(torch.float32).abs().amax()
        torch.nn.utils.parametrizations.spectral_norm(nn.Linear(64, 64).to(DEV))(x.t()[:8])

    return step


def _runs(op: Callable[[], object]) -> bool:
    """Runs one op; one this torch or GPU cannot run is printed, not raised: it must not cost the others' names."""
    try:
        op()
    except Exception as exc:
        print("  op dropped:", repr(exc)[:200], flush=True)
        return False
    return True


def sweep(*ops: Callable[[], object]) -> Callable[[], None]:
    """A step of independent ops; an op this torch or GPU cannot run is dropped (and printed), not the whole sweep."""
    kept = [op for op in ops if _runs(op)]

    def step() -> None:
        for op in kept:
            op()

    return step


def back(out: object) -> None:
    """Backward from an op's output (its first, for ops returning a tuple), summed in fp32."""
    first = out[0] if isinstance(out, tuple) else out
    assert isinstance(first, torch.Tensor)
    first.float().sum().backward()


# cuDNN first; where it cannot take grouped-query attention, SDPA falls back in this order
BACKENDS = [
    SDPBackend.CUDNN_ATTENTION,
    SDPBackend.FLASH_ATTENTION,
    SDPBackend.EFFICIENT_ATTENTION,
    SDPBackend.MATH,
]


def llama_step(compiled: bool) -> Callable[[], None]:
    """A Llama-style prefill block: grouped-query attention (cuDNN SDPA), complex-number RoPE, FP8 row-scaled MLP."""
    d, heads, kv_heads, s = 1024, 16, 4, 512
    dh = d // heads
    n1, n2 = nn.RMSNorm(d).to(DEV), nn.RMSNorm(d).to(DEV)
    wq = nn.Linear(d, d, bias=False).to(DEV)
    wkv = nn.Linear(d, 2 * kv_heads * dh, bias=False).to(DEV)
    wo = nn.Linear(d, d, bias=False).to(DEV)
    w_up = (torch.randn(4 * d, d, device=DEV) / 32).to(torch.float8_e4m3fn)
    w_down = (torch.randn(d, 2 * d, device=DEV) / 32).to(torch.float8_e4m3fn)
    freqs = torch.polar(
        torch.ones(s, dh // 2, device=DEV),
        torch.outer(torch.arange(s, device=DEV).float(), 1e-4 ** torch.linspace(0, 1, dh // 2, device=DEV)),
    )

    def rope(t: torch.Tensor) -> torch.Tensor:
        c = torch.view_as_complex(t.float().reshape(*t.shape[:-1], -1, 2)) * freqs[None, :, None]
        return torch.view_as_real(c).flatten(-2).type_as(t)

    def fp8_linear(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1])
        sx = x2.abs().amax(-1, keepdim=True).float().clamp(min=1e-6) / 448
        q = (x2 / sx).to(torch.float8_e4m3fn)
        sw = torch.ones(1, w.shape[0], device=DEV)
        return torch._scaled_mm(q, w.t(), scale_a=sx, scale_b=sw, out_dtype=torch.bfloat16).view(*x.shape[:-1], -1)

    def block(x: torch.Tensor) -> torch.Tensor:
        b = x.shape[0]
        h = n1(x)
        q = rope(wq(h).view(b, s, heads, dh))
        k, v = wkv(h).view(b, s, 2, kv_heads, dh).unbind(2)
        k = rope(k)
        with sdpa_kernel(BACKENDS):
            a = F.scaled_dot_product_attention(
                q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True, enable_gqa=True
            )
        x = x + wo(a.transpose(1, 2).reshape(b, s, d))
        g, u = fp8_linear(n2(x), w_up).chunk(2, -1)
        return x + fp8_linear(F.silu(g) * u, w_down)

    fn = torch.compile(block) if compiled else block
    x = torch.randn(2, s, d, device=DEV, dtype=torch.bfloat16)
    params = [*n1.parameters(), *n2.parameters(), *wq.parameters(), *wkv.parameters(), *wo.parameters()]
    for p_ in params:
        p_.data = p_.data.to(torch.bfloat16)

    def step() -> None:
        with torch.no_grad():  # prefill only: _scaled_mm has no backward
            fn(x).float().pow(2).mean().item()

    return step


def grouped_moe_step(compiled: bool) -> Callable[[], None]:
    """A MoE layer with sigmoid routing and grouped GEMMs (bf16 ``_grouped_mm``, FP8 ``_scaled_grouped_mm``)."""
    d, experts, k, tokens = 1024, 8, 2, 4096
    router = torch.randn(d, experts, device=DEV, dtype=torch.bfloat16) / 32
    w1 = torch.randn(experts, d, 2048, device=DEV, dtype=torch.bfloat16) / 32
    w2 = torch.randn(experts, 1024, d, device=DEV, dtype=torch.bfloat16) / 32
    w8 = (torch.randn(experts, 1024, d, device=DEV) / 32).to(torch.float8_e4m3fn).transpose(-2, -1)
    x = torch.randn(tokens, d, device=DEV, dtype=torch.bfloat16)

    def moe(x: torch.Tensor) -> torch.Tensor:
        scores = torch.sigmoid(x @ router)
        w, idx = scores.topk(k, -1)
        w = w / w.sum(-1, keepdim=True)
        order = idx.view(-1).argsort(stable=True)
        counts = torch.histc(idx.view(-1).float(), experts, 0, experts - 1).int()
        offs = torch.cumsum(counts, 0, dtype=torch.int32)
        xs = x.repeat_interleave(k, 0)[order]
        g, u = torch._grouped_mm(xs, w1, offs=offs).chunk(2, -1)
        y = torch._grouped_mm(F.silu(g) * u, w2, offs=offs)
        out = torch.zeros_like(xs).index_add_(0, order, y)
        return (out.view(tokens, k, d) * w.unsqueeze(-1)).sum(1)

    def fp8_grouped() -> torch.Tensor:
        xq = (x / 8).to(torch.float8_e4m3fn)
        offs = torch.arange(512, tokens + 1, 512, device=DEV, dtype=torch.int32)
        sa = torch.ones(tokens, device=DEV)
        sb = torch.ones(experts, d, device=DEV)
        return torch._scaled_grouped_mm(xq, w8, sa, sb, offs=offs, out_dtype=torch.bfloat16)

    fn = torch.compile(moe) if compiled else moe
    return sweep(lambda: fn(x).sum().item(), fp8_grouped)


def attention_variants(_: bool) -> Callable[[], None]:
    """SDPA by each backend, with masks, dropout and backward; jagged (nested) attention; attention decode shapes."""
    q, k, v = (torch.randn(4, 8, 256, 64, device=DEV, dtype=torch.float16, requires_grad=True) for _ in range(3))
    mask = torch.randn(4, 1, 256, 256, device=DEV, dtype=torch.float16)
    qd = torch.randn(32, 8, 1, 128, device=DEV, dtype=torch.bfloat16)
    kd = torch.randn(32, 8, 2048, 128, device=DEV, dtype=torch.bfloat16)

    def with_backend(backend: SDPBackend, **kw: object) -> Callable[[], None]:
        def run() -> None:
            with sdpa_kernel(backend):
                F.scaled_dot_product_attention(q, k, v, **kw).sum().backward()  # type: ignore[arg-type]

        return run

    def jagged() -> None:
        lens = [37, 200, 5, 128]
        parts = [torch.randn(n, 8, 64, device=DEV, dtype=torch.float16) for n in lens]
        nt = torch.nested.nested_tensor(parts, layout=torch.jagged).transpose(1, 2)
        F.scaled_dot_product_attention(nt, nt, nt)

    def decode() -> None:
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            F.scaled_dot_product_attention(qd, kd, kd)
        with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
            F.scaled_dot_product_attention(qd, kd, kd)

    return sweep(
        with_backend(SDPBackend.FLASH_ATTENTION, is_causal=True, dropout_p=0.1),
        with_backend(SDPBackend.EFFICIENT_ATTENTION, attn_mask=mask),
        with_backend(SDPBackend.CUDNN_ATTENTION),
        with_backend(SDPBackend.MATH, attn_mask=mask, dropout_p=0.1),
        jagged,
        decode,
    )


def low_precision_ops(_: bool) -> Callable[[], None]:
    """Weight-only int4/int8 GEMMs, 2:4 semi-structured sparsity, tensor quantization ops, TF32/fp64/complex GEMMs."""
    x16 = torch.randn(64, 4096, device=DEV, dtype=torch.bfloat16)
    w = torch.randint(0, 16, (4096, 4096 // 2), device=DEV, dtype=torch.uint8)
    scale_zeros = torch.randn(4096 // 128, 4096, 2, device=DEV, dtype=torch.bfloat16)
    w8 = torch.randint(-128, 127, (4096, 4096), device=DEV, dtype=torch.int8)
    s8 = torch.rand(4096, device=DEV, dtype=torch.bfloat16)
    dense = torch.randn(1024, 1024, device=DEV, dtype=torch.float16)
    mask24 = torch.tensor([1, 1, 0, 0], device=DEV, dtype=torch.bool).repeat(1024, 256)
    xf = torch.randn(1024, 1024, device=DEV)
    c = torch.randn(256, 256, device=DEV, dtype=torch.complex64)
    d64 = torch.randn(512, 512, device=DEV, dtype=torch.float64)
    sc = torch.rand(1024, device=DEV) + 0.1
    zp = torch.zeros(1024, device=DEV, dtype=torch.int32)

    def int4() -> None:
        packed = torch._convert_weight_to_int4pack(w, 8)
        torch._weight_int4pack_mm(x16, packed, 128, scale_zeros)

    def sparse24() -> None:
        from torch.sparse import to_sparse_semi_structured

        sp = to_sparse_semi_structured(dense.masked_fill(~mask24, 0))
        torch.mm(sp, dense)

    def tf32() -> None:
        torch.backends.cuda.matmul.allow_tf32 = True
        xf @ xf
        torch.backends.cuda.matmul.allow_tf32 = False

    return sweep(
        int4,
        lambda: torch._weight_int8pack_mm(x16, w8, s8),
        sparse24,
        tf32,
        lambda: c @ c,
        lambda: d64 @ d64,
        lambda: torch.baddbmm(xf[:8, None], xf[:8, None, :64], xf[:64].expand(8, 64, 1024)),
        lambda: torch.addmv(xf[0], xf, xf[1]),
        lambda: torch._addmm_activation(xf[0], xf, xf, use_gelu=True),
        lambda: torch.quantize_per_tensor(xf, 0.1, 3, torch.qint8).dequantize(),
        lambda: torch.fake_quantize_per_channel_affine(xf, sc, zp, 0, -128, 127),
        lambda: torch.fake_quantize_per_tensor_affine(xf, 0.05, 0, 0, 255),
        lambda: xf.to(torch.float8_e5m2).to(torch.bfloat16),
    )


def optimizer_zoo(_: bool) -> Callable[[], None]:
    """One step of each optimizer implementation (for-loop, foreach, fused) and AMP loss scaling."""
    opts = [
        (torch.optim.SGD, {"lr": 0.1, "momentum": 0.9, "nesterov": True, "foreach": True}),
        (torch.optim.SGD, {"lr": 0.1, "momentum": 0.9, "fused": True}),
        (torch.optim.NAdam, {"foreach": True}),
        (torch.optim.RAdam, {"foreach": True, "decoupled_weight_decay": True, "weight_decay": 0.01}),
        (torch.optim.Adamax, {"foreach": True}),
        (torch.optim.ASGD, {"foreach": True}),
        (torch.optim.Rprop, {"foreach": True}),
        (torch.optim.Adadelta, {"foreach": True}),
        (torch.optim.Adam, {"foreach": True, "capturable": True, "amsgrad": True}),
        (torch.optim.Adagrad, {"fused": True}),
        (torch.optim.Adafactor, {"foreach": False}),
    ]
    ops: list[Callable[[], object]] = []
    for cls, kw in opts:
        ps = [torch.randn(256, 256, device=DEV, requires_grad=True) for _ in range(3)]
        for p_ in ps:
            p_.grad = torch.randn_like(p_)
        ops.append(cls(ps, **kw).step)  # type: ignore[arg-type]
    model = nn.Linear(512, 512).to(DEV)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    scaler = torch.amp.GradScaler("cuda")
    xin = torch.randn(64, 512, device=DEV)

    def amp() -> None:
        with torch.autocast(DEV, dtype=torch.float16):
            loss = model(xin).float().square().mean()
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()

    return sweep(*ops, amp)


def special_random_ops(_: bool) -> Callable[[], None]:
    """torch.special functions, random distributions and complex-number ops."""
    x = torch.rand(1 << 16, device=DEV) + 0.5
    c = torch.randn(1 << 14, device=DEV, dtype=torch.complex64)
    sp = torch.special
    return sweep(
        lambda: sp.bessel_j0(x),
        lambda: sp.i0e(x),
        lambda: sp.erfcx(x),
        lambda: sp.zeta(x + 1, x),
        lambda: sp.digamma(x),
        lambda: sp.polygamma(2, x),
        lambda: sp.log_ndtr(x),
        lambda: sp.chebyshev_polynomial_t(x, 5),
        lambda: sp.airy_ai(x),
        lambda: sp.spherical_bessel_j0(x),
        lambda: sp.scaled_modified_bessel_k0(x),
        lambda: sp.xlog1py(x, x),
        lambda: sp.entr(x),
        lambda: sp.sinc(x),
        lambda: torch.lgamma(x),
        lambda: torch.mvlgamma(x + 2, 3),
        lambda: torch.randperm(100000, device=DEV),
        lambda: torch.empty_like(x).normal_(),
        lambda: torch.empty_like(x).exponential_(),
        lambda: torch.empty_like(x).geometric_(0.3),
        lambda: torch.empty_like(x).cauchy_(),
        lambda: torch.empty_like(x).log_normal_(),
        lambda: torch.poisson(x),
        lambda: torch._standard_gamma(x),
        lambda: torch.binomial(x * 10, x / 2),
        lambda: torch._sample_dirichlet(x.view(-1, 16)),
        lambda: torch.multinomial(x.view(64, -1), 10, replacement=False),
        lambda: torch.polar(x, x),
        c.angle,
        c.abs,
        (c * c.conj()).sqrt,
        lambda: torch.fft.ihfft(x),
        lambda: torch.nan_to_num(x.log() - 1),
        lambda: torch.frexp(x),
        lambda: torch.logaddexp(x, x),
        lambda: torch.hypot(x, x),
    )


def vision_ops(_: bool) -> Callable[[], None]:
    """Resampling, normalization, pooling and padding ops of vision models, forward and backward."""
    img = torch.randn(4, 16, 64, 64, device=DEV, requires_grad=True)
    vol = torch.randn(2, 4, 16, 32, 32, device=DEV, requires_grad=True)
    seq = torch.randn(8, 64, 1024, device=DEV, dtype=torch.bfloat16)
    theta = torch.randn(2, 3, 4, device=DEV)
    dw = torch.randn(64, 1, 7, device=DEV, dtype=torch.bfloat16)
    ids = torch.randint(0, 1000, (512,), device=DEV)
    table = torch.randn(1000, 64, device=DEV)

    return sweep(
        lambda: back(F.interpolate(img, scale_factor=2, mode="bicubic")),
        lambda: back(F.interpolate(img, size=(24, 24), mode="bilinear", antialias=True)),
        lambda: back(F.interpolate(vol, scale_factor=2, mode="trilinear")),
        lambda: back(F.interpolate(vol, scale_factor=2, mode="nearest-exact")),
        lambda: back(
            F.grid_sample(vol, F.affine_grid(theta, [2, 4, 8, 16, 16], align_corners=False), align_corners=False)
        ),
        lambda: back(F.conv_transpose2d(img, torch.randn(16, 8, 3, 3, device=DEV), stride=2)),
        lambda: F.conv1d(seq, dw, padding=3, groups=64),
        lambda: back(F.conv2d(img, torch.randn(32, 16, 3, 3, device=DEV), dilation=2)),
        lambda: back(F.instance_norm(img)),
        lambda: back(F.local_response_norm(img, 5)),
        lambda: back(F.pixel_unshuffle(img, 2)),
        lambda: F.channel_shuffle(img.detach(), 4),
        lambda: back(F.pad(vol, (1, 1, 1, 1, 1, 1), mode="replicate")),
        lambda: back(F.pad(img, (3, 3, 3, 3), mode="circular")),
        lambda: back(F.adaptive_avg_pool3d(vol, 5)),
        lambda: back(F.fractional_max_pool2d(img, 2, output_ratio=0.5)),
        lambda: back(F.lp_pool2d(img, 2, 2)),
        lambda: back(F.avg_pool2d(img, 3, 2, 1, count_include_pad=False)),
        lambda: F.embedding(ids, table, max_norm=1.0),
        lambda: F.one_hot(ids, 1000),
        lambda: back(F.normalize(img, dim=1)),
        lambda: back(F.cosine_similarity(img, img.flip(0))),
        lambda: back(torch.nn.functional.glu(img, 1)),
        lambda: back(F.hardswish(img) + F.selu(img) + F.celu(img) + F.softplus(img) + F.rrelu(img) + F.hardtanh(img)),
    )


def compile_extras(_: bool) -> Callable[[], None]:
    """Inductor beyond plain fusion: combo kernels, dynamic shapes, a scan, a template matmul with an epilogue."""
    import torch._inductor.config as ic

    ic.combo_kernels = True
    w = torch.randn(1024, 1024, device=DEV, dtype=torch.bfloat16)

    @torch.compile(dynamic=True)
    def dyn(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return (a.sin() + 1).sum(-1), (b * 2).cumsum(0)

    @torch.compile(mode="max-autotune-no-cudagraphs")
    def mm_epi(a: torch.Tensor) -> torch.Tensor:
        return torch.relu(a @ w + 1).to(torch.float8_e4m3fn)

    def scan(a: torch.Tensor) -> torch.Tensor:
        from torch._higher_order_ops.associative_scan import associative_scan

        return associative_scan(lambda u, v: u * v + v, a, dim=1, combine_mode="pointwise")

    cscan = torch.compile(scan)

    @torch.compile
    def losses(a: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(a, t, label_smoothing=0.1) + F.kl_div(a.log_softmax(-1), a.softmax(-1), log_target=False)

    a = torch.randn(333, 777, device=DEV)
    b = torch.randn(1000, 64, device=DEV)
    t = torch.randint(0, 777, (333,), device=DEV)
    xb = torch.randn(512, 1024, device=DEV, dtype=torch.bfloat16)
    sa = torch.rand(16, 4096, device=DEV)
    return sweep(lambda: dyn(a, b), lambda: mm_epi(xb), lambda: cscan(sa), lambda: losses(a, t))


def losses_linalg(_: bool) -> Callable[[], None]:
    """Margin and likelihood losses; LU, least squares, matrix exponential, pseudo-inverse, triangular solves."""
    a = torch.randn(256, 100, device=DEV, requires_grad=True)
    y = torch.randint(0, 100, (256,), device=DEV)
    m = torch.randn(128, 128, device=DEV, dtype=torch.float64)
    ml = (torch.rand(256, 100, device=DEV) < 0.1).long()

    def back(t: torch.Tensor) -> None:
        t.backward()

    return sweep(
        lambda: back(F.margin_ranking_loss(a[:, 0], a[:, 1], torch.sign(a[:, 2].detach()))),
        lambda: back(F.multilabel_margin_loss(a, ml * y[:, None].clamp(max=99) - (1 - ml))),
        lambda: back(F.multi_margin_loss(a, y)),
        lambda: back(F.poisson_nll_loss(a, a.detach().exp())),
        lambda: back(F.gaussian_nll_loss(a, a.detach(), a.detach().exp())),
        lambda: back(F.cosine_embedding_loss(a, a.flip(0), torch.ones(256, device=DEV))),
        lambda: back(F.soft_margin_loss(a, torch.sign(a.detach()))),
        lambda: back(F.multilabel_soft_margin_loss(a, ml.float())),
        lambda: back(F.cross_entropy(a, a.detach().softmax(-1))),
        lambda: torch.linalg.lu_factor(m),
        lambda: torch.linalg.lstsq(m[:, :64], m[:, :3]),
        lambda: torch.linalg.matrix_exp(m[:32, :32] / 100),
        lambda: torch.linalg.pinv(m[:64]),
        lambda: torch.linalg.solve_triangular(
            torch.triu(m) + 10 * torch.eye(128, device=DEV, dtype=torch.float64), m, upper=True
        ),
        lambda: torch.linalg.householder_product(*torch.geqrf(m[:, :32])),
        lambda: torch.linalg.eigvals(m[:32, :32]),
        lambda: torch.linalg.ldl_factor(m @ m.t()),
        lambda: torch.kron(m[:16, :16], m[:8, :8]),
        lambda: torch.einsum("bij,bjk->bik", m[:64].view(4, 16, 128), m.view(4, 128, 32)),
        lambda: torch.segment_reduce(m[:, 0], "max", lengths=torch.full((16,), 8, device=DEV)),
        lambda: torch.unique_consecutive(y.sort().values, return_counts=True),
        lambda: torch.bincount(y, weights=a[:, 0].detach()),
    )


def _dist() -> tuple[int, int]:
    import torch.distributed as dist

    return dist.get_rank(), dist.get_world_size()


def tp_step(compiled: bool) -> Callable[[], None]:
    """A tensor-parallel MLP (column then row parallel, all-reduce) and a sequence-parallel one (all-gather,
    reduce-scatter), by functional collectives so that Inductor lowers them too."""
    import torch.distributed as dist
    import torch.distributed._functional_collectives as fc

    _, world = _dist()
    d, tokens = 2048, 1024
    up = torch.randn(d, 4 * d // world, device=DEV, dtype=torch.bfloat16) / 45
    down = torch.randn(4 * d // world, d, device=DEV, dtype=torch.bfloat16) / 90
    x = torch.randn(tokens, d, device=DEV, dtype=torch.bfloat16)
    group = dist.group.WORLD

    def mlp(x: torch.Tensor) -> torch.Tensor:
        y = F.gelu(x @ up, approximate="tanh") @ down
        y = fc.all_reduce(y, "sum", group)
        xs = fc.all_gather_tensor(F.rms_norm(y[: tokens // world], (d,)), 0, group)
        return fc.reduce_scatter_tensor(F.silu(xs @ up) @ down, "sum", 0, group)

    fn = torch.compile(mlp) if compiled else mlp
    return lambda: fn(x).float().sum().item() and None


def ep_moe_step(_: bool) -> Callable[[], None]:
    """Expert parallelism: tokens dispatched to the rank holding their expert by all-to-all, and combined back."""
    import torch.distributed as dist

    rank, world = _dist()
    d, experts_per_rank, tokens = 1024, 4, 2048
    experts = experts_per_rank * world
    router = torch.randn(d, experts, device=DEV, dtype=torch.bfloat16) / 32
    w = torch.randn(experts_per_rank, d, d, device=DEV, dtype=torch.bfloat16) / 32
    x = torch.randn(tokens, d, device=DEV, dtype=torch.bfloat16) + rank

    def step() -> None:
        expert = (x @ router).float().softmax(-1).argmax(-1)
        order = expert.argsort()
        send = torch.bincount(expert // experts_per_rank, minlength=world)
        recv = torch.empty_like(send)
        dist.all_to_all_single(recv, send)
        inp = torch.empty(int(recv.sum()), d, device=DEV, dtype=x.dtype)
        dist.all_to_all_single(inp, x[order], recv.tolist(), send.tolist())
        out = torch.tanh(inp @ w[0])
        back = torch.empty_like(x)
        dist.all_to_all_single(back, out, send.tolist(), recv.tolist())
        x.index_copy(0, order, back).sum().item()

    return step


def fsdp_step(_: bool) -> Callable[[], None]:
    """FSDP2 (fully_shard) training step of two decoder blocks: bf16 parameters, fp32 gradient reduction."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    model = nn.Sequential(*[Block(512, 8) for _ in range(2)]).to(DEV)
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for block in model:
        fully_shard(block, mp_policy=mp)
    fully_shard(model, mp_policy=mp)
    opt = torch.optim.AdamW(model.parameters(), foreach=True)
    x = torch.randn(4, 256, 512, device=DEV)

    def step() -> None:
        model(x).float().pow(2).mean().backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad()

    return step


def ddp_step(_: bool) -> Callable[[], None]:
    """DDP with gradient buckets compressed to bf16 for the all-reduce, and SyncBatchNorm."""
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    from torch.nn.parallel import DistributedDataParallel

    net = nn.Sequential(
        nn.Conv2d(3, 32, 3, 1, 1), nn.BatchNorm2d(32), nn.ReLU(), nn.Flatten(), nn.Linear(32 * 32 * 32, 10)
    )
    net = nn.SyncBatchNorm.convert_sync_batchnorm(net).to(DEV)
    model = DistributedDataParallel(net, bucket_cap_mb=1)
    model.register_comm_hook(None, default_hooks.bf16_compress_hook)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = torch.randn(16, 3, 32, 32, device=DEV), torch.randint(0, 10, (16,), device=DEV)

    def step() -> None:
        F.cross_entropy(model(x), y).backward()
        opt.step()
        opt.zero_grad()

    return step


def collectives(_: bool) -> Callable[[], None]:
    """Point-to-point and the remaining collectives, over several reductions and dtypes."""
    import torch.distributed as dist

    rank, world = _dist()
    peer = (rank + 1) % world
    t = {
        dt: torch.ones(1 << 16, device=DEV, dtype=dt) for dt in (torch.float32, torch.float16, torch.int64, torch.uint8)
    }
    f8 = torch.ones(1 << 16, device=DEV).to(torch.float8_e4m3fn)

    def p2p() -> None:
        buf = torch.empty_like(t[torch.float32])
        ops = [dist.P2POp(dist.isend, t[torch.float32], peer), dist.P2POp(dist.irecv, buf, (rank - 1) % world)]
        for req in dist.batch_isend_irecv(ops):
            req.wait()

    def each_op() -> None:
        for op in (dist.ReduceOp.MAX, dist.ReduceOp.MIN, dist.ReduceOp.PRODUCT, dist.ReduceOp.AVG):
            dist.all_reduce(t[torch.float16].clone(), op)

    return sweep(
        p2p,
        each_op,
        lambda: dist.all_reduce(t[torch.int64].clone()),
        lambda: dist.all_reduce(f8.clone()),
        lambda: dist.broadcast(t[torch.uint8].clone(), 0),
        lambda: dist.reduce(t[torch.float32].clone(), 0),
        lambda: dist.all_gather([torch.empty_like(t[torch.float16]) for _ in range(world)], t[torch.float16]),
        lambda: dist.gather(
            t[torch.float32], [torch.empty_like(t[torch.float32]) for _ in range(world)] if rank == 0 else None, 0
        ),
        lambda: dist.scatter(torch.empty_like(t[torch.float32]), [t[torch.float32]] * world if rank == 0 else None, 0),
        lambda: dist.reduce_scatter_tensor(torch.empty(1 << 15, device=DEV), t[torch.float32].clone()),
        dist.barrier,
    )


def serving_decode(_: bool) -> Callable[[], None]:
    """A serving engine's decode step in torch: paged-KV gather by block table, attention, sampling (temperature,
    top-k, top-p, min-p, repetition penalty), speculative acceptance and beam search; also replayed as a CUDA graph."""
    b, h, dh, block, vocab = 16, 8, 128, 16, 32000
    kv_pages = torch.randn(512, block, h, dh, device=DEV, dtype=torch.bfloat16)
    table = torch.randint(0, 512, (b, 32), device=DEV)
    q = torch.randn(b, h, 1, dh, device=DEV, dtype=torch.bfloat16)
    logits = torch.randn(b, vocab, device=DEV)
    seen = torch.randint(0, vocab, (b, 64), device=DEV)
    draft = torch.randint(0, vocab, (b, 4), device=DEV)

    def decode() -> torch.Tensor:
        kv = kv_pages[table].flatten(1, 2).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, kv, kv)
        lg = logits.scatter(1, seen, logits.gather(1, seen) / 1.2) / 0.8
        top = torch.topk(lg, 50)
        probs = top.values.softmax(-1)
        sp, si = probs.sort(-1, descending=True)
        sp = sp.masked_fill(sp.cumsum(-1) - sp > 0.9, 0)
        sp = sp.masked_fill(sp < 0.05 * sp[:, :1], 0)
        pick = top.indices.gather(1, si.gather(1, torch.multinomial(sp, 1)))
        p_draft = lg.softmax(-1).gather(1, draft)
        accept = (torch.rand_like(p_draft) < p_draft).int().cumprod(-1).sum(-1)
        beams = lg.log_softmax(-1).view(b // 4, -1).topk(4).indices
        return a.sum() + pick.sum() + accept.sum() + beams.sum()

    decode()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        decode()
    return sweep(decode, graph.replay)


WARMUP = 3  # steps run before the profiled one


def cold(*ops: Callable[[], object]) -> Callable[[], None]:
    """Like ``sweep``, but every op first runs inside the profile, so an autotuner's trials (cuDNN's benchmark mode,
    TunableOp, Inductor's max-autotune) are among the names; the warm-up steps do nothing."""
    calls = 0

    def step() -> None:
        nonlocal calls
        calls += 1
        if calls <= WARMUP:
            return
        for op in ops:
            _runs(op)

    return step


def _conv(dim: int, c: int, k: int, size: int, kernel: int, dtype: torch.dtype, **kw: object) -> Callable[[], None]:
    """One convolution, forward and backward; ``transposed``, ``channels_last`` and ``tf32`` are read from ``kw``."""
    transposed, channels_last, tf32 = (bool(kw.pop(key, False)) for key in ("transposed", "channels_last", "tf32"))
    cls = {
        1: nn.Conv1d,
        2: nn.ConvTranspose2d if transposed else nn.Conv2d,
        3: nn.ConvTranspose3d if transposed else nn.Conv3d,
    }[dim]

    def op() -> None:
        torch.backends.cudnn.allow_tf32 = tf32
        m = cls(c, k, kernel, padding=kernel // 2 if not transposed else 0, **kw).to(DEV, dtype)  # type: ignore[arg-type]
        x = torch.randn(8, c, *[size] * dim, device=DEV, dtype=dtype)
        if channels_last:
            fmt = torch.channels_last if dim == 2 else torch.channels_last_3d
            m, x = m.to(memory_format=fmt), x.to(memory_format=fmt)
        m(x.requires_grad_()).float().sum().backward()

    return op


def cudnn_autotune(_: bool) -> Callable[[], None]:
    """cuDNN in benchmark mode, trials included: convolutions over dimensions, layouts, dtypes, groups, dilation and
    transposition, forward and backward; cuDNN's fused conv+ReLU, RNNs, batch norm, CTC loss and grid sampler."""
    torch.backends.cudnn.benchmark = True
    f16, b16, f32 = torch.float16, torch.bfloat16, torch.float32
    convs = [
        _conv(2, 64, 64, 56, 3, f32, tf32=True),
        _conv(2, 64, 64, 56, 3, f32),
        _conv(2, 64, 64, 56, 3, f16),
        _conv(2, 64, 64, 56, 3, f16, channels_last=True),
        _conv(2, 256, 64, 28, 1, f16, channels_last=True),
        _conv(2, 3, 64, 224, 7, f16, channels_last=True, stride=2),
        _conv(2, 128, 128, 28, 3, f16, channels_last=True, groups=128),
        _conv(2, 128, 128, 28, 3, b16, channels_last=True, groups=32),
        _conv(2, 64, 64, 56, 3, b16, channels_last=True, dilation=2),
        _conv(2, 64, 32, 56, 5, b16, channels_last=True),
        _conv(2, 16, 16, 32, 3, torch.float64),
        _conv(1, 256, 256, 4096, 3, f32, tf32=True),
        _conv(1, 256, 256, 1024, 31, f16, groups=256),
        _conv(3, 32, 32, 16, 3, f16, channels_last=True),
        _conv(3, 16, 16, 16, 3, f32, tf32=True),
        _conv(2, 64, 32, 28, 4, f16, channels_last=True, transposed=True, stride=2),
        _conv(3, 16, 8, 8, 2, f32, transposed=True, stride=2),
    ]
    x = torch.randn(8, 64, 56, 56, device=DEV, dtype=f16)
    w = torch.randn(64, 64, 3, 3, device=DEV, dtype=f16)
    seq = torch.randn(32, 16, 256, device=DEV)
    lengths = torch.tensor([32] * 8 + [20] * 8)

    def rnn(cls: type[nn.RNNBase], dtype: torch.dtype, packed: bool = False, **kw: object) -> Callable[[], None]:
        def op() -> None:
            m = cls(256, 256, 2, **kw).to(DEV, dtype)  # type: ignore[arg-type]
            inp = seq.to(dtype).requires_grad_()
            out = m(nn.utils.rnn.pack_padded_sequence(inp, lengths) if packed else inp)[0]
            (nn.utils.rnn.pad_packed_sequence(out)[0] if packed else out).float().sum().backward()

        return op

    def batch_norm(dtype: torch.dtype, fmt: torch.memory_format, dims: int) -> Callable[[], None]:
        def op() -> None:
            m = (nn.BatchNorm2d if dims == 2 else nn.BatchNorm3d)(64).to(DEV)
            t = torch.randn(8, 64, *[16] * dims, device=DEV, dtype=dtype).to(memory_format=fmt)
            with torch.autocast(DEV, dtype=dtype, enabled=dtype != f32):
                m(t.requires_grad_()).float().sum().backward()

        return op

    def ctc() -> None:
        logp = torch.randn(50, 16, 20, device=DEV).log_softmax(2).detach().requires_grad_()
        targets = torch.randint(1, 20, (16 * 10,), dtype=torch.int32)
        F.ctc_loss(
            logp, targets, torch.full((16,), 50, dtype=torch.int32), torch.full((16,), 10, dtype=torch.int32)
        ).backward()

    grid = F.affine_grid(torch.randn(8, 2, 3, device=DEV), [8, 64, 56, 56], align_corners=True)
    return cold(
        *convs,
        lambda: torch.cudnn_convolution_relu(x, w, None, [1, 1], [1, 1], [1, 1], 1),
        lambda: torch.cudnn_convolution_add_relu(x, w, x, 1.0, None, [1, 1], [1, 1], [1, 1], 1),
        rnn(nn.LSTM, f32, bidirectional=True, proj_size=128),
        rnn(nn.LSTM, f16, packed=True),
        rnn(nn.GRU, b16),
        rnn(nn.RNN, f16, nonlinearity="relu"),
        rnn(nn.RNN, torch.float64),
        batch_norm(f32, torch.contiguous_format, 2),
        batch_norm(f16, torch.channels_last, 2),
        batch_norm(b16, torch.contiguous_format, 3),
        ctc,
        lambda: torch.cudnn_grid_sampler(x.float(), grid),
    )


def tunableop_gemms(_: bool) -> Callable[[], None]:
    """PyTorch's TunableOp tuning each GEMM over cuBLAS and cuBLASLt's candidate algorithms, trials included:
    fp32/TF32/bf16/fp16/fp64 GEMMs of decode, prefill and square shapes, transposed, batched, with bias, and FP8."""
    tun = torch.cuda.tunable
    shapes = [(1, 4096, 4096), (16, 4096, 1024), (2048, 2048, 2048), (333, 777, 555)]
    dtypes = [torch.float32, torch.bfloat16, torch.float16, torch.float64]

    def on() -> None:
        tun.enable(True)
        tun.tuning_enable(True)
        tun.set_filename("/tmp/kscope_tunableop%d.csv")
        tun.set_max_tuning_iterations(5)

    def gemm(m: int, n: int, k: int, dtype: torch.dtype, tf32: bool = False) -> Callable[[], None]:
        def op() -> None:
            torch.backends.cuda.matmul.allow_tf32 = tf32
            a = torch.randn(m, k, device=DEV, dtype=dtype)
            b = torch.randn(n, k, device=DEV, dtype=dtype)
            a @ b.t()
            b @ a.t()
            torch.addmm(torch.randn(n, device=DEV, dtype=dtype), a, b.t())
            torch.bmm(a.expand(4, m, k), b.t().expand(4, k, n))

        return op

    def fp8() -> None:
        a = torch.randn(256, 1024, device=DEV).to(torch.float8_e4m3fn)
        b = torch.randn(2048, 1024, device=DEV).to(torch.float8_e4m3fn)
        one = torch.ones((), device=DEV)
        torch._scaled_mm(a, b.t(), one, one, out_dtype=torch.bfloat16)

    def off() -> None:
        tun.enable(False)
        torch.backends.cuda.matmul.allow_tf32 = False

    ops = [gemm(*shape, dtype) for dtype in dtypes for shape in shapes]
    return cold(on, *ops, gemm(512, 512, 512, torch.float32, tf32=True), fp8, off)


def fft_sweep(_: bool) -> Callable[[], None]:
    """cuFFT over sizes that pick its different algorithms: powers of 2, 3, 5, 7 and 11, mixed radices, primes
    (Bluestein), real and complex, single, double and half precision, 1-D to 3-D."""
    ops: list[Callable[[], object]] = []
    for n in (16, 128, 1024, 8192, 1 << 16, 1 << 20, 2187, 15625, 16807, 14641, 1000, 1920, 1009, 65521):
        x = torch.randn(max(1, (1 << 21) // n), n, device=DEV)
        ops += [lambda x=x: torch.fft.irfft(torch.fft.rfft(x), n=x.shape[-1]), lambda x=x: torch.fft.fft(x.cfloat())]
    d = torch.randn(64, 4096, device=DEV, dtype=torch.float64)
    h = torch.randn(64, 1024, device=DEV, dtype=torch.float16)
    vol = torch.randn(4, 64, 64, 64, device=DEV)
    return sweep(
        *ops,
        lambda: torch.fft.irfft(torch.fft.rfft(d)),
        lambda: torch.fft.ifft(torch.fft.fft(d.cdouble())),
        lambda: torch.fft.irfft(torch.fft.rfft(h)),
        lambda: torch.fft.ifft2(torch.fft.fft2(vol[0].cfloat())),
        lambda: torch.fft.irfftn(torch.fft.rfftn(vol, dim=(1, 2, 3))),
        lambda: torch.fft.hfft(h.float()[:, :513]),
    )


def solver_sweep(_: bool) -> Callable[[], None]:
    """Dense linear algebra by cuSOLVER and by MAGMA (``preferred_linalg_library``): factorizations, solves,
    eigen- and singular-value decompositions, single, batched, real and complex."""

    def by(lib: str, f: Callable[[], object]) -> Callable[[], None]:
        def op() -> None:
            torch.backends.cuda.preferred_linalg_library(lib)
            try:
                f()
            finally:
                torch.backends.cuda.preferred_linalg_library("default")

        return op

    g = torch.randn(512, 512, device=DEV, dtype=torch.float64)
    spd = g @ g.t() + 512 * torch.eye(512, device=DEV, dtype=torch.float64)
    gb = torch.randn(64, 24, 24, device=DEV)
    spdb = gb @ gb.transpose(1, 2) + 24 * torch.eye(24, device=DEV)
    gc = torch.randn(128, 128, device=DEV, dtype=torch.complex64)
    la = torch.linalg
    fns: list[Callable[[], object]] = [
        lambda: la.cholesky(spd),
        lambda: la.cholesky(spdb),
        lambda: la.eigh(spd.float()),
        lambda: la.eigh(spdb),
        lambda: la.svd(g[:256, :128]),
        lambda: la.svd(gb),
        lambda: la.qr(g),
        lambda: la.lu_factor(gb),
        lambda: la.solve(g, g[:, :8]),
        lambda: la.inv(gb),
        lambda: la.lstsq(g[:, :64], g[:, :2]),
        lambda: la.eig(g[:64, :64]),
        lambda: la.svdvals(gc),
        lambda: la.solve(gc, gc[:, :4]),
        lambda: torch.cholesky_inverse(la.cholesky(spdb)),
        lambda: la.lu_solve(*la.lu_factor(g), g[:, :4]),
    ]
    return sweep(
        *[by(lib, f) for lib in ("cusolver", "magma") for f in fns],
        lambda: la.svd(gb, driver="gesvda"),
        lambda: la.svd(g[:128, :128], driver="gesvdj"),
        lambda: la.solve_triangular(torch.tril(spdb), gb, upper=False),
    )


def sparse_sweep(_: bool) -> Callable[[], None]:
    """Sparse tensors: cuSPARSE products (SpMM, SpMV, SpGEMM, SDDMM) over CSR, COO and BSR, conversions,
    coalescing, sparse reductions and softmax, and the backward of a sparse product."""
    d = torch.randn(4096, 4096, device=DEV).masked_fill_(torch.rand(4096, 4096, device=DEV) > 0.01, 0)
    csr, coo, dense = d.to_sparse_csr(), d.to_sparse(), torch.randn(4096, 64, device=DEV)
    bsr = d.to_sparse_bsr((64, 64))
    h = d.half()

    def conversions() -> None:
        csr.to_dense()
        d.to_sparse_csc()
        coo.to_sparse_csr()
        (coo + coo).coalesce()

    return sweep(
        lambda: csr @ dense,
        lambda: csr @ dense[:, 0],
        lambda: csr @ csr,
        lambda: csr + csr,
        lambda: coo @ dense,
        conversions,
        lambda: torch.sparse.sum(coo, 1),
        lambda: torch.sparse.softmax(coo, 1),
        lambda: torch.sparse.log_softmax(coo, 0),
        lambda: torch.sparse.sampled_addmm(csr, dense, dense.t()),
        lambda: bsr @ dense,
        lambda: h.to_sparse_csr() @ dense.half(),
        lambda: d.sparse_mask(coo),
        lambda: torch.sparse.mm(coo.requires_grad_(), dense).sum().backward(),
        lambda: torch.sparse.addmm(dense, coo, dense),
    )


def blas_sweep(_: bool) -> Callable[[], None]:
    """cuBLAS beyond the plain GEMM: matrix-vector and dot products in each dtype, complex and double GEMMs, int8,
    batched triangular solves, and cuBLASLt chosen as PyTorch's BLAS (``preferred_blas_library``)."""
    ops: list[Callable[[], object]] = []
    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64):
        m = torch.randn(4096, 1024, device=DEV, dtype=dtype)
        v = torch.randn(1024, device=DEV, dtype=dtype)
        ops += [
            lambda m=m, v=v: m @ v,
            lambda m=m: m[:, 0] @ m,
            lambda v=v: torch.dot(v, v) if not v.is_complex() else torch.vdot(v, v),
        ]
    z = torch.randn(256, 256, device=DEV, dtype=torch.complex128)
    tri = torch.tril(torch.randn(32, 64, 64, device=DEV)) + 8 * torch.eye(64, device=DEV)
    i8 = torch.randint(-8, 8, (64, 4096), device=DEV, dtype=torch.int8)
    xb = torch.randn(512, 1024, device=DEV, dtype=torch.bfloat16)
    wb = torch.randn(2048, 1024, device=DEV, dtype=torch.bfloat16)

    def lt() -> None:
        torch.backends.cuda.preferred_blas_library("cublaslt")
        try:
            F.linear(xb, wb, torch.randn(2048, device=DEV, dtype=torch.bfloat16))
            torch.bmm(xb.view(8, 64, 1024), wb.t()[None].expand(8, -1, -1))
            F.linear(xb.float(), wb.float())
        finally:
            torch.backends.cuda.preferred_blas_library("cublas")

    return sweep(
        *ops,
        lambda: z @ z,
        lambda: torch.bmm(z.expand(4, -1, -1), z.expand(4, -1, -1)),
        lambda: torch._int_mm(i8, i8.t()),
        lambda: torch.linalg.solve_triangular(tri, tri[:, :, :8], upper=False),
        lambda: torch.triangular_solve(tri[:, :, :8], tri, upper=False),
        lambda: torch.addr(xb[0].float(), xb[1].float(), xb[2].float()),
        lambda: F.bilinear(xb[:64].float(), xb[:64].float(), torch.randn(8, 1024, 1024, device=DEV)),
        lt,
    )


def compile_autotune(_: bool) -> Callable[[], None]:
    """torch.compile with max-autotune and CUDA graphs, compiled inside the profile so Inductor's GEMM template
    trials run there: an MLP in fp16 and bf16, a batched matmul and an attention-score block, coordinate-descent
    tuning on."""
    import torch._inductor.config as ic

    ic.coordinate_descent_tuning = True
    ic.max_autotune_gemm_backends = "TRITON,ATEN"

    @torch.compile(mode="max-autotune")
    def mlp(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
        return F.gelu(x @ w1, approximate="tanh") @ w2

    @torch.compile(mode="max-autotune")
    def scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        return (torch.bmm(q, k.transpose(1, 2)) * 0.125).softmax(-1)

    ops: list[Callable[[], object]] = []
    for dtype in (torch.float16, torch.bfloat16):
        x = torch.randn(384, 1024, device=DEV, dtype=dtype)
        w1 = torch.randn(1024, 2816, device=DEV, dtype=dtype)
        w2 = torch.randn(2816, 1024, device=DEV, dtype=dtype)
        ops.append(lambda x=x, w1=w1, w2=w2: mlp(x, w1, w2))
    q = torch.randn(16, 256, 64, device=DEV, dtype=torch.float16)
    return cold(*ops, lambda: scores(q, q))


def _classifier(classes: int, *body: nn.Module) -> nn.Sequential:
    """A convolution stack (ending in 64 channels) under global average pooling and a linear classifier."""
    return nn.Sequential(*body, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, classes))


def _train(
    model: nn.Module, loss: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, amp: torch.dtype | None
) -> Callable[[], None]:
    """A training step compiled whole by Inductor: forward, loss, backward, and a compiled foreach AdamW step."""
    model = model.to(DEV)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=True)
    fwd = torch.compile(lambda t: loss(model(t)))
    opt_step = torch.compile(opt.step)

    def step() -> None:
        with torch.autocast(DEV, dtype=amp or torch.float32, enabled=amp is not None):
            out = fwd(x)
        out.backward()
        opt_step()
        opt.zero_grad()

    return step


def compiled_training(_: bool) -> Callable[[], None]:
    """Inductor's kernels for training, backward and optimizer included, over model families: an MLP classifier
    with LayerNorm and label smoothing, a diffusion block (GroupNorm, SiLU, upsampling), a convnet with batch norm and
    pooling, a transformer layer with attention written out (mask, dropout, RMSNorm, rotary), a recommender (embedding
    bag, interaction, BCE), a sequence model (GRU cell unrolled), and losses and statistics (NLL, smooth L1, KL, cosine,
    var/std, logsumexp, cumsum, argmax)."""
    f16, b16 = torch.float16, torch.bfloat16
    mlp = nn.Sequential(nn.Linear(784, 512), nn.LayerNorm(512), nn.GELU(), nn.Dropout(0.2), nn.Linear(512, 10))
    diff = nn.Sequential(nn.GroupNorm(8, 64), nn.SiLU(), nn.Upsample(scale_factor=2), nn.Conv2d(64, 32, 3, padding=1))
    conv = _classifier(
        10,
        nn.Conv2d(3, 32, 3),
        nn.BatchNorm2d(32),
        nn.ReLU6(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3),
        nn.BatchNorm2d(64),
        nn.Hardswish(),
    )

    class Layer(nn.Module):
        def __init__(self, d: int = 256, h: int = 4) -> None:
            super().__init__()
            self.h, self.qkv, self.o, self.n = h, nn.Linear(d, 3 * d), nn.Linear(d, d), nn.RMSNorm(d)
            self.inv = 1.0 / (10000 ** (torch.arange(0, d // h, 2, device=DEV) / (d // h)))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, s, d = x.shape
            q, k, v = self.qkv(self.n(x)).view(b, s, 3, self.h, d // self.h).transpose(1, 3).unbind(2)
            ang = torch.arange(s, device=DEV)[:, None] * self.inv
            cos, sin = ang.cos().repeat(1, 2), ang.sin().repeat(1, 2)
            rot = lambda t: t * cos + torch.cat([-t[..., t.shape[-1] // 2 :], t[..., : t.shape[-1] // 2]], -1) * sin  # noqa: E731
            att = (rot(q) @ rot(k).transpose(-1, -2)) / (d // self.h) ** 0.5
            att = att.masked_fill(torch.ones(s, s, device=DEV, dtype=torch.bool).triu(1), float("-inf"))
            y = F.dropout(att.softmax(-1), 0.1) @ v
            return x + self.o(y.transpose(1, 2).reshape(b, s, d))

    class Rec(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bag, self.dense = nn.EmbeddingBag(10000, 64, mode="sum"), nn.Linear(13, 64)

        def forward(self, t: torch.Tensor) -> torch.Tensor:
            e = self.bag(t[:, :8].long().abs() % 10000)
            d = self.dense(t[:, 8:21])
            return (e * d).sum(-1) + torch.bmm(e[:, None], d[:, :, None]).view(-1)

    class Seq(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.cell, self.out = nn.GRUCell(32, 64), nn.Linear(64, 5)

        def forward(self, t: torch.Tensor) -> torch.Tensor:
            hid = torch.zeros(t.shape[0], 64, device=DEV)
            for i in range(t.shape[1]):
                hid = self.cell(t[:, i], hid)
            return self.out(hid)

    y10 = torch.randint(0, 10, (256,), device=DEV)

    def stats(t: torch.Tensor) -> torch.Tensor:
        v, m = torch.var_mean(t, 1)
        return (
            F.nll_loss(t.log_softmax(1), y10[: t.shape[0]] % t.shape[1])
            + F.smooth_l1_loss(t, t.flip(0))
            + F.kl_div(t.log_softmax(1), t.detach().softmax(1), reduction="batchmean")
            + F.cosine_embedding_loss(t, t.roll(1, 0), torch.ones(t.shape[0], device=DEV))
            + v.sum()
            + m.sum()
            + t.std(0).sum()
            + t.logsumexp(1).sum()
            + t.cumsum(1).mean()
            + t.argmax(1).float().mean() * 0
        )

    steps = [
        _train(mlp, lambda o: F.cross_entropy(o, y10, label_smoothing=0.1), torch.randn(256, 784, device=DEV), b16),
        _train(diff, lambda o: o.square().mean(), torch.randn(8, 64, 32, 32, device=DEV), f16),
        _train(conv, lambda o: F.cross_entropy(o, y10[:64]), torch.randn(64, 3, 32, 32, device=DEV), None),
        _train(Layer(), lambda o: o.float().pow(2).mean(), torch.randn(8, 128, 256, device=DEV), b16),
        _train(
            Rec(),
            lambda o: F.binary_cross_entropy_with_logits(o, torch.ones_like(o)),
            torch.randn(512, 21, device=DEV),
            None,
        ),
        _train(Seq(), lambda o: F.cross_entropy(o, y10[:128] % 5), torch.randn(128, 12, 32, device=DEV), None),
        _train(nn.Linear(100, 40), stats, torch.randn(256, 100, device=DEV), None),
    ]
    return sweep(*steps)


def inference_paths(_: bool) -> Callable[[], None]:
    """Inference as served: PyTorch's fast paths (TransformerEncoder over nested tensors from a padding mask,
    MultiheadAttention without weights), a convnet compiled with max-autotune for GEMMs and convolutions, and a greedy
    decode step over a static KV cache compiled with CUDA graphs ("reduce-overhead")."""
    import torch._inductor.config as ic

    ic.max_autotune_gemm_backends = "TRITON,ATEN"
    ic.max_autotune_conv_backends = "TRITON,ATEN"
    f16 = torch.float16
    enc = (
        nn.TransformerEncoder(
            nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True, norm_first=False), 2, enable_nested_tensor=True
        )
        .to(DEV, f16)
        .eval()
    )
    mha = nn.MultiheadAttention(256, 8, batch_first=True).to(DEV, f16).eval()
    x = torch.randn(16, 128, 256, device=DEV, dtype=f16)
    pad = torch.arange(128, device=DEV)[None] >= torch.randint(32, 128, (16, 1), device=DEV)
    net = (
        _classifier(
            100,
            nn.Conv2d(3, 32, 3, 2, 1),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.Conv2d(32, 64, 3, 1, 1, groups=32),
            nn.Conv2d(64, 64, 1),
            nn.BatchNorm2d(64),
            nn.SiLU(),
        )
        .to(DEV, f16)
        .eval()
        .to(memory_format=torch.channels_last)
    )
    vision = torch.compile(net, mode="max-autotune-no-cudagraphs")
    img = torch.randn(32, 3, 64, 64, device=DEV, dtype=f16).to(memory_format=torch.channels_last)
    b, heads, dh, cap, vocab = 8, 8, 64, 256, 8000
    k_cache = torch.zeros(b, heads, cap, dh, device=DEV, dtype=f16)
    v_cache = torch.zeros_like(k_cache)
    wq, wo = (
        torch.randn(heads * dh, heads * dh, device=DEV, dtype=f16) / 23,
        torch.randn(heads * dh, vocab, device=DEV, dtype=f16) / 23,
    )
    table = torch.randn(vocab, heads * dh, device=DEV, dtype=f16)

    @torch.compile(mode="reduce-overhead")
    def decode(tok: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        h = F.rms_norm(table[tok], (heads * dh,))
        q = (h @ wq).view(b, heads, 1, dh)
        k_cache.index_copy_(2, pos, q)
        v_cache.index_copy_(2, pos, q)
        mask = (torch.arange(cap, device=DEV) <= pos).view(1, 1, 1, cap)
        a = F.scaled_dot_product_attention(q, k_cache, v_cache, attn_mask=mask)
        return (a.reshape(b, heads * dh) @ wo).argmax(-1)

    tok = torch.randint(0, vocab, (b,), device=DEV)
    pos = torch.tensor([5], device=DEV)
    for module in (enc, mha, net):
        module.requires_grad_(False)  # the fast paths run only without autograd
    return sweep(
        lambda: enc(x, src_key_padding_mask=pad),
        lambda: mha(x, x, x, key_padding_mask=pad, need_weights=False),
        lambda: vision(img),
        lambda: decode(tok, pos),
    )


def tensor_utilities(_: bool) -> Callable[[], None]:
    """The tensor utilities that pre- and post-processing call: order statistics, searching and binning, set
    operations, index reductions and scatters, distances, and shape shuffles, on bf16, fp32 and integer data."""
    x = torch.randn(4096, 256, device=DEV)
    xb = x.bfloat16()
    ids = torch.randint(0, 1000, (1 << 16,), device=DEV)
    edges = torch.linspace(-3, 3, 64, device=DEV)
    idx = torch.randint(0, 256, (4096, 8), device=DEV)
    return sweep(
        lambda: torch.sort(xb, dim=0, stable=True),
        lambda: torch.topk(x.view(-1), 4096),
        lambda: torch.unique(idx, dim=0),
        lambda: torch.searchsorted(edges, x),
        lambda: torch.bucketize(xb, edges.bfloat16()),
        lambda: torch.isin(ids, ids[:100]),
        lambda: torch.mode(idx, 1),
        lambda: torch.nanmedian(x, 1),
        lambda: torch.quantile(x[:512], torch.tensor([0.1, 0.9], device=DEV), dim=1),
        lambda: torch.cummax(x, 1),
        lambda: torch.renorm(x, 2, 0, 1.0),
        lambda: torch.diff(x, dim=1),
        lambda: torch.trapezoid(x, dim=1),
        lambda: torch.cross(x[:, :3], x[:, 3:6], dim=1),
        lambda: torch.take_along_dim(x, idx, 1),
        lambda: x.index_reduce(0, ids[:4096] % 4096, x, "amax"),
        lambda: x.scatter_reduce(1, idx, x[:, :8], "mean"),
        lambda: x.clone().index_fill_(1, idx[0], 0.0),
        lambda: x.masked_scatter(x > 0, x),
        lambda: torch.cdist(x[:512], x[:256], p=1.0),
        lambda: F.pdist(x[:256]),
        lambda: torch.tril_indices(512, 512, device=DEV),
        lambda: torch.block_diag(x[:64, :64], x[64:128, :64]),
        lambda: torch.rot90(x.view(64, 64, 256), 1, (0, 1)),
        lambda: F.unfold(x.view(1, 16, 256, 256), 3),
        lambda: F.fold(x.view(1, 4096, 256)[:, :576], (18, 18), 3),
        lambda: torch.histc(xb.float(), 100),
        lambda: torch.count_nonzero(x > 0, dim=1),
    )


class Dlrm(nn.Module):
    """A recommender: bags of sparse ids (EmbeddingBag, sparse gradients), a bottom MLP for dense features, pairwise
    feature interactions by a batched product, a top MLP with a click logit."""

    def __init__(self, tables: int = 8, rows: int = 100_000, d: int = 64) -> None:
        super().__init__()
        modes = ["sum", "mean", "max"]
        self.bags = nn.ModuleList(
            nn.EmbeddingBag(rows, d, mode=modes[i % 3], sparse=modes[i % 3] != "max") for i in range(tables)
        )
        self.bottom = nn.Sequential(nn.Linear(13, 256), nn.ReLU(), nn.Linear(256, d), nn.ReLU())
        pairs = (tables + 1) * tables // 2
        self.top = nn.Sequential(nn.Linear(pairs + d, 512), nn.ReLU(), nn.Linear(512, 1))

    def forward(self, dense: torch.Tensor, ids: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        z = self.bottom(dense)
        feats = torch.stack([z] + [bag(ids[i], offsets) for i, bag in enumerate(self.bags)], 1)
        inter = torch.bmm(feats, feats.transpose(1, 2))
        i, j = torch.tril_indices(feats.shape[1], feats.shape[1], -1, device=dense.device)
        return self.top(torch.cat([z, inter[:, i, j]], 1)).squeeze(1)


def recsys_step(compiled: bool) -> Callable[[], None]:
    """A DLRM training step: sparse embedding gradients by SparseAdam, dense ones by Adagrad, a BCE click loss."""
    model = Dlrm().to(DEV)
    sparse = [p for bag in model.bags if bag.sparse for p in bag.parameters()]
    dense = [p for p in model.parameters() if all(p is not q for q in sparse)]
    opts = [torch.optim.SparseAdam(sparse), torch.optim.Adagrad(dense, foreach=True)]
    run = torch.compile(model) if compiled else model
    batch, per_bag = 2048, 20
    x = torch.randn(batch, 13, device=DEV)
    ids = torch.randint(0, 100_000, (8, batch * per_bag), device=DEV)
    offsets = torch.arange(0, batch * per_bag, per_bag, device=DEV)
    clicks = torch.randint(0, 2, (batch,), device=DEV).float()

    def step() -> None:
        F.binary_cross_entropy_with_logits(run(x, ids, offsets), clicks).backward()
        for opt in opts:
            opt.step()
            opt.zero_grad()

    return step


def gnn_step(compiled: bool) -> Callable[[], None]:
    """Message passing written in torch: GCN normalisation by degrees, a GAT layer (per-edge scores, a softmax over
    each node's edges by scatter_reduce), sum aggregation by index_add_, and a CSR sparse-dense product."""
    nodes, edges, d = 50_000, 400_000, 128
    src = torch.randint(0, nodes, (edges,), device=DEV)
    dst = torch.randint(0, nodes, (edges,), device=DEV)
    x = torch.randn(nodes, d, device=DEV)
    w = nn.Linear(d, d).to(DEV)
    att = torch.randn(2 * d, device=DEV, requires_grad=True)
    adj = torch.sparse_coo_tensor(torch.stack([dst, src]), torch.ones(edges, device=DEV), (nodes, nodes))
    csr = adj.coalesce().to_sparse_csr()

    def layer(h: torch.Tensor) -> torch.Tensor:
        deg = torch.zeros(nodes, device=DEV).index_add_(0, dst, torch.ones(edges, device=DEV)).clamp(min=1)
        h = w(h)
        score = F.leaky_relu(torch.cat([h[src], h[dst]], 1) @ att, 0.2)
        peak = torch.full((nodes,), -1e9, device=DEV).scatter_reduce(0, dst, score, "amax")
        e = (score - peak[dst]).exp()
        alpha = e / torch.zeros(nodes, device=DEV).index_add_(0, dst, e)[dst]
        msg = torch.zeros_like(h).index_add_(0, dst, h[src] * alpha[:, None])
        return F.elu(msg / deg[:, None].sqrt() + torch.sparse.mm(csr, h))

    run = torch.compile(layer) if compiled else layer

    def step() -> None:
        run(x.requires_grad_()).sum().backward()

    return step


def sampling_ops(_: bool) -> Callable[[], None]:
    """How serving engines pick the next token, in torch: temperature, top-k, top-p and min-p filters, repetition
    penalties, multinomial and Gumbel-max sampling, a beam-search step and speculative acceptance."""
    vocab, batch = 128_256, 64
    logits = torch.randn(batch, vocab, device=DEV, dtype=torch.bfloat16)
    prev = torch.randint(0, vocab, (batch, 512), device=DEV)
    draft = torch.randint(0, vocab, (batch, 4), device=DEV)

    def top_p(p: float = 0.9) -> torch.Tensor:
        probs, order = (logits.float() / 0.7).softmax(-1).sort(-1, descending=True)
        probs[(probs.cumsum(-1) - probs) > p] = 0
        return order.gather(-1, torch.multinomial(probs, 1))

    def min_p(p: float = 0.05) -> torch.Tensor:
        probs = logits.float().softmax(-1)
        probs = probs.masked_fill(probs < p * probs.amax(-1, keepdim=True), 0)
        return torch.multinomial(probs, 1)

    def penalties() -> torch.Tensor:
        seen = logits.gather(1, prev)
        out = logits.scatter(1, prev, torch.where(seen > 0, seen / 1.2, seen * 1.2))
        counts = torch.zeros(batch, vocab, device=DEV).scatter_add_(1, prev, torch.ones_like(prev, dtype=torch.float))
        return out - 0.5 * counts.bfloat16() - 0.3 * (counts > 0).bfloat16()

    def beam(beams: int = 4) -> torch.Tensor:
        scores = logits.float().log_softmax(-1).view(batch // beams, beams * vocab)
        flat = scores.topk(2 * beams, -1).indices
        return prev.view(batch // beams, beams, -1).index_select(1, (flat // vocab)[0])

    def speculative() -> torch.Tensor:
        p = logits.float().softmax(-1)
        q = p.roll(1, -1)
        ratio = p.gather(1, draft) / q.gather(1, draft)
        accepted = (torch.rand_like(ratio) < ratio).int().cumprod(1).sum(1)
        return torch.argmax(p - q.clamp(max=1), -1) + accepted

    return sweep(
        lambda: logits.topk(50, -1),
        top_p,
        min_p,
        penalties,
        lambda: (logits.float() / torch.empty(batch, vocab, device=DEV).exponential_()).argmax(-1),
        beam,
        speculative,
        lambda: logits.float().log_softmax(-1).gather(1, draft),
    )


def recurrence_compiled(_: bool) -> Callable[[], None]:
    """Linear recurrences as Inductor compiles them: an associative scan (a gated linear RNN), a chunked linear
    attention with a causal mask, and a selective scan written with cumsum and exp, forward and backward."""
    from torch._higher_order_ops.associative_scan import associative_scan

    b, t, d = 8, 1024, 256
    a = torch.rand(b, t, d, device=DEV, requires_grad=True)
    u = torch.randn(b, t, d, device=DEV, requires_grad=True)

    def combine(x: tuple[torch.Tensor, torch.Tensor], y: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, ...]:
        return x[0] * y[0], x[1] * y[0] + y[1]

    @torch.compile
    def gated_rnn(a_: torch.Tensor, u_: torch.Tensor) -> torch.Tensor:
        return associative_scan(combine, (a_.sigmoid(), u_), dim=1, combine_mode="generic")[1]

    @torch.compile
    def linear_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, chunk: int = 64) -> torch.Tensor:
        q, k, v = (F.elu(z.view(b, t // chunk, chunk, d)) + 1 for z in (q, k, v))
        state = (k.transpose(-1, -2) @ v).cumsum(1) - k.transpose(-1, -2) @ v
        causal = torch.ones(chunk, chunk, device=DEV, dtype=torch.bool).tril()
        inner = ((q @ k.transpose(-1, -2)).masked_fill(~causal, 0)) @ v
        return (q @ state + inner).view(b, t, d)

    @torch.compile
    def selective(x: torch.Tensor, dt: torch.Tensor) -> torch.Tensor:
        decay = torch.cumsum(-F.softplus(dt), 1)
        return torch.cumsum(x * decay.exp(), 1) * (-decay).exp()

    return sweep(
        lambda: gated_rnn(a, u).sum().backward(),
        lambda: linear_attention(u, a, u).sum().backward(),
        lambda: selective(u, a).sum().backward(),
    )


def rl_step(compiled: bool) -> Callable[[], None]:
    """A PPO update on a batch of rollouts: advantages by GAE (a discounted sum run backwards with flip and cumsum),
    a categorical policy's log-probabilities and entropy, the clipped surrogate, a Huber value loss; RMSprop."""
    obs, actions, steps = 64, 18, 2048
    net = nn.Sequential(nn.Linear(obs, 256), nn.Tanh(), nn.Linear(256, 256), nn.Tanh(), nn.Linear(256, actions + 1))
    net = net.to(DEV)
    opt = torch.optim.RMSprop(net.parameters(), lr=1e-4, foreach=True)
    x = torch.randn(steps, obs, device=DEV)
    act = torch.randint(0, actions, (steps,), device=DEV)
    reward, done = torch.randn(steps, device=DEV), (torch.rand(steps, device=DEV) < 0.01).float()
    old_logp = torch.randn(steps, device=DEV).clamp(max=0)

    def loss() -> torch.Tensor:
        out = net(x)
        logits, value = out[:, :actions], out[:, actions]
        nxt = torch.cat([value[1:], value[-1:]]).detach()
        delta = reward + 0.99 * nxt * (1 - done) - value.detach()
        disc = torch.cumprod(torch.full_like(delta, 0.99 * 0.95), 0)
        adv = (torch.cumsum((delta / disc).flip(0), 0).flip(0) * disc).detach()
        logp_all = logits.log_softmax(-1)
        logp = logp_all.gather(1, act[:, None]).squeeze(1)
        ratio = (logp - old_logp).exp()
        surrogate = torch.minimum(ratio * adv, ratio.clamp(0.8, 1.2) * adv)
        entropy = -(logp_all.exp() * logp_all).sum(-1)
        return -(surrogate + 0.01 * entropy).mean() + F.huber_loss(value, adv + value.detach())

    run = torch.compile(loss) if compiled else loss

    def step() -> None:
        run().backward()
        opt.step()
        opt.zero_grad()

    return step


def compiled_if(compiled: bool, *ops: Callable[[], object]) -> list[Callable[[], object]]:
    """The ops, each under its own torch.compile when ``compiled``: Inductor's kernels for an eager sweep's ops."""
    return [torch.compile(op) for op in ops] if compiled else list(ops)


def detection_ops(compiled: bool) -> Callable[[], None]:
    """A detector's post-processing and losses written in torch: anchors, pairwise IoU and GIoU by broadcasting,
    score thresholds, per-class top-k, a greedy suppression by sorted IoU masks, focal loss, matching by argmax."""
    boxes = torch.rand(4096, 4, device=DEV).sort(-1).values * 512
    scores = torch.rand(4096, 80, device=DEV)
    gt = torch.rand(64, 4, device=DEV).sort(-1).values * 512

    def area(z: torch.Tensor) -> torch.Tensor:
        return (z[:, 2:] - z[:, :2]).prod(-1)

    def iou(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        lt, rb = torch.maximum(a[:, None, :2], b[None, :, :2]), torch.minimum(a[:, None, 2:], b[None, :, 2:])
        inter = (rb - lt).clamp(min=0).prod(-1)
        return inter / (area(a)[:, None] + area(b)[None] - inter)

    def suppress() -> torch.Tensor:
        order = scores.max(1).values.argsort(descending=True)[:1000]
        overlap = iou(boxes[order], boxes[order]).triu(1)
        return order[(overlap > 0.5).sum(0) == 0]

    def focal() -> torch.Tensor:
        target = F.one_hot(iou(boxes, gt).argmax(1) % 80, 80).float()
        p = scores.sigmoid()
        ce = F.binary_cross_entropy_with_logits(scores, target, reduction="none")
        return (ce * (1 - torch.where(target > 0, p, 1 - p)) ** 2).sum()

    def giou() -> torch.Tensor:
        enclose = (torch.maximum(boxes[:64, 2:], gt[:, 2:]) - torch.minimum(boxes[:64, :2], gt[:, :2])).prod(-1)
        return 1 - iou(boxes[:64], gt).diagonal() + enclose

    def anchors() -> torch.Tensor:
        ys, xs = torch.meshgrid(torch.arange(64, device=DEV), torch.arange(64, device=DEV), indexing="ij")
        return torch.stack([xs, ys, xs + 8, ys + 8], -1).view(-1, 4).float().repeat_interleave(3, 0)

    return sweep(
        *compiled_if(
            compiled,
            suppress,
            focal,
            giou,
            anchors,
            lambda: scores.topk(100, 0),
            lambda: torch.nonzero(scores > 0.95),
            lambda: iou(boxes, gt).max(0),
        )
    )


def probabilistic_ops(compiled: bool) -> Callable[[], None]:
    """torch.distributions as a probabilistic model calls them: sampling and log-densities of a multivariate normal
    (Cholesky, triangular solves), Gamma/Beta/Dirichlet reparameterised samples, a mixture's logsumexp, KL terms, and a
    normalising flow's log-determinant."""
    from torch import distributions as D

    d = 64
    a = torch.randn(d, d, device=DEV, dtype=torch.float64)
    cov = a @ a.T + d * torch.eye(d, device=DEV, dtype=torch.float64)
    x = torch.randn(4096, d, device=DEV, dtype=torch.float64)
    conc = torch.rand(4096, 8, device=DEV) + 0.5
    mvn = D.MultivariateNormal(torch.zeros(d, device=DEV, dtype=torch.float64), covariance_matrix=cov)

    def mixture() -> torch.Tensor:
        comp = D.Normal(torch.randn(16, device=DEV), torch.rand(16, device=DEV) + 0.1)
        return torch.logsumexp(comp.log_prob(x[:, :1].float()) + torch.log_softmax(conc[0].repeat(2), 0), -1)

    return sweep(
        *compiled_if(
            compiled,
            lambda: mvn.log_prob(x),
            lambda: mvn.rsample((1024,)),
            lambda: D.Gamma(conc, 1.0).rsample(),
            lambda: D.Beta(conc, conc.flip(1)).rsample(),
            lambda: D.Dirichlet(conc).rsample().log(),
            lambda: D.kl_divergence(D.Normal(conc, 1.0), D.Normal(0.0, conc)),
            lambda: D.kl_divergence(D.Dirichlet(conc), D.Dirichlet(conc.flip(1))),
            lambda: D.Categorical(logits=conc).entropy(),
            mixture,
            lambda: torch.linalg.slogdet(a.float() + 10 * torch.eye(d, device=DEV)),
            lambda: torch.linalg.lu_factor(a),
            lambda: torch.cholesky_solve(x[:d].T.contiguous(), torch.linalg.cholesky(cov)),
        )
    )


def sparse_triton_ops(_: bool) -> Callable[[], None]:
    """Block-sparse (BSR) products, softmax and attention by the Triton kernels torch.sparse ships
    (``torch.sparse._triton_ops``), in bf16 and fp16."""
    from torch.sparse import _triton_ops as ops

    keep = torch.rand(32, 32, device=DEV) < 0.3
    mask = keep.repeat_interleave(64, 0).repeat_interleave(64, 1)
    d = torch.randn(2048, 2048, device=DEV, dtype=torch.bfloat16) * mask
    bsr, dense = d.to_sparse_bsr((64, 64)), torch.randn(2048, 512, device=DEV, dtype=torch.bfloat16)
    h = d.half().to_sparse_bsr((64, 64))
    q = torch.randn(1, 2048, 64, device=DEV, dtype=torch.float16)
    attn_mask = mask.half().to_sparse_bsr((64, 64))
    return sweep(
        lambda: ops.bsr_dense_mm(bsr, dense),
        lambda: ops.bsr_dense_addmm(dense[:, :256].repeat(4, 1), bsr, dense[:, :256], beta=0.5),
        lambda: ops.sampled_addmm(h, dense.half(), dense.half().t()),
        lambda: ops.bsr_softmax(h),
        lambda: ops._scaled_dot_product_attention(q, q, q, attn_mask=attn_mask),
        lambda: ops.bsr_scatter_mm(bsr, dense),
    )


def func_transforms(compiled: bool) -> Callable[[], None]:
    """torch.func over a small convnet and an MLP: per-sample gradients (vmap of grad of functional_call), a
    Jacobian by reverse mode, a Hessian, a Jacobian-vector product by forward mode (dual tensors)."""
    from torch.func import functional_call, grad, hessian, jacrev, jvp, vmap

    net = nn.Sequential(nn.Conv2d(3, 16, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(256, 10)).to(
        DEV
    )
    params = {k: v.detach() for k, v in net.named_parameters()}
    x, y = torch.randn(64, 3, 32, 32, device=DEV), torch.randint(0, 10, (64,), device=DEV)
    mlp = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 32)).to(DEV)
    z = torch.randn(32, device=DEV)

    def sample_loss(p: dict[str, torch.Tensor], xi: torch.Tensor, yi: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(functional_call(net, p, (xi[None],)), yi[None])

    return sweep(
        *compiled_if(
            compiled,
            lambda: vmap(grad(sample_loss), in_dims=(None, 0, 0))(params, x, y),
            lambda: jacrev(mlp)(z),
            lambda: hessian(lambda v: mlp(v).square().sum())(z),
            lambda: jvp(mlp, (z,), (torch.ones_like(z),)),
        )
    )


class SpectralConv(nn.Module):
    """A Fourier neural operator layer: the lowest modes of a 2-D real FFT mixed by complex weights, back by the
    inverse FFT, plus a pointwise (1x1) path."""

    def __init__(self, c: int = 32, modes: int = 16) -> None:
        super().__init__()
        self.modes = modes
        self.w = nn.Parameter(torch.randn(c, c, modes, modes, dtype=torch.cfloat) / c)
        self.skip = nn.Conv2d(c, c, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        f = torch.fft.rfft2(x)
        out = torch.zeros_like(f)
        m = self.modes
        out[:, :, :m, :m] = torch.einsum("bixy,ioxy->boxy", f[:, :, :m, :m], self.w)
        return F.gelu(torch.fft.irfft2(out, s=x.shape[-2:]) + self.skip(x))


def spectral_step(compiled: bool) -> Callable[[], None]:
    """Two Fourier layers forward and backward on 64x64 fields (complex einsum, rfft2/irfft2)."""
    model = nn.Sequential(SpectralConv(), SpectralConv()).to(DEV)
    run = torch.compile(model) if compiled else model
    x = torch.randn(16, 32, 64, 64, device=DEV)

    def step() -> None:
        run(x).square().mean().backward()

    return step


def control_flow_compiled(_: bool) -> Callable[[], None]:
    """Data-dependent control flow kept in the graph: torch.cond between two branches (with backward) and a
    while_loop of Newton iterations, compiled."""
    from torch._higher_order_ops.while_loop import while_loop

    x = torch.randn(4096, 256, device=DEV, requires_grad=True)

    @torch.compile
    def branch(v: torch.Tensor) -> torch.Tensor:
        return torch.cond(v.sum() > 0, lambda t: (t.sin() * t).softmax(-1), lambda t: t.cos().log_softmax(-1), (v,))

    @torch.compile
    def newton_sqrt(a: torch.Tensor) -> torch.Tensor:
        def body(i: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return i + 1, 0.5 * (y + a / y)

        return while_loop(lambda i, y: i < 8, body, (torch.zeros((), device=DEV, dtype=torch.int64), a + 1))[1]

    return sweep(lambda: branch(x).sum().backward(), lambda: newton_sqrt(x.detach().abs() + 1))


def liger_ops(_: bool) -> Callable[[], None]:
    """Liger-Kernel's Triton ops (liger-kernel 0.8.5, installed beside torch for the run), forward and backward in
    bf16: losses over a vocabulary (cross-entropy, fused linear cross-entropy, JSD, KL, TVD), norms, gated MLP
    activations, RoPE and multimodal RoPE, softmax and sparsemax, DyT and multi-token attention."""
    from liger_kernel.transformers import functional as lf

    t, d, v, bf = 4096, 2048, 32000, torch.bfloat16

    def leaf(*shape: int, dtype: torch.dtype = bf) -> torch.Tensor:
        return torch.randn(*shape, device=DEV, dtype=dtype, requires_grad=True)

    x, w, logits = leaf(t, d), leaf(d), leaf(t // 4, v)
    target = torch.randint(0, v, (t // 4,), device=DEV)
    probs = torch.randn(t // 4, v, device=DEV).log_softmax(-1)
    lm_head = leaf(v, d)
    q, k = leaf(2, 16, 512, 128), leaf(2, 4, 512, 128)
    cos, sin = torch.randn(1, 512, 128, device=DEV, dtype=bf), torch.randn(1, 512, 128, device=DEV, dtype=bf)
    cos3, sin3 = cos.expand(3, 2, 512, 128), sin.expand(3, 2, 512, 128)
    return sweep(
        lambda: back(lf.liger_cross_entropy(logits, target, label_smoothing=0.1)),
        lambda: back(lf.liger_fused_linear_cross_entropy(x[: t // 4], lm_head, target)),
        lambda: back(lf.liger_fused_linear_jsd(x[: t // 4], lm_head, x[: t // 4].detach(), lm_head.detach())),
        lambda: back(lf.liger_fused_linear_kl_div(x[: t // 4], lm_head, probs.exp())),
        lambda: back(lf.liger_jsd(logits.float().log_softmax(-1), probs)),
        lambda: back(lf.liger_kl_div(logits.float().log_softmax(-1), probs.exp())),
        lambda: back(lf.liger_tvd(logits.float().softmax(-1), probs.exp())),
        lambda: back(lf.liger_rms_norm(x, w, 1e-6, in_place=False)),
        lambda: back(lf.liger_fused_add_rms_norm(x, leaf(t, d), w, 1e-6, in_place=False)),
        lambda: back(lf.liger_modulated_rms_norm(x, w, leaf(t, d), leaf(t, d), in_place=False)),
        lambda: back(lf.liger_poly_norm(x, leaf(3), leaf(1), in_place=False)),
        lambda: back(lf.liger_layer_norm(x, w, leaf(d), 1e-5)),
        lambda: back(lf.liger_group_norm(leaf(8, 64, 1024), leaf(64), leaf(64), 64, 8, 1e-5)),
        lambda: back(lf.liger_swiglu(x, leaf(t, d))),
        lambda: back(lf.liger_geglu(x, leaf(t, d))),
        lambda: back(lf.liger_relu_squared(x)),
        lambda: back(lf.liger_rope(q, k, cos, sin)),
        lambda: back(lf.liger_qwen2vl_mrope(q, k, cos3, sin3, [16, 24, 24])),
        lambda: back(lf.liger_softmax(logits)),
        lambda: back(lf.liger_sparsemax(leaf(1024, 512, dtype=torch.float32))),
        lambda: back(lf.liger_dyt(x, leaf(1), w, leaf(d))),
        lambda: back(lf.liger_multi_token_attention(leaf(2, 8, 256, 256), leaf(8, 8, 3, 3), padding=1)),
    )


def _fla_args(fn: Callable[..., object], b: int, t: int, h: int, d: int, gate_dims: int) -> list[object]:
    """Inputs for one of fla's ops, by parameter name (fla's ``[B, T, H, K]`` layout): queries, keys, values and
    per-channel terms ``[B, T, H, D]``; ``beta``/``lamb`` ``[B, T, H]``; gates ``g`` in log space with
    ``gate_dims`` dimensions (per channel or per head: ops differ)."""
    import inspect

    def leaf(*shape: int, how: Callable[[torch.Tensor], torch.Tensor] = lambda x: x) -> torch.Tensor:
        x = how(torch.randn(*shape, device=DEV, dtype=torch.bfloat16))
        return x.detach().requires_grad_()

    per_head, slots = (b, t, h), 32
    args: list[object] = []
    for p in inspect.signature(fn).parameters.values():
        if p.default is not inspect.Parameter.empty:
            break
        if p.name in ("beta", "lamb"):
            args.append(leaf(*per_head, how=torch.sigmoid))
        elif p.name in ("g", "w"):
            args.append(leaf(*(b, t, h, d)[:gate_dims], how=F.logsigmoid))
        elif p.name == "s":  # ABC/GSA memory slots
            args.append(leaf(b, t, h, slots))
        elif p.name == "level_scales":
            args.append(leaf(b, t, h, 8))
        elif p.name in ("layer_idx", "num_layers"):
            args.append(1 if p.name == "layer_idx" else 4)
        else:
            args.append(leaf(b, t, h, d, how=lambda x: F.normalize(x, dim=-1)))
    return args


@functools.cache  # patch once per process
def _first_config_only() -> None:
    """Triton's autotuner keeps only its first config: a kernel's name does not depend on the config, and
    benchmarking every config of every fla kernel takes longer than a device call may run."""
    from triton.runtime import autotuner

    init = autotuner.Autotuner.__init__

    def first(self: object, fn: object, arg_names: object, configs: list[object], *a: object, **k: object) -> None:
        init(self, fn, arg_names, configs[:1], *a, **k)  # type: ignore[arg-type]

    autotuner.Autotuner.__init__ = first  # type: ignore[method-assign]


FLA_OPS = [  # fla.ops.__all__ of fla-core 0.6.0 (less two aliases)
    "chunk_abc",
    "chunk_comba",
    "chunk_cyfa",
    "chunk_delta_rule",
    "chunk_dplr_delta_rule",
    "chunk_gated_delta_rule",
    "chunk_gla",
    "chunk_gsa",
    "chunk_iplr_delta_rule",
    "chunk_kda",
    "chunk_lightning_attn",
    "chunk_linear_attn",
    "chunk_log_linear_attn",
    "chunk_mesa_net",
    "chunk_momentum_delta_rule",
    "chunk_precond_gated_delta_rule",
    "chunk_precond_kda",
    "chunk_retention",
    "chunk_rwkv6",
    "chunk_rwkv7",
    "chunk_simple_gla",
    "fused_attnres",
    "fused_chunk_based",
    "fused_chunk_delta_rule",
    "fused_chunk_gla",
    "fused_chunk_linear_attn",
    "fused_chunk_retention",
    "fused_chunk_simple_gla",
    "fused_recurrent_comba",
    "fused_recurrent_cyfa",
    "fused_recurrent_delta_rule",
    "fused_recurrent_dplr_delta_rule",
    "fused_recurrent_gated_delta_rule",
    "fused_recurrent_gla",
    "fused_recurrent_gsa",
    "fused_recurrent_hgrn",
    "fused_recurrent_iplr_delta_rule",
    "fused_recurrent_kda",
    "fused_recurrent_lightning_attn",
    "fused_recurrent_linear_attn",
    "fused_recurrent_momentum_delta_rule",
    "fused_recurrent_precond_gated_delta_rule",
    "fused_recurrent_precond_kda",
    "fused_recurrent_retention",
    "fused_recurrent_rwkv6",
    "fused_recurrent_rwkv7",
    "fused_recurrent_simple_gla",
    "parallel_attn",
    "parallel_based",
    "parallel_forgetting_attn",
    "parallel_nsa",
    "parallel_parallax",
    "parallel_path_attn",
    "parallel_retention",
    "parallel_simple_gla",
    "parallel_stickbreaking_attn",
    "parallel_wall_attn",
    "parallel_wall_attn_decode",
]


def fla_ops(group: str) -> Callable[[], None]:
    """flash-linear-attention's Triton ops (fla-core 0.6.0, installed beside torch for the run), forward and
    backward in bf16: the op ``group`` of ``fla.ops`` (chunked, fused-recurrent and parallel forms of linear
    attention, delta rules, GLA, RWKV, retention, NSA, …), or for ``layers`` its layers (norms with and without
    gates, short convolution, RoPE, fused losses, gated MLP)."""
    _first_config_only()
    import fla.modules as fm
    import fla.ops as fo

    b, t, h, d, hidden, vocab = 2, 512, 4, 64, 1024, 32000

    def op(fn: Callable[..., object]) -> Callable[[], object]:
        def run() -> None:
            for gate_dims in (4, 3):  # per-channel gates first, then per-head
                try:
                    out = fn(*_fla_args(fn, b, t, h, d, gate_dims))
                    break
                except (RuntimeError, AssertionError, ValueError, TypeError):
                    if gate_dims == 3:
                        raise
            # a backward this Triton refuses (fla checks versions) still leaves the forward's kernels
            with contextlib.suppress(RuntimeError):
                back(out)

        return run

    if group != "layers":
        return sweep(op(getattr(fo, group)))

    def layer(module: nn.Module, *inputs: object) -> Callable[[], None]:
        module = module.to(DEV, torch.bfloat16)
        return lambda: back(module(*inputs))

    x = torch.randn(b, t, hidden, device=DEV, dtype=torch.bfloat16, requires_grad=True)
    target = torch.randint(0, vocab, (b * t,), device=DEV)
    head = torch.randn(vocab, hidden, device=DEV, dtype=torch.bfloat16, requires_grad=True)
    return sweep(
        layer(fm.RMSNorm(hidden), x),
        layer(fm.LayerNorm(hidden), x),
        layer(fm.GroupNorm(8, hidden), x),
        layer(fm.L2Norm(), x),
        layer(fm.FusedRMSNormGated(hidden), x, x.detach()),
        layer(fm.FusedLayerNormGated(hidden), x, x.detach()),
        layer(fm.ShortConvolution(hidden, 4), x),
        layer(fm.GatedMLP(hidden), x),
        layer(fm.RotaryEmbedding(d), *(torch.randn(b, t, h, d, device=DEV, dtype=torch.bfloat16) for _ in "qk")),
        layer(fm.FusedCrossEntropyLoss(), torch.randn(b * t, vocab, device=DEV, requires_grad=True), target),
        lambda: back(fm.FusedLinearCrossEntropyLoss()(x.view(-1, hidden), target, head)),
        lambda: back(fm.FusedKLDivLoss()(x.view(-1, hidden), x.detach().view(-1, hidden), head, head.detach())),
    )


Make = Callable[[bool], Callable[[], None]]


def both(name: str, make: Make, compiled: str = "compiled") -> dict[str, tuple[Make, bool]]:
    """A workload eager and under torch.compile (the label of the compiled run given)."""
    return {f"{name}_eager": (make, False), f"{name}_{compiled}": (make, True)}


def plain(*makes: Make) -> dict[str, tuple[Make, bool]]:
    """Workloads run once each under their own names; each compiles what it compiles itself."""
    return {make.__name__: (make, False) for make in makes}


SUITES: dict[str, dict[str, tuple[Make, bool]]] = {
    "20": {
        **both("gpt", gpt_step),
        **both("convnet", convnet_step),
        **both("moe", moe_step),
        **plain(misc_ops),
    },
    "21": {
        **both("vit", vit_step, "autotuned"),
        **both("unet", unet_step),
        **both("decode", decode_step),
        **plain(more_ops),
    },
    "22": {
        **both("bert", bert_step),
        "gru_eager": (rnn_step, False),
        "flex_attention_compiled": (flex_step, True),
        "linalg_sparse_losses": (linalg_ops, False),
    },
    "28": {
        **both("llama", llama_step),
        **both("grouped_moe", grouped_moe_step),
        **plain(
            attention_variants,
            low_precision_ops,
            optimizer_zoo,
            special_random_ops,
            vision_ops,
            compile_extras,
            losses_linalg,
        ),
    },
    "29": {  # run under torchrun on 2 GPUs; rank 0 records
        **both("tensor_parallel", tp_step),
        "expert_parallel": (ep_moe_step, False),
        "fsdp2": (fsdp_step, False),
        "ddp": (ddp_step, False),
        **plain(collectives, serving_decode),
    },
    "30": plain(cudnn_autotune, tunableop_gemms, fft_sweep, solver_sweep, sparse_sweep, blas_sweep, compile_autotune),
    "31": plain(compiled_training),
    "32": plain(inference_paths, tensor_utilities),
    "33": {**both("recsys", recsys_step), **both("gnn", gnn_step), **plain(sampling_ops, recurrence_compiled)},
    "34": {**both("ppo", rl_step), **both("detection", detection_ops), **both("probabilistic", probabilistic_ops)},
    "35": {
        **both("spectral", spectral_step),
        **both("func", func_transforms),
        **plain(sparse_triton_ops, control_flow_compiled),
    },
    "36": plain(liger_ops),  # needs liger-kernel installed
    "38": {  # needs fla-core (and einops) installed; one workload per op, so that a time limit keeps what ran
        f"fla_{group}": (lambda _, group=group: fla_ops(group), False) for group in (*FLA_OPS, "layers")
    },
}


def main() -> None:
    suite = sys.argv[1] if len(sys.argv) > 1 else "20"
    rank = 0
    if "RANK" in os.environ:  # torchrun: one process per GPU
        from datetime import timedelta

        import torch.distributed as dist

        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
        dist.init_process_group("nccl", timeout=timedelta(seconds=120))
        rank = dist.get_rank()
    # SHARD=i/n: every n-th workload from the i-th, names to names.i.jsonl (n processes share the GPU and the
    # CPUs that compile)
    shard, shards = (int(v) for v in os.environ.get("SHARD", "0/1").split("/"))
    seen: dict[str, str] = {}
    for label, (make, compiled) in list(SUITES[suite].items())[shard::shards]:
        try:
            step = make(compiled)
            for _ in range(WARMUP):  # compile and warm up outside the profile
                step()
            torch.cuda.synchronize()
        except Exception as exc:  # a workload this torch cannot run costs only its own names
            print(label, "failed:", repr(exc)[:300], flush=True)
            continue
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            step()
            torch.cuda.synchronize()
        for ev in prof.events():
            if ev.device_type == torch.autograd.DeviceType.CUDA and not ev.name.startswith(("Memcpy", "Memset")):
                seen.setdefault(ev.name, label)
        print(label, len(seen), flush=True)
        if not rank:  # after each workload: a run cut short by the time limit keeps what it saw
            write(seen, "names.jsonl" if shards == 1 else f"names.{shard}.jsonl")


def write(seen: dict[str, str], file: str) -> None:
    with (OUT / file).open("w") as f:
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
