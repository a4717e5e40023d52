"""An aircore server with the meter on, served over stdio by the end-to-end test."""

from __future__ import annotations

from typing import Any

from aircore import AirError, ToolContext, define_server, define_tool
from airmeter import report_usage


def echo(params: dict[str, Any]) -> str:
    return str(params["text"])


def get_user(params: dict[str, Any]) -> dict[str, Any]:
    if params["user_id"] != "u1":
        raise AirError(-32001, f"no user {params['user_id']!r}")
    return {"name": "Alice"}


def fetch_url(params: dict[str, Any]) -> str:
    raise ConnectionError(f"cannot reach {params['url']}")


def refuse(params: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": "refused"}], "isError": True}


async def generate_text(params: dict[str, Any], ctx: ToolContext) -> str:
    ctx.usage["tokens_in"] = 7
    report_usage(tokens_out=3, cost=0.5)
    return "generated"


def format_date(params: dict[str, Any]) -> dict[str, Any]:
    return {"day": "monday"}  # not the integer its outputSchema promises


def opaque(params: dict[str, Any]) -> Any:
    return object()  # not JSON: a bug of the handler, not of the client or the protocol


def exits(params: dict[str, Any]) -> str:
    raise SystemExit(3)  # e.g. a wrapped CLI's argparse: a failure of the tool


server = define_server(
    name="metered",
    tools=[
        define_tool(name="echo", params={"text": "string"}, handler=echo),
        define_tool(name="get_user", params={"user_id": "string"}, handler=get_user),
        define_tool(name="fetch_url", params={"url": "string"}, handler=fetch_url),
        define_tool(name="refuse", params={}, handler=refuse, layer=3),
        define_tool(name="generate_text", params={"prompt": "string"}, handler=generate_text),
        define_tool(
            name="format_date",
            params={"date": "string"},
            output_schema={"day": "integer"},
            handler=format_date,
        ),
        define_tool(name="opaque", params={}, handler=opaque),
        define_tool(name="exits", params={}, handler=exits),
    ],
    meter=True,
)
