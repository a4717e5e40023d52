"""Transports: stdio (asyncio streams) and Streamable HTTP (uvicorn + starlette)."""

__all__: list[str] = []
