"""``air meter slo``: the JSON shape and the table from a store with a recent failure burst,
and ``--watch`` alerting once on stderr in a real process stopped with Ctrl+C; two watching
processes on one data dir alert once, to the webhook named by ``AIR_SLO_WEBHOOK_URL``."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import orjson
import pytest

from aircli import main
from aircli.meter_slo import EXIT_FAILING
from airmeter import CallRecord, Layer, StoreSink
from airstore.file import FileStore

ROOT = Path(__file__).resolve().parents[2]
KEYS = {"tool", "server", "kind", "target", "period", "budget_remaining", "burn_rate_5m",
        "burn_rate_30m", "burn_rate_1h", "burn_rate_6h", "state"}  # fmt: skip


async def _fill(data: Path) -> None:
    now_ms = int(time.time() * 1000)
    records = [
        CallRecord(
            ts_ms=now_ms - 240_000 + i * 400,
            server="shop",
            tool=tool,
            layer=Layer.L2,
            latency_ms=40.0 if i % 10 else 900.0,
            ok=not (tool == "pay" and i % 2),
            error_type="tool_error" if tool == "pay" and i % 2 else None,
            request_id=str(i),
        )
        for tool in ("pay", "list_items")
        for i in range(500)
    ]
    async with FileStore(data) as store:
        sink = StoreSink(store, writer="w")
        await sink.write(records)
        await sink.close()


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "slo.yml"
    path.write_text("objectives:\n  - {server: shop, availability: 0.999, latency_p95_ms: 500}\n")
    return path


async def test_json_lists_one_entry_per_objective_and_tool(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await _fill(tmp_path / "data")
    argv = ["meter", "slo", "--config", str(_config(tmp_path)), "--store",
            f"file://{tmp_path / 'data'}"]  # fmt: skip
    assert await asyncio.to_thread(main, [*argv, "--format", "json"]) == EXIT_FAILING
    entries = orjson.loads(capsys.readouterr().out)["objectives"]
    assert all(set(e) >= KEYS for e in entries)
    got = {(e["tool"], e["kind"]): e["state"] for e in entries}
    # half of pay fails: 500x a 0.1 % budget; a tenth of calls is slow: 2x a 5 % budget, below
    # the burn-rate thresholds, but the budget is overspent (exhausted)
    assert got == {
        ("pay", "availability"): "breach",
        ("pay", "latency"): "exhausted",
        ("list_items", "availability"): "ok",
        ("list_items", "latency"): "exhausted",
    }
    burns = {(e["tool"], e["kind"]): e["burn_rate_5m"] for e in entries}
    assert burns[("list_items", "latency")] == pytest.approx(2.0)
    assert await asyncio.to_thread(main, [*argv, "--fail-on", "never"]) == 0
    table = capsys.readouterr().out
    assert "shop/pay" in table
    assert "breach" in table


async def test_watch_alerts_once_on_stderr_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    await _fill(tmp_path / "data")
    cmd = [sys.executable, "-m", "aircli", "meter", "slo", "--config", str(_config(tmp_path)),
           "--store", f"file://{tmp_path / 'data'}", "--format", "json", "--watch",
           "--interval", "0.2"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("AIR_SLO_WEBHOOK_URL", None)
    proc = await asyncio.create_subprocess_exec(
        *cmd, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    assert proc.stdout is not None
    assert proc.stderr is not None
    async with asyncio.timeout(60):
        for _ in range(3):  # three evaluations
            line = await proc.stdout.readline()
            assert orjson.loads(line)["objectives"]
        proc.send_signal(signal.SIGINT)
        code = await proc.wait()
        err = (await proc.stderr.read()).decode()
    assert code == 0
    alerts = [line for line in err.splitlines() if "SLO BREACH" in line or "SLO resolved" in line]
    assert len(alerts) == 1  # once, not once per evaluation
    assert "shop/pay availability" in alerts[0]


async def _watcher(cmd: list[str], env: dict[str, str]) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *cmd, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip


async def test_two_watchers_on_one_data_dir_alert_once_to_the_webhook_of_the_environment(
    tmp_path: Path,
) -> None:
    got: list[dict[str, object]] = []
    arrived = threading.Event()

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            got.append(orjson.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(204)
            self.end_headers()
            arrived.set()

        def log_message(self, *args: object) -> None:
            pass

    receiver = HTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    await _fill(tmp_path / "data")
    cmd = [sys.executable, "-m", "aircli", "meter", "slo", "--config", str(_config(tmp_path)),
           "--store", f"file://{tmp_path / 'data'}", "--format", "json", "--watch",
           "--interval", "0.2"]  # fmt: skip
    hook_url = f"http://127.0.0.1:{receiver.server_address[1]}/hook"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AIR_SLO_WEBHOOK_URL": hook_url}
    try:
        procs = [await _watcher(cmd, env) for _ in range(2)]
        errs = []
        async with asyncio.timeout(90):
            for proc in procs:
                assert proc.stdout is not None
                for _ in range(4):  # four evaluations each, the first ones at the same time
                    assert orjson.loads(await proc.stdout.readline())["objectives"]
            assert await asyncio.to_thread(arrived.wait, 30)
            for proc in procs:
                proc.send_signal(signal.SIGINT)
                assert await proc.wait() == 0
                assert proc.stderr is not None
                errs.append((await proc.stderr.read()).decode())
    finally:
        receiver.shutdown()
        receiver.server_close()
    alerts = [ln for err in errs for ln in err.splitlines() if "SLO BREACH" in ln]
    assert len(alerts) == 1  # one of the two processes alerted, once
    # each change alerts once: pay's availability burns; two latency budgets are overspent
    assert sorted(str(b["alert"]) for b in got) == ["breach", "exhausted", "exhausted"]
    (body,) = [b for b in got if b["alert"] == "breach"]
    assert "shop/pay availability" in str(body["message"])
