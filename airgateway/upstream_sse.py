"""A legacy HTTP+SSE upstream (2024-11-05): one event stream per replica, calls by id.

``GET`` the SSE URL; its first ``endpoint`` event names where to ``POST`` messages; answers
come back on the stream. When the stream ends, calls in flight fail and the next
:meth:`SseUpstream.connect` (the health checker's) opens a new one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

import orjson

from airgateway import eras
from airgateway._mux import Mux
from airgateway._sse import events, lines
from airgateway.errors import GatewayError, UpstreamUnavailableError
from airgateway.types import JSONDict, MessageHandler, NotificationListener

if TYPE_CHECKING:
    import aiohttp

__all__ = ["SseUpstream"]

_PIECE = 256 * 1024
"""Bytes of the event stream read at a time."""

logger = logging.getLogger(__name__)


class SseUpstream:
    """One replica reached over the legacy SSE transport (see the module docstring).

    Args:
        label: the replica's label.
        url: the SSE endpoint (``GET``).
        headers: extra headers on every request.
        listener: told about notifications that belong to no call.
        handshake_timeout: seconds for the stream's ``endpoint`` event and ``initialize``.
    """

    def __init__(
        self,
        label: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        listener: NotificationListener | None = None,
        handshake_timeout: float = 10.0,
    ) -> None:
        self.label = label
        self.url = url
        self.era: str | None = None
        self._headers = dict(headers or {})
        self._timeout = handshake_timeout
        self._mux = Mux(label, self._write, listener)
        self._session: aiohttp.ClientSession | None = None
        self._endpoint: str | None = None
        self._reader: asyncio.Task[None] | None = None
        self._aiohttp: Any = None
        self._closed = False
        self._opening = asyncio.Lock()
        """One :meth:`connect` at a time: a second one (a health round while a call reconnects)
        waits for the first's stream instead of dropping it half-open."""

    async def connect(self) -> None:
        """Open the stream (unless it is open), then ``initialize``.

        Raises:
            UpstreamUnavailableError: it cannot be opened, or :meth:`close` was called.
        """
        self._refuse_closed()
        if self._open():
            return
        async with self._opening:
            self._refuse_closed()
            if self._open():  # the connect this one waited for opened it
                return
            await self._connect()

    def _open(self) -> bool:
        return self._reader is not None and not self._reader.done() and self.era is not None

    async def _connect(self) -> None:
        import aiohttp

        self._aiohttp = aiohttp
        await self._drop()
        self._session = aiohttp.ClientSession(skip_auto_headers=("User-Agent",))
        endpoint: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._reader = asyncio.ensure_future(self._read(self._session, endpoint))
        try:
            async with asyncio.timeout(self._timeout):
                self._endpoint = await endpoint
            await self._mux.call(
                "initialize",
                eras.initialize_params("2024-11-05"),
                timeout=self._timeout,
                on_message=None,
            )
            await self.notify("notifications/initialized", {})
        except (GatewayError, TimeoutError, aiohttp.ClientError) as exc:
            await self._drop()
            raise UpstreamUnavailableError(f"{self.label}: cannot open the SSE stream: {exc}",
                                           replica=self.label, sent=False) from exc  # fmt: skip
        if self._closed:  # closed while it was opening: it stays closed
            await self._drop()
            self._refuse_closed()
        self.era = eras.LEGACY

    def _refuse_closed(self) -> None:
        if self._closed:
            raise UpstreamUnavailableError(f"{self.label}: the connection was closed",
                                           replica=self.label, sent=False)  # fmt: skip

    async def _read(self, session: aiohttp.ClientSession, endpoint: asyncio.Future[str]) -> None:
        aiohttp = self._aiohttp
        headers = {**self._headers, "accept": "text/event-stream"}
        why = ""
        try:
            async with session.get(self.url, headers=headers, timeout=aiohttp.ClientTimeout(
                total=None, sock_read=None)) as resp:  # fmt: skip
                if resp.status != 200:
                    raise UpstreamUnavailableError(
                        f"{self.label}: GET answered {resp.status}", replica=self.label
                    )
                # pieces split by our bounded splitter, not aiohttp's lines: its own line
                # limit ended the stream, and every call on it, at an answer of 1 MB
                async for name, data in events(lines(resp.content.iter_chunked(_PIECE))):
                    if name == "endpoint":
                        if not endpoint.done():
                            endpoint.set_result(urljoin(self.url, data.strip()))
                        continue
                    try:
                        message = orjson.loads(data)
                    except orjson.JSONDecodeError:
                        continue
                    await self._mux.deliver(message)
        except Exception as exc:
            if not endpoint.done():
                endpoint.set_exception(exc)
            logger.debug("%s: stream ended: %s", self.label, exc)
            if isinstance(exc, ValueError):  # a limit: say which
                why = f": {exc}"
        finally:
            self.era = None
            self._mux.fail_all(f"{self.label}: the SSE stream closed{why}")
            if not endpoint.done():
                endpoint.set_exception(ConnectionError("the stream closed before an endpoint"))

    async def _write(self, message: JSONDict) -> None:
        session, endpoint = self._session, self._endpoint
        if session is None or endpoint is None:
            raise UpstreamUnavailableError(f"{self.label} is not connected", replica=self.label)
        headers = {**self._headers, "content-type": "application/json"}
        try:
            async with session.post(endpoint, data=orjson.dumps(message), headers=headers) as r:
                await r.read()
                if r.status >= 300:
                    raise UpstreamUnavailableError(
                        f"{self.label}: POST answered {r.status}", replica=self.label
                    )
        except self._aiohttp.ClientError as exc:
            raise UpstreamUnavailableError(f"{self.label}: {exc}", replica=self.label) from exc

    async def request(
        self,
        method: str,
        params: JSONDict,
        *,
        timeout: float,
        on_message: MessageHandler | None = None,
    ) -> JSONDict:
        """Send one request; the answer comes on the stream (see ``UpstreamClient.request``)."""
        if self.era is None:
            raise UpstreamUnavailableError(
                f"{self.label} is not connected", replica=self.label, sent=False
            )
        return await self._mux.call(
            method, eras.for_era(params, eras.LEGACY), timeout=timeout, on_message=on_message
        )

    async def notify(self, method: str, params: JSONDict) -> None:
        """Send one notification (best effort)."""
        with contextlib.suppress(UpstreamUnavailableError):
            await self._write({"jsonrpc": "2.0", "method": method, "params": params})

    async def _drop(self) -> None:
        reader, self._reader = self._reader, None
        if reader is not None:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
        session, self._session = self._session, None
        if session is not None:
            await session.close()
        self._endpoint = None
        self.era = None

    async def close(self) -> None:
        """Close the stream, for good (:meth:`connect` refuses afterwards). Idempotent."""
        self._closed = True
        await self._drop()
