"""The air demo server ships inside the package now (``aircli.demo_server``).

This file keeps ``air serve examples/demo_server.py`` working from a checkout; from anywhere else
use ``air serve aircli.demo_server`` (or ``air demo``).
"""

from aircli.demo_server import server

__all__ = ["server"]

if __name__ == "__main__":
    server.run()
