"""What any request handler may ask the client for, in either protocol era.

:class:`RequestContext` (the base of :class:`~aircore.ToolContext`, and what a prompt handler
``handler(arguments, ctx)`` gets) asks for user input (elicitation), a completion from the
client's model (sampling) and the client's roots; :class:`InputRequest` is one such question.
The protocol layer gives 2026-07-28 requests an :class:`InputChannel` (one ``input_required``
round, or a task waiting for ``tasks/update``) and tool calls a :class:`TaskStarter`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from aircore.errors import (
    INTERNAL_ERROR,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    AirError,
    ElicitationError,
)
from aircore.params import params_to_json_schema
from airmeter.types import CallSuspended

if TYPE_CHECKING:
    from aircore.protocol.session import Peer

__all__ = [
    "Elicit",
    "ElicitResult",
    "InputChannel",
    "InputRequest",
    "InputRequired",
    "RequestContext",
    "TaskStarter",
    "elicit_schema",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ElicitResult:
    """The user's answer to :meth:`ToolContext.elicit`."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None


class InputRequired(CallSuspended):
    """Raised by ``ask`` (``elicit``, ``sample``, ``list_roots``) in the 2026-07-28 era while
    answers are missing: the request answers ``resultType: "input_required"``.

    A ``BaseException`` (airmeter's :class:`~airmeter.types.CallSuspended`), so that middleware
    catching ``Exception`` lets it through and the meter records a suspended call, not a
    failed one.

    Attributes:
        requests: key → ``{"method", "params"}``, the ``inputRequests`` still unanswered.
    """

    def __init__(self, requests: dict[str, dict[str, Any]]) -> None:
        super().__init__(", ".join(requests))
        self.requests = requests


@dataclass(frozen=True, slots=True)
class InputRequest:
    """One thing to ask the client: an ``elicitation/create``, ``sampling/createMessage`` or
    ``roots/list`` request, and the client capability it needs."""

    method: str
    params: Mapping[str, Any]
    capability: str

    @classmethod
    def elicitation(cls, message: str, schema: Mapping[str, Any]) -> InputRequest:
        """A form elicitation; ``schema`` as for :meth:`RequestContext.elicit`."""
        params = {"mode": "form", "message": message, "requestedSchema": elicit_schema(schema)}
        return cls("elicitation/create", params, "elicitation")

    @classmethod
    def sampling(
        cls, messages: str | Sequence[Mapping[str, Any]], *, max_tokens: int = 256, **options: Any
    ) -> InputRequest:
        """A sampling request (a prompt string is one user message)."""
        if isinstance(messages, str):
            msgs: list[Any] = [{"role": "user", "content": {"type": "text", "text": messages}}]
        else:
            msgs = [dict(m) for m in messages]
        return cls(
            "sampling/createMessage",
            {"messages": msgs, "maxTokens": max_tokens, **options},
            "sampling",
        )

    @classmethod
    def roots(cls) -> InputRequest:
        """A ``roots/list`` request."""
        return cls("roots/list", {}, "roots")


class TaskStarter(Protocol):
    """How a tool call becomes a task (set by the protocol layer for 2026-07-28 calls)."""

    available: bool
    """Whether the client declared the tasks extension on this request."""

    refusal: AirError | None
    """Why :meth:`begin` returned ``None`` (the store is full, or the caller holds its share)."""

    def begin(self, *, status_message: str | None) -> InputChannel | None:
        """Create the task (the call answers ``CreateTaskResult``); return the input channel
        the rest of the call uses, or ``None`` when no task can be created right now."""


class Elicit(Protocol):
    """``ctx.elicit``: ``await ctx.elicit(message, schema)`` → :class:`ElicitResult`."""

    async def __call__(
        self, message: str, schema: Mapping[str, Any], *, key: str | None = None
    ) -> ElicitResult: ...


