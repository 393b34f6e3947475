"""What every benchmark shares: the machine description and the RESULTS.md section writer."""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "RESULTS.md"


def jsonl(path: Path) -> list[Any]:
    """The records of a JSON-lines file (blank lines skipped): the labelled sets and their contexts."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def machine(packages: Sequence[str]) -> dict[str, str]:
    cpu = "unknown"
    try:
        m = re.search(r"^model name\s*:\s*(.+)$", Path("/proc/cpuinfo").read_text(), re.M)
        cpu = m.group(1).strip() if m else cpu
    except OSError:
        pass
    ram = "unknown"
    try:
        m = re.search(r"^MemTotal:\s+(\d+) kB", Path("/proc/meminfo").read_text(), re.M)
        ram = f"{int(m.group(1)) / 1024**2:.1f} GiB" if m else ram
    except OSError:
        pass
    versions = []
    for pkg in packages:
        try:
            versions.append(f"{pkg} {importlib.metadata.version(pkg)}")
        except importlib.metadata.PackageNotFoundError:
            versions.append(f"{pkg} absent")
    return {
        "cpus": str(os.cpu_count()),
        "ram": ram,
        "cpu": cpu,
        "python": platform.python_version(),
        "os": f"{platform.system()} {platform.release()}",
        "packages": ", ".join(versions),
    }


def write_results(section: str, heading: str) -> None:
    """Add ``section`` to RESULTS.md, replacing an earlier section with the same heading; others stay."""
    header = "# kernelscope benchmark results\n\nOne section per benchmark run; newest last.\n"
    text = RESULTS.read_text() if RESULTS.exists() else header
    parts = re.split(r"(?m)^(?=## )", text)
    parts = [p for p in parts if not p.startswith(heading + "\n")]
    body = "".join(parts).rstrip("\n") + "\n\n" + section.rstrip("\n") + "\n"
    RESULTS.write_text(body)


def publish(lines: list[str], heading: str, write: bool) -> None:
    """Print a results section and, unless told not to, record it in RESULTS.md."""
    section = "\n".join(lines) + "\n"
    print(section)
    if write:
        write_results(section, heading)
