"""Graph replays attributed to the op calls that captured them.

A CUDA/HIP graph replay's kernels carry only the graph launch's correlation id: the trace of the replays says
which kernels ran and for how long, not which op (with which shapes) launched each. A trace taken while the
graph was captured says the opposite: each launch call, its op and (on ROCm) its kernel's name, but no kernel ran. This
joins the two (as AMD's TraceLens merges a capture trace into a replay trace): each replay's kernels, in start
order, are aligned by name to one capture's launches in launch order, skipping captured launches the replay
lacks (warm-up work done while capturing). CUDA's launch calls do not name their kernel: there a capture is
matched node for node, and only when it launched as many kernels as the replay ran. A replay is attributed to
the capture it aligns with fully and with the fewest skips; where several captures tie and their op calls
differ (graphs of the same kernels at other batch sizes) the replay is left unattributed rather than guessed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import msgspec

from kernelscope.model import KernelLaunch
from kernelscope.model.ops import CapturedLaunch, OpCall


class GraphAttribution(msgspec.Struct, kw_only=True):
    """The replays' op calls (one per captured op call per replay) and how much of the replays they cover."""

    calls: list[OpCall]
    replays: int  # graph launches in the replay trace
    attributed: int  # of them, aligned to one capture
    ambiguous: int  # of them, aligned as well to captures whose op calls differ
    kernels: int  # replayed kernels
    kernels_attributed: int  # of them, given an op call

    def note(self) -> str:
        """One line for a report: what the capture attributed, and what it left."""
        left = f"; {self.ambiguous} fit captures of differing shapes equally, left" if self.ambiguous else ""
        return (
            f"graph replays: {self.kernels_attributed} of {self.kernels} replayed kernels attributed to their "
            f"captured op calls ({self.attributed} of {self.replays} replays{left})"
        )


def attribute(launches: Sequence[KernelLaunch], captured: Sequence[CapturedLaunch]) -> GraphAttribution:
    """The op calls of the graph replays among ``launches``, from the captures in ``captured``."""
    captures: dict[int | None, list[CapturedLaunch]] = defaultdict(list)
    for c in captured:
        captures[c.graph].append(c)
    if len(captures) > 1:
        captures.pop(None, None)  # launches outside every capture are not graph nodes
    replays: dict[tuple[int | None, int], list[KernelLaunch]] = defaultdict(list)
    for k in launches:
        if k.graph and k.correlation_id is not None:
            replays[(k.rank, k.correlation_id)].append(k)
    calls: list[OpCall] = []
    attributed = ambiguous = done = 0
    # a graph replays the same kernels each time: each distinct sequence is aligned once
    chosen: dict[tuple[str, ...], tuple[list[CapturedLaunch] | None, bool]] = {}
    for kernels in replays.values():
        kernels.sort(key=lambda k: k.start_ns or 0)
        names = tuple(k.name for k in kernels)
        if names not in chosen:
            chosen[names] = _capture_for(names, list(captures.values()))
        nodes, tied = chosen[names]
        if nodes is None:
            ambiguous += tied
            continue
        attributed += 1
        pairs = list(zip(kernels, nodes, strict=True))
        done += sum(1 for _, c in pairs if c.call is not None)
        calls += _calls(pairs)
    return GraphAttribution(
        calls=calls,
        replays=len(replays),
        attributed=attributed,
        ambiguous=ambiguous,
        kernels=sum(len(ks) for ks in replays.values()),
        kernels_attributed=done,
    )


def _capture_for(
    names: tuple[str, ...], captures: list[list[CapturedLaunch]]
) -> tuple[list[CapturedLaunch] | None, bool]:
    """The captured launches one replay's kernels are, node for node: from the capture they align with fully
    and with the fewest skips; None when none aligns, or (then True) when tied captures attribute different op
    calls."""
    fits = [aligned for c in captures if (aligned := _align(names, c)) is not None]
    if not fits:
        return None, False
    best = min(skips for skips, _ in fits)
    tied = [nodes for skips, nodes in fits if skips == best]
    return (tied[0], False) if len({_signature(nodes) for nodes in tied}) == 1 else (None, True)


def _align(names: tuple[str, ...], capture: list[CapturedLaunch]) -> tuple[int, list[CapturedLaunch]] | None:
    """For each kernel name, the next captured launch of that name (skipping the ones between), and how many
    were skipped; None when a kernel finds none. A capture whose launches name no kernel (CUDA's) can only be
    matched node for node: it aligns when it holds exactly as many launches as the replay ran kernels."""
    if any(not c.kernel for c in capture):
        return (0, list(capture)) if len(capture) == len(names) else None
    nodes, i, skips = [], 0, 0
    for name in names:
        j = i
        while j < len(capture) and capture[j].kernel != name:
            j += 1
        if j == len(capture):
            return None
        skips += j - i
        nodes.append(capture[j])
        i = j + 1
    return skips, nodes


def _signature(nodes: list[CapturedLaunch]) -> tuple[tuple[str, str], ...]:
    """What an alignment attributes: each kernel's op and shapes."""
    return tuple((c.call.op, repr(c.call.input_dims)) if c.call else ("", "") for c in nodes)


def _calls(pairs: list[tuple[KernelLaunch, CapturedLaunch]]) -> list[OpCall]:
    """One op call per captured op call, with the replay's kernels it launched."""
    grouped: dict[int, tuple[OpCall, list[KernelLaunch]]] = {}
    for k, c in pairs:
        if c.call is not None:
            grouped.setdefault(id(c.call), (c.call, []))[1].append(k)
    return [
        msgspec.structs.replace(
            call,
            kernels=[k.name for k in ks],
            kernel_ns=sum(k.duration_ns for k in ks),
            kernel_each_ns=[k.duration_ns for k in ks],
            kernel_starts_ns=[k.start_ns or 0 for k in ks],
        )
        for call, ks in grouped.values()
    ]
