"""The notebook-facing API. Each function here backs one CLI command with the same parameters.

The functions live in private modules by area (``_gap``, ``_code``, ``_instructions``, ...) and load on
first use (PEP 562), so a command imports only what it runs: ``kscope att`` never loads the trace
readers, ``kscope gap`` never loads the ATT analysis.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernelscope._lazy import exports

if TYPE_CHECKING:
    from kernelscope.api._code import bench_target as bench_target
    from kernelscope.api._code import ceilings as ceilings
    from kernelscope.api._code import fit as fit
    from kernelscope.api._code import fit_compare as fit_compare
    from kernelscope.api._code import hardware as hardware
    from kernelscope.api._code import isa as isa
    from kernelscope.api._code import roofline as roofline
    from kernelscope.api._doctor import doctor as doctor
    from kernelscope.api._gap import diff as diff
    from kernelscope.api._gap import gap_report as gap_report
    from kernelscope.api._instructions import att as att
    from kernelscope.api._instructions import ncu as ncu
    from kernelscope.api._loop import evaluate as evaluate
    from kernelscope.api._loop import init_workspace as init_workspace
    from kernelscope.api._loop import ledger as ledger
    from kernelscope.api._loop import new_task as new_task
    from kernelscope.api._loop import show_task as show_task
    from kernelscope.api._memory import memory_init as memory_init
    from kernelscope.api._memory import memory_latest as memory_latest
    from kernelscope.api._memory import memory_list as memory_list
    from kernelscope.api._memory import memory_mask as memory_mask
    from kernelscope.api._memory import memory_new as memory_new
    from kernelscope.api._memory import memory_set as memory_set
    from kernelscope.api._memory import memory_show as memory_show
    from kernelscope.api._memory import memory_summary as memory_summary
    from kernelscope.api._memory import memory_unmask as memory_unmask
    from kernelscope.api._names import classify_names as classify_names
    from kernelscope.api._names import index_sources as index_sources
    from kernelscope.api._names import locate_sources as locate_sources
    from kernelscope.api._names import read_names as read_names
    from kernelscope.api._profile import ProfileResult as ProfileResult
    from kernelscope.api._profile import profile as profile
    from kernelscope.api._report import report as report
    from kernelscope.api._report import suggest as suggest
    from kernelscope.api._shapes import replay as replay
    from kernelscope.api._shapes import replay_candidates as replay_candidates
    from kernelscope.api._shapes import shapes as shapes
    from kernelscope.api._tune import tunableop as tunableop
    from kernelscope.api._tune import tune as tune
    from kernelscope.api._tune import tune_results as tune_results
    from kernelscope.api._tune import write_winners as write_winners

__getattr__, __dir__ = exports(__name__)  # the TYPE_CHECKING imports are the table
