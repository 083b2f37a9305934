"""Carcassonne as the engine contract's ``Game``: its functions, types and refusals together."""

from __future__ import annotations

from services.rules.games.carcassonne import messengers
from services.rules.games.carcassonne.evolve import evolve
from services.rules.games.carcassonne.options import setup, validate_options
from services.rules.games.carcassonne.rules import decide, legal_actions, to_move
from services.rules.games.carcassonne.state import Action, CarcassonneState, CarcassonneView, Event
from services.rules.games.carcassonne.versions import RULES, readings
from services.rules.games.carcassonne.views import redact, result, view
from services.rules.games.contract import Game, OptionSpec, PlayersRequirement

REFUSALS = {
    "bad_square": (
        "The tile's square is taken or touches no placed tile: place it on an empty square next "
        "to the board."
    ),
    "bad_rotation": "The rotation is not 0, 1, 2 or 3 clockwise quarter turns: give one of those.",
    "edges_do_not_match": (
        "An edge of the turned tile does not match the neighbouring tile's edge: turn the tile "
        "or choose another square."
    ),
    "bad_spot": (
        "The follower's feature is not one of the tile's: give an index into the tile's feature "
        "list, or no follower."
    ),
    "no_followers": "All your followers are on the board: place the tile without a follower.",
    "feature_occupied": (
        "The feature the follower would stand on, over all its tiles, already holds a follower: "
        "choose another feature or no follower."
    ),
    "bad_seat": (
        "With The Messengers, the acting seat is not a seat of the match: act as one of its seats."
    ),
    "wrong_phase": (
        "With The Messengers, the action does not fit this step of the turn: first choose a "
        "figure for each pending scoring, then resolve the drawn message, else place the tile."
    ),
    "bad_figure": (
        "The figure is not 0 (scoring figure) or 1 (messenger), or message 4, which gives a "
        "turn and no points, names a figure or follower: name 0 or 1, or none for message 4."
    ),
    "preference_unchanged": (
        "The scoring preference sent is already yours: send one only to change it."
    ),
    "cannot_carry_out": (
        "The drawn message cannot be done now (no follower of yours it could score, or no tile "
        "left for message 4's extra turn): take its points instead (TakeMessagePoints)."
    ),
    "bad_piece": (
        "The piece is not one the match plays (large_follower needs Inns & Cathedrals, builder "
        "and pig Traders & Builders), or names no feature: name one of its pieces and a spot."
    ),
    "piece_placed": (
        "Your large follower, builder or pig is already on the board: place another piece or none."
    ),
    "no_own_follower": (
        "The builder goes only on a road or city, the pig only on a field, of the tile just "
        "placed that joins one holding a follower of yours: choose such a feature."
    ),
    "bad_follower": (
        "Message 8 names no follower of yours on the board, or another message names one: name "
        "one of your followers for message 8 only."
    ),
}
"""When the rules of Carcassonne refuse a move, beyond ``COMMON_REFUSALS`` (see
``Game.refusals``)."""

SIXTH_SEAT = PlayersRequirement(
    players=6,
    requires_any=[{"messengers": True}, {"inns_cathedrals": True}],
)
"""The Messengers' and Inns & Cathedrals' sixth colour each allow a sixth player."""


GAME = Game(
    name="carcassonne",
    title="Carcassonne",
    min_players=2,
    max_players=SIXTH_SEAT.players,
    players_requirements=(SIXTH_SEAT,),
    options=(
        OptionSpec(
            name="tile_order",
            title="Stacked tiles (secret)",
            type="list[str]",
            default=None,
            description=(
                "Replay a known game: the start tile, then the stack in draw order, as tile "
                "letters (A-X, and those of the expansions played; no more of each than the "
                "boxes hold). Default: the 72 base tiles and the expansions', start tile D, "
                "the rest shuffled."
            ),
            secret=True,
        ),
        OptionSpec(
            name="messengers",
            title="The Messengers",
            type="bool",
            default=False,
            description=(
                "Play with the mini expansion: two scoring figures per player, and 8 messages "
                "drawn when a figure ends on a dark space of the scoring track. Allows a 6th "
                "player."
            ),
        ),
        OptionSpec(
            name="messengers_edition",
            title="Messengers edition",
            type="enum",
            default="C3",
            choices=list(messengers.EDITIONS),
            description=(
                "The printing of The Messengers: the rules are the same in both; only C2 has "
                "the ZMG rules' 'figure alone' condition."
            ),
            requires={"messengers": True},
        ),
        OptionSpec(
            name="zmg_alone_rule",
            title="Messages only for a figure alone (ZMG)",
            type="bool",
            default=False,
            description=(
                "The ZMG rules' reading of the C2 edition: draw a message only if your figure "
                "stands alone on its dark space (no other player's figure there)."
            ),
            requires={"messengers": True, "messengers_edition": "C2"},
        ),
        OptionSpec(
            name="message_order",
            title="Stacked messages (secret)",
            type="list[int]",
            default=None,
            description=(
                "Replay a known game: the message stack top first, each of the messages 1-8 "
                "once. Default: shuffled."
            ),
            secret=True,
            requires={"messengers": True},
        ),
        OptionSpec(
            name="inns_cathedrals",
            title="Inns & Cathedrals",
            type="bool",
            default=False,
            description=(
                "Play with the expansion (2nd edition): 18 more land tiles with inns on roads "
                "and cathedrals in cities, and a large follower per player that counts as two. "
                "Allows a 6th player."
            ),
        ),
        OptionSpec(
            name="traders_builders",
            title="Traders & Builders",
            type="bool",
            default=False,
            description=(
                "Play with the expansion (2nd edition): 24 more land tiles, goods in cities "
                "(10 points per good for the most at the end), a builder (a second tile when "
                "you extend its road or city) and a pig (4 points per city for your farm)."
            ),
        ),
    ),
    action_type=Action,
    event_type=Event,
    redacted_event_type=Event,
    state_type=CarcassonneState,
    view_type=CarcassonneView,
    setup=setup,
    decide=decide,
    evolve=evolve,
    legal_actions=legal_actions,
    to_move=to_move,
    view=view,
    redact=redact,
    result=result,
    rules=RULES,
    readings=readings,
    refusals=REFUSALS,
    validate_options=validate_options,
    description=(
        "Base game, 2nd edition: 72 land tiles, 7 followers each, roads, cities, cloisters and "
        "farms. One action per turn: place the drawn tile, optionally with a follower. With "
        "The Messengers, choose a figure for each of your scorings and resolve the messages "
        "you draw. Inns & Cathedrals and Traders & Builders add their tiles and pieces."
    ),
    sample_tables=((2, {"tile_order": ["C", "U", "E", "E"]}),),  # U fits nowhere beside C
)
