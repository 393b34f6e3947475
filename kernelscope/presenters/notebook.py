"""Jupyter display: results as HTML tables with their plots inline.

The model's ``_repr_html_`` gives a plain table; for results that have plots (roofline, ATT, Nsight Compute)
this registers IPython formatters that add them, by type name, so nothing here loads until a result is shown.
``%load_ext kernelscope`` registers them; importing kernelscope inside IPython does too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kernelscope.model.frames import Tabular


def _with_figures(figures: Callable[[Any], list[tuple[str, str]]]) -> Callable[[Any], str]:
    def render(result: Tabular) -> str:
        plots = "".join(f"<h4>{title}</h4>{svg}" for title, svg in figures(result))
        return result._repr_html_() + plots

    return render


def _roofline(result: Any) -> list[tuple[str, str]]:
    from kernelscope.presenters.roofline import svg

    return [("Roofline", svg(result))] if result.points else []


def _att(report: Any) -> list[tuple[str, str]]:
    from kernelscope.presenters.report import att_figures

    return [fig for capture in report.captures for fig in att_figures(capture)]


def _ncu(result: Any) -> list[tuple[str, str]]:
    from kernelscope.presenters.report import ncu_figures

    return ncu_figures(result)


# (module, class name) -> the figures its HTML gets below the table
FIGURES: dict[tuple[str, str], Callable[[Any], list[tuple[str, str]]]] = {
    ("kernelscope.model.roofline", "RooflineResult"): _roofline,
    ("kernelscope.model.att", "AttReport"): _att,
    ("kernelscope.model.ncu", "NcuResult"): _ncu,
}


def register(shell: Any) -> None:
    """Add the plots to these results' HTML in an IPython shell (``shell.display_formatter``)."""
    html = shell.display_formatter.formatters["text/html"]
    for (module, name), figures in FIGURES.items():
        html.for_type_by_name(module, name, _with_figures(figures))
