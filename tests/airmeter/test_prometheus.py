"""Prometheus exposition: numbers from records, strict-parser validity, and /metrics over ASGI."""

from __future__ import annotations

import math

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airmeter import CallRecord, Layer
from airmeter.errors import MeterConfigError
from airmeter.metrics_app import metrics_app
from airmeter.prometheus import CONTENT_TYPE, PrometheusSink
from airmeter.semconv import DURATION_BUCKETS_S
from tests.airmeter.prom_parser import ExpositionError, parse


def _rec(tool: str, layer: Layer, latency_ms: float, error: str | None = None) -> CallRecord:
    return CallRecord(
        ts_ms=1,
        server="s",
        tool=tool,
        layer=layer,
        latency_ms=latency_ms,
        ok=error is None,
        error_type=error,
    )


RECORDS = [
    _rec("get_user", Layer.L2, 5.0),
    _rec("get_user", Layer.L2, 10.0),  # exactly on the 0.01 s bound: le is inclusive
    _rec("get_user", Layer.L2, 150.0),
    _rec("fetch_url", Layer.L5, 400_000.0, "tool_error"),  # beyond 300 s: only +Inf
    _rec("fetch_url", Layer.L5, 20.0, "-32602"),
    _rec('we"ird\\tool\nname', Layer.L4, 1.0),
]


async def test_counters_and_histograms_match_the_records() -> None:
    sink = PrometheusSink()
    await sink.write(RECORDS)
    families = parse(sink.render())
    calls = {
        (s.labels["tool"], s.labels["layer"], s.labels["ok"]): s.value
        for s in families["air_mcp_calls_total"].samples
    }
    assert calls == {
        ("get_user", "L2", "true"): 3,
        ("fetch_url", "L5", "false"): 2,
        ('we"ird\\tool\nname', "L4", "true"): 1,
    }
    assert families["air_mcp_calls_total"].type == "counter"
    errors = {
        (s.labels["tool"], s.labels["error_type"]): s.value
        for s in families["air_mcp_errors_total"].samples
    }
    assert errors == {("fetch_url", "tool_error"): 1, ("fetch_url", "-32602"): 1}
    hist = families["mcp_server_operation_duration_seconds"]
    assert hist.type == "histogram"
    get_user = {
        s.labels["le"]: s.value
        for s in hist.samples
        if s.name.endswith("_bucket") and s.labels["tool"] == "get_user"
    }
    assert [float(le) for le in get_user] == [*DURATION_BUCKETS_S, math.inf]
    assert get_user["0.01"] == 2
    assert get_user["0.2"] == 3
    assert get_user["+Inf"] == 3
    fetch = {
        s.labels["le"]: s.value
        for s in hist.samples
        if s.name.endswith("_bucket") and s.labels["tool"] == "fetch_url"
    }
    assert fetch["300.0"] == 1
    assert fetch["+Inf"] == 2
    sums = {s.labels["tool"]: s.value for s in hist.samples if s.name.endswith("_sum")}
    assert sums["get_user"] == pytest.approx(0.165)
    await sink.close()


def test_an_empty_sink_renders_valid_text_with_headers_only() -> None:
    families = parse(PrometheusSink().render())
    assert set(families) == {
        "air_mcp_calls_total",
        "air_mcp_errors_total",
        "mcp_server_operation_duration_seconds",
    }
    assert all(not fam.samples for fam in families.values())


@pytest.mark.parametrize("buckets", [(), (1.0, 1.0), (2.0, 1.0), (1.0, math.inf)])
def test_bad_buckets_are_refused(buckets: tuple[float, ...]) -> None:
    with pytest.raises(MeterConfigError, match="buckets"):
        PrometheusSink(buckets=buckets)