class _ElicitUnavailable:
    """``ctx.elicit`` when the client cannot elicit: falsy, so ``if ctx.elicit:`` takes the
    fallback; called anyway, it raises what the protocol asks (-32021 on 2026-07-28)."""

    __slots__ = ("_ctx",)

    def __init__(self, ctx: RequestContext) -> None:
        self._ctx = ctx

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "<elicit unavailable: the client did not declare elicitation>"

    async def __call__(
        self, message: str, schema: Mapping[str, Any], *, key: str | None = None
    ) -> ElicitResult:
        return await self._ctx._elicit(message, schema, key=key)


class InputChannel(Protocol):
    """Where a request's questions go in the 2026-07-28 era (set by the protocol layer): one
    ``input_required`` round, or a task waiting for ``tasks/update``."""

    async def ask(self, requests: Mapping[str, InputRequest]) -> dict[str, Any]:
        """The answers keyed like ``requests``, or raise :class:`InputRequired`."""


def elicit_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The seed's elicitation schema ``{field: {type, description, required}}`` → JSON Schema."""
    if schema.get("type") == "object" and "properties" in schema:
        return dict(schema)
    fields: dict[str, Any] = {}
    for name, spec in schema.items():
        if isinstance(spec, Mapping) and "required" not in spec and "optional" not in spec:
            spec = {**spec, "optional": True}  # seed: fields are optional unless required
        fields[name] = spec
    return params_to_json_schema(fields)


