"""The examples of the request bodies and of the successful answers, by operation, with the
webhook subscription, its deliveries, and the app and its keys they show."""

from __future__ import annotations

from typing import Any

import msgspec

from services.lobby import schemas as lobby_api
from services.match import schemas as match_api
from services.webhooks import samples as webhook_samples
from services.webhooks import schemas as webhooks_api
from services.webhooks.bodies import event_key
from shared.domain.messages import EventEnvelope
from shared.edge import apps
from shared.infra.settings import Settings
from tools.contract.examples.story import Story
from tools.contract.examples.values import (
    APP_ID,
    APP_NAME,
    DELIVERY_ID,
    ENCODER,
    GAME,
    HOOK_URL,
    KEY_ID,
    MATCH_CREATED_S,
    PLAYERS,
    REMATCH_TABLE_ID,
    SEED,
    SUBSCRIPTION_ID,
    TABLE_EVENT_TIMES_S,
    TABLE_ID,
    TABLE_NAME,
    TABLE_OPTIONS,
    TAKEOVER_BOT,
    at,
    fake_signing_secret,
    fake_token,
    feed_ticket,
    metadata,
    status_of,
)

SUBSCRIBED_EVENTS = ["TableStarted", "MatchFinished"]
SUBSCRIBED_AT_S = -600
"""Ten minutes before the table: the subscription watches it from its creation."""
ROTATED_AT_S = 86_400
"""A day into the story, the subscription's secret is rotated."""


def _subscription(*, enabled: bool = True) -> webhooks_api.SubscriptionInfo:
    return webhooks_api.SubscriptionInfo(
        id=SUBSCRIPTION_ID,
        url=HOOK_URL,
        event_types=SUBSCRIBED_EVENTS,
        table_id=TABLE_ID,
        match_id=None,
        enabled=enabled,
        disabled_reason=None if enabled else "disabled through the API",
        created_at=at(SUBSCRIBED_AT_S),
        previous_secret_until=None,
        failing_since=None,
    )


APP_CREATED_AT_S = -86_400
"""A day before the table, the operator registers the app."""


def _app(max_open_tables: int) -> apps.AppInfo:
    return apps.AppInfo(
        app_id=APP_ID,
        name=APP_NAME,
        max_open_tables=max_open_tables,
        created_at=at(APP_CREATED_AT_S),
    )


def _key(scopes: list[str], label: str, *, revoked: bool = False) -> apps.KeyInfo:
    return apps.KeyInfo(
        key_id=KEY_ID,
        app_id=APP_ID,
        kind="secret",
        scopes=scopes,
        label=label,
        created_at=at(APP_CREATED_AT_S),
        revoked_at=at(ROTATED_AT_S) if revoked else None,
    )


def _fake_api_key(number: int) -> str:
    return f"{apps.KIND_PREFIXES['secret']}example-app-key-{number}-not-a-secret"


def _delivery(status: str) -> webhooks_api.DeliveryInfo:
    """The delivery of the table's start: refused once by a busy target, then delivered."""
    started = EventEnvelope(
        stream_id=f"table-{TABLE_ID}",
        version=len(TABLE_EVENT_TIMES_S),
        type="TableStarted",
        data=msgspec.Raw(b"{}"),
        metadata=metadata(len(TABLE_EVENT_TIMES_S)),
    )
    sent_s = TABLE_EVENT_TIMES_S[-1] + 0.2
    retried_s = sent_s + Settings().webhook_retry_base_s
    return webhooks_api.DeliveryInfo(
        id=DELIVERY_ID,
        webhook_id=event_key(started),
        event_type=started.type,
        stream_id=started.stream_id,
        status=status,
        created_at=at(TABLE_EVENT_TIMES_S[-1] + 0.1),
        attempts=[
            webhooks_api.AttemptInfo(
                attempted_at=at(sent_s), status_code=503, duration_ms=84.6, error="HTTP 503"
            ),
            webhooks_api.AttemptInfo(
                attempted_at=at(retried_s), status_code=200, duration_ms=41.3, error=None
            ),
        ],
    )


