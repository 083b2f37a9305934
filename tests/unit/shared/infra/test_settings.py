from __future__ import annotations

import pytest

from shared.infra.settings import Settings


def test_environment_overrides_defaults_with_types() -> None:
    settings = Settings.from_env(
        {"DATABASE_URL": "postgresql://db/x", "PLAYTABLE_MATCH_PORT": "9100", "MATCH_PORT": "1"}
    )
    assert settings.database_url == "postgresql://db/x"
    assert settings.match_port == 9100
    assert settings.lobby_port == 8001
    assert settings.instance_id  # generated
    assert settings.stream("rules:requests") == "playtable:{rules:requests}"


def test_prefixed_name_wins_and_bad_values_are_refused() -> None:
    both = Settings.from_env({"PLAYTABLE_REDIS_URL": "redis://a", "REDIS_URL": "redis://b"})
    assert both.redis_url == "redis://a"
    with pytest.raises(SystemExit, match="match_port"):
        Settings.from_env({"PLAYTABLE_MATCH_PORT": "eighty"})
