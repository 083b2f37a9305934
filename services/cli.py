"""The ``playtable`` command: run a service, the whole stack, the contract, or a benchmark."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from pathlib import Path

from shared.settings import Settings

CONTRACT_PATH = Path(__file__).resolve().parents[1] / "openapi" / "openapi.json"


def _logging(settings: Settings) -> None:
    logging.basicConfig(
        level=settings.log_level.upper(),
        format='{"time":"%(asctime)s","level":"%(levelname)s","logger":"%(name)s","message":"%(message)s"}',
    )


def _serve_http(app_factory_path: str, port: int, settings: Settings) -> None:
    """Serve with ``settings.http_workers`` processes sharing the port (one app each)."""
    import uvicorn

    uvicorn.run(
        app_factory_path,
        factory=True,
        host=settings.host,
        port=port,
        workers=settings.http_workers,
        loop="uvloop",
        http="httptools",
        log_level="warning",
        access_log=False,
        lifespan="on",
    )


def run_rules(settings: Settings) -> None:
    from services.rules.worker import serve

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        await serve(settings, stop)

    import uvloop

    uvloop.run(main())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="playtable", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("lobby", help="run the lobby service (HTTP)")
    commands.add_parser("match", help="run the match service (HTTP and command consumer)")
    commands.add_parser("rules", help="run a rules worker (consumer only)")
    commands.add_parser("webhooks", help="run the webhook dispatcher and a Celery worker")
    commands.add_parser("webhooks-api", help="run the webhooks service's HTTP API")
    stack = commands.add_parser("stack", help="run every service as its own process")
    stack.add_argument("--rules-workers", type=int, default=1)
    contract = commands.add_parser("openapi", help="write the OpenAPI contract to openapi/")
    contract.add_argument(
        "--check", action="store_true", help="fail if the committed file is stale"
    )
    commands.add_parser(
        "verify", help="re-fold every stored match and compare its snapshots (exit 1 if any differ)"
    )
    bench = commands.add_parser("bench", help="measure speed")
    bench_kinds = bench.add_subparsers(dest="bench", required=True)
    engine = bench_kinds.add_parser("engine", help="random playouts of one game on one core")
    engine.add_argument("game")
    engine.add_argument("--players", type=int, default=None)
    engine.add_argument("--games", type=int, default=2000)
    engine.add_argument("--seed", type=int, default=1)
    api = bench_kinds.add_parser("api", help="moves through the running services")
    api.add_argument("--matches", type=int, default=50)
    api.add_argument("--seconds", type=float, default=20.0)
    api.add_argument("--lobby", default=None, help="lobby URL (default: from settings)")
    api.add_argument("--match", default=None, help="match URL (default: from settings)")
    memory = bench_kinds.add_parser("memory", help="resident memory with many live matches")
    memory.add_argument("--matches", type=int, default=10_000)
    hooks = bench_kinds.add_parser("webhooks", help="webhook deliveries to a local receiver")
    hooks.add_argument("--subscriptions", type=int, default=100)
    hooks.add_argument("--events", type=int, default=100)
    hooks.add_argument("--rate", type=float, default=10.0, help="events published per second")
    hooks.add_argument("--workers", type=int, default=1, help="`playtable webhooks` processes")
    args = parser.parse_args(argv)

    settings = Settings.from_env()
    _logging(settings)
    if args.command == "lobby":
        _serve_http("services.lobby.app:create_app", settings.lobby_port, settings)
    elif args.command == "match":
        _serve_http("services.match.app:create_app", settings.match_port, settings)
    elif args.command == "rules":
        run_rules(settings)
    elif args.command == "webhooks":
        from services.webhooks.worker import run_webhooks

        return run_webhooks(settings)
    elif args.command == "webhooks-api":
        _serve_http("services.webhooks.app:create_app", settings.webhooks_port, settings)
    elif args.command == "stack":
        from services.stack import run_stack

        return run_stack(settings, rules_workers=args.rules_workers)
    elif args.command == "openapi":
        from services.contract import write_contract

        return write_contract(CONTRACT_PATH, check=args.check)
    elif args.command == "verify":
        from services.verify import run as run_verify

        return run_verify(settings)
    elif args.command == "bench":
        from services import bench as benchmarks

        return benchmarks.run(args, settings)
    return 0


if __name__ == "__main__":
    sys.exit(main())