def _ping() -> webhooks_api.DeliveryInfo:
    """A ping just sent, its attempt not made yet."""
    return webhooks_api.DeliveryInfo(
        id=DELIVERY_ID + 1,
        webhook_id="ping:0f8e6d4c2b0a4e9c8d7f6e5d4c3b2a19",
        event_type=webhook_samples.PING,
        stream_id=f"ping-{SUBSCRIPTION_ID}",
        status="pending",
        created_at=at(SUBSCRIBED_AT_S + 1),
        attempts=[],
    )


EVENT_TYPES_SHOWN = ("TableStarted", "ClueGiven", "MatchFinished")
"""The event types ``listWebhookEventTypes``' example shows (of all of them)."""


# --- the tables of examples ------------------------------------------------------------------


def request_examples(story: Story) -> dict[str, Any]:
    """The request body of each route that takes one, by operationId."""
    turn = story.turn
    return {
        "createTable": lobby_api.CreateTable(
            game=GAME, seats=len(PLAYERS), options=TABLE_OPTIONS, name=TABLE_NAME, seed=SEED
        ),
        "joinTable": lobby_api.JoinTable(name=PLAYERS[1]),
        "seatBot": lobby_api.SeatBot(bot=TAKEOVER_BOT, seat=1),
        "submitAction": match_api.SubmitAction(
            game=GAME, expected_version=turn.version, action=msgspec.to_builtins(turn.action)
        ),
        "importMatch": match_api.ImportMatch(document=story.exported, game=GAME),
        "reseatPlayer": match_api.Reseat(name=PLAYERS[1]),
        "createWebhookSubscription": webhooks_api.CreateSubscription(
            url=HOOK_URL, event_types=SUBSCRIBED_EVENTS, table_id=TABLE_ID
        ),
        "updateWebhookSubscription": webhooks_api.UpdateSubscription(enabled=False),
        "createApp": apps.CreateApp(name=APP_NAME, max_open_tables=200),
        "updateApp": apps.UpdateApp(max_open_tables=500),
        "createApiKey": apps.CreateKey(scopes=["tables"], label="game server"),
    }


