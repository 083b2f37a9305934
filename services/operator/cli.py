"""The ``playtable`` command: run a service, the whole stack, the contract, a benchmark, or
work with match files (replay, export, import).

The contract, the benchmarks and ``copies`` are development tools: they live in the
repository's ``tools/`` package, which the image does not ship, and are imported only when
one of them runs (``_tools``)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, get_args

from shared.domain.match_file import ExportFormat
from shared.infra.logs import configure_logging, logging_config
from shared.infra.settings import Settings

CONTRACT_PATH = Path(__file__).resolve().parents[2] / "openapi" / "openapi.json"


RELEASED_DIR = CONTRACT_PATH.parent / "released"
"""Every released contract, as ``<version>.json``: the baseline of the breaking-change check."""


class DevelopmentTool(Exception):
    """A command of ``tools/`` run where that package is missing (an installed image)."""


def _tools(module: str, command: str) -> Any:
    """``tools.<module>``, imported when its command runs; where the package is missing (the
    image leaves ``tools/`` out) the command is refused, saying where it runs."""
    import importlib

    try:
        return importlib.import_module(f"tools.{module}")
    except ModuleNotFoundError as missing:
        if missing.name not in ("tools", f"tools.{module}"):
            raise  # a dependency of the tool is missing: say which
        raise DevelopmentTool(
            f"`playtable {command}` is a development tool: run it from a checkout of the"
            " repository (its tools/ package is not installed here)"
        ) from None


def _report_breaking() -> int:
    """Print the breaking changes from the newest released contract to the code's, and whether
    the code's version says so."""
    import json

    build_contract = _tools("contract", "openapi --breaking").build_contract
    contract_diff = _tools("contract.diff", "openapi --breaking")
    newest, release_verdict = contract_diff.newest, contract_diff.release_verdict

    released = newest([path.stem for path in RELEASED_DIR.glob("*.json")])
    baseline = json.loads((RELEASED_DIR / f"{released}.json").read_text())
    current = build_contract()
    findings, announced = release_verdict(baseline, current)
    for finding in findings:
        print(finding)
    version = current["info"]["version"]
    print(
        f"{len(findings)} breaking change(s) from {released} to {version}: "
        + ("the version says so" if announced else "bump the version (major; minor while 0.x)"),
        file=sys.stderr,
    )
    return 0 if announced else 1


def _serve_http(app_factory_path: str, port: int, settings: Settings, service: str) -> None:
    """Serve with ``settings.http_workers`` processes sharing the port (one app each); several
    workers share their metrics through files (Prometheus' multiprocess mode) in a directory
    of their own, which goes when they do."""
    import uvicorn

    with contextlib.ExitStack() as cleanup:
        if settings.http_workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            shared_dir = cleanup.enter_context(tempfile.TemporaryDirectory(prefix="metrics-"))
            os.environ["PROMETHEUS_MULTIPROC_DIR"] = shared_dir  # the workers inherit it
        uvicorn.run(
            app_factory_path,
            factory=True,
            host=settings.host,
            port=port,
            workers=settings.http_workers,
            loop="uvloop",
            http="httptools",
            log_config=logging_config(settings.log_level, service),
            log_level="warning",
            access_log=False,
            # Who a request comes from is the rate limiter's to tell (``trusted_proxies``):
            # uvicorn's own proxy headers trusted any client on 127.0.0.1 with its
            # X-Forwarded-For, and cost every request a middleware.
            proxy_headers=False,
            lifespan="on",
            timeout_keep_alive=settings.http_keep_alive_s,
            # Live feeds never end by themselves: cut them after a moment (clients reconnect).
            timeout_graceful_shutdown=3,
        )


def run_rules(settings: Settings) -> None:
    from services.rules.worker import serve
    from shared.edge.runtime import run_until_signalled

    run_until_signalled(serve, settings)


def _file_commands(commands: Any) -> None:
    replay = commands.add_parser("replay", help="print a match turn by turn (from Postgres)")
    replay.add_argument("match_id")
    viewer = replay.add_mutually_exclusive_group()
    viewer.add_argument("--seat", type=int, default=None, help="as this seat saw it")
    viewer.add_argument(
        "--full", action="store_true", help="everything, every hand (finished matches only)"
    )
    export = commands.add_parser("export", help="write finished matches as files (from Postgres)")
    export.add_argument("match_ids", nargs="*", metavar="MATCH_ID")
    export.add_argument("--all", action="store_true", help="every finished match")
    export.add_argument("--game", default=None, help="only matches of this game")
    export.add_argument(
        "--format",
        default="playtable",
        choices=get_args(ExportFormat),
        help="playtable (the default): a match file, any game; hanab.live or carcassonne-turns:"
        " that game's community format, which is what the API exports by default",
    )
    export.add_argument("--out", default=".", help="folder for <match_id>.json; - for stdout")
    imports = commands.add_parser("import", help="import match files through the match API")
    imports.add_argument("files", nargs="+", metavar="FILE")
    imports.add_argument("--game", default=None, help="the game (community formats)")
    imports.add_argument("--match-url", default=None, help="match URL (default: from settings)")


