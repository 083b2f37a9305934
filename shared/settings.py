"""Typed settings read from the environment in one place."""

from __future__ import annotations

import os
import socket
import uuid

import msgspec


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    database_url: str = "postgresql://postgres@127.0.0.1:5432/playtable"
    redis_url: str = "redis://127.0.0.1:6379/0"
    host: str = "127.0.0.1"
    lobby_port: int = 8001
    match_port: int = 8002
    rules_port: int = 8003
    instance_id: str = ""
    rules_timeout_s: float = 5.0
    db_pool_min: int = 2
    db_pool_max: int = 10
    log_level: str = "info"
    stream_prefix: str = "playtable"

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Settings:
        """Read ``PLAYTABLE_*`` variables (and the conventional ``DATABASE_URL``/``REDIS_URL``)."""
        env = os.environ if environ is None else environ
        raw: dict[str, str] = {}
        for field in msgspec.structs.fields(cls):
            for key in (f"PLAYTABLE_{field.name.upper()}", field.name.upper()):
                if field.name in ("database_url", "redis_url") or key.startswith("PLAYTABLE_"):
                    if key in env:
                        raw[field.name] = env[key]
                        break
        settings = msgspec.convert(raw, cls, strict=False)
        if not settings.instance_id:
            instance = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
            settings = msgspec.structs.replace(settings, instance_id=instance)
        return settings

    def stream(self, name: str) -> str:
        """The Redis key of a named stream, under this deployment's prefix."""
        return f"{self.stream_prefix}:{name}"
