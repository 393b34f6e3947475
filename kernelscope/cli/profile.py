"""``kscope profile``: run a workload under the vendor's kernel tracer, then show its gap table."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated, Optional, get_args

import msgspec
import typer

from kernelscope import api
from kernelscope.cli._common import either, err, fail, guarded, out
from kernelscope.presenters.att import rich_renderable as att_renderable
from kernelscope.presenters.base import render_json
from kernelscope.presenters.gap import rich_renderable
from kernelscope.presenters.ncu import rich_renderable as ncu_renderable
from kernelscope.profiling import ProfileConfig, load_config, plan
from kernelscope.profiling.config import KernelFilter, NcuOptions, StepWindow, Tracer


@guarded
def profile(
    ctx: typer.Context,
    config: Annotated[Optional[Path], typer.Option(help="YAML/TOML: command, env, window, tracer, sources.")] = None,
    tracer: Annotated[Optional[str], typer.Option(help=f"{either(get_args(Tracer))}.")] = None,
    ncu: Annotated[
        bool, typer.Option("--ncu", help="Nsight Compute capture of chosen kernels (= --tracer ncu).")
    ] = False,
    att: Annotated[
        bool, typer.Option("--att", help="rocprofv3 thread trace of chosen kernels (= --tracer att).")
    ] = False,
    kernel: Annotated[
        Optional[str], typer.Option("--kernel", "-k", help="ncu/att: kernel function-name REGEX to capture.")
    ] = None,
    launch_skip: Annotated[Optional[int], typer.Option(help="ncu/att: matching launches passed over first.")] = None,
    launch_count: Annotated[Optional[int], typer.Option(help="ncu/att: matching launches captured.")] = None,
    ncu_set: Annotated[Optional[str], typer.Option(help="ncu section set (default full: source counters).")] = None,
    out_dir: Annotated[Optional[str], typer.Option("--out", help="Folder for the traces.")] = None,
    wait: Annotated[Optional[int], typer.Option(help="Steps skipped before tracing (torch).")] = None,
    warmup: Annotated[Optional[int], typer.Option(help="Warm-up steps, traced but dropped (torch).")] = None,
    active: Annotated[Optional[int], typer.Option(help="Steps recorded (torch).")] = None,
    step_fn: Annotated[Optional[str], typer.Option(help="optimizer, none, or pkg.mod:Class.method.")] = None,
    phase_by: Annotated[Optional[str], typer.Option(help="Split the gap table by annotations matching REGEX.")] = None,
    window: Annotated[Optional[str], typer.Option(help="Post-filter: N last steps or START_US:END_US.")] = None,
    timeout: Annotated[
        Optional[float], typer.Option(help="Seconds the workload may run; then its process group is killed.")
    ] = None,
    dry_run: Annotated[bool, typer.Option(help="Print the tracer command and environment; run nothing.")] = False,
    top: Annotated[int, typer.Option(help="Rows in the terminal table (0 = all).")] = 30,
    json: Annotated[
        bool, typer.Option("--json", help="JSON, schema kernelscope.profile-run.v1 (workload stdout goes to stderr).")
    ] = False,
) -> None:
    """Profile CMD (after --) with PyTorch's profiler, nsys or rocprofv3, then rank its kernels."""
    cfg = load_config(config) if config else ProfileConfig()
    if ctx.args:
        cfg.command = list(ctx.args)
    if ncu and att:
        raise fail("choose one of --ncu, --att")
    cfg.tracer = ("ncu" if ncu else "att" if att else tracer) or cfg.tracer  # type: ignore[assignment]
    k = cfg.kernels
    cfg.kernels = KernelFilter(
        regex=kernel or k.regex,
        skip=k.skip if launch_skip is None else launch_skip,
        count=k.count if launch_count is None else launch_count,
    )
    if ncu_set:
        cfg.ncu = NcuOptions(set=ncu_set, import_source=cfg.ncu.import_source)
    cfg.out_dir = out_dir or cfg.out_dir
    cfg.timeout_s = cfg.timeout_s if timeout is None else timeout
    cfg.phase_by = phase_by or cfg.phase_by
    w = cfg.window
    cfg.window = StepWindow(
        wait=w.wait if wait is None else wait,
        warmup=w.warmup if warmup is None else warmup,
        active=w.active if active is None else active,
        step_fn=step_fn or w.step_fn,
    )
    try:
        cfg = msgspec.convert(msgspec.to_builtins(cfg), ProfileConfig)  # re-validate the merged options
    except msgspec.ValidationError as exc:
        raise fail(f"invalid option: {exc}") from None
    if dry_run:
        inv = plan(cfg)
        doc = {"tracer": inv.tracer, "argv": inv.argv, "env": inv.env}
        if json:
            out.print_json(data=doc)
        else:
            out.print(
                " ".join(f"{k}={shlex.quote(v)}" for k, v in inv.env.items()), shlex.join(inv.argv), soft_wrap=True
            )
        return
    result = api.profile(cfg, window=window, quiet_stdout=json)
    run = result.run
    killed = f", killed at the {cfg.timeout_s:g} s timeout" if run.timed_out else ""
    if not run.traces:
        hint = ""
        if run.tracer == "torch" and cfg.window.step_fn != "none":
            w = cfg.window
            hint = f"; it traces {w.step_fn} steps after --wait {w.wait}: --step-fn none traces the whole run"
        raise fail(f"the workload wrote no trace under {run.out_dir} (exit code {run.returncode}{killed}){hint}")
    if json:
        out.file.write(render_json(result))
    else:
        err.print(f"{run.tracer}: exit {run.returncode}{killed}, {run.wall_s:.2f} s, traces: {', '.join(run.traces)}")
        if result.gap is not None:
            out.print(rich_renderable(result.gap, top=top or None, width=out.width))
        if result.ncu is not None:
            out.print(ncu_renderable(result.ncu))
        if result.att is not None:
            out.print(att_renderable(result.att))
    if run.returncode != 0:
        raise typer.Exit(run.returncode)