def _run_file_command(args: argparse.Namespace, settings: Settings) -> int:
    from services.operator import files, keys

    if args.command == "replay":
        return files.run_replay(settings, args.match_id, args.seat, args.full)
    if args.command == "export":
        if bool(args.match_ids) == args.all:
            print("name match ids or pass --all (not both)", file=sys.stderr)
            return 2
        return files.run_export(settings, args.match_ids, args.game, args.format, args.out)
    url = args.match_url or f"http://{settings.host}:{settings.match_port}"
    app_key = asyncio.run(keys.client_key(settings))
    return files.import_files(args.files, args.game, url, app_key)


def run_migrate(settings: Settings) -> int:
    """What every service does on start, alone: a deployment runs it once before rolling out."""
    import psycopg

    from shared.infra.db import ensure_database, migrate

    async def main() -> list[str]:
        await ensure_database(settings.database_url)
        conn = await psycopg.AsyncConnection.connect(settings.database_url, autocommit=True)
        async with conn:
            return await migrate(conn)

    applied = asyncio.run(main())
    print(f"applied {', '.join(applied)}" if applied else "the schema is up to date")
    return 0


def run_partition_events(settings: Settings, partitions: int) -> int:
    import psycopg

    from shared.infra.db import partition_events

    async def main() -> int:
        conn = await psycopg.AsyncConnection.connect(settings.database_url, autocommit=True)
        async with conn:
            return await partition_events(conn, partitions)

    print(f"the event log has {asyncio.run(main())} partitions")
    return 0


SEALING = {"lobby", "match", "bots", "webhooks", "webhooks-api"}
"""The services that seal or open secrets at rest: they refuse to start without a keyring."""


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except DevelopmentTool as refused:
        print(refused, file=sys.stderr)
        return 2