class RequestContext:
    """What any request handler may ask the client for: input from the user (elicitation), a
    completion from its model (sampling) and its roots.

    Legacy era: each question is a server→client request. 2026-07-28: the request answers
    ``resultType: "input_required"``; the client retries it with the answers and the handler
    runs again, getting them this time (answers of earlier rounds travel in the
    integrity-protected ``requestState``). Inside a task the task waits in ``input_required``
    until ``tasks/update`` brings the answers.

    Attributes:
        protocol_version: the negotiated or per-request protocol version.
        client_capabilities: what the client declared (``initialize`` or the request ``_meta``).
    """

    __slots__ = ("_elicit_count", "_inputs", "_peer", "client_capabilities", "protocol_version")

    def __init__(
        self,
        *,
        protocol_version: str | None = None,
        client_capabilities: Mapping[str, Any] | None = None,
        peer: Peer | None = None,
        inputs: InputChannel | None = None,
    ) -> None:
        self.protocol_version = protocol_version
        self.client_capabilities = client_capabilities
        self._peer = peer
        self._inputs = inputs
        self._elicit_count = 0

    async def ask(self, requests: Mapping[str, InputRequest]) -> dict[str, Any]:
        """Ask the client several things at once (one round in the 2026-07-28 era).

        Args:
            requests: your key → :class:`InputRequest`; keys must stay the same from one run of
                the handler to the next, since answers come back under them.

        Returns:
            The client's answers (``ElicitResult``, ``CreateMessageResult``, ``ListRootsResult``
            as JSON objects) keyed like ``requests``.

        Raises:
            ElicitationError: the client did not declare a capability a request needs (-32021
                in the 2026-07-28 era), or the transport cannot carry requests.
        """
        modern = self._inputs is not None or _is_modern(self.protocol_version)
        caps = self.client_capabilities or {}
        for req in requests.values():
            if req.capability not in caps:
                raise ElicitationError(
                    MISSING_REQUIRED_CLIENT_CAPABILITY if modern else INTERNAL_ERROR,
                    f"the client does not support {req.capability}",
                    data={"requiredCapabilities": {req.capability: {}}} if modern else None,
                )
        if self._inputs is not None:
            return await self._inputs.ask(requests)
        if modern:  # in-process without a channel: nothing answered yet
            raise InputRequired(
                {k: {"method": r.method, "params": dict(r.params)} for k, r in requests.items()}
            )
        if self._peer is None:
            methods = ", ".join(sorted({r.method for r in requests.values()}))
            raise ElicitationError(INTERNAL_ERROR, f"{methods} needs a connected client")
        peer = self._peer
        answers = await asyncio.gather(
            *(peer.request(r.method, dict(r.params)) for r in requests.values())
        )
        return dict(zip(requests, answers, strict=True))

    @property
    def can_elicit(self) -> bool:
        """Whether the client declared elicitation and this request can reach it."""
        caps = self.client_capabilities
        if not caps or "elicitation" not in caps:
            return False
        if self._inputs is not None or _is_modern(self.protocol_version):
            return True
        return self._peer is not None

    @property
    def elicit(self) -> Elicit:
        """``await ctx.elicit(message, schema, key=None)`` asks the user; falsy when the client
        cannot.

        So the seed's idiom works: ``if ctx.elicit: answer = await ctx.elicit(…) else: …``.
        Called although the client cannot elicit, it raises :class:`ElicitationError`
        (-32021 on 2026-07-28, an ``isError`` result in the legacy era). See :meth:`_elicit`.
        """
        return self._elicit if self.can_elicit else _ElicitUnavailable(self)

    async def _elicit(
        self, message: str, schema: Mapping[str, Any], *, key: str | None = None
    ) -> ElicitResult:
        """Ask the user for input through the client (``elicitation/create``).

        Args:
            message: what to ask.
            schema: ``{field: {"type", "description", "required"}}`` or a flat object schema.
            key: the ``inputRequests`` key (default: ``input-<n>`` by call order).

        Returns:
            ``ElicitResult(action, content)``.

        Raises:
            ElicitationError: the client did not declare the elicitation capability, the
                transport cannot carry the request, or the answer is malformed.
        """
        request = InputRequest.elicitation(message, schema)
        if (
            not (_is_modern(self.protocol_version) or self._inputs is not None)
            and (self.protocol_version or "") < "2025-11-25"
        ):
            params = {k: v for k, v in request.params.items() if k != "mode"}
            request = InputRequest(request.method, params, request.capability)
        return _elicit_result(await self._ask_one(request, key))

    async def sample(
        self,
        messages: str | Sequence[Mapping[str, Any]],
        *,
        max_tokens: int = 256,
        key: str | None = None,
        **options: Any,
    ) -> dict[str, Any]:
        """Ask the client's model for a completion (``sampling/createMessage``).

        Args:
            messages: a prompt string (one user message) or MCP sampling messages.
            max_tokens: ``maxTokens``.
            key: the ``inputRequests`` key (default: ``input-<n>`` by call order).
            **options: other request fields (``systemPrompt``, ``temperature`` …).

        Returns:
            The client's ``CreateMessageResult`` (``role``, ``content``, ``model`` …).

        Raises:
            ElicitationError: the client did not declare the sampling capability.
        """
        request = InputRequest.sampling(messages, max_tokens=max_tokens, **options)
        answer = await self._ask_one(request, key)
        if not isinstance(answer, Mapping):
            raise ElicitationError(INTERNAL_ERROR, f"invalid sampling answer: {answer!r}")
        return dict(answer)

    async def list_roots(self, *, key: str | None = None) -> list[dict[str, Any]]:
        """The client's roots (``roots/list``): ``[{"uri", "name"?}, …]``.

        Raises:
            ElicitationError: the client did not declare the roots capability, or the answer
                is malformed.
        """
        answer = await self._ask_one(InputRequest.roots(), key)
        roots = answer.get("roots") if isinstance(answer, Mapping) else None
        if not isinstance(roots, list) or not all(
            isinstance(r, Mapping) and isinstance(r.get("uri"), str) for r in roots
        ):
            raise ElicitationError(INTERNAL_ERROR, f"invalid roots answer: {answer!r}")
        return [dict(r) for r in roots]

    async def _ask_one(self, request: InputRequest, key: str | None) -> Any:
        if key is None:
            key = f"input-{self._elicit_count}"
            self._elicit_count += 1
        return (await self.ask({key: request}))[key]


def _is_modern(version: str | None) -> bool:
    # imported here: aircore.protocol imports this module
    from aircore.protocol.modern import MODERN_VERSIONS

    return version in MODERN_VERSIONS


def _elicit_result(answer: Any) -> ElicitResult:
    if not isinstance(answer, Mapping) or answer.get("action") not in (
        "accept",
        "decline",
        "cancel",
    ):
        raise ElicitationError(INTERNAL_ERROR, f"invalid elicitation answer: {answer!r}")
    content = answer.get("content")
    return ElicitResult(action=answer["action"], content=dict(content) if content else None)
