"""``kscope tune TARGET ...`` (search), ``kscope tune show`` and ``kscope tune export`` (the store)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional, get_args

import typer
from typer.core import TyperGroup

from kernelscope import api
from kernelscope.cli._common import Parquet, either, emit, fail, guarded, out, pick, progress_bar
from kernelscope.model.tune import STATUSES, Device, Timing
from kernelscope.presenters.tune import PRESENTERS, STORE_PRESENTERS, candidates_table, rich_renderable
from kernelscope.presenters.base import rich_table


class _RunByDefault(TyperGroup):
    """``kscope tune TARGET ...`` is ``kscope tune run TARGET ...``: anything but a subcommand's name runs."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
        return super().parse_args(ctx, args)  # type: ignore[no-any-return]


tune_app = typer.Typer(
    cls=_RunByDefault,
    help="Autotune a kernel over its configs on every GPU (kscope tune TARGET ...; see kscope tune run --help), "
    "and read the results store (show, export).",
    no_args_is_help=True,
)

Store = Annotated[Optional[Path], typer.Option(help="The results store (default: $KSCOPE_TUNE_STORE or ~/.cache/kernelscope/tune.sqlite).")]
DEVICES, TIMINGS = get_args(Device), get_args(Timing)


@tune_app.command("run")
@guarded
def run(
    target: Annotated[str, typer.Argument(help="FILE.py:FACTORY (with --space) or FILE.py:KERNEL (@triton.autotune).")],
    space: Annotated[Optional[Path], typer.Option(help="SPACE.yaml: params, constraints, shapes, incumbent.")] = None,
    shape: Annotated[Optional[list[str]], typer.Option(help="A shape NAME=VALUE,... (repeat).")] = None,
    reference: Annotated[Optional[str], typer.Option(help="FILE.py:FUNC; FUNC(shape) is the expected result.")] = None,
    launch: Annotated[Optional[str], typer.Option(help="Triton: FILE.py:FUNC; FUNC(shape) -> grid, args.")] = None,
    atol: Annotated[float, typer.Option(help="Absolute tolerance of the correctness check.")] = 1e-2,
    rtol: Annotated[float, typer.Option(help="Relative tolerance of the correctness check.")] = 1e-2,
    device: Annotated[str, typer.Option(help=f"{either(DEVICES)}: where candidates run.")] = "auto",
    timing: Annotated[str, typer.Option(help=f"{either(TIMINGS)} (L2 flushed, warm, or graph replay).")] = "cold",
    incumbent: Annotated[Optional[str], typer.Option(help="The config in use today, NAME=VALUE,...")] = None,
    workers: Annotated[Optional[int], typer.Option(help="Workers (default: one per visible GPU; 1 on CPU).")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds per candidate (build, check, time).")] = 60.0,
    executor: Annotated[str, typer.Option(help="local (processes on this host) or ray (a Ray cluster).")] = "local",
    ray_address: Annotated[Optional[str], typer.Option(help="Ray cluster: auto or HOST:PORT.")] = None,
    store: Store = None,
    stage1_ms: Annotated[float, typer.Option(help="Stage 1: timed calls last about this long per candidate.")] = 100.0,
    warmup_ms: Annotated[float, typer.Option(help="Stage 1: warm-up per candidate (after its first call).")] = 25.0,
    rounds: Annotated[int, typer.Option(help="Stage 2: interleaved rounds over the finalists.")] = 10,
    top: Annotated[int, typer.Option(help="Stage 2: at most this many finalists per shape.")] = 6,
    retry_failed: Annotated[bool, typer.Option(help="Re-run stored failures instead of reusing them.")] = False,
    all_candidates: Annotated[bool, typer.Option("--all", help="List every candidate, not only failures.")] = False,
    json: Annotated[bool, typer.Option("--json", help="JSON, schema kernelscope.tune.v1.")] = False,
    csv: Annotated[bool, typer.Option("--csv", help="Every candidate as CSV.")] = False,
    parquet: Parquet = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="Markdown.")] = False,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write to FILE.")] = None,
) -> None:
    """Search TARGET's configs per shape: screen, time each candidate in an isolated worker (stage 1), re-time
    the finalists interleaved on one GPU (stage 2); a winner only when its CI separates, else a tie."""
    if device not in DEVICES:
        raise fail(f"--device {device}: expected {either(DEVICES)}")
    if timing not in TIMINGS:
        raise fail(f"--timing {timing}: expected {either(TIMINGS)}")
    if executor not in ("local", "ray"):
        raise fail(f"--executor {executor}: expected local or ray")
    presenter = pick({"json": json, "csv": csv, "parquet": parquet, "markdown": markdown}, output, PRESENTERS)
    with progress_bar() as bar:
        task = bar.add_task("starting workers", total=None)

        def tick(done: int, total: int, best: str, failures: dict[str, int]) -> None:
            failed = ", ".join(f"{n} {s}" for s, n in failures.items())
            bar.update(task, completed=done, total=total, description=best + (f" | {failed}" if failed else ""))

        result = api.tune(
            target, space=space, shapes=shape or (), reference=reference, launch=launch, atol=atol, rtol=rtol,
            device=device, timing=timing, incumbent=incumbent, store=store, executor=executor,  # type: ignore[arg-type]
            ray_address=ray_address, workers=workers, timeout_s=timeout, stage1_ms=stage1_ms, warmup_ms=warmup_ms, rounds=rounds, top=top,
            retry_failed=retry_failed, progress=tick,
        )  # fmt: skip
    if presenter is None:
        out.print(rich_renderable(result, all_candidates))
    else:
        emit(presenter, result, output)


Target = Annotated[Optional[str], typer.Option(help="Only this target (as given to kscope tune).")]
Status = Annotated[Optional[str], typer.Option(help=f"Only this status: {either(STATUSES)}.")]


@tune_app.command("show")
@guarded
def show(
    store: Store = None,
    target: Target = None,
    status: Status = None,
    json: Annotated[bool, typer.Option("--json", help="JSON: a list of outcomes (kernelscope.tune.v1 candidates).")] = False,
) -> None:
    """The store's results, newest first."""
    if status is not None and status not in STATUSES:
        raise fail(f"--status {status}: expected {either(STATUSES)}")
    rows = api.tune_results(store=store, target=target, status=status)
    if json:
        emit(STORE_PRESENTERS["json"], rows, None)
    else:
        out.print(rich_table(candidates_table(rows, f"{len(rows)} stored results"), hidden=("ci_lo", "ci_hi")))


@tune_app.command("export")
@guarded
def export(
    output: Annotated[Path, typer.Option("--output", "-o", help="FILE (.json, .csv or .parquet).")],
    store: Store = None,
    target: Target = None,
    status: Status = None,
    json: Annotated[bool, typer.Option("--json", help="JSON.")] = False,
    csv: Annotated[bool, typer.Option("--csv", help="CSV.")] = False,
    parquet: Parquet = False,
) -> None:
    """Write the store's results to a file."""
    if status is not None and status not in STATUSES:
        raise fail(f"--status {status}: expected {either(STATUSES)}")
    presenter = pick({"json": json, "csv": csv, "parquet": parquet}, output, STORE_PRESENTERS)
    assert presenter is not None  # output is required, so its extension or a flag picked one
    emit(presenter, api.tune_results(store=store, target=target, status=status), output)