def _main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="playtable", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("lobby", help="run the lobby service (HTTP)")
    commands.add_parser("match", help="run the match service (HTTP and command consumer)")
    commands.add_parser("rules", help="run a rules worker (consumer only)")
    commands.add_parser("clocks", help="run the clocks service (turn timers: TimeOut commands)")
    commands.add_parser("bots", help="run a bots process (plays the bot seats of matches)")
    commands.add_parser("webhooks", help="run the webhook dispatcher and a Celery worker")
    commands.add_parser("webhooks-api", help="run the webhooks service's HTTP API")
    stack = commands.add_parser("stack", help="run every service as its own process")
    stack.add_argument("--rules-workers", type=int, default=1)
    stack.add_argument("--bots", type=int, default=1, help="bots processes")
    for service in ("match", "lobby"):
        stack.add_argument(
            f"--{service}-copies",
            type=int,
            default=1,
            help=f"{service} processes behind the gateway (the first on its configured port)",
        )
    contract = commands.add_parser("openapi", help="write the OpenAPI contract to openapi/")
    contract.add_argument(
        "--check", action="store_true", help="fail if the committed file is stale"
    )
    contract.add_argument(
        "--breaking",
        action="store_true",
        help="list the code's breaking changes against the newest released contract (exit 1"
        " if its version does not say so)",
    )
    commands.add_parser(
        "verify", help="re-fold every stored match and compare its snapshots (exit 1 if any differ)"
    )
    commands.add_parser(
        "migrate", help="create the database if missing and apply its migrations, then exit"
    )
    partition = commands.add_parser(
        "partition-events",
        help="partition the event log by stream (see README, Capacity); once, in a quiet hour",
    )
    partition.add_argument("--partitions", type=int, default=16)
    copies = commands.add_parser(
        "copies",
        help="several copies of every service behind nginx under load, one of each killed in"
        " turn; checks that nothing acknowledged is lost (exit 1 on a problem)",
    )
    copies.add_argument("--copies", type=int, default=2, help="processes of each service")
    copies.add_argument("--matches", type=int, default=30, help="matches played at once")
    copies.add_argument("--warmup", type=float, default=8.0, help="seconds before measuring")
    copies.add_argument("--phase", type=float, default=10.0, help="seconds per phase")
    copies.add_argument("--no-kill", action="store_true", help="only measure the throughput")
    copies.add_argument("--keep", action="store_true", help="keep its database and streams")
    copies.add_argument(
        "--no-webhooks",
        action="store_true",
        help="make no webhook subscription (nor check deliveries)",
    )
    copies.add_argument("--json", help="also write the report to this file")
    _file_commands(commands)
    app_commands = commands.add_parser("apps", help="client apps and operator keys (Postgres)")
    app_kinds = app_commands.add_subparsers(dest="apps", required=True)
    new_app = app_kinds.add_parser(
        "create", help="register a client app; prints its secret and publishable keys"
    )
    new_app.add_argument("name")
    new_app.add_argument("--max-open-tables", type=int, default=None)
    new_operator_key = app_kinds.add_parser("operator-key", help="print a new operator key")
    new_operator_key.add_argument("name", nargs="?", default="", help="a label for the key")
    secrets = commands.add_parser("secrets", help="the keyring that seals secrets at rest")
    secret_commands = secrets.add_subparsers(dest="secrets", required=True)
    new_key = secret_commands.add_parser("new-key", help="print a keyring entry, a new key")
    new_key.add_argument("--id", default=None, help="the key's id (default: k<UTC time>)")
    secret_commands.add_parser(
        "rotate", help="re-seal every secret at rest under PLAYTABLE_SECRET_KEYS' first key"
    )
    bench = commands.add_parser("bench", help="measure speed")
    bench_kinds = bench.add_subparsers(dest="bench", required=True)
    bots = bench_kinds.add_parser("bots", help="each game's heuristic bot, in seeded matches")
    bots.add_argument("--game", default=None)
    bots.add_argument("--matches", type=int, default=1000)
    bots.add_argument(
        "--players", type=int, default=None, help="only this player count (default: each)"
    )
    bots.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a table option for the bots' tables, its value as JSON; repeatable",
    )
    bot_service = bench_kinds.add_parser(
        "bot-service", help="matches of bots only, played by bots processes through the services"
    )
    bot_service.add_argument("--bots", type=int, default=2, help="bots processes")
    for game, count in {"hanabi": 50, "carcassonne": 20, "dingo": 20, "breaking_news": 20}.items():
        bot_service.add_argument(
            f"--{game.replace('_', '-')}", type=int, default=count, help=f"{game} matches"
        )
    engine = bench_kinds.add_parser("engine", help="random playouts of one game on one core")
    engine.add_argument("game")
    engine.add_argument("--players", type=int, default=None)
    engine.add_argument("--games", type=int, default=2000)
    engine.add_argument("--seed", type=int, default=1)
    engine.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a table option, its value as JSON (--option inns_cathedrals=true); repeatable",
    )
    api = bench_kinds.add_parser("api", help="moves through the running services")
    api.add_argument("--matches", type=int, default=50)
    api.add_argument("--seconds", type=float, default=20.0, help="measured time, after warm-up")
    api.add_argument("--warmup", type=float, default=5.0, help="seconds played before measuring")
    api.add_argument("--lobby", default=None, help="lobby URL (default: from settings)")
    api.add_argument("--match", default=None, help="match URL (default: from settings)")
    replay_bench = bench_kinds.add_parser("replay", help="past versions of a finished match")
    replay_bench.add_argument("--game", default="carcassonne")
    replay_bench.add_argument("--requests", type=int, default=1000)
    replay_bench.add_argument("--lobby", default=None, help="lobby URL (default: from settings)")
    replay_bench.add_argument("--match", default=None, help="match URL (default: from settings)")
    memory = bench_kinds.add_parser("memory", help="resident memory with many live matches")
    memory.add_argument("--matches", type=int, default=10_000)
    feeds = bench_kinds.add_parser("feeds", help="match process memory with many live feeds")
    feeds.add_argument("--feeds", type=int, default=2000, help="feeds opened on one match")
    feeds.add_argument("--moves", type=int, default=5, help="moves made while they are open")
    feeds.add_argument("--settle", type=float, default=5.0, help="seconds to wait after closing")
    feeds.add_argument("--rounds", type=int, default=1, help="open and close them this often")
    feeds.add_argument("--pid", type=int, default=None, help="match process (default: the one)")
    feeds.add_argument("--lobby", default=None, help="lobby URL (default: from settings)")
    feeds.add_argument("--match", default=None, help="match URL (default: from settings)")
    hooks = bench_kinds.add_parser("webhooks", help="webhook deliveries to a local receiver")
    hooks.add_argument("--subscriptions", type=int, default=100)
    hooks.add_argument("--events", type=int, default=100)
    hooks.add_argument("--rate", type=float, default=10.0, help="events published per second")
    hooks.add_argument("--workers", type=int, default=1, help="`playtable webhooks` processes")
    hooks.add_argument(
        "--outage", type=float, default=0.0, help="seconds half the subscribers answer 503"
    )
    hooks.add_argument(
        "--backlog", type=int, default=0, help="deliveries one more subscriber has due at start"
    )
    race = bench_kinds.add_parser("race", help="racing moves at one version (one may win)")
    race.add_argument("--rounds", type=int, default=1000)
    race.add_argument("--clients", type=int, default=20)
    race.add_argument("--lobby", default=None, help="lobby URL (default: from settings)")
    race.add_argument("--match", action="append", help="match URL; repeat for several")
    malformed = bench_kinds.add_parser("malformed", help="malformed requests beside a load")
    malformed.add_argument("--requests", type=int, default=10_000)
    malformed.add_argument("--matches", type=int, default=20)
    malformed.add_argument("--lobby", default=None, help="lobby URL (default: from settings)")
    malformed.add_argument("--match", action="append", help="match URL; repeat for several")
    clocks_bench = bench_kinds.add_parser("clocks", help="timeouts fired with many live clocks")
    clocks_bench.add_argument("--clocks", type=int, default=1000)
    clocks_bench.add_argument(
        "--per-move", type=int, nargs=2, default=(40, 60), help="limits drawn in this range (s)"
    )
    clocks_bench.add_argument("--lobby", default=None, help="lobby URL (default: from settings)")
    clocks_bench.add_argument("--match", default=None, help="match URL (default: from settings)")
    backlog = bench_kinds.add_parser(
        "backlog", help="match creation and clock lateness per second after a fault at load"
    )
    backlog.add_argument(
        "--fault",
        action="append",
        choices=("rolling-restart", "redis-pause", "redis-flush", "kill-match"),
        required=True,
        help="repeat for several, each on services of its own",
    )
    backlog.add_argument("--runs", type=int, default=1, help="runs of each fault")
    backlog.add_argument("--matches", type=int, default=12, help="matches played at once")
    backlog.add_argument("--clocks-per-s", type=float, default=3.0, help="1 s clocks started/s")
    backlog.add_argument("--warmup", type=float, default=5.0, help="seconds before the fault")
    backlog.add_argument("--after", type=float, default=20.0, help="seconds after its end")
    backlog.add_argument("--pause", type=float, default=20.0, help="redis-pause: seconds")
    flood = bench_kinds.add_parser("flood", help="one client flooding the lobby beside another")
    flood.add_argument("--path", default="/games", help="what both clients GET")
    flood.add_argument("--seconds", type=float, default=10.0)
    flood.add_argument("--connections", type=int, default=16, help="the flooder's, all busy")
    flood.add_argument("--rate", type=float, default=20.0, help="the normal client's requests/s")
    flood.add_argument("--flood-from", default="127.0.0.2", help="flooder's source address")
    flood.add_argument("--normal-from", default="127.0.0.3", help="normal client's ('': any)")
    flood.add_argument("--lobby", default=None, help="lobby URL (default: from settings)")
    args = parser.parse_args(argv)

    settings = Settings.from_env()
    configure_logging(settings.log_level, args.command)
    if args.command in SEALING:
        settings.keyring()  # refuse to start, saying why, before any process is forked
    if args.command == "lobby":
        _serve_http("services.lobby.app:create_app", settings.lobby_port, settings, "lobby")
    elif args.command == "match":
        _serve_http("services.match.app:create_app", settings.match_port, settings, "match")
    elif args.command == "rules":
        run_rules(settings)
    elif args.command == "clocks":
        from services.clocks.worker import run_clocks

        run_clocks(settings)
    elif args.command == "bots":
        from services.bots.worker import run_bots

        run_bots(settings)
    elif args.command == "webhooks":
        from services.webhooks.worker import run_webhooks

        return run_webhooks(settings)
    elif args.command == "webhooks-api":
        _serve_http(
            "services.webhooks.app:create_app", settings.webhooks_port, settings, "webhooks-api"
        )
    elif args.command == "stack":
        from services.operator.stack import run_stack

        return run_stack(
            settings,
            rules_workers=args.rules_workers,
            match_copies=args.match_copies,
            lobby_copies=args.lobby_copies,
            bots=args.bots,
        )
    elif args.command == "openapi":
        if args.breaking:
            return _report_breaking()
        contract = _tools("contract", "openapi")
        return contract.write_contract(CONTRACT_PATH, check=args.check)
    elif args.command == "verify":
        from services.operator.verify import run as run_verify

        return run_verify(settings)
    elif args.command == "migrate":
        return run_migrate(settings)
    elif args.command == "partition-events":
        return run_partition_events(settings, args.partitions)
    elif args.command == "copies":
        return _tools("copies", "copies").run(settings, args)
    elif args.command == "apps":
        from services.operator import keys

        return keys.run(args.apps, settings, args.name, getattr(args, "max_open_tables", None))
    elif args.command == "secrets":
        from services.operator import secrets as keyring_commands

        return keyring_commands.run(args.secrets, settings, getattr(args, "id", None))
    elif args.command in {"replay", "export", "import"}:
        return _run_file_command(args, settings)
    elif args.command == "bench":
        return _tools("bench", f"bench {args.bench}").run(args, settings)
    return 0


if __name__ == "__main__":
    sys.exit(main())
