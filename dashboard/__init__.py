"""dashboard: the local Dash app that shows what an air server's tools are doing."""

__all__: list[str] = []
