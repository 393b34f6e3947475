"""The optimization loop: workspaces, tasks, statistically judged evals and the ledger (``docs/eval.md``).

``workspace`` (layout, locks, atomic writes) → ``task`` (+ ``taskmd``, ``paths``, ``environment``,
``git``) → ``runner`` (one command, process-group safe) → ``decision`` (the rule) → ``eval`` → ``ledger``;
``memory`` (+ ``memory_edit``) records each iteration (``docs/memory.md``).
"""
