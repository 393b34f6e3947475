"""Presenters: turn a result into text or bytes. The CLI picks one by flag or output-file extension.

Each presenter is a ``Presenter`` with the three-member contract ``render(result)``,
``extension`` and ``binary``; tabular results describe their columns once (``Column``) and every
format (rich table, CSV, Markdown, Parquet) is written from that description.
"""

from kernelscope.presenters.base import Column, Presenter, by_extension, get

__all__ = ["Column", "Presenter", "by_extension", "get"]
