"""``ledger.jsonl``: one JSON line per eval, appended atomically, read back with filters and a summary.

An append takes an exclusive ``flock`` on ``ledger.lock`` (a separate file, so readers never block on
it), then writes the whole line with one ``os.write`` on an ``O_APPEND`` descriptor and fsyncs. A line
ends with its newline, and only a whole line is a record:
- a writer killed mid-write can leave part of a line: Linux stops copying a large write between pages
  when SIGKILL arrives (seen in CI: a 20 kB record torn by ``kill -9``). The reader ignores an
  unterminated last line (a write in flight, or a dead writer's), and the next append — which holds the
  lock, so no live writer owns that tail — moves it to ``ledger.jsonl.torn`` and cuts it off, so a torn
  record never glues onto the next one;
- a short write (disk full) is truncated away before the error is raised.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from kernelscope.errors import InputError
from kernelscope.loop.workspace import locked
from kernelscope.model.task import STATUSES, EvalResult, LedgerRecord, LedgerView, TaskSummary


def append(ledger: Path, lock: Path, record: LedgerRecord) -> None:
    """Append ``record`` as one line, safe against concurrent writers and a kill at any point."""
    line = msgspec.json.encode(record) + b"\n"
    with locked(lock):
        fd = os.open(ledger, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            size = _drop_torn_tail(fd, ledger)
            written = os.write(fd, line)
            if written != len(line):
                os.ftruncate(fd, size)
                raise OSError(f"{ledger}: wrote {written} of {len(line)} bytes (disk full?); the record was not kept")
            os.fsync(fd)
        finally:
            os.close(fd)


def _drop_torn_tail(fd: int, ledger: Path) -> int:
    """Move bytes after the last newline to ``<ledger>.torn`` and cut them off; the new size."""
    size = os.fstat(fd).st_size
    if not size or os.pread(fd, 1, size - 1) == b"\n":
        return size
    start = max(0, size - 2**20)
    head = os.pread(fd, size - start, start)
    keep = start + head.rfind(b"\n") + 1 if b"\n" in head else 0
    with Path(f"{ledger}.torn").open("ab") as torn:
        torn.write(os.pread(fd, size - keep, keep) + b"\n")
    os.ftruncate(fd, keep)
    return keep


def entry(result: EvalResult) -> LedgerRecord:
    """The ledger line of an eval."""
    return LedgerRecord(
        id=result.id,
        task=result.task,
        time=result.started,
        status=result.status,
        metric=result.metric,
        direction=result.direction,
        speedup=result.speedup,
        ci=result.ci,
        p_value=result.p_value,
        baseline_median=result.baseline.median,
        candidate_median=result.candidate.median,
        runs=result.runs,
        baseline_commit=result.baseline.commit,
        candidate_commit=result.candidate.commit,
        diff_hash=result.candidate.diff_hash,
        result=result.result_path,
        reason=result.reason,
        kernel=result.kernel,
        lever=result.lever,
    )


def read(ledger: Path) -> tuple[list[LedgerRecord], list[int]]:
    """Every record, and the 1-based numbers of lines that are not one (an unterminated last line is an
    append in flight or a killed writer's: not a line yet, see the module docstring)."""
    records, bad = [], []
    decoder = msgspec.json.Decoder(LedgerRecord)
    data = ledger.read_bytes()
    for i, line in enumerate(data[: data.rfind(b"\n") + 1].splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(decoder.decode(line))
        except msgspec.DecodeError:
            bad.append(i)
    return records, bad


def parse_since(text: str) -> datetime:
    """``--since``: an ISO date or date-time; without a zone it is UTC."""
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise InputError(f"--since {text}: expected an ISO date (2025-01-31) or date-time (2025-01-31T14:00)") from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def view(ledger: Path, *, task: str | None = None, status: str | None = None, since: str | None = None) -> LedgerView:
    """The records that pass the filters (oldest first), with a per-task summary of them."""
    if status is not None and status not in STATUSES:
        raise InputError(f"--status {status}: choose one of {', '.join(STATUSES)}")
    after = parse_since(since) if since is not None else None
    records, bad = read(ledger)
    keep = [
        r
        for r in records
        if (task is None or r.task == task)
        and (status is None or r.status == status)
        and (after is None or datetime.fromisoformat(r.time) >= after)
    ]
    keep.sort(key=lambda r: r.time)
    return LedgerView(records=keep, summary=summarize(keep), unreadable=bad)


def summarize(records: list[LedgerRecord]) -> list[TaskSummary]:
    """Per task (in order of first appearance): evals, improved ones, best improved speedup, last status."""
    by_task: dict[str, list[LedgerRecord]] = {}
    for r in records:
        by_task.setdefault(r.task, []).append(r)
    out = []
    for name, rs in by_task.items():
        wins = [r.speedup for r in rs if r.status == "improved" and r.speedup is not None]
        last = max(rs, key=lambda r: r.time)
        out.append(
            TaskSummary(
                task=name,
                evals=len(rs),
                improved=len(wins),
                best_speedup=max(wins, default=None),
                last_status=last.status,
                last_time=last.time,
            )
        )
    return out
