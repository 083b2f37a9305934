"""The webhooks service's routes: subscriptions, their secrets, pings, delivery logs and
redeliveries, and the event types a subscription may name."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Annotated, Any

from litestar import Controller, Request, Response, delete, get, patch, post
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody, PathParameter, QueryParameter

from services.webhooks import schemas as s
from services.webhooks.delivery import FRESH, enqueue, hand_over
from services.webhooks.signing import new_secret
from services.webhooks.subscriptions import (
    SUBSCRIPTION_COLUMNS,
    DeliveryFilter,
    Webhooks,
    subscription_info,
)
from shared.domain.messages import new_id
from shared.edge.contract import SECRET_KEY, problem_responses
from shared.edge.errors import Problem, not_found
from shared.edge.guard import PG_BIGINT_MAX
from shared.edge.paging import NumberedCursor, start_after
from shared.infra.db import given_fields, set_clause

_DISABLE = """
WITH disabled AS (
    UPDATE webhook_subscriptions SET enabled = false, disabled_reason = 'disabled through the API'
    WHERE id = %(id)s AND app_id IS NOT DISTINCT FROM %(app_id)s AND enabled
    RETURNING id
)
UPDATE webhook_deliveries SET status = 'missed'
WHERE id IN (
    SELECT id FROM webhook_deliveries
    WHERE subscription_id IN (SELECT id FROM disabled) AND status = 'pending'
    ORDER BY id
    FOR UPDATE)
"""
"""Disable an enabled subscription: its pending deliveries are missed (not sent) until it is
enabled again. An attempt under way holds its delivery, so this waits for it to end."""

_ENABLE = f"""
WITH was_disabled AS (
    SELECT id, failing_since FROM webhook_subscriptions
    WHERE id = %(id)s AND app_id IS NOT DISTINCT FROM %(app_id)s AND NOT enabled
    FOR NO KEY UPDATE
), enabled AS (
    UPDATE webhook_subscriptions s
    SET enabled = true, disabled_reason = NULL, failure_streak = 0, failing_since = NULL
    FROM was_disabled w WHERE s.id = w.id
)
UPDATE webhook_deliveries d SET status = 'pending', attempts = 0, due_at = now()
FROM was_disabled w
WHERE d.subscription_id = w.id
  AND (d.status = 'missed'
       OR (d.status = 'failed' AND EXISTS (
               SELECT FROM webhook_attempts a
               WHERE a.delivery_id = d.id AND a.attempted_at >= w.failing_since)))
