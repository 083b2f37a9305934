"""The webhooks service's HTTP API: subscriptions, their secrets and their delivery logs."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Annotated, Any

import msgspec
import redis.asyncio as redis_async
from litestar import Controller, Litestar, Request, Response, delete, get, patch, post
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody, PathParameter, QueryParameter
from psycopg_pool import AsyncConnectionPool

from services.webhooks import samples
from services.webhooks import schemas as s
from services.webhooks.celery_app import configure
from services.webhooks.delivery import enqueue, in_stream_order
from services.webhooks.signing import new_secret
from services.webhooks.targets import TargetRefused, allowed_networks, check_target
from shared.domain import rules_api
from shared.domain.messages import new_id, now_ms
from shared.edge import apps
from shared.edge.access import access_guard, authenticator, known_caller
from shared.edge.app import service_app
from shared.edge.contract import SECRET_KEY, problem_responses
from shared.edge.errors import Problem, invalid_request, not_found
from shared.edge.guard import PG_BIGINT_MAX
from shared.edge.paging import NumberedCursor, next_cursor_after, start_after
from shared.edge.runtime import ask_rules, ready_checks, rules_client
from shared.infra import tracing
from shared.infra.db import given_fields, iso, open_pool, set_clause
from shared.infra.metrics import Metrics, pool_probe
from shared.infra.rpc import RulesClient
from shared.infra.sealed import WEBHOOK_COLUMNS, WEBHOOK_SECRET, seal_rows
from shared.infra.secretbox import Keyring
from shared.infra.settings import Settings

_SUBSCRIPTION_COLUMNS = (
    "id, url, event_types, table_id, match_id, enabled, disabled_reason, created_at,"
    " CASE WHEN previous_secret_until > now() THEN previous_secret_until END, failing_since"
)

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

_ENABLE = """
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
RETURNING d.id, d.subscription_id, d.stream_id
"""
"""Enable a disabled subscription and redeliver what it missed: the deliveries skipped while it
was disabled, and those that failed during the failure streak that disabled it."""


def _subscription(row: tuple[Any, ...]) -> s.SubscriptionInfo:
    return s.SubscriptionInfo(
        id=row[0],
        url=row[1],
        event_types=list(row[2]),
        table_id=row[3],
        match_id=row[4],
        enabled=row[5],
        disabled_reason=row[6],
        created_at=row[7].isoformat(),
        previous_secret_until=iso(row[8]),
        failing_since=iso(row[9]),
    )


class DeliveryFilter(msgspec.Struct, frozen=True):
    """Which deliveries of a subscription's log to list (each field left out: any)."""

    status: s.DeliveryStatus | None = None
    event_type: str | None = None
    since: datetime | None = None
    """Created at or after."""
    until: datetime | None = None
    """Created before."""

    def where(self) -> tuple[str, dict[str, Any]]:
        """The SQL conditions on ``d`` (a delivery) and their parameters."""
        columns = {
            "status": "d.status = %(status)s",
            "event_type": "d.event_type = %(event_type)s",
            "since": "d.created_at >= %(since)s",
            "until": "d.created_at < %(until)s",
        }
        chosen = msgspec.structs.asdict(self).items()
        given = {name: value for name, value in chosen if value is not None}
        return "".join(f" AND {columns[name]}" for name in given), given


def subscription_disabled(reason: str | None) -> Problem:
    """A disabled subscription is sent nothing, a ping included: say so, queueing nothing."""
    return Problem(
        409,
        "subscription-disabled",
        "Subscription disabled",
        f"the subscription is disabled ({reason}): enable it to ping it",
    )


