from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from airstore import Store
from tests.airstore.backends import BACKENDS, Backend, FakeClock


@pytest.fixture(params=[pytest.param(b, id=b.name, marks=b.marks) for b in BACKENDS])
def backend(request: pytest.FixtureRequest) -> Backend:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def store(backend: Backend, tmp_path: Path, clock: FakeClock) -> AsyncIterator[Store]:
    s = await backend.open(tmp_path, clock)
    try:
        yield s
    finally:
        await s.close()


@pytest.fixture(
    params=[pytest.param(b, id=b.name, marks=b.marks) for b in BACKENDS if b.persistent]
)
def persistent_backend(request: pytest.FixtureRequest) -> Backend:
    return request.param  # type: ignore[no-any-return]
