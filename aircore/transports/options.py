"""Checking the options a transport is given (its own module: the table imports every
transport, and every transport checks its options)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aircore.errors import DefinitionError
from aircore.types import Transport

__all__ = ["check_options"]


def check_options(transport: Transport, options: Mapping[str, Any]) -> None:
    """Refuse options ``transport`` does not take.

    Raises:
        DefinitionError: one or more unknown option names (all named, with the valid ones).
    """
    unknown = sorted(set(options) - transport.options)
    if unknown:
        raise DefinitionError(
            f"the {transport.name} transport takes no option {', '.join(unknown)}; "
            f"it takes {', '.join(sorted(transport.options))}"
        )
