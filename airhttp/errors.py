"""airhttp's exceptions.

Hierarchy::

    AirhttpError
    └── LimitsError (also a ValueError): a limit or policy option that cannot work
"""

from __future__ import annotations

__all__ = ["AirhttpError", "LimitsError"]


class AirhttpError(Exception):
    """Base of every airhttp error."""


class LimitsError(AirhttpError, ValueError):
    """A limit or an access-policy option is invalid.

    Attributes:
        option: the option's name (``"max_body"``, ``"token"``…).
        value: the value given (a token is never echoed).
    """

    def __init__(self, option: str, value: object, reason: str) -> None:
        shown = "<redacted>" if option == "token" else repr(value)
        super().__init__(f"{option}={shown}: {reason}")
        self.option = option
        self.value = None if option == "token" else value
