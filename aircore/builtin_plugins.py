"""Built-in plugins: ``timeout_plugin``, ``retry_plugin``, ``cache_plugin``."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeVar

import orjson

from aircore.errors import INVALID_PARAMS, AirError, DefinitionError, ToolTimeoutError
from aircore.plugins import Plugin
from aircore.results import to_jsonable

__all__ = ["cache_plugin", "retry_plugin", "timeout_plugin"]

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 30.0
DEFAULT_RETRIES = 2
DEFAULT_RETRY_DELAY = 0.1
DEFAULT_CACHE_TTL = 60.0
CACHE_NAMESPACE = "air.cache"

_Next = Callable[[Any], Awaitable[Any]]
_T = TypeVar("_T")


async def run_with_timeout(seconds: float, call: Awaitable[_T], message: str) -> _T:
    """Await ``call``, cancelled after ``seconds``; it then fails with
    ``ToolTimeoutError(message)``."""
    try:
        async with asyncio.timeout(seconds):
            return await call
    except TimeoutError:
        raise ToolTimeoutError(message) from None


TIMEOUT_MODES = ("fail", "warn")
TIMEOUT_PLUGIN_NAME = "air-timeout"


def timeout_plugin(seconds: float = DEFAULT_TIMEOUT, *, mode: str = "fail") -> Plugin:
    """Watch a call that runs longer than ``seconds``.

    Args:
        seconds: the limit, > 0.
        mode: ``"fail"`` (the default) cancels the call, which fails with ``ToolTimeoutError``;
            ``"warn"`` logs a warning once the limit is passed and lets the call finish, as the
            TypeScript original's timeout plugin did.

    Raises:
        DefinitionError: ``seconds`` is not positive, or ``mode`` is neither.
    """
    if not isinstance(seconds, (int, float)) or seconds <= 0:
        raise DefinitionError(f"timeout_plugin: seconds must be > 0, got {seconds!r}")
    if mode not in TIMEOUT_MODES:
        raise DefinitionError(f"timeout_plugin: mode must be 'fail' or 'warn', got {mode!r}")

    async def timeout(ctx: Any, call_next: _Next) -> Any:
        message = f"tool {ctx.tool_name!r} timed out after {seconds:g}s"
        return await run_with_timeout(seconds, call_next(ctx), message)

    async def warn(ctx: Any, call_next: _Next) -> Any:
        handle = asyncio.get_running_loop().call_later(
            seconds,
            logger.warning,
            "tool %r still running after %gs (timeout_plugin mode='warn': it is not cancelled)",
            ctx.tool_name,
            seconds,
        )
        try:
            return await call_next(ctx)
        finally:
            handle.cancel()

    return Plugin(
        meta={"name": TIMEOUT_PLUGIN_NAME},
        middleware=(timeout if mode == "fail" else warn,),
        options={"seconds": seconds, "mode": mode},
    )


def cancelling_timeout_ms(plugins: Iterable[Plugin]) -> int | None:
    """The timeout, in milliseconds, after which a ``timeout_plugin`` among ``plugins``
    cancels every call (the smallest when several do); ``None`` when none cancels (a
    ``mode="warn"`` one only logs)."""
    limits = [
        round(float(p.options["seconds"]) * 1000)
        for p in plugins
        if p.meta.get("name") == TIMEOUT_PLUGIN_NAME and p.options.get("mode", "fail") == "fail"
    ]
    return min(limits) if limits else None


def retry_plugin(
    max_retries: int = DEFAULT_RETRIES,
    *,
    delay: float = DEFAULT_RETRY_DELAY,
    backoff: float = 2.0,
    retry_on: Sequence[type[BaseException]] = (Exception,),
) -> Plugin:
    """Retry a failing call up to ``max_retries`` times (``delay * backoff**n`` between).

    Invalid-params errors and timeouts are not retried.

    Raises:
        DefinitionError: a negative count or delay.
    """
    if not isinstance(max_retries, int) or max_retries < 0 or delay < 0:
        raise DefinitionError("retry_plugin: max_retries and delay must be >= 0")
    kinds = tuple(retry_on)

    async def retry(ctx: Any, call_next: _Next) -> Any:
        attempt = 0
        wait = delay
        while True:
            try:
                return await call_next(ctx)
            except kinds as exc:
                final = isinstance(exc, (ToolTimeoutError,)) or (
                    isinstance(exc, AirError) and exc.code == INVALID_PARAMS
                )
                if final or attempt >= max_retries:
                    raise
                attempt += 1
                ctx.meta["retries"] = attempt
                logger.debug("retrying %s (attempt %d): %s", ctx.tool_name, attempt, exc)
                if wait > 0:
                    await asyncio.sleep(wait)
                wait *= backoff

    return Plugin(
        meta={"name": "air-retry"},
        middleware=(retry,),
        options={"max_retries": max_retries, "delay": delay},
    )


def _cache_key(ctx: Any) -> str:
    """``tool:hash`` of the server name, the tool's version and the arguments, so servers
    sharing one store, or a new version of a tool, never answer from each other's entries."""
    version = (ctx.tool_meta or {}).get("version")
    scope = [ctx.server_name, version, ctx.arguments]
    raw = orjson.dumps(scope, option=orjson.OPT_SORT_KEYS, default=str)
    return f"{ctx.tool_name}:{hashlib.sha256(raw).hexdigest()[:32]}"


class _CacheHooks:
    def __init__(self, ttl: float, tools: frozenset[str] | None, namespace: str) -> None:
        self.ttl = ttl
        self.tools = tools
        self.namespace = namespace

    async def before(self, ctx: Any) -> dict[str, Any] | None:
        if ctx.store is None or (self.tools is not None and ctx.tool_name not in self.tools):
            return None
        key = _cache_key(ctx)
        ctx.meta["cache_key"] = key
        hit = await ctx.store.get(self.namespace, key)
        if hit is not None:
            ctx.meta["cache"] = "hit"
            return {"abort": True, "abort_response": hit["value"]}
        ctx.meta["cache"] = "miss"
        return None

    async def after(self, ctx: Any, result: Any) -> None:
        key = ctx.meta.get("cache_key")
        if key is None or ctx.meta.get("cache") != "miss":
            return
        if isinstance(result, dict) and result.get("isError"):
            return
        try:
            # models, dataclasses, datetimes … are stored as the JSON the client would get
            value = to_jsonable(result)
            await ctx.store.set(self.namespace, key, {"value": value}, ttl=self.ttl)
        except Exception as exc:  # a value the store cannot hold is simply not cached
            logger.debug("cache_plugin: not caching %s: %s", ctx.tool_name, exc)


def cache_plugin(
    ttl: float = DEFAULT_CACHE_TTL,
    *,
    tools: Sequence[str] | None = None,
    namespace: str = CACHE_NAMESPACE,
) -> Plugin:
    """Cache results in the server's store for ``ttl`` seconds, keyed by tool + arguments.

    A hit aborts the chain (the handler does not run), as in the seed. Error results are not
    cached. Without a store the plugin does nothing.

    Args:
        ttl: seconds a result stays cached.
        tools: cache only these tools (default: all).
        namespace: the store namespace.

    Raises:
        DefinitionError: ``ttl`` is not positive.
    """
    if not isinstance(ttl, (int, float)) or ttl <= 0:
        raise DefinitionError(f"cache_plugin: ttl must be > 0, got {ttl!r}")
    hooks = _CacheHooks(float(ttl), None if tools is None else frozenset(tools), namespace)
    return Plugin(
        meta={"name": "air-cache"},
        middleware=(hooks,),
        options={"ttl": ttl, "namespace": namespace},
    )
