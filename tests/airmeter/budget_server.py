"""An aircore server whose blocking daily budget lets three calls of its L4 tool run (cost 10
each, limit 25: a call is refused once 25 are spent): several of them share one data dir in
the shared-budget test."""

from __future__ import annotations

import os
from typing import Any

import airmeter.middleware
from aircore import define_server, define_tool
from airmeter import Budget, MeterMiddleware

# The test shortens the interval between two reads of every process's spending (airmeter's
# REFRESH_S, 2 s) so that its waits for a refresh are short; what a refresh does is the same.
if "BUDGET_REFRESH_S" in os.environ:
    airmeter.middleware.REFRESH_S = float(os.environ["BUDGET_REFRESH_S"])


def search(params: dict[str, Any]) -> str:
    return "found"


server = define_server(
    name=os.environ.get("BUDGET_SERVER_NAME", "budgeted"),
    tools=[define_tool(name="search", params={}, handler=search, layer=4)],
    meter=MeterMiddleware(budget=Budget(daily_limit=25, on_exceed="block")),
)
