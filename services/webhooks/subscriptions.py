"""The webhooks service's state and what its routes do with it: the app's subscriptions, their
secrets and their delivery logs, over the Postgres pool, the rules client and the Celery app."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

import msgspec
import redis.asyncio as redis_async
from litestar import Request
from psycopg_pool import AsyncConnectionPool

from services.webhooks import samples
from services.webhooks import schemas as s
from services.webhooks.celery_app import configure
from services.webhooks.targets import TargetRefused, allowed_networks, check_target
from shared.domain import rules_api
from shared.domain.messages import now_ms
from shared.edge import apps
from shared.edge.access import known_caller
from shared.edge.errors import Problem, invalid_request, not_found
from shared.edge.paging import next_cursor_after
from shared.edge.runtime import ask_rules, first_of, rules_client
from shared.infra import tracing
from shared.infra.bus import redis_client
from shared.infra.db import iso, new_pool, open_when_reachable
from shared.infra.rpc import RulesClient
from shared.infra.sealed import WEBHOOK_COLUMNS, WEBHOOK_SECRET, seal_rows
from shared.infra.secretbox import Keyring
from shared.infra.settings import Settings

SUBSCRIPTION_COLUMNS = (
    "id, url, event_types, table_id, match_id, enabled, disabled_reason, created_at,"
    " CASE WHEN previous_secret_until > now() THEN previous_secret_until END, failing_since"
)


def subscription_info(row: tuple[Any, ...]) -> s.SubscriptionInfo:
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
        self._stopping = asyncio.Event()
        self._starting: asyncio.Task[None]
        configure(settings)

    async def start(self) -> None:
        """Make the clients and open the pool, or go on trying in the background once
        Postgres did not answer (not ready until it does, as ``Runtime.start``)."""
        settings = self.settings
        self.keyring = settings.keyring()
        self.pool = new_pool(
            settings.database_url, min_size=settings.db_pool_min, max_size=settings.db_pool_max
        )
        self.redis = redis_client(settings)
        self.rules = rules_client(self.redis, settings)
        await self.rules.start()
        started, unreachable = asyncio.Event(), asyncio.Event()
        self._starting = asyncio.create_task(self._once_postgres_answers(started, unreachable))
        await first_of(started, unreachable)

    async def _once_postgres_answers(
        self, started: asyncio.Event, unreachable: asyncio.Event
    ) -> None:
        url = self.settings.database_url
        try:
            if await open_when_reachable(self.pool, url, self._stopping, "starting", unreachable):
                async with self.pool.connection() as conn:  # rows from before secrets were sealed
                    await seal_rows(conn, self.keyring, WEBHOOK_COLUMNS, rotate=False)
        finally:
            started.set()

    def sealed(self, subscription_id: str, secret: str) -> str:
        """A signing secret as it is stored: sealed under the keyring."""
        return self.keyring.seal(secret.encode(), WEBHOOK_SECRET.context(subscription_id))

    async def close(self) -> None:
        self._stopping.set()
        if not self._starting.done():
            self._starting.cancel()  # waiting on Postgres: nothing of it to keep
        await asyncio.gather(self._starting, return_exceptions=True)
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
            f"SELECT {SUBSCRIPTION_COLUMNS} FROM webhook_subscriptions"
            " WHERE id = %s AND app_id IS NOT DISTINCT FROM %s",
            (subscription_id, app_id),
        )
        row = await cursor.fetchone()
        if row is None:
            raise not_found("subscription", subscription_id)
        return subscription_info(row)

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
