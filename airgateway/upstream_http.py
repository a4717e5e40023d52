"""A Streamable HTTP upstream (either era) over one keep-alive connection pool per replica.

Connections are reused across calls (:mod:`airgateway._http11`); the handshake runs once per
replica (and again when a legacy session expires). Answers may be JSON or an SSE stream:
messages before the answer (progress, logs, server→client requests) go to the call's
``on_message``.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any

import orjson

from aircore.protocol.modern import NAME_BEARING
from airgateway import eras
from airgateway._http11 import (
    AnswerTooLargeError,
    ConnectFailedError,
    ConnectionLostError,
    Http11Pool,
    Response,
)
from airgateway._sse import events
from airgateway.errors import (
    GatewayError,
    UpstreamError,
    UpstreamTimeoutError,
    UpstreamUnavailableError,
)
from airgateway.types import JSONDict, MessageHandler
from airgateway.upstream_auth import ClientCredentials

__all__ = ["DEFAULT_POOL_SIZE", "HttpUpstream", "encode_header"]

logger = logging.getLogger(__name__)

DEFAULT_POOL_SIZE = 128
"""Idle keep-alive connections kept per replica at most."""
_NOT_RESENT = frozenset({"tools/call", "tasks/update"})
"""Methods that may change something upstream: a pooled connection closed without an answer
after they were written is not sent again (the router decides, by the tool's hints)."""
_MAX_NAME_LINES = 4096
"""Tool names whose ``Mcp-Name`` line is kept made (the cache starts over past it)."""
_SESSION = "mcp-session-id"
_ACCEPT = "application/json, text/event-stream"


def encode_header(value: str) -> str:
    """A header-safe form of ``value``: itself when printable ASCII, else ``=?base64?…?=``."""
    if value.isascii() and value.isprintable() and value == value.strip():
        return value
    return f"=?base64?{base64.b64encode(value.encode()).decode()}?="


class HttpUpstream:
    """One replica reached over Streamable HTTP (see the module docstring).

    Args:
        label: the replica's label.
        url: the MCP endpoint.
        headers: extra headers on every request (secrets already resolved).
        pool_size: idle keep-alive connections kept at most.
        handshake_timeout: seconds for the handshake.
        credentials: the gateway's own OAuth token for this upstream (``Authorization`` on
            every request; on a 401 a new token is fetched and the request sent once more).
    """

    def __init__(
        self,
        label: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        pool_size: int = DEFAULT_POOL_SIZE,
        handshake_timeout: float = 10.0,
        credentials: ClientCredentials | None = None,
    ) -> None:
        self.label = label
        self.credentials = credentials
        self.url = url
        self.era: str | None = None
        fixed = {"Content-Type": "application/json", "Accept": _ACCEPT, **(headers or {})}
        self._pool = Http11Pool(url, size=pool_size, headers=fixed)
        self._timeout = handshake_timeout
        self._sid: str | None = None
        self._version: str | None = None
        self._ids = itertools.count(1)
        self._lock = asyncio.Lock()
        self._background: set[asyncio.Task[None]] = set()
        self._closed = False
        self._forward_lines = (f"MCP-Protocol-Version: {eras.MODERN_VERSION}\r\n"
                               "Mcp-Method: tools/call\r\n").encode()  # fmt: skip
        self._name_lines: dict[str, bytes] = {}
        """``Mcp-Name`` header lines of the tools forwarded, made once per name."""
        self._auth_line = ("", b"")
        """The last ``Authorization`` value and its header line (made once per token)."""

    async def connect(self) -> None:
        """Run the handshake (again, if the replica came back).

        Raises:
            UpstreamUnavailableError: it cannot be reached, or :meth:`close` was called.
        """
        if self._closed:
            raise UpstreamUnavailableError(f"{self.label}: the connection was closed",
                                           replica=self.label, sent=False)  # fmt: skip
        async with self._lock:
            self._sid = None
            self._version = None
            self.era = None
            self.era = await eras.handshake(self._handshake_send, self.notify)
            if self.era == eras.LEGACY:
                self._version = eras.initialize_params()["protocolVersion"]

    async def _handshake_send(self, method: str, params: JSONDict) -> JSONDict:
        return await self._exchange(method, params, self._timeout, None)

    def _request_headers(self, method: str, params: JSONDict) -> dict[str, str]:
        headers: dict[str, str] = {}
        if self.era == eras.MODERN or method == "server/discover":
            headers["MCP-Protocol-Version"] = eras.MODERN_VERSION
            headers["Mcp-Method"] = method
            key = NAME_BEARING.get(method)
            value = params.get(key) if key is not None else None
            if isinstance(value, str):
                headers["Mcp-Name"] = encode_header(value)
        else:
            if self._sid is not None:
                headers["Mcp-Session-Id"] = self._sid
            if self._version is not None:
                headers["MCP-Protocol-Version"] = self._version
        return headers

    async def request(
        self,
        method: str,
        params: JSONDict,
        *,
        timeout: float,
        on_message: MessageHandler | None = None,
    ) -> JSONDict:
        """Send one request (see ``UpstreamClient.request``)."""
        if self.era is None:
            raise UpstreamUnavailableError(f"{self.label} is not connected", replica=self.label)
        params = eras.for_era(params, self.era)
        try:
            return await self._exchange(method, params, timeout, on_message)
        except _SessionExpiredError:
            await self.connect()  # a legacy session the upstream forgot: open a new one
            return await self._exchange(method, params, timeout, on_message)

    async def _exchange(
        self, method: str, params: JSONDict, timeout: float, on_message: MessageHandler | None
    ) -> JSONDict:
        if self._closed:
            raise UpstreamUnavailableError(f"{self.label} is closed", replica=self.label)
        msg_id = next(self._ids)
        body = orjson.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        headers = self._request_headers(method, params)
        try:
            async with asyncio.timeout(timeout):
                resp = await self._post(body, headers, resend=method not in _NOT_RESENT)
                if method == "initialize" and _SESSION in resp.headers:
                    self._sid = resp.headers[_SESSION]
                if resp.body is None:
                    return await self._read_stream(resp, msg_id, on_message)
                return self._answer(resp.status, resp.body, msg_id)
        except TimeoutError:
            if self.era == eras.LEGACY:
                await self.notify("notifications/cancelled", {"requestId": msg_id,
                                                              "reason": "timeout"})  # fmt: skip
            raise UpstreamTimeoutError(
                f"{self.label} did not answer {method} within {timeout:g} s", replica=self.label
            ) from None
        except asyncio.CancelledError:
            if self.era == eras.LEGACY:  # 2026-07-28: closing the POST is the cancellation
                await asyncio.shield(self.notify("notifications/cancelled", {"requestId": msg_id}))
            raise
        except (ConnectFailedError, ConnectionLostError) as exc:
            raise self._unavailable(exc) from exc

    async def forward(
        self, body: bytes, name: str, *, msg_id: object, timeout: float, resend: bool = False
    ) -> tuple[JSONDict, bytes]:
        """Send a 2026-07-28 ``tools/call`` whose body needs no change, as it is.

        The client's own id travels (each POST is its own exchange, so ids cannot collide):
        ``msg_id`` is the id ``body`` carries, and the answer is the response with that id.
        ``resend``: the tool may run twice (read-only or idempotent), so a pooled connection
        that closes without an answer may be replaced and the call sent again on it.

        Returns:
            The JSON-RPC response (parsed, to inspect) and its bytes (to pass on unchanged).

        Raises:
            UpstreamError: the upstream answered with a JSON-RPC error.
            UpstreamUnavailableError: no answer, or not a 2026-07-28 replica any more.
            UpstreamTimeoutError: no answer within ``timeout`` seconds.
        """
        if self.era != eras.MODERN or self._closed:
            raise UpstreamUnavailableError(
                f"{self.label} is not connected", replica=self.label, sent=False
            )
        lines = self._name_lines.get(name)
        if lines is None:
            if len(self._name_lines) >= _MAX_NAME_LINES:
                self._name_lines.clear()
            lines = self._forward_lines + f"Mcp-Name: {encode_header(name)}\r\n".encode()
            self._name_lines[name] = lines
        # the timeout as asyncio.timeout keeps it (the task cancelled when it passes, that
        # cancellation turned into the timeout error), with one timer and no context manager
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        cancelling = task.cancelling()
        fired: list[bool] = []
        timer = loop.call_at(loop.time() + timeout, _expire, task, fired)
        expired = False
        try:
            try:
                if self.credentials is None:
                    resp = await self._pool.request("POST", body, None, resend=resend, lines=lines)
                else:
                    resp = await self._post(body, None, resend=resend, lines=lines)
                if resp.body is None:  # an SSE answer: the response is one of its events
                    async for _name, data in _events(resp):
                        raw = data.encode()
                        message = _parse(raw)
                        # a response to this request (another request's result: skipped)
                        if (
                            message is not None
                            and "method" not in message
                            and _answers(message, msg_id)
                        ):
                            return self._checked(200, message, raw, msg_id)
                    raise UpstreamUnavailableError(
                        f"{self.label} closed the stream before answering", replica=self.label
                    )
                return self._checked(resp.status, _parse(resp.body), resp.body, msg_id)
            finally:
                timer.cancel()
                if fired:
                    expired = task.uncancel() <= cancelling
        except asyncio.CancelledError:
            if not expired:
                raise
            raise self._timed_out(timeout) from None
        except TimeoutError:
            raise self._timed_out(timeout) from None
        except (ConnectFailedError, ConnectionLostError) as exc:
            raise self._unavailable(exc) from exc

    def _timed_out(self, timeout: float) -> UpstreamTimeoutError:
        return UpstreamTimeoutError(
            f"{self.label} did not answer tools/call within {timeout:g} s", replica=self.label
        )

    async def _post(
        self, body: bytes, headers: dict[str, str] | None, *, resend: bool, lines: bytes = b""
    ) -> Response:
        """POST with the gateway's own token when it has credentials; a 401 (the token expired
        or was revoked upstream: nothing ran) gets one more try with a new token. ``lines``:
        header lines encoded already (:meth:`Http11Pool.request`)."""
        if self.credentials is None:
            return await self._pool.request("POST", body, headers, resend=resend, lines=lines)
        for _attempt in (1, 2):
            header = self.credentials.current() or await self.credentials.header()
            if header != self._auth_line[0]:
                self._auth_line = (header, f"Authorization: {header}\r\n".encode("latin-1"))
            resp = await self._pool.request(
                "POST", body, headers, resend=resend, lines=lines + self._auth_line[1]
            )
            if resp.status != 401 or resp.body is None:
                return resp
            self.credentials.refused(header)
        # refused twice, a new token included: the gateway's credentials do not fit this
        # upstream; nothing ran (sent=False: another replica may take it)
        refusal = _parse(resp.body or b"")
        error = refusal.get("error") if refusal is not None else None
        why = error.get("message") if isinstance(error, dict) else None
        raise UpstreamUnavailableError(
            f"{self.label} refused the gateway's own token (HTTP 401): {why or 'no reason given'}",
            replica=self.label,
            sent=False,
        )

    def _unavailable(
        self, exc: ConnectFailedError | ConnectionLostError
    ) -> UpstreamUnavailableError:
        """The gateway's error for a connection that failed (``sent=False``: the request never
        left, so any replica may take it) or was lost after the request was written (it may
        have run)."""
        if isinstance(exc, ConnectFailedError):
            return UpstreamUnavailableError(f"{self.label}: {exc}", replica=self.label, sent=False)
        if isinstance(exc, AnswerTooLargeError):
            return UpstreamUnavailableError(
                f"{self.label}: answer refused: {exc} (the connection was closed)",
                replica=self.label,
            )
        return UpstreamUnavailableError(
            f"{self.label}: connection lost after the request was sent: {exc}", replica=self.label
        )

    def _checked(
        self, status: int, message: JSONDict | None, raw: bytes, msg_id: object
    ) -> tuple[JSONDict, bytes]:
        if message is not None and not _answers(message, msg_id):
            raise self._answered_another(message, msg_id)
        if message is not None and isinstance(message.get("error"), dict):
            raise UpstreamError(message["error"])
        if status != 200 or message is None or not isinstance(message.get("result"), dict):
            raise UpstreamUnavailableError(_not_an_answer(self.label, status, message),
                                           replica=self.label)  # fmt: skip
        return message, raw

    def _answered_another(self, message: JSONDict, msg_id: object) -> UpstreamUnavailableError:
        """A result for another request where this one's answer belongs: not an answer (a
        buggy upstream; passing it on would answer this call with another call's result)."""
        return UpstreamUnavailableError(
            f"{self.label} answered request id {_shown(message.get('id'))} where "
            f"{_shown(msg_id)}'s answer belongs (not an answer to this call)",
            replica=self.label,
        )

    def _answer(self, status: int, body: bytes, msg_id: object) -> JSONDict:
        try:
            message = orjson.loads(body) if body else None
        except orjson.JSONDecodeError:
            message = None
        if isinstance(message, dict) and not _answers(message, msg_id):
            raise self._answered_another(message, msg_id)
        if status == 404 and self.era == eras.LEGACY and self._sid is not None:
            raise _SessionExpiredError(self.label)
        if isinstance(message, dict) and isinstance(message.get("error"), dict):
            raise UpstreamError(message["error"])
        if status >= 300 or not isinstance(message, dict):
            raise UpstreamUnavailableError(_not_an_answer(self.label, status, message),
                                           replica=self.label)  # fmt: skip
        result = message.get("result")
        return result if isinstance(result, dict) else {}

    async def _read_stream(
        self, resp: Response, msg_id: int, on_message: MessageHandler | None
    ) -> JSONDict:
        async for _name, data in _events(resp):
            try:
                message = orjson.loads(data)
            except orjson.JSONDecodeError:
                continue
            if not isinstance(message, dict):
                continue
            if "method" not in message:
                if _same_id(message.get("id"), msg_id):
                    return self._answer(200, data.encode(), msg_id)
                continue
            if on_message is None:
                continue
            if "id" in message:
                answer = await on_message(message)
                if answer is not None:
                    reply = {"jsonrpc": "2.0", "id": message["id"], **answer}
                    task = asyncio.ensure_future(self._send_raw(reply))
                    self._background.add(task)
                    task.add_done_callback(self._background.discard)
            else:
                await on_message(message)
        raise UpstreamUnavailableError(
            f"{self.label} closed the stream before answering", replica=self.label
        )

    async def _send_raw(self, message: JSONDict) -> None:
        if self._closed:
            return
        headers = self._request_headers("", {})
        try:
            async with asyncio.timeout(self._timeout):
                await self._post(orjson.dumps(message), headers, resend=True)
        except Exception as exc:  # best effort: the call fails on its own if this mattered
            logger.debug("%s: could not send %s: %s", self.label, message.get("method"), exc)

    async def notify(self, method: str, params: JSONDict) -> None:
        """Send one notification (best effort)."""
        await self._send_raw({"jsonrpc": "2.0", "method": method, "params": params})

    async def close(self) -> None:
        """End the legacy session (DELETE) and close the pool, for good (:meth:`connect`
        refuses afterwards). Idempotent."""
        if self._closed:
            return
        if self._sid is not None:
            try:
                async with asyncio.timeout(2):
                    headers = {"Mcp-Session-Id": self._sid}
                    if self.credentials is not None:
                        headers["Authorization"] = await self.credentials.header()
                    await self._pool.request("DELETE", b"", headers)
            except Exception:
                logger.debug("%s: DELETE of the session failed", self.label)
        self._closed = True
        await self._pool.close()


def _expire(task: asyncio.Task[Any], fired: list[bool]) -> None:
    """A forward's timer: its time is up (as ``asyncio.timeout`` does, the task is cancelled)."""
    fired.append(True)
    task.cancel()


def _parse(body: bytes) -> JSONDict | None:
    try:
        message = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    return message if isinstance(message, dict) else None


class _SessionExpiredError(GatewayError):
    def __init__(self, label: str) -> None:
        super().__init__(f"{label}: the session expired")


async def _events(resp: Response) -> AsyncIterator[tuple[str, str]]:
    """The events of a streamed answer; an event over the size limit is an answer refused
    (its connection is closed), as a line over the limit is."""
    try:
        async for item in events(resp.lines()):
            yield item
    except ValueError as exc:  # (events' limit)
        raise AnswerTooLargeError(str(exc)) from exc


def _answers(message: JSONDict, msg_id: object) -> bool:
    """Whether the response ``message`` may answer the request ``msg_id``: a result with its
    id. An error is taken whatever its id, as before (an upstream that could not read the
    request answers with a null id; the SDK's HTTP errors carry ``"server-error"``)."""
    return "result" not in message or _same_id(message.get("id"), msg_id)


def _same_id(answered: object, msg_id: object) -> bool:
    """JSON-RPC ids equal as JSON (``True == 1 == 1.0`` in Python; the bytes pass on as they
    are, so the type must match too)."""
    return type(answered) is type(msg_id) and answered == msg_id


def _shown(msg_id: object) -> str:
    """An id as an error message shows it: its JSON text, cut at 40 characters."""
    plain = msg_id is None or isinstance(msg_id, str | int | float)
    text = orjson.dumps(msg_id).decode() if plain else "?"
    return text if len(text) <= 40 else text[:40] + "…"


def _not_an_answer(label: str, status: int, message: object) -> str:
    """Why an HTTP answer is no JSON-RPC response: its status, or (a 2xx) its body."""
    if not 200 <= status < 300:
        return f"{label} answered HTTP {status}"
    what = "a body that is not JSON-RPC" if isinstance(message, dict) else "no JSON body"
    return f"{label} answered HTTP {status} with {what} (is this an MCP endpoint?)"
