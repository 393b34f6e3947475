"""``kscope tune TARGET ...`` (search), ``kscope tune show`` and ``kscope tune export`` (the store)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional, get_args

import typer
from typer.core import TyperGroup

from kernelscope import api
from kernelscope.cli._common import Parquet, either, emit, err, fail, guarded, out, pick, progress_bar
from kernelscope.model.memory import MemoryRecord
from kernelscope.model.tune import STATUSES, Device, Timing, TuneResult, label
from kernelscope.presenters.base import rich_table
from kernelscope.presenters.tune import (
    PRESENTERS,
    STORE_PRESENTERS,
    TUNABLEOP_PRESENTERS,
    candidates_table,
    rich_renderable,
    tunableop_renderable,
)
from kernelscope.tune.space import parse_shape


class _RunByDefault(TyperGroup):
    """``kscope tune TARGET ...`` is ``kscope tune run TARGET ...``: anything but a subcommand's name runs."""

    runs_by_default = True

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


tune_app = typer.Typer(
    cls=_RunByDefault,
    help="Autotune a kernel over its configs on every GPU (kscope tune TARGET ...; see kscope tune run --help), "
    "and read the results store (show, export).",
    no_args_is_help=True,
)

Store = Annotated[
    Optional[Path],
    typer.Option(help="The results store (default: $KSCOPE_TUNE_STORE or ~/.cache/kernelscope/tune.sqlite)."),
]
DEVICES, TIMINGS = get_args(Device), get_args(Timing)


