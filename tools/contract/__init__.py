"""The public OpenAPI contract (lobby, match, webhooks), generated from the code, in openapi/
(``playtable openapi``).

What the rest of the repository uses is named here; the modules make it:

- ``build``: the apps' schemas merged into one document, and the files written in openapi/.
- ``games``: each game's data as named schemas, and the match API's bodies split by game.
- ``operations``: links between operations, headers beside problems, the live feeds' events
  and every problem type.
- ``webhooks``: what a subscriber receives for each event type.
- ``schemas``: the helpers on JSON Schemas they all use.
- ``examples``: an example on every request and answer, from a match really played.
- ``diff``: the breaking changes between two contracts (``playtable openapi --breaking``).
"""

from tools.contract.build import (
    CARCASSONNE_TURNS_SCHEMA,
    MATCH_FILE_SCHEMA,
    build_contract,
    generated_files,
    render,
    write_contract,
)
from tools.contract.games import GAME_DATA, PER_GAME, game_prefix

__all__ = [
    "CARCASSONNE_TURNS_SCHEMA",
    "GAME_DATA",
    "MATCH_FILE_SCHEMA",
    "PER_GAME",
    "build_contract",
    "game_prefix",
    "generated_files",
    "render",
    "write_contract",
]
