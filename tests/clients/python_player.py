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
    DingoPlayCard,
    DingoSubmitAction,
    EventPage,
    ExportMatchResponse200,
    HanabiPlayCard,
    HanabiSubmitAction,
    Joined,
    JoinTable,
    ProblemDocument,
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
    """The contract's per-game variant of a body: ``LegalActions`` of Dingo is
    ``DingoLegalActions``, a Dingo move a ``DingoSubmitAction`` (the unions are discriminated on
    ``game``)."""
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
        match_info = game_model(game, "MatchInfo")
        match = expect(get_match.sync_detailed(match_id, client=client), 200, match_info)
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
                    body=game_model(game, "SubmitAction")(
                        game=game, action=action, expected_version=match.version
                    ),
                    idempotency_key=uuid.uuid4().hex,
                ),
                201,
                game_model(game, "ActionAccepted"),
            )
            assert accepted.version > match.version
            moves += 1
            match = expect(get_match.sync_detailed(match_id, client=client), 200, match_info)

        events = read_events(client, game, match_id)
        assert_game_models(game, [event.data for event in events], "events")
        assert events[-1].version == match.version
        replay = expect(
            replay_match.sync_detailed(match_id, client=client, version=match.version, full=True),
            200,
            game_model(game, "MatchReplay"),
        )
        assert replay.status == "finished"
        assert_game_models(game, [replay.view], "replay view")
        expect(export_match.sync_detailed(match_id, client=client), 200, ExportMatchResponse200)
    return PlayedMatch(match_id, match.status, moves, len(events), hand_built)


@dataclass
class PlayedCard:
    """A ``PlayCard`` built by hand as its game's model and sent as that game's move."""

    game: str
    action_model: str
    refused_elsewhere: tuple[int, str, bool]
    """Sent to the other game's match first: the status, the problem's code, and whether that
    match's version stayed the same."""
    accepted_as: str
    event_models: list[str]


def play_a_card_in_hanabi_and_dingo(base_url: str, app_key: str) -> list[PlayedCard]:
    """A Hanabi ``PlayCard`` and a Dingo ``PlayCard`` (the same tag) each built with its game's
    classes: each is sent to the other game's match first (refused), then to its own."""
    with Client(base_url=base_url, headers={"X-API-Key": app_key}) as client:
        hanabi_id, hanabi_tokens = open_table(client, base_url, "hanabi", {}, 2, 7)
        dingo_id, dingo_tokens = open_table(client, base_url, "dingo", {}, 2, 7)
        hanabi_seat = _first_to_move(client, "hanabi", hanabi_id)
        dingo_seat = _first_to_move(client, "dingo", dingo_id)
        with (
            AuthenticatedClient(base_url=base_url, token=hanabi_tokens[hanabi_seat]) as hanabi,
            AuthenticatedClient(base_url=base_url, token=dingo_tokens[dingo_seat]) as dingo,
        ):
            hanabi_legal = _legal(hanabi, "hanabi", hanabi_id)
            dingo_legal = _legal(dingo, "dingo", dingo_id)
            offered = next(a for a in hanabi_legal.actions if isinstance(a, HanabiPlayCard))
            hanabi_move = HanabiSubmitAction(
                game="hanabi",
                action=HanabiPlayCard(card=offered.card, type_=offered.type_),
                expected_version=hanabi_legal.version,
            )
            chosen = next(a for a in dingo_legal.actions if isinstance(a, DingoPlayCard))
            dingo_move = DingoSubmitAction(
                game="dingo",
                action=DingoPlayCard(card=chosen.card, ranch=chosen.ranch, type_=chosen.type_),
                expected_version=dingo_legal.version,
            )
            # read back from the wire, each body is its own game's, never the other's
            assert isinstance(
                DingoSubmitAction.from_dict(dingo_move.to_dict()).action, DingoPlayCard
            )
            try:
                HanabiSubmitAction.from_dict(dingo_move.to_dict())
            except ValueError:
                pass
            else:
                raise AssertionError("a Dingo move read as a Hanabi one")
            return [
                _play_card(client, hanabi, hanabi_id, hanabi_move, dingo, dingo_id),
                _play_card(client, dingo, dingo_id, dingo_move, hanabi, hanabi_id),
            ]


def _first_to_move(client: Client, game: str, match_id: str) -> int:
    match = expect(
        get_match.sync_detailed(match_id, client=client), 200, game_model(game, "MatchInfo")
    )
    seat: int = match.to_move[0]
    return seat


def _legal(seat: AuthenticatedClient, game: str, match_id: str) -> Any:
    listed = list_legal_actions.sync_detailed(match_id, client=seat)
    return expect(listed, 200, game_model(game, "LegalActions"))


def _version(client: Client, match_id: str) -> int:
    response = get_match.sync_detailed(match_id, client=client)
    assert response.status_code == 200 and response.parsed is not None
    version: int = response.parsed.version
    return version


def _play_card(
    client: Client,
    seat: AuthenticatedClient,
    match_id: str,
    move: HanabiSubmitAction | DingoSubmitAction,
    other_seat: AuthenticatedClient,
    other_id: str,
) -> PlayedCard:
    """``move`` to the other game's match (with a seat token of that match), then to its own."""
    before = _version(client, other_id)
    refused = submit_action.sync_detailed(other_id, client=other_seat, body=move)
    problem = expect(refused, 422, ProblemDocument)
    unchanged = _version(client, other_id) == before
    accepted = expect(
        submit_action.sync_detailed(match_id, client=seat, body=move),
        201,
        game_model(move.game, "ActionAccepted"),
    )
    return PlayedCard(
        game=move.game,
        action_model=type(move.action).__name__,
        refused_elsewhere=(refused.status_code, problem.type_.rpartition("/")[2], unchanged),
        accepted_as=type(accepted).__name__,
        event_models=[type(event).__name__ for event in accepted.events],
    )
