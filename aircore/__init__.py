"""aircore: the minimal MCP server core that airstore and airmeter plug into."""

__all__: list[str] = []
