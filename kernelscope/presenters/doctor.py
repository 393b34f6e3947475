"""``kscope doctor`` in the terminal: GPUs, then one row per dependency, then what the missing ones disable."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from kernelscope.model.doctor import DoctorResult

_STYLE = {"ok": "green", "missing": "yellow", "failed": "red"}


def renderable(result: DoctorResult) -> Group:
    head = Text(f"kernelscope {result.kernelscope} on Python {result.python}, {result.platform}")
    gpus = Table(title="GPUs", title_justify="left", header_style="bold")
    for h in ("name", "vendor", "arch", "driver", "uuid", "seen by"):
        gpus.add_column(h, overflow="fold")
    for g in result.gpus:
        gpus.add_row(*(Text(v or "") for v in (g.name, g.vendor, g.arch, g.driver, g.uuid, g.source)))
    checks = Table(title="Tools and packages", title_justify="left", header_style="bold")
    for h in ("name", "kind", "status", "version", "where / detail", "needed for", "install"):
        checks.add_column(h, overflow="fold")
    for c in result.checks:
        checks.add_row(
            Text(c.name), Text(c.kind), Text(c.status, style=_STYLE[c.status]), Text(c.version or ""),
            Text("; ".join(x for x in (c.path, c.detail) if x)), Text("; ".join(c.enables)), Text(c.fix or ""),
        )  # fmt: skip
    parts: list[Text | Table] = [head, gpus if result.gpus else Text("GPUs: none found", style="yellow"), checks]
    if result.disabled:
        parts.append(Text("disabled here: " + "; ".join(result.disabled), style="yellow"))
    return Group(*parts)
