"""Run one eval command: in its own process group, under a timeout (``kernelscope.process``), with its
metrics read back.

Metric protocol: a stdout line ``KSCOPE_METRIC name=value`` (the last one for a name wins), or a JSON
object ``{"name": value}`` in the file named by ``$KSCOPE_METRICS_FILE``, which wins over stdout.
Output goes to files, not pipes: a background process holding a pipe open cannot stall the wait.
"""

from __future__ import annotations

import math
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import msgspec

from kernelscope.process import run_group

METRICS_ENV = "KSCOPE_METRICS_FILE"
TAIL_CHARS = 2000
_LINE = re.compile(r"^KSCOPE_METRIC[ \t]+([A-Za-z_][A-Za-z0-9_.-]*)=(\S+)[ \t]*\r?$", re.MULTILINE)


@dataclass(frozen=True)
class Outcome:
    """What running a command gave: exit status (None if killed at the timeout or never started)."""

    argv: list[str]
    returncode: int | None
    timed_out: bool
    wall_s: float
    metrics: dict[str, float]
    problems: list[str]  # could not start, unreadable metrics
    stdout_tail: str
    stderr_tail: str


def parse_metrics(stdout: str, metrics_file: str | None = None) -> tuple[dict[str, float], list[str]]:
    """The metrics a run reported, and what in its report could not be used."""
    metrics: dict[str, float] = {}
    problems: list[str] = []
    for name, text in _LINE.findall(stdout):
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if math.isfinite(value):
            metrics[name] = value
        else:
            problems.append(f"KSCOPE_METRIC {name}={text}: not a finite number")
    if metrics_file is not None and Path(metrics_file).exists():
        try:
            doc = msgspec.json.decode(Path(metrics_file).read_bytes())
        except msgspec.DecodeError as exc:
            return metrics, [*problems, f"${METRICS_ENV}: not JSON ({exc})"]
        if not isinstance(doc, dict):
            return metrics, [*problems, f"${METRICS_ENV}: expected a JSON object of numbers"]
        for name, value in doc.items():
            if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
                metrics[str(name)] = float(value)
            else:
                problems.append(f"${METRICS_ENV} {name}: {value!r} is not a finite number")
    return metrics, problems


def _tail(path: Path) -> tuple[str, str]:
    """A file's whole text and its last ``TAIL_CHARS`` characters."""
    text = path.read_bytes().decode(errors="replace")
    return text, text[-TAIL_CHARS:]


def run(argv: list[str], *, shell: bool, cwd: Path, env: Mapping[str, str], timeout_s: float) -> Outcome:
    """Run ``argv`` (with ``shell``, ``argv[0]`` through ``/bin/sh -c``) in ``cwd`` under ``timeout_s``."""
    cmd = ["/bin/sh", "-c", argv[0]] if shell else argv
    with tempfile.TemporaryDirectory(prefix="kscope-run-") as tmp:
        out_path, err_path, metrics_file = Path(tmp, "stdout"), Path(tmp, "stderr"), str(Path(tmp, "metrics.json"))
        with out_path.open("wb") as out, err_path.open("wb") as err:
            env = {**env, METRICS_ENV: metrics_file}
            try:
                returncode, wall = run_group(cmd, cwd=cwd, env=env, timeout_s=timeout_s, stdout=out, stderr=err)
            except OSError as exc:
                return Outcome(argv, None, False, 0.0, {}, [f"cannot start {cmd[0]}: {exc.strerror}"], "", "")
        stdout, stdout_tail = _tail(out_path)
        _, stderr_tail = _tail(err_path)
        metrics, problems = parse_metrics(stdout, metrics_file)
    return Outcome(
        argv=argv,
        returncode=returncode,
        timed_out=returncode is None,
        wall_s=wall,
        metrics=metrics,
        problems=problems,
        stdout_tail=stdout_tail,
        stderr_tail=stderr_tail,
    )