@settings(deadline=None)  # a loaded machine is not a failure
@given(
    st.lists(
        st.tuples(
            st.text(min_size=1, max_size=12),
            st.sampled_from(list(Layer)),
            st.floats(min_value=0, max_value=1e7, allow_nan=False),
            st.one_of(st.none(), st.text(min_size=1, max_size=8)),
        ),
        max_size=30,
    )
)
def test_any_records_render_parseable_text_with_consistent_counts(
    rows: list[tuple[str, Layer, float, str | None]],
) -> None:
    sink = PrometheusSink()
    for tool, layer, latency, error in rows:
        sink.observe(_rec(tool, layer, latency, error))
    families = parse(sink.render())
    assert sum(s.value for s in families["air_mcp_calls_total"].samples) == len(rows)
    # label values survive escaping exactly
    assert {s.labels["tool"] for s in families["air_mcp_calls_total"].samples} == {
        tool for tool, *_ in rows
    }
    counts = [
        s.value
        for s in families["mcp_server_operation_duration_seconds"].samples
        if s.name.endswith("_count")
    ]
    assert sum(counts) == len(rows)


@pytest.mark.parametrize(
    "text",
    [
        'x_total{a="1"} 1\n# TYPE x_total counter\n',  # TYPE after samples
        "# TYPE a counter\na 1\n# TYPE b counter\nb 1\na 2\n",  # family split
        'a{b="\\x"} 1\n',  # bad escape
        "a 1.2.3\n",  # bad value
        "a 1",  # no final newline
        '# TYPE h histogram\nh_bucket{le="1.0"} 2\nh_bucket{le="+Inf"} 1\nh_count 1\n',
        '# TYPE h histogram\nh_bucket{le="1.0"} 1\nh_count 1\n',  # no +Inf
    ],
)
def test_the_strict_parser_rejects_invalid_text(text: str) -> None:
    with pytest.raises(ExpositionError):
        parse(text)


async def test_metrics_app_serves_the_exposition_over_asgi() -> None:
    sink = PrometheusSink()
    await sink.write(RECORDS)
    transport = httpx.ASGITransport(app=metrics_app(sink.render))
    async with httpx.AsyncClient(transport=transport, base_url="http://air.test") as client:
        response = await client.get("/metrics")
        assert response.status_code == 200
        assert response.headers["content-type"] == CONTENT_TYPE
        assert response.text == sink.render()
        parse(response.text)
        head = await client.head("/metrics")
        assert (head.status_code, head.content) == (200, b"")
        assert int(head.headers["content-length"]) == len(sink.render().encode())
        assert (await client.get("/other")).status_code == 404
        assert (await client.post("/metrics")).status_code == 405


async def test_metrics_app_answers_500_when_rendering_fails() -> None:
    def broken() -> str:
        raise RuntimeError("boom")

    transport = httpx.ASGITransport(app=metrics_app(broken))
    async with httpx.AsyncClient(transport=transport, base_url="http://air.test") as client:
        assert (await client.get("/metrics")).status_code == 500


async def test_metrics_app_guards_host_origin_and_token_like_the_mcp_endpoint() -> None:
    sink = PrometheusSink()
    app = metrics_app(sink.render, token="t", check_host=True, allowed_hosts=["metrics.internal"])
    auth = {"authorization": "Bearer t"}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:9") as local:
        assert (await local.get("/metrics", headers=auth)).status_code == 200
        assert (await local.get("/metrics")).status_code == 401
        assert (
            await local.get("/metrics", headers={**auth, "authorization": "Bearer x"})
        ).status_code == 401
        evil = {**auth, "origin": "http://evil.example"}
        assert (await local.get("/metrics", headers=evil)).status_code == 403
        ok_origin = {**auth, "origin": "http://localhost:3000"}
        assert (await local.get("/metrics", headers=ok_origin)).status_code == 200
    async with httpx.AsyncClient(transport=transport, base_url="http://rebound.example") as far:
        assert (await far.get("/metrics", headers=auth)).status_code == 421
    async with httpx.AsyncClient(transport=transport, base_url="http://metrics.internal") as named:
        assert (await named.get("/metrics", headers=auth)).status_code == 200
