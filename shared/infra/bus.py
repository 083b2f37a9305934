"""Redis streams as the message bus: publishing, and consumer groups that never lose an entry.

Each entry carries its payload bytes under the single field ``m``. Consumers acknowledge an entry
only after their handler succeeded; an entry whose handler failed, or whose consumer died, stays
pending and is claimed again once idle for ``claim_idle_ms``. An entry that keeps failing is
moved to a dead-letter stream so it stops blocking retries. Every process joins under a name of
its own, so members that died are removed once idle for ``dead_after_ms`` with nothing left
pending. Redis may lose everything at any time: consumers recreate their group and keep going.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import psycopg
import redis.asyncio as redis_async
from redis import exceptions as redis_errors
from redis.exceptions import RedisError, ResponseError

from shared.infra.settings import Settings

log = logging.getLogger(__name__)

PAYLOAD_FIELD = b"m"
DEFAULT_MAXLEN = 100_000

Handler = Callable[[str, bytes], Awaitable[None]]
BatchHandler = Callable[[list[tuple[str, bytes]]], Awaitable[None]]
"""Handles ``(entry_id, payload)`` pairs, in stream order, all or nothing."""
Entry = tuple[str, dict[bytes, bytes] | None]

# Redis unreachable, restarting or failing over: wait and try again.
TRANSIENT_ERRORS = (RedisError, OSError)
BACKING_SERVICE_OUTAGES = (
    redis_errors.ConnectionError,
    redis_errors.TimeoutError,
    OSError,
    psycopg.OperationalError,
)
"""What a handler fails with while Postgres or Redis is unreachable: retried in place."""

FORGET_IDLE_CONSUMERS = """
local stream, group, idle_ms, only = KEYS[1], ARGV[1], tonumber(ARGV[2]), ARGV[3]
local even_pending = ARGV[4] == 'even-pending'
local removed = {}
for _, fields in ipairs(redis.call('XINFO', 'CONSUMERS', stream, group)) do
    local consumer = {}
    for i = 1, #fields, 2 do consumer[fields[i]] = fields[i + 1] end
    if (consumer.pending == 0 or even_pending) and consumer.idle > idle_ms
        and (only == '' or consumer.name == only) then
        redis.call('XGROUP', 'DELCONSUMER', stream, group, consumer.name)
        table.insert(removed, consumer.name)
    end
end
return removed
"""
"""Remove the group's members idle over ``idle_ms`` with nothing pending (only the one named,
unless ``''``; pending or not with a fourth argument ``even-pending``, for a group whose
entries are worthless once old), and return their names. A script, so that no member reads an
entry between the check and the removal: removing a member drops its pending entries for good.
A live member removed meanwhile is created again by its next read."""


def redis_client(settings: Settings, **options: Any) -> redis_async.Redis:
    """A client of this deployment's Redis with its timeouts and health checks
    (``Settings.redis_options``): no call waits on a Redis that stopped answering for longer
    than ``redis_timeout_s``."""
    return redis_async.Redis.from_url(settings.redis_url, **{**settings.redis_options(), **options})


class OutageLog:
    """Logs that a server became unreachable once, and once that it answers again, however
    often the caller retries in between: a loop retrying every fraction of a second would
    otherwise fill the log with the same error (or traceback) for the whole outage."""

    def __init__(self, logger: logging.Logger, who: str, server: str = "redis") -> None:
        self._log = logger
        self._who = who
        self._server = server
        self._since: float | None = None

    @property
    def down(self) -> bool:
        """An outage was logged and its end not yet."""
        return self._since is not None

    def failed(self, error: BaseException) -> None:
        if self._since is None:
            self._since = time.monotonic()
            self._log.warning("%s: %s unreachable: %s; retrying", self._who, self._server, error)

    def succeeded(self) -> None:
        if self._since is not None:
            down_s = time.monotonic() - self._since
            self._since = None
            self._log.info("%s: %s reachable again after %.1f s", self._who, self._server, down_s)


def redis_text(value: bytes | str) -> str:
    """A name or id as Redis replied it, bytes or text by the client's decoding."""
    return value.decode() if isinstance(value, bytes) else value


