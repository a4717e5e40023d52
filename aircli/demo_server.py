"""The air demo server: tools over all seven cost layers, a resource, a template and a prompt.

It ships inside the package, so it runs from any directory once air is installed:
``air demo`` drives it with sample traffic; ``air serve aircli.demo_server`` serves it (stdio
when piped, HTTP on a terminal), e.g. ``air serve aircli.demo_server --transport http --port 3510
--store memory://``. Without ``--store`` it meters to the default location (see
:func:`airstore.resolve_store_location`).
The tools that look external (``fetch_url``, ``generate_text``) are simulated locally so the
demo needs no network or model.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from aircli.settings import cli_settings
from aircore import (
    AirError,
    ToolContext,
    define_prompt,
    define_resource,
    define_server,
    define_tool,
)

CONVERSIONS: dict[tuple[str, str], float] = {
    ("km", "mi"): 0.621371,
    ("mi", "km"): 1.609344,
    ("kg", "lb"): 2.204623,
    ("lb", "kg"): 0.453592,
    ("m", "ft"): 3.280840,
    ("ft", "m"): 0.3048,
}

USERS: dict[str, dict[str, Any]] = {
    "u1": {"name": "Alice", "email": "alice@example.com", "age": 30},
    "u2": {"name": "Bob", "email": "bob@example.com"},
}


def ping(_params: dict[str, Any]) -> str:
    return "pong"


def get_user(params: dict[str, Any]) -> dict[str, Any]:
    user = USERS.get(params["user_id"])
    if user is None:
        raise AirError(-32602, f"no user {params['user_id']!r}")
    return user


async def search_notes(params: dict[str, Any], ctx: ToolContext) -> list[dict[str, Any]]:
    assert ctx.store is not None
    query = params["query"].lower()
    notes = await ctx.store.entries("demo.notes")
    hits = [{"id": k, **v} for k, v in notes if query in str(v.get("text", "")).lower()]
    return hits[: int(params.get("limit", 10))]


async def save_note(params: dict[str, Any], ctx: ToolContext) -> str:
    assert ctx.store is not None
    await ctx.store.set("demo.notes", params["note_id"], {"text": params["text"]})
    return f"saved {params['note_id']}"


async def delete_note(params: dict[str, Any], ctx: ToolContext) -> str:
    assert ctx.store is not None
    existed = await ctx.store.delete("demo.notes", params["note_id"])
    return f"deleted {params['note_id']}" if existed else f"no note {params['note_id']}"


def convert_units(params: dict[str, Any]) -> dict[str, Any]:
    key = (params["from_unit"], params["to_unit"])
    factor = CONVERSIONS.get(key)
    if factor is None:
        raise AirError(-32602, f"cannot convert {key[0]} to {key[1]}")
    return {"value": round(params["value"] * factor, 6), "unit": key[1]}


def summarize_text(params: dict[str, Any]) -> dict[str, Any]:
    text: str = params["text"]
    words = text.split()
    sentences = [
        s.strip() for s in text.replace("!", ".").replace("?", ".").split(".") if s.strip()
    ]
    return {
        "words": len(words),
        "sentences": len(sentences),
        "summary": sentences[0] if sentences else "",
    }


def fetch_url(params: dict[str, Any]) -> dict[str, Any]:
    parts = urlsplit(params["url"])
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise AirError(-32602, f"not an http(s) URL: {params['url']!r}")
    return {"url": params["url"], "host": parts.netloc, "status": 200, "simulated": True}


def generate_text(params: dict[str, Any], ctx: ToolContext) -> str:
    prompt: str = params["prompt"]
    # Tokens only: the meter prices the call like every other (layer weight times unit
    # price), so the dashboard's cost stays in one unit. A handler may also report ``cost``.
    ctx.usage.update(tokens_in=len(prompt.split()), tokens_out=12)
    return f"(simulated model) A short reply about: {prompt[:60]}"


async def plan_trip(params: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    steps = [
        "pick dates",
        f"book travel to {params['destination']}",
        "reserve lodging",
        "plan activities",
    ]
    for i, step in enumerate(steps, 1):
        await ctx.log("info", f"planning: {step}", logger="plan_trip")
        await ctx.report_progress(i, len(steps), f"step {i}/{len(steps)}")
    return {"destination": params["destination"], "days": params.get("days", 3), "steps": steps}


async def slow_task(params: dict[str, Any], ctx: ToolContext) -> str:
    seconds = float(params.get("seconds", 2))
    ticks = max(1, int(seconds / 0.1))
    stats = ctx.state.setdefault("slow_task", {"started": 0, "finished": 0, "cancelled": 0})
    stats["started"] += 1
    try:
        for i in range(ticks):
            await asyncio.sleep(seconds / ticks)
            await ctx.report_progress(i + 1, ticks)
    except asyncio.CancelledError:
        stats["cancelled"] += 1
        raise
    stats["finished"] += 1
    return f"slept {seconds:g}s"


def get_stats(_params: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return {"server": ctx.server_name, "slow_task": ctx.state.get("slow_task", {})}


def always_fails(_params: dict[str, Any]) -> str:
    raise RuntimeError("this tool always fails")


async def confirm_deploy(params: dict[str, Any], ctx: ToolContext) -> str:
    answer = await ctx.elicit(
        f"Deploy to {params['env']}?",
        {"confirmed": {"type": "boolean", "description": "really deploy", "required": True}},
    )
    if answer.action != "accept" or not (answer.content or {}).get("confirmed"):
        return "deploy cancelled"
    return f"deployed to {params['env']}"


TOOLS = [
    define_tool(
        "ping",
        description="Health check; answers pong.",
        handler=ping,
        layer=1,
        annotations={"readOnlyHint": True, "idempotentHint": True},
    ),
    define_tool(
        "get_user",
        description="Look up a user by id.",
        handler=get_user,
        params={"user_id": {"type": "string", "description": "u1 or u2"}},
        output_schema={"name": "string", "email": "string", "age": "number?"},
        annotations={"title": "Get user", "readOnlyHint": True},
        layer=2,
    ),
    define_tool(
        "search_notes",
        description="Search saved notes.",
        handler=search_notes,
        params={"query": "string", "limit": {"type": "integer", "minimum": 1, "optional": True}},
        layer=2,
        tags=["notes"],
    ),
    define_tool(
        "save_note",
        description="Save a note in the server's store.",
        handler=save_note,
        params={"note_id": "string", "text": "string"},
        layer=2,
        tags=["notes"],
    ),
    define_tool(
        "delete_note",
        description="Delete a note permanently.",
        handler=delete_note,
        params={"note_id": "string"},
        layer=5,
        tags=["notes"],
        annotations={
            "title": "Delete note",
            "readOnlyHint": False,
            "destructiveHint": True,
            "idempotentHint": True,
            "openWorldHint": False,
        },
    ),
    define_tool(
        "convert_units",
        description="Convert km/mi, kg/lb, m/ft.",
        handler=convert_units,
        params={
            "value": "number",
            "from_unit": {"type": "string", "enum": ["km", "mi", "kg", "lb", "m", "ft"]},
            "to_unit": "string",
        },
        layer=3,
    ),
    define_tool(
        "summarize_text",
        description="Count words and sentences; first sentence.",
        handler=summarize_text,
        params={"text": "string"},
        layer=4,
    ),
    define_tool(
        "fetch_url",
        description="(simulated) fetch a URL.",
        handler=fetch_url,
        params={"url": {"type": "string", "description": "http(s) URL"}},
        layer=5,
        annotations={"openWorldHint": True, "readOnlyHint": True},
    ),
    define_tool(
        "generate_text",
        description="(simulated) generate text with a model.",
        handler=generate_text,
        params={"prompt": "string"},
        layer=6,
    ),
    define_tool(
        "plan_trip",
        description="Plan a trip in steps, reporting progress.",
        handler=plan_trip,
        params={"destination": "string", "days": "integer?"},
        layer=7,
    ),
    define_tool(
        "slow_task",
        description="Sleep a while, reporting progress (cancellable).",
        handler=slow_task,
        params={"seconds": "number?"},
        layer=4,
    ),
    define_tool(
        "get_stats",
        description="Counters kept in the server's state.",
        handler=get_stats,
        layer=2,
        annotations={"readOnlyHint": True},
    ),
    define_tool(
        "always_fails",
        description="Always raises, to show error handling.",
        handler=always_fails,
        layer=1,
    ),
    define_tool(
        "confirm_deploy",
        description="Ask the user before deploying (elicitation).",
        handler=confirm_deploy,
        params={"env": "string"},
        layer=5,
        annotations={"destructiveHint": True},
    ),
]

_SIMULATE_LATENCY = cli_settings().demo_latency

# Typical latency (ms) of each layer's real-world work. `air demo` sets AIR_DEMO_LATENCY=1 so the
# dashboard shows a realistic picture; the handlers themselves answer at once.
SIMULATED_MS = {1: (0.2, 1), 2: (1, 8), 3: (2, 12), 4: (5, 40), 5: (30, 250), 6: (120, 800),
                7: (300, 1500)}  # fmt: skip


async def simulated_latency(ctx: Any, call_next: Any) -> Any:
    """Middleware: sleep a log-uniform time typical of the tool's layer (only in the demo)."""
    span = SIMULATED_MS.get(int(ctx.layer or 4)) if _SIMULATE_LATENCY else None
    if span is not None:
        low, high = span
        await asyncio.sleep(low * (high / low) ** random.random() / 1000)
    return await call_next(ctx)


