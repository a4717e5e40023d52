"""What the OAuth end-to-end tests share: signing keys for oidc-provider, and the official ``mcp``
client connected through the SDK's ``ClientCredentialsOAuthProvider``."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

__all__ = ["Tokens", "oauth_client", "signing_keys"]


def signing_keys() -> str:
    """A fresh ES256 key set (private), as oidc-provider's ``JWKS`` environment variable."""
    from joserfc.jwk import ECKey, KeySet

    key = ECKey.generate_key("P-256", parameters={"kid": "es-1", "alg": "ES256", "use": "sig"})
    return json.dumps(KeySet([key]).as_dict(private=True))


class Tokens:
    """In-memory token storage for the SDK's OAuth provider."""

    def __init__(self) -> None:
        self.tokens: Any = None
        self.client: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client

    async def set_client_info(self, info: Any) -> None:
        self.client = info


@asynccontextmanager
async def oauth_client(url: str, issuer: str, client_id: str, scope: str) -> AsyncIterator[Any]:
    """The official client on ``url``, authorizing with ``client_id``'s client credentials
    (secret ``<client_id>-secret``, as tests/airhttp/oidc_provider.mjs registers them)."""
    import httpx2
    from mcp import Client
    from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
    from mcp.client.streamable_http import streamable_http_client

    auth = ClientCredentialsOAuthProvider(
        server_url=url,
        storage=Tokens(),
        client_id=client_id,
        client_secret=f"{client_id}-secret",
        scope=scope,
        issuer=issuer,
    )
    async with (
        httpx2.AsyncClient(auth=auth, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client
