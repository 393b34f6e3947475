"""The optimization levers: one vocabulary for suggestions, tasks, the ledger and iteration memory.

A lever is the kind of change an experiment makes. ``kscope suggest`` proposes experiments by lever,
a task records the lever it pulls, memory records one lever (its optimization category) per iteration,
and the ledger history demotes levers that already failed on a kernel. Keep the names stable: they are
written into task.json, memory records and JSON outputs.
"""

from __future__ import annotations

from typing import Literal, get_args

Lever = Literal[
    "memory_access",
    "data_reuse",
    "tile_shape",
    "launch_config",
    "occupancy",
    "pipelining",
    "instruction_selection",
    "algorithm",
    "fusion",
    "precision",
    "synchronization",
    "library_choice",
    "host_overhead",
    "other",
]
LEVERS: tuple[Lever, ...] = get_args(Lever)

DESCRIPTIONS: dict[Lever, str] = {
    "host_overhead": "the GPU waits for the host: CUDA/HIP graphs, torch.compile reduce-overhead, fewer syncs, "
    "static caches",
    "memory_access": "how global memory is touched: coalescing, vector width, fewer passes over the data",
    "data_reuse": "keep reused data close: LDS/shared-memory staging, register blocking, cache hints",
    "tile_shape": "block/tile sizes of the decomposition (BLOCK_M/N/K, rows per program)",
    "launch_config": "warps per block, pipeline stages, grid shape, persistent launch",
    "occupancy": "more resident waves/warps: fewer registers or less LDS/shared memory per block",
    "pipelining": "overlap memory and math: software pipelining, prefetch, async copies",
    "instruction_selection": "better instructions: matrix cores (MFMA/WGMMA), packed or fast-math ops",
    "algorithm": "a different decomposition: one-pass instead of multi-pass, split-K, online softmax",
    "fusion": "fuse with neighbouring kernels to save launches and round trips through memory",
    "precision": "a narrower data type where accuracy allows (bf16/fp8 storage or math)",
    "synchronization": "fewer or cheaper barriers and waits",
    "library_choice": "a different library or backend for the same operation",
    "other": "anything the categories above do not name",
}
