"""The lazily loaded API (``kernelscope``, ``kernelscope.api``): every advertised name resolves to the object
defined where the export table says, the table and ``__all__`` agree, and importing the package loads no
analysis (what keeps ``kscope`` start-up short)."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys
from collections.abc import Callable
from types import ModuleType

import pytest

import kernelscope
from kernelscope import api


@pytest.mark.parametrize("package", [kernelscope, api], ids=["kernelscope", "kernelscope.api"])
def test_every_export_resolves_where_the_table_says(package: ModuleType) -> None:
    where: dict[str, str] = package._WHERE
    assert sorted(package.__all__) == sorted(where)
    for name, module in where.items():
        full = module if module.startswith("kernelscope") else f"{package.__name__}.{module}"
        value = getattr(package, name)
        assert value is getattr(importlib.import_module(full), name)
        if inspect.isfunction(value) or inspect.isclass(value):
            assert value.__module__ in (full, *(m for m in sys.modules if m.startswith(full)))
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
