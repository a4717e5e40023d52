"""The vocabulary of airmeter: what a meter reads from a call, and what its sinks agree on.

Servers satisfy these structurally; airmeter never imports them. aircore's ``ToolContext`` is a
:class:`CallInfo` (checked by mypy and by a test), and aircore's ``InputRequired`` is a
:class:`CallSuspended`.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from airmeter.record import CallRecord
    from airstore.types import Store

__all__ = ["CallInfo", "CallSuspended", "CodedError", "PersistingSink", "Recorder", "Sink"]


@runtime_checkable
class CallInfo(Protocol):
    """What the meter reads from one tool call; every member is read-only for the meter.

    ``layer`` is the tool's explicit L1-L7 hint (``None``: classify by name and schema);
    ``input_schema`` is the tool's JSON Schema for its arguments (``None`` when unknown: the
    arguments themselves are looked at); ``usage`` is where a handler may put ``tokens_in``,
    ``tokens_out`` and ``cost``; ``traceparent``/``tracestate`` are the caller's trace context
    (:func:`airmeter.trace_context.trace_context_of` reads them from ``params._meta``).
    """

    @property
    def tool_name(self) -> str: ...

    @property
    def arguments(self) -> Mapping[str, Any] | None: ...

    @property
    def request_id(self) -> str | None: ...

    @property
    def call_id(self) -> str | None: ...

    @property
    def session_id(self) -> str | None: ...

    @property
    def protocol_version(self) -> str | None: ...

    @property
    def transport(self) -> str | None: ...

    @property
    def client_name(self) -> str | None: ...

    @property
    def server_name(self) -> str | None: ...

    @property
    def layer(self) -> int | None: ...

    @property
    def annotations(self) -> Mapping[str, Any] | None: ...

    @property
    def tool_meta(self) -> Mapping[str, Any] | None: ...

    @property
    def input_schema(self) -> Mapping[str, Any] | None: ...

    @property
    def usage(self) -> MutableMapping[str, Any]: ...

    @property
    def traceparent(self) -> str | None:
        """The W3C ``traceparent`` the request carried (``params._meta``), else ``None``: the
        parent of the call's span (see :mod:`airmeter.trace_context`)."""

    @property
    def tracestate(self) -> str | None:
        """The W3C ``tracestate`` that came with :attr:`traceparent`, else ``None``."""


class CallSuspended(BaseException):
    """Raised through the meter when a call is suspended rather than finished.

    The 2026-07-28 era answers a tool that needs the user's input with ``input_required``; the
    client retries the call with the answer. The meter records such a call as successful (the
    server did what it should) and re-raises. A ``BaseException``, so that middleware catching
    ``Exception`` lets it through.
    """


@runtime_checkable
class CodedError(Protocol):
    """An exception that carries the JSON-RPC error code the client gets (aircore's
    ``AirError``, the SDK's ``MCPError`` once translated)."""

    @property
    def code(self) -> int: ...


@runtime_checkable
class Sink(Protocol):
    """Receives batches of records from the meter's background task.

    A sink must not raise into the meter for transient failures it can retry; it logs and
    counts them. ``close`` delivers whatever it still holds. The meter bounds every wait on a
    sink with a timeout, so a sink that never returns cannot block the meter.
    """

    async def write(self, records: Sequence[CallRecord]) -> None:
        """Deliver one batch."""

    async def close(self) -> None:
        """Deliver what is pending and release resources. Idempotent."""


@runtime_checkable
class PersistingSink(Sink, Protocol):
    """A sink that keeps rollups in a store between deliveries and may hold back records it
    could not persist yet (:class:`~airmeter.StoreSink`). The meter persists it on its own
    interval and before a snapshot, reads its store, and counts what it holds back or lost
    in its health."""

    @property
    def store(self) -> Store:
        """The store it writes to (snapshots read it)."""
        ...

    @property
    def backlog(self) -> int:
        """Records taken but not yet in the store (waiting for a retry)."""
        ...

    @property
    def unpersisted(self) -> int:
        """Records lost for good: the store refused or lost them."""
        ...

    def persist_due(self) -> bool:
        """Whether its persist interval has passed with rollups waiting."""
        ...

    async def persist(self) -> None:
        """Write the rollups (and the backlog) it holds now."""


@runtime_checkable
class Recorder(Protocol):
    """Anything that takes a finished call: the :class:`~airmeter.Meter`, or a test double.

    ``record`` is synchronous and O(1): it never blocks or awaits on the call path.
    """

    def record(self, record: CallRecord) -> None:
        """Accept one record."""
