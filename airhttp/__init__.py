"""airhttp: what every HTTP surface of air shares (the MCP endpoint, the dashboard, /metrics
and the gateway): the Host/Origin/loopback/bearer guards. It imports none of air's packages."""

from airhttp.guards import LOCAL_HOSTS, bearer_token, host_ok, is_loopback, origin_ok, token_ok

__all__ = ["LOCAL_HOSTS", "bearer_token", "host_ok", "is_loopback", "origin_ok", "token_ok"]
