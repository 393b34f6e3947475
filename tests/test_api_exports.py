"""The lazily loaded API (``kernelscope``, ``kernelscope.api``): every advertised name resolves to the object
its module defines, ``__all__`` is the package's ``TYPE_CHECKING`` imports (what type checkers see), and
importing the package loads no analysis (what keeps ``kscope`` start-up short)."""

from __future__ import annotations

import importlib
import subprocess
import sys
from collections.abc import Callable
from types import ModuleType

import pytest

import kernelscope
from kernelscope import api


@pytest.mark.parametrize(
    ("package", "some"),
    [(kernelscope, {"Profile", "gap", "gap_report", "read"}), (api, {"gap_report", "memory_new", "ProfileResult"})],
    ids=["kernelscope", "kernelscope.api"],
)
def test_every_export_resolves_to_its_definition(package: ModuleType, some: set[str]) -> None:
    code = f"import {package.__name__} as p; print(set(p.__all__) <= set(dir(p)))\nfrom {package.__name__} import *"
    fresh = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)  # no lookup yet
    assert fresh.stdout == "True\n"
    assert some <= set(package.__all__) and "TYPE_CHECKING" not in package.__all__
    for name in package.__all__:
        value = getattr(package, name)
        defined_in = getattr(value, "__module__", package.__name__)
        assert defined_in.startswith("kernelscope") and getattr(importlib.import_module(defined_in), name) is value
    with pytest.raises(AttributeError):
        package.no_such_name  # noqa: B018


def test_importing_the_api_loads_no_analysis() -> None:
    code = (
        "import sys, kernelscope, kernelscope.api, kernelscope.errors\n"
        "print(sorted(m for m in sys.modules if m.startswith(('kernelscope.analyses', 'kernelscope.readers', "
        "'numpy'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_cli_loads_a_command_module_when_the_command_is_looked_up() -> None:
    code = (
        "import sys, typer.main\n"
        "from kernelscope.cli import app\n"
        "group = typer.main.get_command(app)\n"
        "before = sorted(m for m in sys.modules if m.startswith('kernelscope.cli.'))\n"
        "group.commands['att']\n"
        "after = sorted(m for m in sys.modules if m.startswith('kernelscope.cli.'))\n"
        "print(before, after, sorted(group.commands.keys()) == sorted(group.list_commands(None)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["[]", "['kernelscope.cli._common',", "'kernelscope.cli.att']", "True"]


def test_a_mistyped_command_gets_a_suggestion(kscope: Callable[..., subprocess.CompletedProcess[str]]) -> None:
    proc = kscope("atx")
    assert proc.returncode == 2 and "Did you mean 'att'?" in proc.stderr
