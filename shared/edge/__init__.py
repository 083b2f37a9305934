"""The HTTP edge the public services share: the Litestar app, RFC 9457 problems, the request
guard, the contract's helpers, app keys, rate limits, idempotency, paging and event feeds."""
