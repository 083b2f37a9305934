from __future__ import annotations

import pytest

from shared.infra.settings import REDIS_LONGEST_BLOCK_S, Settings


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


def test_redis_clients_get_their_timeouts_and_one_shorter_than_a_blocking_read_is_refused() -> None:
    settings = Settings.from_env({"PLAYTABLE_REDIS_TIMEOUT_S": "7.5"})
    assert settings.redis_options() == {
        "socket_timeout": 7.5,
        "socket_connect_timeout": 2.0,
        "health_check_interval": 15.0,
    }
    with pytest.raises(SystemExit, match="PLAYTABLE_REDIS_TIMEOUT_S"):
        Settings.from_env({"PLAYTABLE_REDIS_TIMEOUT_S": str(REDIS_LONGEST_BLOCK_S)})
