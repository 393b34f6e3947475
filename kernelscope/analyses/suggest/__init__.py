"""``kscope suggest``: ranked experiments from the evidence kscope holds.

Pure over analysis results (``Evidence``): the kernels of every input are joined by name (``kernels``),
each rule of ``RULES`` reads one kernel's facts and either proposes its lever, with the steps that argue
for it (evidence -> inference -> action), or stays silent. Experiments are ranked by

    score = share x confidence x effect x (one demotion factor per failed attempt in the ledger)

``share`` is the kernel's fraction of GPU time (1 when no input timed it), ``confidence`` the rule's own,
``effect`` the rule's upper bound on the fraction of the kernel's time the lever can save, read from the
evidence (``UNBOUNDED`` where the evidence bounds nothing). Thresholds, rules and factors: ``docs/suggest.md``.
"""

from kernelscope.analyses.suggest.evidence import Evidence, kernels
from kernelscope.analyses.suggest.rank import rank
from kernelscope.analyses.suggest.rules import RULES
from kernelscope.analyses.suggest.thresholds import DEMOTION

__all__ = ["DEMOTION", "RULES", "Evidence", "kernels", "rank"]