def _bytes(value: bytes | str) -> bytes:
    return value.encode() if isinstance(value, str) else value


def _entries(raw: Sequence[Any]) -> list[Entry]:
    """``(id, fields)`` pairs with text ids; fields are None for entries deleted meanwhile."""
    entries: list[Entry] = []
    for entry_id, fields in raw:
        if fields is None:
            entries.append((redis_text(entry_id), None))
        else:
            fields_bytes = {_bytes(k): _bytes(v) for k, v in fields.items()}
            entries.append((redis_text(entry_id), fields_bytes))
    return entries


def read_entries(response: Any) -> list[Entry]:
    """Entries of an XREADGROUP reply in either the RESP2 (list) or RESP3 (dict) shape."""
    if not response:
        return []
    per_stream = response.values() if isinstance(response, dict) else [r[1] for r in response]
    entries: list[Entry] = []
    for raw in per_stream:
        # redis-py before 8 wraps RESP3 replies in one more list.
        if raw and isinstance(raw[0], list):
            raw = raw[0]
        entries.extend(_entries(raw))
    return entries


class Bus:
    """Publishes payloads on Redis streams, creates consumer groups, tails streams."""

    def __init__(self, redis: redis_async.Redis) -> None:
        self._redis = redis

    @property
    def redis(self) -> redis_async.Redis:
        """The client, for what the bus does not wrap (the command re-driver's look at who
        holds an entry)."""
        return self._redis

    async def publish(
        self, stream: str, payload: bytes, *, maxlen: int | None = DEFAULT_MAXLEN
    ) -> str:
        entry_id = await self._redis.xadd(
            stream, {PAYLOAD_FIELD: payload}, maxlen=maxlen, approximate=True
        )
        return redis_text(entry_id)

    async def publish_many(self, items: Sequence[tuple[str, bytes]]) -> list[str]:
        """Publish ``(stream, payload)`` pairs in order, in one round trip."""
        if not items:
            return []
        pipe = self._redis.pipeline(transaction=False)
        for stream, payload in items:
            pipe.xadd(stream, {PAYLOAD_FIELD: payload}, maxlen=DEFAULT_MAXLEN, approximate=True)
        return [redis_text(entry_id) for entry_id in await pipe.execute()]

    async def ensure_group(self, stream: str, group: str, *, start_id: str = "0") -> None:
        """Create ``group`` on ``stream`` (and the stream itself) unless it exists."""
        try:
            await self._redis.xgroup_create(stream, group, id=start_id, mkstream=True)
        except ResponseError as exc:
            if not str(exc).startswith("BUSYGROUP"):
                raise

    async def newest_id(self, stream: str) -> str:
        """The id of the stream's newest entry (``0-0`` when it has none): tail it from there."""
        newest = await self._redis.xrevrange(stream, count=1)
        return redis_text(newest[0][0]) if newest else "0-0"

    async def read(
        self, stream: str, after_id: str, *, block_ms: int, count: int = 512
    ) -> list[Entry]:
        """Entries after ``after_id``, outside any group; waits up to ``block_ms`` for one."""
        response = await self._redis.xread({stream: after_id}, count=count, block=block_ms)
        return read_entries(response)


