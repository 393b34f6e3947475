"""The tuning store: SQLite in WAL mode, one row per (source hash, shape, config, environment), written as
each result arrives — a sweep killed with ``kill -9`` loses only the candidates in flight, and re-running
it (or running it with one config more) evaluates only what has no row yet.

The environment key is the worker's fingerprint less the device's UUID: identical GPUs of one model,
driver and software share results (a dynamic scheduler sends a candidate to whichever GPU is free); the
UUID that produced each row is kept in it. Stage-2 decisions are stored per (source, shape, environment,
finalist set): the same finalists reuse the decision, a new contender re-runs it.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import msgspec

from kernelscope.errors import FormatError
from kernelscope.model.tune import Best, Outcome, Params, key

_SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    source_hash TEXT NOT NULL, target TEXT NOT NULL, shape TEXT NOT NULL, config TEXT NOT NULL, env TEXT NOT NULL,
    status TEXT NOT NULL, median_us REAL, ci_lo REAL, ci_hi REAL, iqr_us REAL, samples INTEGER NOT NULL,
    detail TEXT NOT NULL, device TEXT NOT NULL, device_uuid TEXT NOT NULL, attempts INTEGER NOT NULL,
    seconds REAL NOT NULL, registers INTEGER, shared_bytes INTEGER, created REAL NOT NULL,
    PRIMARY KEY (source_hash, shape, config, env)
);
CREATE TABLE IF NOT EXISTS decisions (
    source_hash TEXT NOT NULL, shape TEXT NOT NULL, env TEXT NOT NULL, finalists TEXT NOT NULL,
    best TEXT NOT NULL, created REAL NOT NULL,
    PRIMARY KEY (source_hash, shape, env, finalists)
);
CREATE TABLE IF NOT EXISTS environments (env TEXT PRIMARY KEY, facts TEXT NOT NULL);
"""
_COLUMNS = (
    "source_hash, target, shape, config, env, status, median_us, ci_lo, ci_hi, iqr_us, samples, detail, "
    "device, device_uuid, attempts, seconds, registers, shared_bytes, created"
)
_decode_params = msgspec.json.Decoder(Params)
_best = msgspec.json.Decoder(Best)


def env_key(facts: dict[str, str]) -> str:
    return key(dict(sorted(facts.items())))


class Store:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.db = sqlite3.connect(path, timeout=30, check_same_thread=False, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: a committed row survives a killed process
            self.db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise FormatError(path, "a kscope tune store (SQLite)", " ".join(str(exc).split())) from None

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def put_environment(self, env: str, facts: dict[str, str]) -> None:
        with self._tx() as db:
            db.execute("INSERT OR REPLACE INTO environments VALUES (?, ?)", (env, msgspec.json.encode(facts).decode()))

    def put(self, source_hash: str, target: str, env: str, o: Outcome) -> None:
        lo, hi = o.ci_us if o.ci_us else (None, None)
        row = (
            source_hash,
            target,
            key(o.shape),
            key(o.config),
            env,
            o.status,
            o.median_us,
            lo,
            hi,
            o.iqr_us,
            o.samples,
            o.detail,
            o.device,
            o.device_uuid,
            o.attempts,
            o.seconds,
            o.registers,
            o.shared_bytes,
            time.time(),
        )
        with self._tx() as db:
            db.execute(f"INSERT OR REPLACE INTO results ({_COLUMNS}) VALUES ({', '.join('?' * 19)})", row)

    def get(self, source_hash: str, env: str) -> dict[tuple[str, str], Outcome]:
        """Every stored outcome of this source in this environment, by (shape key, config key)."""
        rows = self.db.execute(f"SELECT {_COLUMNS} FROM results WHERE source_hash = ? AND env = ?", (source_hash, env))
        return {(r[2], r[3]): _outcome(r) for r in rows}

    def rows(self, *, source_hash: str | None = None, target: str | None = None) -> Iterable[tuple[str, Outcome]]:
        """(target, outcome) for every stored row, optionally of one source or target, newest first."""
        sql = f"SELECT {_COLUMNS} FROM results"
        where, args = [], []
        if source_hash:
            where.append("source_hash = ?")
            args.append(source_hash)
        if target:
            where.append("target = ?")
            args.append(target)
        if where:
            sql += " WHERE " + " AND ".join(where)
        for r in self.db.execute(sql + " ORDER BY created DESC", args):
            yield r[1], _outcome(r)

    def put_decision(self, source_hash: str, env: str, finalists: list[Params], best: Best) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO decisions VALUES (?, ?, ?, ?, ?, ?)",
                (
                    source_hash,
                    key(best.shape),
                    env,
                    _finalists(finalists),
                    msgspec.json.encode(best).decode(),
                    time.time(),
                ),
            )

    def get_decision(self, source_hash: str, env: str, shape: Params, finalists: list[Params]) -> Best | None:
        row = self.db.execute(
            "SELECT best FROM decisions WHERE source_hash = ? AND shape = ? AND env = ? AND finalists = ?",
            (source_hash, key(shape), env, _finalists(finalists)),
        ).fetchone()
        return _best.decode(row[0]) if row else None


def _finalists(configs: list[Params]) -> str:
    return "[" + ",".join(sorted(key(c) for c in configs)) + "]"


def _outcome(r: tuple[object, ...]) -> Outcome:
    lo, hi = r[7], r[8]
    return Outcome(
        shape=_decode_params.decode(str(r[2])),
        config=_decode_params.decode(str(r[3])),
        status=r[5],  # type: ignore[arg-type]
        median_us=r[6],  # type: ignore[arg-type]
        ci_us=[float(lo), float(hi)] if lo is not None and hi is not None else None,  # type: ignore[arg-type]
        iqr_us=r[9],  # type: ignore[arg-type]
        samples=int(r[10]),  # type: ignore[call-overload]
        detail=str(r[11]),
        device=str(r[12]),
        device_uuid=str(r[13]),
        attempts=int(r[14]),  # type: ignore[call-overload]
        seconds=float(r[15]),  # type: ignore[arg-type]
        registers=r[16],  # type: ignore[arg-type]
        shared_bytes=r[17],  # type: ignore[arg-type]
        reused=True,
    )
