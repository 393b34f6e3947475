"""Recorded op shapes: ``kscope shapes`` and ``kscope replay``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kernelscope.analyses.coverage import runs_from_calls
from kernelscope.analyses.graph_ops import attribute
from kernelscope.analyses.replay import candidates as replay_list
from kernelscope.analyses.replay import select as select_replay
from kernelscope.errors import InputError
from kernelscope.inputs import Input, open_all, open_profile
from kernelscope.model.ops import NO_SHAPES, OpCall
from kernelscope.model.replay import Replay, ReplayList
from kernelscope.model.shapes import ShapeRun
from kernelscope.readers import kineto


def shapes(
    traces: Sequence[str | Path | Input],
    *,
    model: str | None = None,
    stage: str | None = None,
    capture: str | Path | None = None,
) -> list[ShapeRun]:
    """``kscope shapes``: shape-ledger records (kernel, op, input shapes, dtype, time) from Kineto traces
    recorded with shapes; ``model`` defaults to each trace's file name. ``capture`` (one trace only: a trace of
    its CUDA/HIP graph capture) adds the graph replays' ops."""
    handles = open_all(traces)
    if capture is not None and len(handles) != 1:
        raise InputError(f"--capture attributes one trace's graph replays; {len(handles)} traces were given")
    runs: list[ShapeRun] = []
    for h in handles:
        calls, _ = with_replays(h, capture)
        if not calls:
            raise InputError(f"{h}: {NO_SHAPES}")
        runs += runs_from_calls(calls, model=model or h.path.name.split(".")[0], stage=stage)
    return runs


def replay(
    trace: str | Path,
    *,
    kernel: str | None = None,
    op: str | None = None,
    rank: int = 1,
    capture: str | Path | None = None,
) -> Replay:
    """``kscope replay``: the op call to replay from a Kineto trace recorded with shapes: the ``rank``-th
    hottest signature (op, shapes, dtypes, strides, scalars) of the ops that launched kernels matching
    ``kernel`` (a regex) or of the op named ``op``; ``presenters.replay.script`` writes its script. With
    ``capture`` (a trace of its CUDA/HIP graph capture) the graph replays' ops are candidates too."""
    calls, device = _enclosing(trace, capture)
    return select_replay(calls, kernel=kernel, op=op, rank=rank, trace=str(trace), device=device)


def replay_candidates(
    trace: str | Path, *, kernel: str | None = None, op: str | None = None, capture: str | Path | None = None
) -> ReplayList:
    """``kscope replay --list``: the signatures ``replay`` chooses from, hottest first, and which of them
    can be replayed (all the trace's innermost ops when neither ``kernel`` nor ``op`` is given)."""
    calls, device = _enclosing(trace, capture)
    return replay_list(calls, kernel=kernel, op=op, trace=str(trace), device=device)


def with_replays(h: Input, capture: str | Path | None) -> tuple[list[OpCall], list[str]]:
    """``h``'s op calls, and with ``capture`` (a Kineto trace taken while its CUDA/HIP graphs were captured)
    those of its graph replays too (``analyses.graph_ops``), and a note of what that attributed."""
    graphed, notes = _graph_calls(h, capture)
    return [*h.ops, *graphed], notes


def _graph_calls(h: Input, capture: str | Path | None) -> tuple[list[OpCall], list[str]]:
    if capture is None:
        return [], []
    cap = open_profile(capture)
    if cap.format != "kineto":
        raise InputError(f"{cap}: expected a PyTorch profiler (Kineto) trace of the graph capture, found {cap.format}")
    found = attribute(h.profile.launches, kineto.read_captured(cap.path))
    return found.calls, [found.note()]


def _enclosing(trace: str | Path, capture: str | Path | None = None) -> tuple[list[OpCall], str | None]:
    """The trace's op calls with the ops around them (replay ranks those too), with ``capture`` its graph
    replays' too, and its GPU."""
    h = open_profile(trace)  # a folder holding one trace too
    prof, _ = kineto.read_ops(h.path, enclosing=True)
    graphed, _ = _graph_calls(h, capture)
    return [*prof.ops, *graphed], next((d.label for d in prof.devices if d.label), None)