class Consumer:
    """One member of a consumer group: handles entries one at a time, at least once each.

    ``block_ms`` is how long a read waits for new entries (0: return at once, never block).
    ``concurrent`` handles the entries of one read side by side, for handlers whose entries
    are independent of each other (their order is then not kept). ``dead_after_ms`` is how long
    a member of the group (this one or another) must stay idle, with nothing pending, before
    the recovery scan deems it dead and removes it from the group.

    ``batch_handler``, if given, handles all the entries of one read (or one recovery claim)
    in a single call, in stream order, and must succeed or fail as a whole (a transaction).
    Outages are retried as for ``handler``; any other failure falls back to ``handler``, one
    entry at a time, so that only an entry that fails on its own is retried or dead-lettered.

    ``linger_s``: after a read that did not fill a batch, wait this long before reading again,
    so that under a trickle of entries each read still takes several (a batch handler costs a
    transaction per read, whatever its size); entries wait at most that long more.

    The group is made by the first read that finds it missing (as after Redis lost it), from
    ``start_id`` on (``$``: only entries added after it).
    """

    def __init__(
        self,
        redis: redis_async.Redis,
        stream: str,
        group: str,
        name: str,
        handler: Handler,
        *,
        batch: int = 64,
        block_ms: int = 1000,
        claim_idle_ms: int = 30_000,
        dead_after_ms: int = 300_000,
        max_deliveries: int = 5,
        dead_letter_stream: str | None = None,
        concurrent: bool = False,
        outages: tuple[type[BaseException], ...] = BACKING_SERVICE_OUTAGES,
        batch_handler: BatchHandler | None = None,
        linger_s: float = 0.0,
        start_id: str = "0",
    ) -> None:
        self._redis = redis
        self._start_id = start_id
        self._joined = False
        """Whether a read of the group succeeded: a group missing after that was lost."""
        self._outages = outages
        self._handler_outage = OutageLog(log, f"handler of {stream}", "a backing service")
        self._stop = asyncio.Event()
        self._concurrent = concurrent
        self._bus = Bus(redis)
        self.stream = stream
        self.group = group
        self.name = name
        self._handler = handler
        self._batch_handler = batch_handler
        self._linger_s = linger_s
        self._batch = batch
        self._block_ms = block_ms
        self._claim_idle_ms = claim_idle_ms
        self._dead_after_ms = dead_after_ms
        self._max_deliveries = max_deliveries
        self.dead_letter_stream = dead_letter_stream or f"{stream}:dead"
        self._claim_cursor = "0-0"
        self._next_recovery = 0.0
        self._forget_idle_consumers = redis.register_script(FORGET_IDLE_CONSUMERS)

    async def run(self, stop: asyncio.Event) -> None:
        """Handle entries until ``stop`` is set (or cancelled), then leave the group; outages
        of Redis only pause the loop."""
        outage = OutageLog(log, f"consumer {self.name} on {self.stream}")
        self._stop = stop
        backoff = 0.1
        try:
            while not stop.is_set():
                try:
                    await self.step()
                    outage.succeeded()
                    backoff = 0.1
                except TRANSIENT_ERRORS as exc:
                    outage.failed(exc)
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), timeout=backoff)
                    backoff = min(backoff * 2, 5.0)
        finally:
            await self._leave()

    async def _leave(self) -> None:
        """Remove this member from the group unless entries are still pending on it (they stay
        for another member to claim, and the member for the recovery scan to remove later):
        every process joins under a new name, so names that are never removed pile up."""
        with contextlib.suppress(*TRANSIENT_ERRORS):
            await self._forget_idle_consumers(keys=[self.stream], args=[self.group, -1, self.name])

    async def step(self) -> int:
        """Retry entries idle too long, then read new ones; return how many were handled."""
        try:
            handled = await self._recover() if self._recovery_due() else 0
            # Do not block for new entries while old ones were waiting: come back soon.
            handled += await self._read_new(block=handled == 0)
        except ResponseError as exc:
            if not str(exc).startswith("NOGROUP"):
                raise
            if self._joined:
                log.warning(
                    "group %s on %s is gone (redis restarted?); recreating", self.group, self.stream
                )
            else:  # its first read: joining a group nobody made yet
                log.info("making group %s on %s", self.group, self.stream)
            await self._bus.ensure_group(self.stream, self.group, start_id=self._start_id)
            self._claim_cursor = "0-0"
            return 0
        self._joined = True
        return handled

    def _recovery_due(self) -> bool:
        """Scan for abandoned entries a few times per ``claim_idle_ms``, not on every read:
        nothing becomes claimable sooner, and the hot loop saves a round trip per step."""
        now = time.monotonic()
        if self._claim_cursor == "0-0" and now < self._next_recovery:
            return False
        self._next_recovery = now + self._claim_idle_ms / 4000
        return True

    async def claim_all(self, stop: asyncio.Event) -> int:
        """Claim and handle every entry pending in the group, however briefly, before reading
        new ones: for a member that takes over from one known to be gone (the only one that
        reads, see the webhook dispatcher), so entries stay in stream order."""
        self._stop = stop
        handled = 0
        self._claim_cursor = "0-0"
        while True:
            handled += await self._recover(min_idle_ms=0)
            if self._claim_cursor == "0-0":
                return handled

    async def _recover(self, min_idle_ms: int | None = None) -> int:
        """Claim entries pending longer than ``claim_idle_ms``, whoever had them, and retry;
        at the end of each pass over the pending entries, remove the dead members."""
        next_cursor, claimed, *_ = await self._redis.xautoclaim(
            self.stream,
            self.group,
            self.name,
            min_idle_time=self._claim_idle_ms if min_idle_ms is None else min_idle_ms,
            start_id=self._claim_cursor,
            count=self._batch,
        )
        self._claim_cursor = redis_text(next_cursor)
        if self._claim_cursor == "0-0":
            await self._forget_dead_consumers()
        entries = _entries(claimed)
        if not entries:
            return 0
        deliveries = await self._delivery_counts([entry_id for entry_id, _ in entries])
        handled = 0
        retried: list[tuple[str, dict[bytes, bytes], int]] = []
        for entry_id, fields in entries:
            if fields is None:  # trimmed away while pending: nothing left to handle
                await self._redis.xack(self.stream, self.group, entry_id)
                continue
            count = deliveries.get(entry_id, 1)
            if count > self._max_deliveries:
                await self._dead_letter(entry_id, fields, f"abandoned after {count - 1} deliveries")
            else:
                retried.append((entry_id, fields, count))
            handled += 1
        if self._batch_handler is not None:  # together, then acknowledged together
            done = await self._handle_batch(retried)
            if done:
                await self._redis.xack(self.stream, self.group, *done)
        else:
            for entry_id, fields, count in retried:
                await self._handle(entry_id, fields, count)
        return handled

    async def _forget_dead_consumers(self) -> None:
        """Members idle for ``dead_after_ms`` with nothing pending left (whatever they had
        was claimed by this scan or earlier ones) are dead: remove them from the group."""
        removed = await self._forget_idle_consumers(
            keys=[self.stream], args=[self.group, self._dead_after_ms, ""]
        )
        if removed:
            names = ", ".join(redis_text(name) for name in removed)
            log.info("removed dead consumers %s of group %s on %s", names, self.group, self.stream)

    async def _read_new(self, *, block: bool) -> int:
        response = await self._redis.xreadgroup(
            self.group,
            self.name,
            {self.stream: ">"},
            count=self._batch,
            block=self._block_ms if block and self._block_ms > 0 else None,
        )
        entries = read_entries(response)
        if self._batch_handler is not None:
            done = await self._handle_batch(
                [(entry_id, fields or {}, 1) for entry_id, fields in entries]
            )
            if done:  # one acknowledgement for the whole batch
                await self._redis.xack(self.stream, self.group, *done)
            if 0 < len(entries) < self._batch and self._linger_s > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), timeout=self._linger_s)
            return len(entries)
        handling = (
            self._handle(entry_id, fields or {}, 1, ack=False) for entry_id, fields in entries
        )
        if self._concurrent:
            succeeded = await asyncio.gather(*handling)
        else:
            succeeded = [await handled for handled in handling]
        done = [entry_id for (entry_id, _), ok in zip(entries, succeeded, strict=True) if ok]
        if done:  # one acknowledgement for the whole batch
            await self._redis.xack(self.stream, self.group, *done)
        return len(entries)

    async def _delivery_counts(self, entry_ids: list[str]) -> dict[str, int]:
        pipe = self._redis.pipeline(transaction=False)
        for entry_id in entry_ids:
            pipe.xpending_range(self.stream, self.group, min=entry_id, max=entry_id, count=1)
        counts: dict[str, int] = {}
        for details in await pipe.execute():
            for detail in details:
                counts[redis_text(detail["message_id"])] = int(detail["times_delivered"])
        return counts

    async def _handle(
        self, entry_id: str, fields: dict[bytes, bytes], deliveries: int, *, ack: bool = True
    ) -> bool:
        """Run the handler; True if it succeeded (acknowledged here unless ``ack`` is False,
        when the caller acknowledges a batch at once)."""
        payload = fields.get(PAYLOAD_FIELD, b"")
        try:
            if not await self._through_outages(lambda: self._handler(entry_id, payload)):
                return False  # stopping during an outage: the entry stays pending
        except Exception as exc:
            if deliveries >= self._max_deliveries:
                log.exception("entry %s on %s failed for the last time", entry_id, self.stream)
                await self._dead_letter(entry_id, fields, repr(exc))
            else:
                log.exception("entry %s on %s failed; it will be retried", entry_id, self.stream)
            return False
        if ack:
            await self._redis.xack(self.stream, self.group, entry_id)
        return True

    async def _through_outages(self, run: Callable[[], Awaitable[None]]) -> bool:
        """Run a handler (``run`` calls it), again and again while it fails for a backing
        service's outage (``outages``): those failures say nothing about the entries, so they
        neither count towards dead-lettering nor wait for the recovery scan. False if stopped
        meanwhile."""
        backoff = 0.1
        while True:
            try:
                await run()
            except self._outages as exc:
                self._handler_outage.failed(exc)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), timeout=backoff)
                if self._stop.is_set():
                    return False
                backoff = min(backoff * 2, 5.0)
            else:
                self._handler_outage.succeeded()
                return True

    async def _handle_batch(self, entries: list[tuple[str, dict[bytes, bytes], int]]) -> list[str]:
        """Run the batch handler on ``(entry_id, fields, deliveries)`` triples; return the ids
        of the entries handled, for the caller to acknowledge. If the batch fails for another
        reason than an outage, its entries are handled one at a time by the entry handler, so
        that one bad entry is retried (and dead-lettered in the end) on its own."""
        if not entries or self._batch_handler is None:
            return []
        batch_handler = self._batch_handler
        items = [(entry_id, fields.get(PAYLOAD_FIELD, b"")) for entry_id, fields, _ in entries]
        try:
            if not await self._through_outages(lambda: batch_handler(items)):
                return []  # stopping during an outage: the entries stay pending
        except Exception:
            log.warning(
                "a batch of %d entries on %s failed; handling them one at a time",
                len(entries),
                self.stream,
                exc_info=True,
            )
            done = []
            for entry_id, fields, deliveries in entries:
                if await self._handle(entry_id, fields, deliveries, ack=False):
                    done.append(entry_id)
            return done
        return [entry_id for entry_id, _ in items]

    async def _dead_letter(self, entry_id: str, fields: dict[bytes, bytes], error: str) -> None:
        """Park the entry on the dead-letter stream and acknowledge it, atomically."""
        pipe = self._redis.pipeline(transaction=True)
        pipe.xadd(
            self.dead_letter_stream,
            {
                PAYLOAD_FIELD: fields.get(PAYLOAD_FIELD, b""),
                b"error": error.encode(),
                b"source_id": entry_id.encode(),
                b"source_stream": self.stream.encode(),
            },
            maxlen=DEFAULT_MAXLEN,
            approximate=True,
        )
        pipe.xack(self.stream, self.group, entry_id)
        await pipe.execute()
