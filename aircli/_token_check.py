"""``air check``'s context-cost warning: tool definitions above a token budget.

The tokens a definition adds to every model context that lists it (``tools/list`` as the server
sends it, ``_meta`` excluded), counted exactly with the ``tokens`` extra (``bpe-openai``,
``o200k_base``), else estimated. A warning, not a failure: ``air check`` still exits 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from airmeter.context_cost import DEFAULT_DEFINITION_TOKEN_BUDGET, oversized_definitions
from airmeter.tokens import load_counter

__all__ = ["DEFAULT_TOKEN_BUDGET", "TokenWarning", "token_warnings"]

DEFAULT_TOKEN_BUDGET: Final = DEFAULT_DEFINITION_TOKEN_BUDGET
"""Tokens one tool definition may add before ``air check`` warns (``--token-budget``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenWarning:
    """One definition above the budget."""

    tool: str
    tokens: int
    budget: int
    tokenizer: str
    exact: bool

    def __str__(self) -> str:
        how = self.tokenizer if self.exact else "estimated"
        return (f"warning: {self.tool}: its definition adds {self.tokens:,} tokens ({how}) to "
                f"every context that lists it, above the budget of {self.budget:,}")  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        """The warning as JSON."""
        return {"tool": self.tool, "tokens": self.tokens, "budget": self.budget,
                "tokenizer": self.tokenizer, "exact": self.exact}  # fmt: skip


def _definitions(target: str, definitions: Path | None) -> list[Mapping[str, Any]]:
    from aircli._server_check import server_manifest, server_tools
    from aircore.definitions import ToolDefinitionError

    try:
        tools: list[Mapping[str, Any]] = server_manifest(target, definitions=definitions)["tools"]
        return tools
    except ToolDefinitionError:  # no definitions to apply: the tools as registered
        _, registered = server_tools(target)
        return [tool.describe() for tool in registered.values()]


def token_warnings(
    target: str, *, budget: int = DEFAULT_TOKEN_BUDGET, definitions: Path | None = None
) -> list[TokenWarning]:
    """The tools of the server ``target`` names whose definition is above ``budget`` tokens,
    largest first.

    Raises:
        aircore.definitions.ToolDefinitionError: the target cannot be loaded.
    """
    counter = load_counter()
    over = oversized_definitions(_definitions(target, definitions), budget=budget,
                                 counter=counter)  # fmt: skip
    return [TokenWarning(tool=name, tokens=tokens, budget=budget, tokenizer=counter.name,
                         exact=counter.exact) for name, tokens in over]  # fmt: skip
