"""The demo counter task's work mode (``client.connect.demo``): a source at ``records.per.s``,
records processed in order at ``processing.ms`` each, the position kept in a file flushed
every ``offset.flush.interval.ms`` and at stop (what ``lab calibrate``'s Connect workers run).
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from groupcoord.client.connect.demo import CounterSourceTask, read_events
from groupcoord.client.connect.runtime import TaskContext


def _task(worker: str = "w1") -> CounterSourceTask:
    t = CounterSourceTask()
    t.initialize(TaskContext(worker, "src", 0))
    return t


def _config(tmp_path: Path, start: float, **extra: str) -> dict[str, str]:
    return {"records.per.s": "100", "processing.ms": "1", "source.start": repr(start),
            "offsets.dir": str(tmp_path), "output": str(tmp_path / "out.jsonl"), **extra}


async def _poll_until(task: CounterSourceTask, count: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while task.count < count:
        assert time.monotonic() < deadline, f"stuck at {task.count}"
        await task.poll()


def test_records_are_processed_in_order_and_the_position_survives_a_clean_stop(
        tmp_path: Path) -> None:
    async def main() -> None:
        start = time.time() - 1.0  # 100 records are due at once
        task = _task()
        await task.start(_config(tmp_path, start))
        await _poll_until(task, 50)
        await task.stop()
        assert (tmp_path / "src-0").read_text() == "50"
        again = _task("w2")
        await again.start(_config(tmp_path, start))
        assert again.count == 50
        await _poll_until(again, 60)
        await again.stop()

    asyncio.run(main())
    recs = [e for e in read_events(tmp_path / "out.jsonl") if e.event == "record"]
    assert [e.count for e in recs] == list(range(60))
    assert {e.worker for e in recs[:50]} == {"w1"} and {e.worker for e in recs[50:]} == {"w2"}


def test_a_crashed_task_restarts_from_the_last_flush_and_processes_again(tmp_path: Path) -> None:
    async def main() -> None:
        start = time.time() - 1.0
        task = _task()
        await task.start(_config(tmp_path, start, **{"offset.flush.interval.ms": "3600000"}))
        await _poll_until(task, 30)
        # no stop(): the worker died; nothing was flushed since the start
        again = _task("w2")
        await again.start(_config(tmp_path, start))
        assert again.count == 0
        await _poll_until(again, 5)
        await again.stop()

    asyncio.run(main())
    recs = [e.count for e in read_events(tmp_path / "out.jsonl") if e.event == "record"]
    assert recs == [*range(30), *range(5)]


def test_a_caught_up_task_waits_for_the_source(tmp_path: Path) -> None:
    async def main() -> None:
        task = _task()
        await task.start(_config(tmp_path, time.time(), **{"records.per.s": "20"}))
        t0 = time.monotonic()
        await _poll_until(task, 10)
        assert time.monotonic() - t0 >= 0.4  # 10 records at 20/s take half a second to exist
        await task.stop()

    asyncio.run(main())


def test_a_bad_number_fails_the_task_naming_the_key(tmp_path: Path) -> None:
    async def main() -> None:
        await _task().start(_config(tmp_path, time.time(), **{"processing.ms": "slow"}))

    with pytest.raises(ValueError, match=r"processing\.ms"):
        asyncio.run(main())
    assert not (tmp_path / "out.jsonl").exists() or all(
        json.loads(line)["event"] != "record"
        for line in (tmp_path / "out.jsonl").read_text().splitlines())
