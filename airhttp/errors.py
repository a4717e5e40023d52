"""airhttp's exceptions.

Hierarchy::

    AirhttpError
    ├── LimitsError (also a ValueError): a limit or policy option that cannot work
    └── ServerError: the HTTP server cannot serve (its parser is missing, the app's lifespan
        startup failed)
"""

from __future__ import annotations

__all__ = ["AirhttpError", "LimitsError", "ServerError"]


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


class ServerError(AirhttpError):
    """The HTTP server cannot serve.

    Attributes:
        reason: what is wrong, one line (``"httptools is not installed"``…).
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