@tune_app.command("run")
@guarded
def run(
    target: Annotated[
        Optional[str], typer.Argument(help="FILE.py:FACTORY (with --space) or FILE.py:KERNEL (@triton.autotune).")
    ] = None,
    command: Annotated[Optional[list[str]], typer.Argument(help="With --tunableop: the workload, after --.")] = None,
    space: Annotated[Optional[Path], typer.Option(help="SPACE.yaml: params, constraints, shapes, incumbent.")] = None,
    shape: Annotated[Optional[list[str]], typer.Option(help="A shape NAME=VALUE,... (repeat).")] = None,
    from_trace: Annotated[
        Optional[Path], typer.Option(help="Shapes the workload launched: a kscope profile folder or trace.")
    ] = None,
    kernel: Annotated[Optional[str], typer.Option(help="With --from-trace: the kernel (regex).")] = None,
    reference: Annotated[Optional[str], typer.Option(help="FILE.py:FUNC; FUNC(shape) is the expected result.")] = None,
    launch: Annotated[Optional[str], typer.Option(help="Triton: FILE.py:FUNC; FUNC(shape) -> grid, args.")] = None,
    source: Annotated[
        Optional[list[Path]],
        typer.Option(help="A file the kernel's code is in (repeat): its edits start fresh results."),
    ] = None,
    atol: Annotated[float, typer.Option(help="Absolute tolerance of the correctness check.")] = 1e-2,
    rtol: Annotated[float, typer.Option(help="Relative tolerance of the correctness check.")] = 1e-2,
    device: Annotated[str, typer.Option(help=f"{either(DEVICES)}: where candidates run.")] = "auto",
    timing: Annotated[str, typer.Option(help=f"{either(TIMINGS)} (L2 flushed, warm, or graph replay).")] = "cold",
    incumbent: Annotated[Optional[str], typer.Option(help="The config in use today, NAME=VALUE,...")] = None,
    screen: Annotated[
        Optional[str], typer.Option(help="Compile every candidate offline for ARCH (gfx942, sm_90...) and prune.")
    ] = None,
    signature: Annotated[
        Optional[str], typer.Option(help="With --screen: argument types NAME=TYPE,... (*fp16, i32...).")
    ] = None,
    screen_only: Annotated[bool, typer.Option(help="Stop after the screen (no GPU needed).")] = False,
    workers: Annotated[Optional[int], typer.Option(help="Workers (default: one per visible GPU; 1 on CPU).")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds per candidate (build, check, time).")] = 60.0,
    executor: Annotated[str, typer.Option(help="local (processes on this host) or ray (a Ray cluster).")] = "local",
    ray_address: Annotated[Optional[str], typer.Option(help="Ray cluster: auto or HOST:PORT.")] = None,
    store: Store = None,
    stage1_ms: Annotated[float, typer.Option(help="Stage 1: timed calls last about this long per candidate.")] = 20.0,
    warmup_ms: Annotated[float, typer.Option(help="Stage 1: warm-up per candidate (after its first call).")] = 10.0,
    rounds: Annotated[int, typer.Option(help="Stage 2: interleaved rounds over the finalists.")] = 10,
    top: Annotated[int, typer.Option(help="Stage 2: at most this many finalists per shape.")] = 6,
    retry_failed: Annotated[bool, typer.Option(help="Re-run stored failures instead of reusing them.")] = False,
    write: Annotated[
        Optional[tuple[str, Path]],
        typer.Option(help="KIND DEST: triton-json DIR (vLLM layout), sglang-json DIR, generic FILE, tunableop FILE."),
    ] = None,
    batch: Annotated[str, typer.Option(help="With --write *-json: the shape name that is the batch size.")] = "M",
    apply: Annotated[
        Optional[str], typer.Option(help="After --write: kscope eval this task (the file written is its candidate).")
    ] = None,
    workspace: Annotated[Path, typer.Option(help="With --apply: the kscope workspace holding the task.")] = Path("."),
    memory: Annotated[bool, typer.Option(help="With --apply: also write the iteration memory record.")] = False,
    tunableop: Annotated[bool, typer.Option(help="Tune the GEMMs of the workload after -- with TunableOp.")] = False,
    out_dir: Annotated[Path, typer.Option("--out", help="With --tunableop: where its files go.")] = Path(
        "kscope-tunableop"
    ),
    ab_runs: Annotated[int, typer.Option(help="With --tunableop: timed runs per side of the A/B (0: none).")] = 5,
    metric: Annotated[Optional[str], typer.Option(help="With --tunableop: a KSCOPE_METRIC to compare.")] = None,
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
    if tunableop:
        _tunableop(
            [*([target] if target else []), *(command or [])],
            out_dir,
            workers,
            ab_runs,
            metric,
            timeout,
            write,
            json,
            output,
        )
        return
    if target is None or command:
        raise fail("expected one TARGET (FILE.py:FACTORY or FILE.py:KERNEL); a workload after -- needs --tunableop")
    if apply and not write:
        raise fail("--apply TASK needs --write KIND DEST: the file written is what the task's eval measures")
    presenter = pick({"json": json, "csv": csv, "parquet": parquet, "markdown": markdown}, output, PRESENTERS)
    with progress_bar() as bar:
        task = bar.add_task("screening" if screen else "starting workers", total=None)

        def tick(done: int, total: int, best: str, failures: dict[str, int]) -> None:
            failed = ", ".join(f"{n} {s}" for s, n in failures.items())
            bar.update(task, completed=done, total=total, description=best + (f" | {failed}" if failed else ""))

        result = api.tune(
            target,
            space=space,
            shapes=shape or (),
            from_trace=from_trace,
            kernel=kernel,
            reference=reference,
            launch=launch,
            sources=source or (),
            screen=screen,
            signature=_signature(signature),
            screen_only=screen_only,
            atol=atol,
            rtol=rtol,
            device=device,  # type: ignore[arg-type]
            timing=timing,  # type: ignore[arg-type]
            incumbent=incumbent,
            store=store,
            executor=executor,
            ray_address=ray_address,
            workers=workers,
            timeout_s=timeout,
            stage1_ms=stage1_ms,
            warmup_ms=warmup_ms,
            rounds=rounds,
            top=top,
            retry_failed=retry_failed,
            progress=tick,
        )
    if presenter is None:
        out.print(rich_renderable(result, all_candidates))
    else:
        emit(presenter, result, output)
    if write:
        for path in api.write_winners(result, write[0], write[1], batch=batch):
            err.print(f"wrote {path}", highlight=False)
    if apply:
        from kernelscope.presenters.eval import rich_renderable as eval_renderable

        evaluated = api.evaluate(apply, workspace=workspace)
        shown = out if presenter is None else err  # stdout stays one document under --json
        shown.print(eval_renderable(evaluated))
        if memory:
            record = _remember(result, apply, workspace, evaluated.id)
            shown.print(f"wrote {workspace / 'memory' / f'v{record.version}.json'}", highlight=False)
    elif memory:
        raise fail("--memory records the eval of --apply TASK: give --apply too")


def _remember(result: TuneResult, task: str, workspace: Path, eval_id: str) -> MemoryRecord:
    """The eval as an iteration memory record: the task's lever, else ``tile_shape`` (a tuned config is a
    choice of tiles, warps and stages); the winners in the title."""
    lever = api.show_task(task, workspace=workspace).lever or "tile_shape"
    winners = "; ".join(f"{label(b.shape)}: {label(b.config)}" + (" (tie)" if b.tie else "") for b in result.best)
    return api.memory_new(workspace=workspace, from_eval=eval_id, category=lever, title=f"kscope tune: {winners}"[:200])


def _signature(text: str | None) -> dict[str, str] | None:
    return {k: str(v) for k, v in parse_shape(text).items()} if text else None


def _tunableop(
    command: list[str],
    out_dir: Path,
    gpus: int | None,
    ab_runs: int,
    metric: str | None,
    timeout: float,
    write: tuple[str, Path] | None,
    json: bool,
    output: Path | None,
) -> None:
    if write and write[0] != "tunableop":
        raise fail(f"--write {write[0]} with --tunableop: only --write tunableop FILE applies")
    with progress_bar(counted=False) as bar:
        task = bar.add_task("TunableOp", total=None)
        result = api.tunableop(
            command,
            out_dir,
            gpus=gpus,
            ab_runs=ab_runs,
            metric=metric,
            timeout_s=max(timeout, 600.0),
            progress=lambda what: bar.update(task, description=what),
        )
    if write and result.results_path:
        from kernelscope.tune.writers import read_tunableop, write_tunableop

        err.print(f"wrote {write_tunableop(read_tunableop(Path(result.results_path)), write[1])}", highlight=False)
    if json or output:
        emit(TUNABLEOP_PRESENTERS["json"], result, output)
    else:
        out.print(tunableop_renderable(result))


Target = Annotated[Optional[str], typer.Option(help="Only this target (as given to kscope tune).")]
Status = Annotated[Optional[str], typer.Option(help=f"Only this status: {either(STATUSES)}.")]


@tune_app.command("show")
@guarded
def show(
    store: Store = None,
    target: Target = None,
    status: Status = None,
    json: Annotated[
        bool, typer.Option("--json", help="JSON: a list of outcomes (kernelscope.tune.v1 candidates).")
    ] = False,
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