RETURNING d.id, d.subscription_id, d.stream_id, {FRESH}
"""
"""Enable a disabled subscription and redeliver what it missed: the deliveries skipped while it
was disabled, and those that failed during the failure streak that disabled it."""


class SubscriptionsController(Controller):
    path = "/webhooks/subscriptions"
    tags = ["webhooks"]
    security = SECRET_KEY

    @post(
        "/",
        operation_id="createWebhookSubscription",
        summary="Subscribe a URL to the app's events; the answer holds the signing secret"
        " (shown once)",
        description="A subscription gets only the events of its app's tables and matches.",
        responses=problem_responses(400, 401, 403, 422, 503),
    )
    async def create_subscription(
        self,
        request: Request[Any, Any, Any],
        webhooks: NamedDependency[Webhooks],
        data: JSONBody[s.CreateSubscription],
    ) -> Response[s.CreatedSubscription]:
        app_id = await webhooks.app_of(request)
        await webhooks.check_event_types(data.event_types)
        await webhooks.check_target(data.url)
        subscription_id, secret = new_id(), new_secret()
        async with webhooks.pool.connection() as conn:
            await conn.execute(
                "INSERT INTO webhook_subscriptions"
                " (id, url, event_types, table_id, match_id, secret, app_id)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s)",
                (
                    subscription_id,
                    data.url,
                    data.event_types,
                    data.table_id,
                    data.match_id,
                    webhooks.sealed(subscription_id, secret),
                    app_id,
                ),
            )
            info = await webhooks.subscription(conn, app_id, subscription_id)
        return Response(s.CreatedSubscription(subscription=info, secret=secret), status_code=201)

    @get(
        "/",
        operation_id="listWebhookSubscriptions",
        summary="The app's subscriptions, oldest first",
        responses=problem_responses(401, 403, 503),
    )
    async def list_subscriptions(
        self, request: Request[Any, Any, Any], webhooks: NamedDependency[Webhooks]
    ) -> list[s.SubscriptionInfo]:
        app_id = await webhooks.app_of(request)
        async with webhooks.pool.connection() as conn:
            cursor = await conn.execute(
                f"SELECT {SUBSCRIPTION_COLUMNS} FROM webhook_subscriptions"
                " WHERE app_id IS NOT DISTINCT FROM %s ORDER BY created_at, id",
                (app_id,),
            )
            return [subscription_info(row) for row in await cursor.fetchall()]

    @get(
        "/{subscription_id:str}",
        operation_id="getWebhookSubscription",
        summary="One subscription (without its secret)",
        responses=problem_responses(401, 403, 404, 503),
    )
    async def get_subscription(
        self,
        request: Request[Any, Any, Any],
        webhooks: NamedDependency[Webhooks],
        subscription_id: FromPath[str],
    ) -> s.SubscriptionInfo:
        app_id = await webhooks.app_of(request)
        async with webhooks.pool.connection() as conn:
            return await webhooks.subscription(conn, app_id, subscription_id)

    @patch(
        "/{subscription_id:str}",
        operation_id="updateWebhookSubscription",
        summary="Enable or disable a subscription, or change its URL, event types or filter",
        responses=problem_responses(400, 401, 403, 404, 422, 503),
    )
    async def update_subscription(
        self,
        request: Request[Any, Any, Any],
        webhooks: NamedDependency[Webhooks],
        subscription_id: FromPath[str],
        data: JSONBody[s.UpdateSubscription],
    ) -> s.SubscriptionInfo:
        changes = given_fields(data)
        app_id = await webhooks.app_of(request)
        async with webhooks.pool.connection() as conn:  # an unknown one: 404 before anything
            await webhooks.subscription(conn, app_id, subscription_id)
        if isinstance(data.event_types, list):
            await webhooks.check_event_types(data.event_types)
        if isinstance(data.url, str):
            await webhooks.check_target(data.url)
        enabled = changes.pop("enabled", None)
        key = {"id": subscription_id, "app_id": app_id}
        async with webhooks.pool.connection() as conn:
            async with conn.transaction():
                if changes:  # gone meanwhile: nothing updated, and the read below answers 404
                    await conn.execute(
                        f"UPDATE webhook_subscriptions SET {set_clause(changes)}"
                        " WHERE id = %(id)s AND app_id IS NOT DISTINCT FROM %(app_id)s",
                        {**changes, **key},
                    )
                redelivered = []
                if enabled is True:  # each does nothing if it is so already
                    redelivered = await (await conn.execute(_ENABLE, key)).fetchall()
                elif enabled is False:
                    await conn.execute(_DISABLE, key)
                info = await webhooks.subscription(conn, app_id, subscription_id)
            if redelivered:
                await asyncio.to_thread(hand_over, redelivered, enqueue)
            return info

    @delete(
        "/{subscription_id:str}",
        operation_id="deleteWebhookSubscription",
        summary="Remove a subscription with its deliveries; none is attempted after the answer",
        responses=problem_responses(401, 403, 404, 503),
    )
    async def delete_subscription(
        self,
        request: Request[Any, Any, Any],
        webhooks: NamedDependency[Webhooks],
        subscription_id: FromPath[str],
    ) -> None:
        app_id = await webhooks.app_of(request)
        async with webhooks.pool.connection() as conn:
            await webhooks.delete_subscription(conn, app_id, subscription_id)

    @post(
        "/{subscription_id:str}/rotate-secret",
        operation_id="rotateWebhookSecret",
        status_code=200,
        summary="A new signing secret; the old one keeps signing too until the overlap ends",
        responses=problem_responses(401, 403, 404, 503),
    )
    async def rotate_secret(
        self,
        request: Request[Any, Any, Any],
        webhooks: NamedDependency[Webhooks],
        subscription_id: FromPath[str],
    ) -> s.RotatedSecret:
        app_id = await webhooks.app_of(request)
        secret = new_secret()
        async with webhooks.pool.connection() as conn:
            cursor = await conn.execute(
                "UPDATE webhook_subscriptions SET previous_secret = secret, secret = %s,"
                " previous_secret_until = now() + make_interval(secs => %s)"
                " WHERE id = %s AND app_id IS NOT DISTINCT FROM %s RETURNING previous_secret_until",
                (
                    webhooks.sealed(subscription_id, secret),
                    webhooks.settings.webhook_secret_overlap_s,
                    subscription_id,
                    app_id,
                ),
            )
            row = await cursor.fetchone()
        if row is None:
            raise not_found("subscription", subscription_id)
        return s.RotatedSecret(secret=secret, previous_secret_until=row[0].isoformat())

    @get(
        "/{subscription_id:str}/deliveries",
        operation_id="listWebhookDeliveries",
        summary="The subscription's deliveries, oldest first, each with its attempts",
        responses=problem_responses(400, 401, 403, 404, 503),
    )
    async def list_deliveries(
        self,
        request: Request[Any, Any, Any],
        webhooks: NamedDependency[Webhooks],
        subscription_id: FromPath[str],
        cursor: NumberedCursor = None,
        after: Annotated[
            int,
            QueryParameter(
                ge=0,
                le=PG_BIGINT_MAX,
                description="Deprecated (`cursor`): return deliveries after this id",
                schema_extra={"deprecated": True},
            ),
        ] = 0,
        limit: Annotated[int, QueryParameter(ge=1, le=200)] = 50,
        status: Annotated[
            s.DeliveryStatus | None, QueryParameter(description="Only deliveries in this status")
        ] = None,
        event_type: Annotated[
            str | None,
            QueryParameter(max_length=200, description="Only deliveries of this event type"),
        ] = None,
        since: Annotated[
            datetime | None,
            QueryParameter(description="Only deliveries created at or after this time (RFC 3339)"),
        ] = None,
        until: Annotated[
            datetime | None,
            QueryParameter(description="Only deliveries created before this time (RFC 3339)"),
        ] = None,
    ) -> s.DeliveryPage:
        chosen = DeliveryFilter(status, event_type, since, until)
        start = start_after(cursor, after, PG_BIGINT_MAX)
        app_id = await webhooks.app_of(request)
        async with webhooks.pool.connection() as conn:
            return await webhooks.deliveries(conn, app_id, subscription_id, chosen, start, limit)

    @post(
        "/{subscription_id:str}/ping",
        operation_id="pingWebhookSubscription",
        status_code=202,
        summary="Send the subscription a signed test webhook (`WebhookPing`), whatever its event"
        " types; its attempts show in the delivery log",
        responses=problem_responses(401, 403, 404, 409, 503),
    )
    async def ping(
        self,
        request: Request[Any, Any, Any],
        webhooks: NamedDependency[Webhooks],
        subscription_id: FromPath[str],
    ) -> s.DeliveryInfo:
        app_id = await webhooks.app_of(request)
        async with webhooks.pool.connection() as conn:
            delivery_id = await webhooks.ping(conn, app_id, subscription_id)
            await asyncio.to_thread(enqueue, [delivery_id])
            return await webhooks.delivery(conn, app_id, subscription_id, delivery_id)


class EventTypesController(Controller):
    path = "/webhooks/event-types"
    tags = ["webhooks"]
    security = SECRET_KEY

    @get(
        "/",
        operation_id="listWebhookEventTypes",
        summary="Every event type a subscription may name, each with a sample webhook as a"
        " receiver gets it",
        responses=problem_responses(401, 403, 503),
    )
    async def list_event_types(
        self, request: Request[Any, Any, Any], webhooks: NamedDependency[Webhooks]
    ) -> list[s.EventTypeInfo]:
        await webhooks.app_of(request)
        return await webhooks.event_types()


class DeliveriesController(Controller):
    path = "/webhooks/deliveries"
    tags = ["webhooks"]
    security = SECRET_KEY

    @post(
        "/{delivery_id:int}/redeliver",
        operation_id="redeliverWebhook",
        status_code=202,
        summary="Send a delivery again (its attempts start over); refused while it is pending",
        responses=problem_responses(401, 403, 404, 409, 503),
    )
    async def redeliver(
        self,
        request: Request[Any, Any, Any],
        webhooks: NamedDependency[Webhooks],
        delivery_id: Annotated[int, PathParameter(ge=1, le=PG_BIGINT_MAX)],
    ) -> s.DeliveryInfo:
        app_id = await webhooks.app_of(request)
        async with webhooks.pool.connection() as conn:
            cursor = await conn.execute(
                "UPDATE webhook_deliveries d SET status = 'pending', attempts = 0, due_at = now()"
                " FROM webhook_subscriptions s"
                " WHERE d.id = %s AND d.status <> 'pending' AND s.id = d.subscription_id"
                " AND s.app_id IS NOT DISTINCT FROM %s RETURNING d.subscription_id",
                (delivery_id, app_id),
            )
            row = await cursor.fetchone()
            if row is None:
                cursor = await conn.execute(
                    "SELECT 1 FROM webhook_deliveries d JOIN webhook_subscriptions s"
                    " ON s.id = d.subscription_id"
                    " WHERE d.id = %s AND s.app_id IS NOT DISTINCT FROM %s",
                    (delivery_id, app_id),
                )
                if await cursor.fetchone() is None:
                    raise not_found("delivery", str(delivery_id))
                raise Problem(
                    409, "delivery-pending", "Delivery pending", "it is being delivered already"
                )
            await asyncio.to_thread(enqueue, [delivery_id])
            return await webhooks.delivery(conn, app_id, row[0], delivery_id)
