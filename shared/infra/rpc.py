"""Request/reply over Redis streams: how the lobby and match services ask the rules service.

Requests go on one stream read by the rules workers' consumer group, so any number of workers
share the load. Each caller process reads replies from a stream of its own, matched to waiting
futures by request id. A worker reads without acknowledgement (nothing stays pending): a
request lost with its worker is one its caller sends again, as it does any request left
unanswered, and each round trip of a worker writes the replies to one read with the next read.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

import msgspec
import redis.asyncio as redis_async
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from shared.domain import rules_api as api
from shared.domain.messages import new_id, now_ms
from shared.infra import tracing
from shared.infra.bus import (
    FORGET_IDLE_CONSUMERS,
    PAYLOAD_FIELD,
    TRANSIENT_ERRORS,
    Bus,
    OutageLog,
    read_entries,
)
from shared.infra.logs import correlation_id
from shared.infra.metrics import RULES_DURATION, RULES_TIMEOUTS

log = logging.getLogger(__name__)
ReplyT = TypeVar("ReplyT")

REPLY_STREAM_TTL_S = 3600
REPLY_STREAM_MAXLEN = 10_000
REPLY_TTL_REFRESH_S = 60.0
"""A worker sets a reply stream's expiry with its first reply and again with the first after
this long, not with every batch: a command less per batch, the stream still expiring within
an hour of its last reply."""
REQUEST_STREAM_MAXLEN = 10_000
"""Requests kept on the request stream (read ones stay, nothing acknowledges them): far more
than are ever waiting, since a request is useless past its caller's timeout."""
RESEND_AFTER_S = 1.0
READ_BLOCK_S = 0.25
"""How long the reply reader's read waits for a reply: also how long stopping waits for it."""
STOP_GRACE_S = 2.0
"""An unanswered rules request is sent again after this long (until the call's timeout)."""


class RulesUnavailable(RuntimeError):
    """No rules worker answered in time, or the rules service failed on the request."""


_call_encoder = msgspec.json.Encoder()
_reply_decoder = msgspec.json.Decoder(api.RulesReply)
_call_decoder = msgspec.json.Decoder(api.RulesCall)


class StreamWriter:
    """Adds requests to a stream, those added in the same turn of the event loop in one
    pipeline: under load, many requests then cost one write and one round trip instead of one
    each."""

    def __init__(self, redis: redis_async.Redis) -> None:
        self.redis = redis
        self._pending: list[tuple[str, bytes]] = []
        self._sending: asyncio.Task[None] | None = None

    async def add(self, stream: str, payload: bytes) -> None:
        """Add ``payload`` once the batch it joins is written. A caller that stops waiting
        (its own deadline) leaves the write to finish, or fail within the client's timeout,
        by itself: cancelled inside its read, the pipeline's connection would be dropped."""
        self._pending.append((stream, payload))
        if self._sending is None:
            self._sending = asyncio.create_task(self._send())
            self._sending.add_done_callback(_retrieve)
        await asyncio.shield(self._sending)

    async def _send(self) -> None:
        try:
            await asyncio.sleep(0)  # let the other callers of this turn join the batch
        finally:  # even if cancelled, so that the next caller starts a new batch
            batch, self._pending, self._sending = self._pending, [], None
        pipe = self.redis.pipeline(transaction=False)
        for stream, payload in batch:
            pipe.xadd(
                stream, {PAYLOAD_FIELD: payload}, maxlen=REQUEST_STREAM_MAXLEN, approximate=True
            )
        await pipe.execute()


def _retrieve(task: asyncio.Task[None]) -> None:
    """Take a finished write's error: its callers may all have stopped waiting for it (they
    send again, or give up), and an error nobody took is logged with its traceback."""
    if not task.cancelled():
        task.exception()


