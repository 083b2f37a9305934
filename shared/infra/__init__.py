"""Infrastructure every service runs on: Postgres, Redis streams, the event store, RPC, logs,
metrics, traces, settings and sealed secrets. Knows nothing of HTTP."""
