"""A Triton tutorial-style matmul under ``@triton.autotune``: the fixture of tests/test_tune_triton.py.

Configs: two small ones that fit everywhere, one whose pipelined tiles need far more shared memory/LDS
than any GPU has (256x256x128, 5 stages), one with a 256x256 fp32 accumulator on 4 warps that spills.
The launch function is what ``kscope tune --launch`` calls on a GPU (torch is imported there only).
"""

import importlib.util
from pathlib import Path

import triton

CONFIGS = [
    triton.Config(
        {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}, num_warps=4, num_stages=2
    ),
    triton.Config(
        {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}, num_warps=4, num_stages=2
    ),
    triton.Config(
        {"BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 8}, num_warps=8, num_stages=5
    ),
    triton.Config(
        {"BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}, num_warps=4, num_stages=2
    ),
]


# the kernel, launch and reference of examples/tune/matmul.py (the Triton tutorial's matmul), loaded by path:
# one copy of the kernel in the repository, read here without torch
_spec = importlib.util.spec_from_file_location("tutorial_matmul", Path(__file__).parents[3] / "examples/tune/matmul.py")
tutorial = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tutorial)

matmul_jit = tutorial._matmul  # the plain @triton.jit function under the autotuner
matmul_kernel = triton.autotune(configs=CONFIGS, key=["M", "N", "K"])(matmul_jit)
launch = tutorial.launch
reference = tutorial.reference


def launch_setting_a_config_knob(shape):
    """A launch that passes what the configs set: refused before anything runs."""
    return {"grid": (1,), "args": [], "kwargs": {"BLOCK_SIZE_M": 64}}
