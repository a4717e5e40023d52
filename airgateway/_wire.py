"""What the gateway says on the wire about itself: the hop header (the HTTP plumbing of its
endpoint is the shared :mod:`aircore.transports.streamable`)."""

from __future__ import annotations

__all__ = ["HOP_HEADER"]

HOP_HEADER = "air-gateway-hop"
"""Sent on every upstream request with the sending gateway's id: a gateway refuses a request
carrying its own id (it would be calling itself: a loop)."""
