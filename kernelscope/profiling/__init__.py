"""Run a workload under the vendor's kernel tracer and collect its traces (``kscope profile``)."""

from kernelscope.profiling.config import ProfileConfig, load_config
from kernelscope.profiling.runner import ProfileRun, plan, run

__all__ = ["ProfileConfig", "ProfileRun", "load_config", "plan", "run"]
