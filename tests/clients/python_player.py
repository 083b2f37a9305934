"""Play a match through the generated Python client only: its API functions and its models.

Import it after ``python_client.import_python_client`` has put ``playtable_client`` on the path.
"""

from __future__ import annotations

import random
import uuid
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any, TypeVar

from playtable_client import AuthenticatedClient, Client, models
from playtable_client.api.matches import (
    export_match,
    get_match,
    list_legal_actions,
    list_match_events,
    replay_match,
    submit_action,
)
from playtable_client.api.tables import create_table, join_table, start_table
from playtable_client.models import (
    CreatedTable,
    CreateTable,
    CreateTableOptions,
    EventPage,
    ExportMatchResponse200,
    HanabiPlayCard,
    Joined,
    JoinTable,
    MatchInfo,
    MatchReplay,
    SubmitAction,
    TableInfo,
)
from playtable_client.types import Response

Parsed = TypeVar("Parsed")


@dataclass
class PlayedMatch:
    match_id: str
    status: str
    moves: int
    events: int
    hand_built_actions: int


def schema_prefix(game: str) -> str:
    """The contract names a game's schemas after it: ``breaking_news`` -> ``BreakingNews...``."""
    return "".join(part.title() for part in game.split("_"))


def expect(response: Response[Any], status: int, model: type[Parsed]) -> Parsed:
    """The parsed body, after checking the answer is the documented one for ``status``."""
    assert response.status_code == status, (response.status_code, response.content[:2000])
    assert isinstance(response.parsed, model), type(response.parsed)
    return response.parsed


def game_model(game: str, name: str) -> type:
    """The contract's per-game variant of an answer: ``LegalActions`` of Dingo is
    ``DingoLegalActions`` (the union is discriminated on ``game``)."""
    model: type = getattr(models, schema_prefix(game) + name)
    return model


def assert_game_models(game: str, models: list[Any], what: str) -> None:
    """Each item parsed into one of ``game``'s own models, not another game's look-alike."""
    names = {type(model).__name__ for model in models}
    foreign = sorted(name for name in names if not name.startswith(schema_prefix(game)))
    assert not foreign, f"{game} {what} parsed as other games' models: {foreign}"


def open_table(
    client: Client, base_url: str, game: str, options: dict[str, Any], players: int, seed: int
) -> tuple[str, list[str]]:
    """Create, fill and start a table as the app ``client`` holds the key of; return its match id
    and the seat tokens."""
    body = CreateTable(
        game=game, seats=players, options=CreateTableOptions.from_dict(options), seed=seed
    )
    table = expect(create_table.sync_detailed(client=client, body=body), 201, CreatedTable)
    tokens = []
    for seat in range(players):
        joined = expect(
            join_table.sync_detailed(
                table.table_id, client=client, body=JoinTable(name=f"python{seat}")
            ),
            201,
            Joined,
        )
        assert joined.seat == seat
        tokens.append(joined.token)
    with AuthenticatedClient(base_url=base_url, token=tokens[0]) as starter:
        started = expect(start_table.sync_detailed(table.table_id, client=starter), 201, TableInfo)
    assert isinstance(started.match_id, str)
    return started.match_id, tokens


def choose_action(game: str, legal: Any, moves: int, rng: random.Random) -> tuple[Any, bool]:
    """A random legal action, and whether it was built by hand: Hanabi's first move is a
    ``HanabiPlayCard`` made with its class, as an app would, not echoed from the server."""
    if game == "hanabi" and moves == 0:
        offered = next(action for action in legal.actions if isinstance(action, HanabiPlayCard))
        return HanabiPlayCard(card=offered.card, type_=offered.type_), True
    return rng.choice(legal.actions), False


def read_events(client: Client, game: str, match_id: str) -> list[Any]:
    """Every event of the match, page by page, each parsed as the game's ``MatchEvent``."""
    events: list[Any] = []
    after = 0
    while True:
        page = expect(
            list_match_events.sync_detailed(match_id, client=client, after=after, limit=500),
            200,
            EventPage,
        )
        for item in page.items:
            assert isinstance(item, game_model(game, "MatchEvent")), type(item)
        events.extend(page.items)
        if page.next_after is None:
            return events
        after = page.next_after


def play_match(
    base_url: str,
    app_key: str,
    game: str,
    options: dict[str, Any],
    players: int = 2,
    seed: int = 7,
    max_moves: int = 5000,
) -> PlayedMatch:
    """Random legal moves to the end, then the match's events, its replay and its export."""
    rng = random.Random(seed)
    app = {"X-API-Key": app_key}
    with Client(base_url=base_url, headers=app) as client, ExitStack() as seat_clients:
        match_id, tokens = open_table(client, base_url, game, options, players, seed)
        seats = [
            seat_clients.enter_context(AuthenticatedClient(base_url=base_url, token=token))
            for token in tokens
        ]
        moves = hand_built = 0
        match = expect(get_match.sync_detailed(match_id, client=client), 200, MatchInfo)
        while match.status != "finished":
            assert moves < max_moves, f"{game} match {match_id} did not end in {max_moves} moves"
            seat = rng.choice(match.to_move)
            legal = expect(
                list_legal_actions.sync_detailed(match_id, client=seats[seat]),
                200,
                game_model(game, "LegalActions"),
            )
            assert legal.game == game and legal.version == match.version
            assert_game_models(game, legal.actions, "legal actions")
            action, by_hand = choose_action(game, legal, moves, rng)
            hand_built += by_hand
            accepted = expect(
                submit_action.sync_detailed(
                    match_id,
                    client=seats[seat],
                    body=SubmitAction(action=action, expected_version=match.version),
                    idempotency_key=uuid.uuid4().hex,
                ),
                201,
                game_model(game, "ActionAccepted"),
            )
            assert accepted.version > match.version
            moves += 1
            match = expect(get_match.sync_detailed(match_id, client=client), 200, MatchInfo)

        events = read_events(client, game, match_id)
        assert_game_models(game, [event.data for event in events], "events")
        assert events[-1].version == match.version
        replay = expect(
            replay_match.sync_detailed(match_id, client=client, version=match.version, full=True),
            200,
            MatchReplay,
        )
        assert replay.status == "finished"
        assert_game_models(game, [replay.view], "replay view")
        expect(export_match.sync_detailed(match_id, client=client), 200, ExportMatchResponse200)
    return PlayedMatch(match_id, match.status, moves, len(events), hand_built)
