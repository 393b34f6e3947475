"""``python -m kernelscope`` is ``kscope``."""

from kernelscope.cli import main

main()
