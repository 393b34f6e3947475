"""``kscope doctor``: what this machine can do, and what each missing tool disables."""

from __future__ import annotations

from typing import Annotated

import typer

from kernelscope import api
from kernelscope.cli._common import guarded, show
from kernelscope.model.doctor import DOCTOR_SCHEMA
from kernelscope.presenters.doctor import renderable


@guarded
def doctor(json: Annotated[bool, typer.Option("--json", help=f"JSON, schema {DOCTOR_SCHEMA}.")] = False) -> None:
    """Python, packages, GPUs and every external tool kscope drives: version and path, or what its absence
    disables and how to install it."""
    show(api.doctor(), json, renderable)
