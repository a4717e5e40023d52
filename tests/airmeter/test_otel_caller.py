"""Who called, in OpenTelemetry: ``air serve --auth-config --otel`` exports each call's span
with ``client.id``, ``enduser.id`` (the subject's pseudonym) and ``air.auth``, to a real
OTLP/HTTP receiver; metric points stay without them (their cardinality is the callers')."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tests.airhttp.oauth_serve import bearer_client, oauth_serving
from tests.airmeter.otlp_receiver import otlp_receiver

SERVER = """
from aircore import define_server, define_tool

server = define_server(
    name="notes",
    meter=True,
    tools=[define_tool(name="read_note", params={"id": "string"},
                       handler=lambda p: "note " + p["id"])],
)
"""


def _attrs(item: Any) -> dict[str, Any]:
    return {kv.key: getattr(kv.value, kv.value.WhichOneof("value")) for kv in item.attributes}


async def test_spans_carry_the_client_and_the_pseudonymous_end_user(tmp_path: Path) -> None:
    with otlp_receiver() as receiver:
        env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url}
        async with oauth_serving(tmp_path, SERVER, extra=["--otel"], env=env) as served:
            for client_id, sub in (("reports-app", "alice"), ("ci-bot", "svc-ci")):
                async with bearer_client(
                    served.url, served.token(client_id=client_id, sub=sub)
                ) as c:
                    assert not (await c.call_tool("read_note", {"id": "1"})).is_error
        # the server stopped (SIGTERM): its sink exported what it held
        assert receiver.wait_for(lambda: len(receiver.spans()) >= 2)
        assert receiver.wait_for(
            lambda: bool(receiver.metric_points("mcp.server.operation.duration"))
        )
        spans = [_attrs(span) for span in receiver.spans() if span.name == "tools/call read_note"]
        points = receiver.metric_points("mcp.server.operation.duration")
    by_client = {attrs["client.id"]: attrs for attrs in spans}
    assert set(by_client) == {"reports-app", "ci-bot"}
    alice = by_client["reports-app"]
    assert alice["air.auth"] == "oauth"
    assert alice["enduser.id"].startswith("p:")  # the pseudonym, never the subject itself
    assert alice["enduser.pseudo.id"] == alice["enduser.id"]
    assert alice["enduser.id"] != by_client["ci-bot"]["enduser.id"]
    assert not any("alice" in str(value) for attrs in spans for value in attrs.values())
    data = [point for metric in points for point in metric.histogram.data_points]
    assert data
    for point in data:
        assert not {"client.id", "enduser.id", "enduser.pseudo.id"} & set(_attrs(point))
