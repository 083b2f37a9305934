"""The Docker deployment's gateway routes exactly like the local stack's: one template."""

from __future__ import annotations

from services.operator.gateway import DEPLOY_CONFIG, deploy_config


def test_committed_deploy_config_is_current() -> None:
    assert DEPLOY_CONFIG.read_text() == deploy_config(), (
        "infra/deploy/gateway.conf is stale: run `python -m services.operator.gateway`"
    )
