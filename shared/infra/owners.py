"""Who owns each table of the database, and the read models a service publishes for others.

A service's SQL names only its own tables, the shared infrastructure's (``SHARED``: written and
read through ``shared/``) and the read models published for it: views over the owner's tables,
documented in docs/architecture.md ("Who owns what"), which the owner keeps while it changes its
tables. ``tests/unit/shared/infra/test_owners.py`` holds every service's SQL, and every migration's
new table and view, to this map.
"""

from __future__ import annotations

from typing import NamedTuple

SHARED = "shared"
"""Tables of the code in ``shared/``, which every service uses through it."""

TABLES: dict[str, str] = {
    # shared/infra: the event store, its outbox, consumers' checkpoints, idempotency records,
    # durable commands, applied migrations
    "events": SHARED,
    "outbox": SHARED,
    "tracking": SHARED,
    "idempotency": SHARED,
    "commands": SHARED,
    "schema_migrations": SHARED,
    # shared/edge/apps.py: client apps and their keys (the lobby serves the operator's routes,
    # every public service checks keys); shared/domain/hosting.py: the key bot tokens derive from
    "apps": SHARED,
    "api_keys": SHARED,
    "hosting_secrets": SHARED,
    # services/lobby
    "lobby_tables": "lobby",
    "lobby_seats": "lobby",
    # services/match
    "matches": "match",
    "match_seats": "match",
    "match_snapshots": "match",
    # services/webhooks
    "webhook_subscriptions": "webhooks",
    "webhook_subscription_changes": "webhooks",
    "webhook_deliveries": "webhooks",
    "webhook_attempts": "webhooks",
    "webhook_handled": "webhooks",
    "webhook_match_tables": "webhooks",
}
"""Each table, by the service (its folder in ``services/``) or ``SHARED`` that owns it."""


class ReadModel(NamedTuple):
    """A view its owner publishes over its own tables, and the services that read it."""

    owner: str
    readers: frozenset[str]


READ_MODELS: dict[str, ReadModel] = {
    "match_statuses": ReadModel("match", frozenset({"lobby"})),
    "match_seat_holders": ReadModel("match", frozenset({"lobby"})),
    "match_bot_turns": ReadModel("match", frozenset({"bots"})),
    "match_deadlines": ReadModel("match", frozenset({"clocks"})),
}
"""The published read models (``shared/infra/migrations/240_match_read_models.sql``)."""

ADMINISTRATION = frozenset({"operator"})
"""Not a service at run time: the operator's commands (``playtable verify``, ``export``,
``replay``, key and secret rotation) check, export and repair what every service stored, so
they read any table."""


def may_read(service: str, relation: str) -> bool:
    """Whether ``service``'s SQL may name ``relation`` (a table or a view of this map)."""
    if service in ADMINISTRATION:
        return True
    if relation in READ_MODELS:
        model = READ_MODELS[relation]
        return service == model.owner or service in model.readers
    return TABLES.get(relation) in (service, SHARED)
