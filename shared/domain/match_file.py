"""The playtable match file (format version 1): one match, any game, as its full event log.

Every chance outcome (shuffles, draws) is recorded in the events, so folding them replays the
match exactly. The file holds every hidden card, so only finished matches are exported. The
JSON Schema in ``openapi/playtable-match.schema.json`` is generated from these Structs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

import msgspec

from shared.domain.commitments import Commitment
from shared.infra.eventstore import StoredEvent

ExportFormat = Literal["playtable", "hanab.live", "carcassonne-turns"]
"""``playtable``: a playtable match file (any game, see ``playtable-match.schema.json``);
``hanab.live``: Hanabi's community JSON game; ``carcassonne-turns``: Carcassonne's turn list."""

FORMAT = "playtable-match"
FORMAT_VERSION = 1

EventJson = Annotated[
    msgspec.Raw,
    msgspec.Meta(description="The event as stored, tagged by its `type` (the game's event types)"),
]


class MatchFileEvent(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One event of the log, unredacted."""

    version: Annotated[
        int, msgspec.Meta(ge=1, description="Its place in the match: 1, 2, ... without gaps")
    ]
    type: Annotated[str, msgspec.Meta(description="The event type, the same as `data.type`")]
    data: EventJson
    seat: Annotated[
        int | None, msgspec.Meta(description="The seat whose move caused it; null for the set-up")
    ] = None
    recorded_at: Annotated[
        str | None,
        msgspec.Meta(description="When it was stored (ISO 8601); informative, not imported"),
    ] = None


class MatchFileResult(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The final result: one score per seat and the winning seats."""

    scores: list[int]
    winners: list[int]
    reason: str = "finished"
    forfeited: Annotated[
        list[int] | msgspec.UnsetType,
        msgspec.Meta(
            description="The seats that ended the match early (left, or ran out of time: reason"
            " `abandoned` or `forfeit`); absent when it was played to its end"
        ),
    ] = msgspec.UNSET


class MatchFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A playtable match: its game, options, players, outcome and complete event log."""

    format: Literal["playtable-match"]
    format_version: Literal[1]
    game: Annotated[
        str,
        msgspec.Meta(
            description="The game's catalogue name: hanabi, carcassonne, dingo, breaking_news"
        ),
    ]
    options: Annotated[
        dict[str, Any],
        msgspec.Meta(description="The match's options, resolved (defaults filled in)"),
    ]
    players: Annotated[list[str], msgspec.Meta(description="The players' names, by seat")]
    status: Annotated[
        Literal["running", "finished"],
        msgspec.Meta(description="Exports are always finished matches"),
    ]
    result: Annotated[
        MatchFileResult | None,
        msgspec.Meta(description="Checked on import against the result of folding the events"),
    ]
    events: Annotated[
        list[MatchFileEvent],
        msgspec.Meta(description="The complete log; folding it in order gives the match"),
    ]
    commitments: Annotated[
        dict[str, Commitment],
        msgspec.Meta(
            description="Per secret option its table committed to: the published hash, the salt"
            " and the value, so that anyone can check sha256(salt + ':' + value as compact JSON"
            " with sorted keys) against the hash the table showed before anyone sat down"
        ),
    ] = {}


def is_match_file(document: Any) -> bool:
    """Whether a decoded JSON document claims to be a playtable match file."""
    return isinstance(document, dict) and document.get("format") == FORMAT


def match_file(
    *,
    game: str,
    options: dict[str, Any],
    players: list[str],
    result: dict[str, Any] | None,
    events: Sequence[StoredEvent],
    commitments: dict[str, Commitment],
) -> MatchFile:
    """The file of a stored match, from its row and its events as the event store reads them."""
    return MatchFile(
        format=FORMAT,
        format_version=FORMAT_VERSION,
        game=game,
        options=options,
        players=players,
        status="running" if result is None else "finished",
        result=None if result is None else msgspec.convert(result, MatchFileResult),
        events=[
            MatchFileEvent(
                version=event.version,
                type=event.type,
                data=msgspec.Raw(event.data),
                seat=event.metadata.actor.seat,
                recorded_at=event.recorded_at.isoformat(),
            )
            for event in events
        ],
        commitments=commitments,
    )


def json_schema() -> dict[str, Any]:
    """The format's JSON Schema (draft 2020-12), as committed in ``openapi/``."""
    schema = msgspec.json.schema(MatchFile)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "playtable match file, version 1",
        **schema,
    }
