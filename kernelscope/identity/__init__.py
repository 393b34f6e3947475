"""Kernel identity: what a kernel name says (library, operation, dtype, tile) and its short name."""

from kernelscope.identity.classify import Identities, classify

__all__ = ["Identities", "classify"]
