"""The webhooks API and a worker beside the module's stack, for every webhooks test of the
module (the receiver on loopback)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.conftest import Stack
from tests.e2e.webhooks.service import Hooks, running_webhooks


@pytest.fixture(scope="module")
def hooks(stack: Stack) -> Iterator[Hooks]:
    with running_webhooks(stack) as running:
        yield running