class Webhooks:
    """The service's composition: settings, the Postgres pool and the Celery app."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.allowed = allowed_networks(settings.webhook_allowed_networks)
        self.pool: AsyncConnectionPool
        self.keyring: Keyring
        self.redis: redis_async.Redis
        self.rules: RulesClient
        self._event_types: list[s.EventTypeInfo] | None = None
        configure(settings)

    async def start(self) -> None:
        settings = self.settings
        self.keyring = settings.keyring()
        self.pool = await open_pool(
            settings.database_url, min_size=settings.db_pool_min, max_size=settings.db_pool_max
        )
        async with self.pool.connection() as conn:  # rows from before secrets were sealed
            await seal_rows(conn, self.keyring, WEBHOOK_COLUMNS, rotate=False)
        self.redis = redis_async.Redis.from_url(settings.redis_url)
        self.rules = rules_client(self.redis, settings)
        await self.rules.start()

    def sealed(self, subscription_id: str, secret: str) -> str:
        """A signing secret as it is stored: sealed under the keyring."""
        return self.keyring.seal(secret.encode(), WEBHOOK_SECRET.context(subscription_id))

    async def close(self) -> None:
        await self.rules.stop()
        await self.redis.aclose()
        await self.pool.close()

    async def app_of(self, request: Request[Any, Any, Any]) -> str | None:
        """The app whose secret key the request carries (with the ``webhooks`` scope): its own
        subscriptions are all it sees and changes. A publishable key never holds the scope; it
        is told it needs the secret key rather than that the scope is missing."""
        caller = known_caller(request, "webhooks") or await apps.authenticate(
            self.pool, self.settings, request.headers, "webhooks", secret_for="webhooks"
        )
        return caller.app_id

    async def event_types(self) -> list[s.EventTypeInfo]:
        """Every event type a subscription may name, with a sample: the games' samples come
        from the rules service once (they never change while it runs)."""
        if self._event_types is None:
            games = await ask_rules(
                self.rules, rules_api.EventSamples(), list[rules_api.GameSamples]
            )
            self._event_types = samples.event_types(games)
        return self._event_types

    async def check_event_types(self, event_types: list[str]) -> None:
        """A 400 for a type no event has (a typo would otherwise never fire): the tables',
        ``MatchFinished`` and each game's, as the rules service names them."""
        if not event_types:
            return
        known = {info.type for info in await self.event_types()}
        unknown = sorted(set(event_types) - known)
        if unknown:
            raise invalid_request(
                f"no event has the type(s) {', '.join(unknown)}",
                [{"message": "unknown event type", "source": "body", "key": "event_types"}],
            )

    async def check_target(self, url: str) -> None:
        """A 422 problem for targets webhooks may not reach (resolving may block: a thread)."""
        try:
            await asyncio.to_thread(check_target, url, self.allowed)
        except TargetRefused as refused:
            raise Problem(422, "target-refused", "Webhook target refused", str(refused)) from None

    async def subscription(
        self, conn: Any, app_id: str | None, subscription_id: str
    ) -> s.SubscriptionInfo:
        """The app's subscription; another app's answers 404, as if there were none."""
        cursor = await conn.execute(
            f"SELECT {_SUBSCRIPTION_COLUMNS} FROM webhook_subscriptions"
            " WHERE id = %s AND app_id IS NOT DISTINCT FROM %s",
            (subscription_id, app_id),
        )
        row = await cursor.fetchone()
        if row is None:
            raise not_found("subscription", subscription_id)
        return _subscription(row)

    async def delete_subscription(
        self, conn: Any, app_id: str | None, subscription_id: str
    ) -> None:
        """Remove the subscription; its deliveries and their attempts go with it (``ON DELETE
        CASCADE``). An attempt under way holds its subscription's row, so this waits for it to
        finish: once it returns, a worker finds nothing left to send."""
        cursor = await conn.execute(
            "DELETE FROM webhook_subscriptions"
            " WHERE id = %s AND app_id IS NOT DISTINCT FROM %s RETURNING id",
            (subscription_id, app_id),
        )
        if await cursor.fetchone() is None:
            raise not_found("subscription", subscription_id)

    async def ping(self, conn: Any, app_id: str | None, subscription_id: str) -> int:
        """A new delivery of a ``WebhookPing`` to the subscription, through the usual path
        (signed, attempted, logged, traced as part of the ping's request). A disabled
        subscription gets a 409: nothing would be sent."""
        at_ms = now_ms()
        key, stream_id, body = samples.ping(subscription_id, at_ms)
        cursor = await conn.execute(
            "INSERT INTO webhook_deliveries (subscription_id, event_key, stream_id, event_type,"
            " body, occurred_at_ms, traceparent)"
            " SELECT id, %s, %s, %s, %s, %s, %s FROM webhook_subscriptions"
            " WHERE id = %s AND app_id IS NOT DISTINCT FROM %s AND enabled"
            " FOR KEY SHARE RETURNING id",
            (
                key,
                stream_id,
                samples.PING,
                body,
                at_ms,
                tracing.traceparent(),
                subscription_id,
                app_id,
            ),
        )
        row = await cursor.fetchone()
        if row is None:  # none of the app's, or disabled
            subscription = await self.subscription(conn, app_id, subscription_id)
            raise subscription_disabled(subscription.disabled_reason)
        return row[0]

    async def delivery(
        self, conn: Any, app_id: str | None, subscription_id: str, delivery_id: int
    ) -> s.DeliveryInfo:
        """One delivery of the subscription, with its attempts so far."""
        page = await self.deliveries(
            conn, app_id, subscription_id, DeliveryFilter(), delivery_id - 1, 1
        )
        return page.deliveries[0]

    async def deliveries(
        self,
        conn: Any,
        app_id: str | None,
        subscription_id: str,
        chosen: DeliveryFilter,
        after: int,
        limit: int,
    ) -> s.DeliveryPage:
        await self.subscription(conn, app_id, subscription_id)
        where, parameters = chosen.where()
        cursor = await conn.execute(
            "SELECT d.id, d.event_key, d.event_type, d.stream_id, d.status, d.created_at,"
            " coalesce(array_agg(array[a.attempted_at::text, a.status_code::text,"
            "   a.duration_ms::text, a.error] ORDER BY a.id) FILTER (WHERE a.id IS NOT NULL),"
            "   '{}')"
            " FROM webhook_deliveries d LEFT JOIN webhook_attempts a ON a.delivery_id = d.id"
            f" WHERE d.subscription_id = %(subscription)s AND d.id > %(after)s{where}"
            " GROUP BY d.id ORDER BY d.id LIMIT %(limit)s",
            {**parameters, "subscription": subscription_id, "after": after, "limit": limit + 1},
        )
        rows = await cursor.fetchall()
        page = [
            s.DeliveryInfo(
                id=row[0],
                webhook_id=row[1],
                event_type=row[2],
                stream_id=row[3],
                status=row[4],
                created_at=row[5].isoformat(),
                attempts=[
                    s.AttemptInfo(
                        attempted_at=datetime.fromisoformat(at).isoformat(),
                        status_code=None if code is None else int(code),
                        duration_ms=None if duration is None else float(duration),
                        error=error,
                    )
                    for at, code, duration, error in row[6]
                ],
            )
            for row in rows[:limit]
        ]
        last = page[-1].id if len(rows) > limit else None
        return s.DeliveryPage(deliveries=page, next_cursor=next_cursor_after(last), next_after=last)


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
                f"SELECT {_SUBSCRIPTION_COLUMNS} FROM webhook_subscriptions"
                " WHERE app_id IS NOT DISTINCT FROM %s ORDER BY created_at, id",
                (app_id,),
            )
            return [_subscription(row) for row in await cursor.fetchall()]

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
                await asyncio.to_thread(enqueue, in_stream_order(redelivered))
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