class RulesClient:
    """Sends rules requests and awaits their replies (one reply reader per process)."""

    def __init__(
        self, redis: redis_async.Redis, *, request_stream: str, reply_stream: str, timeout_s: float
    ) -> None:
        self.redis = redis
        self.request_stream = request_stream
        self.reply_stream = reply_stream
        self.timeout_s = timeout_s
        self._writer = StreamWriter(redis)
        self._waiting: dict[str, asyncio.Future[api.RulesReply]] = {}
        self._reader: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()

    async def start(self) -> None:
        self._reader = asyncio.create_task(self._read_replies(), name="rules-replies")

    async def stop(self) -> None:
        """Let the reply reader end after its current read rather than cancel it: a task
        cancelled inside a redis-py read closes that connection, which waited forever on a
        server that did not answer (seen with redis-py 8.1, before the clients had a connect
        timeout, which bounds it now), and a service stopping would hang with it."""
        if self._reader is not None:
            self._stopping.set()
            done, _ = await asyncio.wait({self._reader}, timeout=READ_BLOCK_S + STOP_GRACE_S)
            if not done:  # Redis does not answer: give up on the reader, without waiting
                self._reader.cancel()
        with contextlib.suppress(*TRANSIENT_ERRORS, TimeoutError):  # the stream expires anyway
            await asyncio.wait_for(self.redis.delete(self.reply_stream), STOP_GRACE_S)

    async def call(
        self, request: api.RulesRequest, reply_type: type[ReplyT]
    ) -> ReplyT | api.Rejected:
        """Send ``request``; return the decoded reply, or the rules' rejection. Inside a
        trace, a client span covers the wait, and the request carries it to the worker."""
        kind = type(request).__name__
        with tracing.within_trace(f"rules {kind}", tracing.CLIENT, _attributes(request)) as span:
            reply = await self._call(request, kind)
            if reply.error is not None:
                raise RulesUnavailable(reply.error)
            if reply.rejected is not None:
                span.set_attribute("playtable.rules.rejected", reply.rejected.code)
                return reply.rejected
        return msgspec.json.decode(reply.body, type=reply_type)

    async def _call(self, request: api.RulesRequest, kind: str) -> api.RulesReply:
        request_id = new_id()
        future: asyncio.Future[api.RulesReply] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        call = api.RulesCall(
            request_id=request_id,
            reply_to=self.reply_stream,
            request=request,
            deadline_ms=now_ms() + int(self.timeout_s * 1000),
            correlation_id=correlation_id(),
            traceparent=tracing.traceparent(),
        )
        started = time.perf_counter()
        try:
            reply = await self._send_until_answered(_call_encoder.encode(call), future)
        except (TimeoutError, RedisConnectionError) as error:
            if isinstance(error, TimeoutError):
                RULES_TIMEOUTS.labels(kind).inc()
            raise RulesUnavailable("the rules service did not answer in time") from error
        finally:
            self._waiting.pop(request_id, None)
        RULES_DURATION.labels(kind).observe(time.perf_counter() - started)
        return reply

    async def _send_until_answered(
        self, payload: bytes, future: asyncio.Future[api.RulesReply]
    ) -> api.RulesReply:
        """Send the request, and again each ``RESEND_AFTER_S`` it stays unanswered, until
        ``timeout_s``: Redis may have lost it or its reply (wiped, restarted), and a request
        changes nothing but its reply, so a repeat is harmless and the first reply wins."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        while True:
            # a write given up (by this caller, or by the client's timeout) is sent again below
            with contextlib.suppress(TimeoutError, RedisTimeoutError):
                writing = self._writer.add(self.request_stream, payload)
                await asyncio.wait_for(writing, max(deadline - loop.time(), 0))
            wait = min(RESEND_AFTER_S, deadline - loop.time())
            try:
                return await asyncio.wait_for(asyncio.shield(future), max(wait, 0))
            except TimeoutError:
                if loop.time() >= deadline:
                    raise

    async def _read_replies(self) -> None:
        last_id = "0"  # the stream is this process's own: every entry in it is for us
        outage = OutageLog(log, f"rules reply reader of {self.reply_stream}")
        while not self._stopping.is_set():
            try:
                batches = await self.redis.xread(
                    {self.reply_stream: last_id}, block=int(READ_BLOCK_S * 1000), count=512
                )
            except TRANSIENT_ERRORS as error:
                outage.failed(error)
                await asyncio.sleep(0.5)
                continue
            outage.succeeded()
            for _stream, entries in batches or ():
                for entry_id, fields in entries:
                    last_id = entry_id
                    reply = _reply_decoder.decode(fields[PAYLOAD_FIELD])
                    future = self._waiting.get(reply.request_id)
                    if future is not None and not future.done():
                        future.set_result(reply)


Reply = tuple[str, bytes]
"""A reply and the stream it goes to (its caller's)."""
Answer = Callable[[bytes], Reply | None]
"""Answers a request's payload; None when nobody waits for the answer."""


class Responder:
    """A member of the rules workers' consumer group, answering requests a batch at a time.

    Each round trip to Redis is one pipeline: the replies to the last batch, then the read of
    the next (``XREADGROUP NOACK``, waiting up to ``block_ms``). Redis adds the replies before
    the read waits, so a lone request's reply is not held back, and requests that came while a
    batch was answered are read, answered and written back together: one write per batch, where
    a read, the replies and an acknowledgement took three. Reading without acknowledgement
    loses no guarantee: a request read by a worker that died is sent again by its caller after
    ``RESEND_AFTER_S``, long before another member could claim it, and a claimed one would be
    past its deadline."""

    def __init__(
        self,
        redis: redis_async.Redis,
        stream: str,
        group: str,
        name: str,
        answer: Answer,
        *,
        dead_after_ms: int,
        batch: int = 64,
        block_ms: int = 1000,
    ) -> None:
        self._redis = redis
        self.stream = stream
        self.group = group
        self.name = name
        self._answer = answer
        self._dead_after_ms = dead_after_ms
        self._batch = batch
        self._block_ms = block_ms
        self._forget_idle_members = redis.register_script(FORGET_IDLE_CONSUMERS)
        self._expiring: set[str] = set()
        self._expiring_until = 0.0
        self._joined = False
        """Whether a read of the group succeeded: a group missing after that was lost."""

    async def run(self, stop: asyncio.Event) -> None:
        """Answer requests until ``stop`` is set, then write the last replies and leave the
        group; outages of Redis only pause the loop (the unwritten replies go again after)."""
        outage = OutageLog(log, f"rules worker {self.name} on {self.stream}")
        replies: list[Reply] = []
        backoff = 0.1
        scanning = asyncio.create_task(self._forget_dead_members(stop))
        try:
            while True:
                stopping = stop.is_set()
                try:
                    requests = await self._exchange(replies, read=not stopping)
                except TRANSIENT_ERRORS as error:
                    if stopping:
                        return  # the callers send their requests again to another worker
                    outage.failed(error)
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), backoff)
                    backoff = min(backoff * 2, 5.0)
                    continue
                if stopping:
                    return
                outage.succeeded()
                backoff = 0.1
                replies = self._answer_all(requests)
        finally:
            scanning.cancel()
            with contextlib.suppress(*TRANSIENT_ERRORS):
                await self._forget_idle_members(
                    keys=[self.stream], args=[self.group, -1, self.name, "even-pending"]
                )

    def _answer_all(self, requests: list[bytes]) -> list[Reply]:
        """The replies to a batch: a request the answer fails on is left unanswered (its
        caller sends it again, then gives up), and the others are answered all the same."""
        replies = []
        for payload in requests:
            try:
                reply = self._answer(payload)
            except Exception:
                log.exception("a rules request could not be answered")
                continue
            if reply is not None:
                replies.append(reply)
        return replies

    async def _exchange(self, replies: list[Reply], *, read: bool) -> list[bytes]:
        """Write ``replies`` and, if ``read``, read the next requests, in one round trip."""
        pipe = self._redis.pipeline(transaction=False)
        for stream, reply in replies:
            pipe.xadd(stream, {PAYLOAD_FIELD: reply}, maxlen=REPLY_STREAM_MAXLEN, approximate=True)
        expiring = self._expiries_due(replies)
        for stream in expiring:
            pipe.expire(stream, REPLY_STREAM_TTL_S)
        if read:
            pipe.xreadgroup(
                self.group,
                self.name,
                {self.stream: ">"},
                count=self._batch,
                block=self._block_ms,
                noack=True,
            )
        outcomes = await pipe.execute(raise_on_error=False) if len(pipe) else []
        self._expiring |= expiring
        for outcome in outcomes[: len(outcomes) - read]:
            if isinstance(outcome, Exception):  # a reply stream that is something else
                log.warning("a rules reply was not written: %s", outcome)
        if not read:
            return []
        return await self._requests(outcomes[-1])

    async def _requests(self, read: Any) -> list[bytes]:
        """The payloads of a read; none if the group is gone (Redis wiped), which is made
        again, and the reply streams' expiries with it."""
        if isinstance(read, ResponseError) and str(read).startswith("NOGROUP"):
            if self._joined:
                log.warning(
                    "group %s on %s is gone (redis wiped?); recreating", self.group, self.stream
                )
            else:  # its first read: joining a group nobody made yet
                log.info("making group %s on %s", self.group, self.stream)
            await Bus(self._redis).ensure_group(self.stream, self.group)
            self._expiring.clear()
            return []
        if isinstance(read, Exception):
            raise read
        self._joined = True
        return [(fields or {}).get(PAYLOAD_FIELD, b"") for _, fields in read_entries(read)]

    def _expiries_due(self, replies: list[Reply]) -> set[str]:
        """The reply streams whose expiry was not set in this ``REPLY_TTL_REFRESH_S`` window."""
        now = time.monotonic()
        if now >= self._expiring_until:
            self._expiring.clear()
            self._expiring_until = now + REPLY_TTL_REFRESH_S
        return {stream for stream, _ in replies} - self._expiring

    async def _forget_dead_members(self, stop: asyncio.Event) -> None:
        """Every process joins under a name of its own: remove the members idle for
        ``dead_after_ms`` (killed without a clean stop), a few times per that period, beside
        the round trips of requests and replies rather than between them."""
        while not stop.is_set():
            with contextlib.suppress(*TRANSIENT_ERRORS):  # the worker's own loop logs outages
                removed = await self._forget_idle_members(
                    keys=[self.stream], args=[self.group, self._dead_after_ms, "", "even-pending"]
                )
                if removed:
                    log.info(
                        "removed dead members %s of %s on %s", removed, self.group, self.stream
                    )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self._dead_after_ms / 4000)


def _attributes(request: api.RulesRequest) -> dict[str, str]:
    """What a rules span may say about a request: its kind and game, nothing of its state."""
    game = getattr(request, "game", None)
    return {
        "playtable.rules.request": type(request).__name__,
        **({"playtable.game": game} if game else {}),
    }


def rules_span(call: api.RulesCall) -> Any:
    """The rules worker's span answering ``call``: a child of its caller's client span."""
    name = f"rules {type(call.request).__name__}"
    return tracing.continued(name, tracing.SERVER, call.traceparent, _attributes(call.request))


def decode_call(payload: bytes) -> api.RulesCall:
    return _call_decoder.decode(payload)


def encode_reply(request_id: str, outcome: Any) -> bytes:
    """The reply to a request: a rejection, or any encodable body."""
    if isinstance(outcome, api.Rejected):
        reply = api.RulesReply(request_id=request_id, rejected=outcome)
    else:
        reply = api.RulesReply(
            request_id=request_id, body=msgspec.Raw(_call_encoder.encode(outcome))
        )
    return _call_encoder.encode(reply)


def encode_failure(request_id: str, error: str) -> bytes:
    return _call_encoder.encode(api.RulesReply(request_id=request_id, error=error))
