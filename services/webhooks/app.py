"""The webhooks service's HTTP API: subscriptions, their secrets and their delivery logs."""

from __future__ import annotations

from litestar import Litestar

from services.webhooks.routes import (
    DeliveriesController,
    EventTypesController,
    SubscriptionsController,
)
from services.webhooks.subscriptions import Webhooks
from shared.edge.access import access_guard, authenticator
from shared.edge.app import service_app
from shared.edge.runtime import ready_checks
from shared.infra import tracing
from shared.infra.metrics import Metrics, pool_probe
from shared.infra.settings import Settings


def create_app(settings: Settings | None = None) -> Litestar:
    """Compose the webhooks API: settings, the pool, the Celery app and the routes."""
    settings = settings or Settings.from_env()
    tracing.configure(settings, "webhooks-api")
    webhooks = Webhooks(settings)
    return service_app(
        "webhooks",
        settings.instance_id,
        [SubscriptionsController, DeliveriesController, EventTypesController],
        {"webhooks": webhooks},
        on_startup=[webhooks.start],
        on_shutdown=[webhooks.close],
        ready=ready_checks(lambda: webhooks.pool, lambda: webhooks.redis),
        metrics=Metrics({"pool": pool_probe(lambda: webhooks.pool)}),
        settings=settings,
        guards=[
            access_guard(
                authenticator(lambda: webhooks.pool, settings),
                "webhooks",
                {},
                secret_for="webhooks",
            )
        ],
    )
