"""An aircore server the gateway tests put behind the gateway (as HTTP replicas or stdio).

``REPLICA`` names the replica in answers; ``grow`` adds a tool at run time (a changed
``tools/list``); ``draft`` is marked ``register: false``; ``background`` continues as a task
(the tasks extension) and answers its replica and pid; ``muse`` asks the client's model
(sampling); ``linger`` waits until cancelled and leaves ``<MARK_DIR>/<tag>.started`` and
``.cancelled`` files behind.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from aircore import ToolContext, define_prompt, define_resource, define_server, define_tool

REPLICA = os.environ.get("REPLICA", "solo")
READ_ONLY = {"readOnlyHint": True}


def whoami(_p: dict[str, Any]) -> str:
    return REPLICA


def pid(_p: dict[str, Any]) -> str:
    return str(os.getpid())


def echo(p: dict[str, Any]) -> str:
    return f"{REPLICA}:{p['text']}"


async def slow_read(p: dict[str, Any]) -> str:
    await asyncio.sleep(float(p["seconds"]))
    return REPLICA


async def slow_write(p: dict[str, Any]) -> str:
    await asyncio.sleep(float(p["seconds"]))
    return REPLICA


def fail(_p: dict[str, Any]) -> str:
    raise RuntimeError("this tool fails on purpose")


async def progress(_p: dict[str, Any], ctx: ToolContext) -> str:
    for done in (1, 2, 3):
        await ctx.report_progress(done, 3)
    await ctx.log("info", "progress done")
    return "done"


async def ask(_p: dict[str, Any], ctx: ToolContext) -> str:
    answer = await ctx.elicit("Your name?", {"name": {"type": "string", "required": True}})
    return f"{answer.action}:{(answer.content or {}).get('name')}"


async def muse(_p: dict[str, Any], ctx: ToolContext) -> str:
    answer = await ctx.sample("Say hello", max_tokens=16)
    return f"sampled:{answer['content']['text']}"


async def linger(p: dict[str, Any]) -> str:
    marks = Path(os.environ["MARK_DIR"])
    tag = str(p["tag"])
    (marks / f"{tag}.started").touch()
    try:
        await asyncio.sleep(600)
    except asyncio.CancelledError:
        (marks / f"{tag}.cancelled").touch()
        raise
    return "never cancelled"


async def background(_p: dict[str, Any], ctx: ToolContext) -> str:
    await ctx.start_task(required=True)  # the call goes on as a task in this process
    return f"{REPLICA}:{os.getpid()}"


def grow(_p: dict[str, Any]) -> str:
    if "grown" not in server.tools:
        server.add_tool(define_tool("grown", handler=lambda _p: "new", description="added later"))
    return "grown"


def readme(_uri: str) -> str:
    return f"readme from {REPLICA}"


def greet(p: dict[str, Any]) -> str:
    return f"Hello {p.get('name', 'you')}"


server = define_server(
    name="upstream",
    tools=[
        define_tool("whoami", handler=whoami, annotations=READ_ONLY, description="the replica"),
        define_tool(
            "echo",
            handler=echo,
            params={"text": "string"},
            annotations=READ_ONLY,
            title="Echo",
            meta={"category_key": "test"},
        ),
        define_tool(
            "slow_read", handler=slow_read, params={"seconds": "number"}, annotations=READ_ONLY
        ),
        define_tool(
            "slow_write",
            handler=slow_write,
            params={"seconds": "number"},
            annotations={"destructiveHint": True},
        ),
        define_tool("fail", handler=fail),
        define_tool("pid", handler=pid, annotations=READ_ONLY),
        define_tool("progress", handler=progress),
        define_tool("ask", handler=ask),
        define_tool("muse", handler=muse),
        define_tool("linger", handler=linger, params={"tag": "string"}),
        define_tool("grow", handler=grow),
        define_tool("background", handler=background),
        define_tool("draft", handler=whoami, meta={"register": False}),
    ],
    resources=[define_resource("notes://readme", handler=readme, name="readme")],
    prompts=[define_prompt("greet", handler=greet, arguments={"name": "string?"})],
)
