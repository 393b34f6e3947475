"""Kernel identity: what a kernel name says (library, operation, dtype, tile) and its short name."""

from kernelscope.identity.names import base_name

__all__ = ["base_name"]
