"""Redis keys touched together share a Redis Cluster slot (their hash tag), and the streams
spread over the slots: what running on Redis Cluster needs of the key names."""

from __future__ import annotations

from redis.crc import key_slot

from shared.edge.ratelimit import RateLimiter
from shared.infra import streams
from shared.infra.settings import Settings, stream_key, stream_name

SETTINGS = Settings(stream_prefix="playtable")
STREAMS = [
    "match-events",
    "lobby-events",
    "commands:match",
    "commands:match-timeouts",
    "rules:requests",
    "rules:replies:x",
]


def slot(key: str) -> int:
    return key_slot(key.encode())


def test_a_stream_and_its_dead_letters_share_a_slot_and_streams_spread() -> None:
    """A consumer parks an entry on ``<stream>:dead`` and acknowledges it in one MULTI."""
    for name in STREAMS:
        key = SETTINGS.stream(name)
        assert key == stream_key("playtable", name) and stream_name("playtable", key) == name
        assert slot(f"{key}:dead") == slot(key)
    assert len({slot(SETTINGS.stream(name)) for name in STREAMS}) == len(STREAMS)


def test_the_names_of_running_deployments_keys_never_change() -> None:
    """A deployment's Redis holds these keys, their groups and entries: renaming one loses them."""
    assert SETTINGS.stream(streams.MATCH_EVENTS_STREAM) == "playtable:{match-events}"
    assert SETTINGS.stream(streams.LOBBY_EVENTS_STREAM) == "playtable:{lobby-events}"
    assert SETTINGS.stream(streams.MATCH_COMMANDS_STREAM) == "playtable:{commands:match}"
    assert SETTINGS.stream(streams.MATCH_TIMEOUTS_STREAM) == "playtable:{commands:match-timeouts}"
    assert SETTINGS.stream(streams.RULES_REQUESTS_STREAM) == "playtable:{rules:requests}"
    assert SETTINGS.stream(streams.rules_replies_stream("x")) == "playtable:{rules:replies:x}"
    assert SETTINGS.stream(streams.BOT_TURNS_STREAM) == "playtable:{bot-turns}"
    assert SETTINGS.stream(streams.CLOCKS_STREAM) == "playtable:{clocks}"
    assert SETTINGS.stream(streams.WEBHOOK_DELIVERIES_QUEUE) == "playtable:{webhooks}"
    assert SETTINGS.stream(streams.WEBHOOK_BACKLOG_QUEUE) == "playtable:{webhooks:backlog}"
    assert SETTINGS.stream(streams.WEBHOOK_QUEUE_MARKER) == "playtable:{webhooks:queue-marker}"
    assert SETTINGS.stream(streams.feed_ticket_key("ab12")) == "playtable:{feed-ticket:ab12}"


def test_a_requests_rate_limit_buckets_share_a_slot() -> None:
    """One script takes from the address's bucket and the app key's; the feed slots' renewal
    script takes many keys of one kind at once."""
    limiter = RateLimiter(SETTINGS)
    scope = {
        "type": "http",
        "client": ("203.0.113.9", 5000),
        "headers": [(b"x-api-key", b"pt_example")],
    }
    for kind in ("read", "write", "live-feeds"):
        keys = limiter._keys(kind, scope)
        assert len(keys) == 2 and len({slot(key) for key in keys}) == 1, keys
    other = {**scope, "client": ("198.51.100.7", 1), "headers": [(b"x-api-key", b"pt_other")]}
    assert {slot(k) for k in limiter._keys("live-feeds", other)} == {
        slot(k) for k in limiter._keys("live-feeds", scope)
    }