DEFINITIONS = Path(__file__).resolve().parent / "demo_definitions"
"""The demo tools' definitions (checked by the quality gate at start; ``air check`` them)."""

README = """air demo server: tools over layers L1-L7, notes kept in the server's store."""


async def read_note(uri: str, variables: dict[str, str]) -> dict[str, Any]:
    store = server.store
    note = None if store is None else await store.get("demo.notes", variables["note_id"])
    if note is None:
        raise AirError(-32602, f"Resource not found: {uri}")
    return {"text": note["text"], "mimeType": "text/plain"}


server = define_server(
    name="air-demo",
    version="1.0.0",
    tools=TOOLS,
    resources=[
        define_resource(
            "demo://readme",
            name="readme",
            description="About this server",
            mime_type="text/plain",
            handler=lambda _uri: README,
        ),
        define_resource(
            "notes://{note_id}",
            name="note",
            description="A saved note",
            mime_type="text/plain",
            handler=read_note,
        ),
    ],
    prompts=[
        define_prompt(
            "review_code",
            description="Ask for a code review",
            arguments={
                "code": "the code to review",
                "language": {"description": "language", "required": False},
            },
            handler=lambda a: f"Please review this {a.get('language', 'code')}:\n{a['code']}",
        ),
    ],
    meter=True,  # no storage=: the default location, or `air serve --store URL`
    middleware=[simulated_latency],
    instructions="A demo of air: try ping, get_user, convert_units and plan_trip.",
    definitions=DEFINITIONS,
)


@server.tool(description="Greet someone.", layer=1)
async def greet(name: str, excited: bool = False) -> str:
    return f"Hello, {name}{'!' if excited else '.'}"


if __name__ == "__main__":
    server.run()
