"""kscope tune --executor ray on a two-node Ray cluster simulated on this CPU machine: each node declares one
GPU, so each gets one ``num_gpus=1`` actor, as on a real cluster; the kernel is the CPU stand-in. A node
removed mid-sweep loses only its in-flight candidate, which is re-queued on the other node."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kernelscope import api

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402 - only once ray is known to be installed

DATA = Path(__file__).parent / "data" / "tune"
FAULTS = f"{DATA / 'faults.py'}:factory"
REFERENCE = f"{DATA / 'faults.py'}:reference"


@pytest.fixture(scope="module")  # one cluster for both tests (it takes seconds to start); node removal runs last
def cluster() -> Iterator[tuple[Any, list[Any]]]:
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "num_gpus": 0})
    nodes = [c.add_node(num_cpus=1, num_gpus=1) for _ in range(2)]
    c.wait_for_nodes()
    ray.init(address=c.address, log_to_driver=False)
    try:
        yield c, nodes
    finally:
        ray.shutdown()
        c.shutdown()


def _space(tmp_path: Path, blocks: list[int], sleep: float) -> Path:
    path = tmp_path / "space.yaml"
    path.write_text(json.dumps({"params": {"BLOCK": blocks, "SLEEP": [sleep]}, "shapes": [{"N": 2048}]}))
    return path


def test_ray_spreads_work_over_both_nodes(tmp_path: Path, cluster: tuple[Any, list[Any]]) -> None:
    c, _ = cluster
    r = api.tune(
        FAULTS,
        space=_space(tmp_path, [1, 2, 4, 8, 16, 32], 0.2),
        reference=REFERENCE,
        device="auto",
        executor="ray",
        ray_address=c.address,
        store=tmp_path / "s.sqlite",
        stage1_ms=5,
        rounds=3,
        round_ms=2,
        timeout_s=60,
    )
    assert r.executor == "ray" and len(r.workers) == 2
    assert all(o.status == "ok" for o in r.candidates)
    assert len(r.best) == 1 and r.best[0].rounds == 3  # stage 2 ran on one actor
    hosts = sqlite3.connect(tmp_path / "s.sqlite").execute("SELECT count(*) FROM results").fetchone()
    assert hosts == (6,)


def test_a_node_that_disappears_loses_nothing(tmp_path: Path, cluster: tuple[Any, list[Any]]) -> None:
    c, nodes = cluster
    store = tmp_path / "s.sqlite"
    gone: list[float] = []

    def remove_a_node() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if store.exists() and sqlite3.connect(store).execute("SELECT count(*) FROM results").fetchone()[0] >= 2:
                    break
            except sqlite3.OperationalError:
                pass
            time.sleep(0.1)
        c.remove_node(nodes[1])  # mid-sweep: both actors are busy with 1.5 s candidates
        gone.append(time.monotonic())

    killer = threading.Thread(target=remove_a_node)
    killer.start()
    r = api.tune(
        FAULTS,
        space=_space(tmp_path, [1, 2, 4, 8, 16, 32, 64, 128], 1.5),
        reference=REFERENCE,
        device="auto",
        executor="ray",
        ray_address=c.address,
        store=store,
        stage1_ms=5,
        rounds=3,
        round_ms=2,
        timeout_s=60,
    )
    killer.join()
    assert gone, "the node was never removed"
    assert len(r.candidates) == 8 and all(o.status == "ok" for o in r.candidates)  # re-queued, none failed
    assert sqlite3.connect(store).execute("SELECT count(*) FROM results").fetchone() == (8,)