def response_examples(story: Story) -> dict[tuple[str, int], Any]:
    """The successful answer of each route, by operationId and status: Bob's view of the match
    when he is to move, his move, and the match once over."""
    turn, match = story.turn, story.match
    started = story.table(events=4)
    overlap_s = Settings().webhook_secret_overlap_s
    return {
        ("listGames", 200): story.catalogue,
        ("getGame", 200): story.game,
        ("listTables", 200): lobby_api.TablePage(items=[story.table(events=2)], next_cursor=None),
        ("createTable", 201): lobby_api.CreatedTable(
            **msgspec.structs.asdict(story.table(events=1)), invitation_token=None
        ),
        ("getTable", 200): story.table(events=3),
        ("followTable", 200): story.table_feed(),
        ("createTableFeedTicket", 201): feed_ticket("table", TABLE_EVENT_TIMES_S[-1]),
        ("joinTable", 201): lobby_api.Joined(
            seat=1, token=fake_token("bob"), table=story.table(events=3)
        ),
        ("leaveTable", 200): story.table(events=3, bob_left=True),
        ("seatBot", 201): story.table(events=3, bot_seated=True),
        ("unseatBot", 200): story.table(events=3, bob_left=True),
        ("rematchTable", 201): lobby_api.Joined(
            seat=1,
            token=fake_token("bob-rematch"),
            table=msgspec.structs.replace(
                story.table(events=1),
                table_id=REMATCH_TABLE_ID,
                rematch_of=TABLE_ID,
                seats=[
                    lobby_api.SeatInfo(seat=0, player=None, bot=None),
                    lobby_api.SeatInfo(seat=1, player=PLAYERS[1], bot=None),
                ],
                version=2,
            ),
        ),
        ("startTable", 201): started,
        ("startTable", 202): started,
        ("getMatch", 200): story.match_info(turn.version, turn.seat),
        ("leaveMatch", 200): msgspec.structs.replace(
            story.match_info(turn.version, None), bots={1: TAKEOVER_BOT}
        ),
        ("reseatPlayer", 201): match_api.Reseated(
            seat=1,
            token=fake_token("bob-reseated"),
            match=msgspec.structs.replace(story.match_info(turn.version, 1), view=None),
        ),
        ("listLegalActions", 200): match_api.LegalActions(
            game=GAME,
            version=turn.version,
            seat=turn.seat,
            actions=[msgspec.Raw(ENCODER.encode(action)) for action in turn.legal],
        ),
        ("submitAction", 201): match_api.ActionAccepted(
            game=GAME,
            version=turn.version_after,
            events=turn.decided.actor_events,
            to_move=turn.decided.progress.to_move,
            status=status_of(turn.decided.progress.result),
            result=turn.decided.progress.result,
            view=turn.decided.actor_view,
            legal_actions=turn.decided.legal_actions.get(turn.seat, []),
        ),
        ("listMatchEvents", 200): match_api.EventPage(
            items=match.event_items(turn.seat, 1, turn.version_after),
            next_cursor=None,
            next_after=None,
        ),
        ("followMatch", 200): story.match_feed_end(after=match.version - 3),
        ("createMatchFeedTicket", 201): feed_ticket("match", MATCH_CREATED_S),
        ("replayMatch", 200): story.replay(turn.version),
        ("exportMatch", 200): story.exported,
        ("importMatch", 201): story.imported_match(),
        ("createWebhookSubscription", 201): webhooks_api.CreatedSubscription(
            subscription=_subscription(), secret=fake_signing_secret(1)
        ),
        ("listWebhookSubscriptions", 200): [_subscription()],
        ("getWebhookSubscription", 200): _subscription(),
        ("updateWebhookSubscription", 200): _subscription(enabled=False),
        ("rotateWebhookSecret", 200): webhooks_api.RotatedSecret(
            secret=fake_signing_secret(2), previous_secret_until=at(ROTATED_AT_S + overlap_s)
        ),
        ("listWebhookDeliveries", 200): webhooks_api.DeliveryPage(
            deliveries=[_delivery("delivered")], next_cursor=None, next_after=None
        ),
        ("redeliverWebhook", 202): _delivery("pending"),
        ("pingWebhookSubscription", 202): _ping(),
        ("listWebhookEventTypes", 200): [
            info
            for info in webhook_samples.event_types(story.engine.event_samples)
            if info.type in EVENT_TYPES_SHOWN
        ],
        ("createApp", 201): apps.CreatedApp(
            app=_app(200),
            key=apps.CreatedKey(
                key=_key(["tables", "webhooks"], "first key"), api_key=_fake_api_key(1)
            ),
        ),
        ("listApps", 200): [_app(200)],
        ("rotateInvitation", 200): lobby_api.Invitation(
            invitation_token=fake_token("second-invitation")
        ),
        ("revokeInvitation", 200): story.table(1),
        ("closeTable", 200): msgspec.structs.replace(
            story.table(events=2),
            status="closed",
            seats=[lobby_api.SeatInfo(seat=n, player=None, bot=None) for n in range(2)],
            version=3,
        ),
        ("getApp", 200): _app(200),
        ("updateApp", 200): _app(500),
        ("createApiKey", 201): apps.CreatedKey(
            key=_key(["tables"], "game server"), api_key=_fake_api_key(2)
        ),
        ("listApiKeys", 200): [_key(["tables", "webhooks"], "first key")],
        ("revokeApiKey", 200): _key(["tables", "webhooks"], "first key", revoked=True),
    }
