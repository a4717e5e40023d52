"""The cost of OAuth on the request path: token verification and the guard, in one process.

Run: ``.venv/bin/python bench/auth_bench.py [--n 20000]``.

Rows (each the best of ``--repeat`` rounds):
- a cached token through ``TokenVerifier.verify`` (the steady state: every request after a
  client's first);
- a JWT verified from scratch with joserfc (ES256 and RS256): what a new token costs once;
- the server's raw-request hook (the fast path of a stateless tools/call) without a guard, behind
  the Host/Origin guard only, and behind the Host/Origin guard plus the OAuth guard with a cached
  token: the ratio is the capacity the guard leaves (the handler here answers at once, so the
  ratio is the worst case: a real tool call costs more and dilutes it).
  The OAuth guard twice more as ``air gateway`` builds it (``tool_scopes``: its upstreams'):
  without any server's ``scopes:`` (the body is not read for its tool) and with them (it is).
The issue's targets: validation ≤ 30 µs CPU per call with the key and token cached; capacity
with JWT auth ≥ 0.8 of the same run without.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from airhttp import AccessPolicy, GuardedApp, OAuthGuard, TokenVerifier, auth_config_from
from tests.airhttp.issuer import running_issuer

RESOURCE = "http://127.0.0.1:9/mcp"


def _best(rounds: list[float]) -> float:
    return min(rounds)


async def main(n: int, repeat: int) -> None:
    async with running_issuer() as issuer:
        config = auth_config_from(
            {"issuer": issuer.url, "resource": RESOURCE, "scopes": ["mcp:tools"]}
        )
        verifier = TokenVerifier(
            config,
        )
        token = issuer.token(resource=RESOURCE)
        await verifier.verify(token)  # keys and the token cached
        rows: list[tuple[str, float]] = []

        timings = []
        for _ in range(repeat):
            start = time.process_time()
            for _ in range(n):
                await verifier.verify(token)
            timings.append((time.process_time() - start) / n * 1e6)
        rows.append(("verify, cached token (µs CPU)", _best(timings)))

        for alg in ("ES256", "RS256"):
            fresh = [issuer.token(resource=RESOURCE, alg=alg) for _ in range(300)]
            cold = TokenVerifier(
                auth_config_from({"issuer": issuer.url, "resource": RESOURCE, "cache_size": 0})
            )
            await cold.verify(fresh[0])  # keys fetched
            start = time.process_time()
            for one in fresh:
                await cold.verify(one)
            rows.append(
                (
                    f"verify, new {alg} JWT (µs CPU)",
                    (time.process_time() - start) / len(fresh) * 1e6,
                )
            )
            await cold.close()

        async def answer() -> Any:
            return 200, (), b"{}"

        def handler(scope: Any, body: bytes) -> Any:
            return answer()

        policy = AccessPolicy(check_host=True)
        guarded = GuardedApp(lambda *a: None, policy=policy)  # type: ignore[arg-type, return-value]
        oauth = OAuthGuard(lambda *a: None, verifier)  # type: ignore[arg-type, return-value]

        def no_scopes(tool: str) -> frozenset[str]:
            return frozenset()

        app: Any = lambda *a: None  # noqa: E731 - never called: the hooks answer
        gateways = {
            scoped: OAuthGuard(
                app, verifier, tool_scopes=no_scopes, tools_scoped=lambda s=scoped: s
            )
            for scoped in (False, True)
        }
        variants = {
            "no guard": handler,
            "Host/Origin guard": guarded.guard_fast(handler),
            "Host/Origin + OAuth guard": guarded.guard_fast(oauth.guard_fast(handler)),
            "+ OAuth, gateway": guarded.guard_fast(gateways[False].guard_fast(handler)),
            "+ OAuth, gateway, scopes:": guarded.guard_fast(gateways[True].guard_fast(handler)),
        }
        scope = {
            "type": "http",
            "method": "POST",
            "path": "/mcp",
            "query_string": b"",
            "headers": [
                (b"host", b"127.0.0.1:9"),
                (b"content-type", b"application/json"),
                (b"accept", b"application/json"),
                (b"authorization", f"Bearer {token}".encode()),
            ],
        }
        body = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}'
        rates: dict[str, float] = {}
        for _ in range(repeat):
            for name, hook in variants.items():
                start = time.process_time()
                for _ in range(n):
                    await hook(scope, body)
                rate = n / (time.process_time() - start)
                rates[name] = max(rates.get(name, 0.0), rate)
        await verifier.close()
    print(f"OAuth on the request path: {n} requests, best of {repeat}")
    for name, value in rows:
        print(f"  {name:<40} {value:>10.1f}")
    base = rates["Host/Origin guard"]
    for name, rate in rates.items():
        print(f"  fast path, {name:<29} {rate:>10,.0f}/s  {rate / base:>5.2f}x of Host/Origin only")
    extra = (1 / rates["Host/Origin + OAuth guard"] - 1 / base) * 1e6
    print(f"  the OAuth guard adds {extra:.1f} µs CPU per request (cached token)")
    plain, scoped = (
        (1 / rates[name] - 1 / base) * 1e6
        for name in ("+ OAuth, gateway", "+ OAuth, gateway, scopes:")
    )
    print(f"  in air gateway: {plain:.1f} µs, {scoped:.1f} µs when a server has scopes: (the "
          "body read for its tool)")  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.n, args.repeat))
