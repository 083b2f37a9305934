"""The name of every Redis stream (and the other Redis keys) the services share, in one place.

A name is not yet a key: ``Settings.stream(name)`` (``shared.infra.settings.stream_key``) makes the
key under the deployment's prefix, ``<prefix>:{<name>}``, the name a Redis Cluster hash tag.
Running deployments hold these keys, their consumer groups and their entries: a name here never
changes, byte for byte (``tests/unit/shared/infra/test_streams.py`` pins them).
"""

from __future__ import annotations

MATCH_EVENTS_STREAM = "match-events"
"""Matches' public events (``EventEnvelope``), relayed from the match service's outbox; read by
the match service's feeds and the webhooks dispatcher."""

LOBBY_EVENTS_STREAM = "lobby-events"
"""Tables' public events (``EventEnvelope``), relayed from the lobby's outbox; read by the
lobby's feeds and the webhooks dispatcher."""

MATCH_COMMANDS_STREAM = "commands:match"
"""Commands to the match service (``CreateMatch``), written by the lobby (its pending commands,
``shared.infra.commands``); read by the match service, which also takes a ``TimeOut`` here (the
clocks service of an earlier release sent them here)."""

MATCH_TIMEOUTS_STREAM = "commands:match-timeouts"
"""The clocks service's ``TimeOut`` commands to the match service (its pending commands), on a
stream of their own so that no timeout waits behind match creations; read by the match
service."""

RULES_REQUESTS_STREAM = "rules:requests"
"""Requests to the rules engines, written by every process's ``RulesClient`` (lobby, match);
read by the rules workers' consumer group, who answer on the asker's ``rules_replies_stream``."""


def rules_replies_stream(instance_id: str) -> str:
    """The replies of the rules workers to one process (its ``instance_id``), read by it only."""
    return f"rules:replies:{instance_id}"


BOT_TURNS_STREAM = "bot-turns"
"""Where the match service says a bot is to move (``BotTurnDue``), for the bots service."""

CLOCKS_STREAM = "clocks"
"""Where the match service says a clock was set (``ClockSet``), for the clocks service."""

WEBHOOK_DELIVERIES_QUEUE = "webhooks"
"""Celery's queue of webhook deliveries (a Redis list, not a stream, under Celery's own key
prefix): the webhooks dispatcher enqueues, the webhooks Celery workers send. Fresh deliveries
go here (and every release's workers read it)."""

WEBHOOK_BACKLOG_QUEUE = "webhooks:backlog"
"""Celery's queue of webhook deliveries that have waited (a backlog draining, retries, those
re-driven): the webhooks workers take from it and from the fresh queue in turns."""

WEBHOOK_QUEUE_MARKER = "webhooks:queue-marker"
"""A key the webhooks dispatchers keep in Redis: when it is gone, Redis lost its data (a
``FLUSHALL``, a restart without persistence), queued delivery tasks with it."""


def feed_ticket_key(digest: str) -> str:
    """The key of one feed ticket (a plain Redis string, by the ticket's SHA-256 ``digest``):
    the lobby and match services give it and redeem it (``shared.edge.feed_tickets``)."""
    return f"feed-ticket:{digest}"
