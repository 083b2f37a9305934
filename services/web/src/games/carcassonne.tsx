// The Carcassonne table (base game, with The Messengers, Inns & Cathedrals and Traders &
// Builders): the board (carcassonne/board.tsx), drawn from the game's tile data
// (seeds/carcassonne/*.json, bundled) with the followers, builders and pigs on their features;
// the controls (carcassonne/controls.tsx); the scores, the supplies and the scoring track
// (carcassonne/scores.tsx). Every control offers only what the API listed in ``actions``: the
// highlighted squares are exactly those of the listed PlaceTile actions, the rotations offered
// on a square exactly those listed for it, the pieces and spots exactly those listed for that
// square and rotation; The Messengers' figure and message choices are the listed ChooseFigure
// / CarryOutMessage / TakeMessagePoints actions, the standing preference the listed
// SetScoringPreference ones. A move is sent as the listed action object itself. Spectators and
// the replay viewer (actions = []) see the same board read-only.
import type { JSX } from "preact";
import { useMemo, useState } from "preact/hooks";
import type { CarcassonneAction, CarcassonneView } from "../client";
import type { TableProps } from "./types";
import {
  choicesOf,
  nextChoice,
  nextRotation,
  placementWith,
  sortActions,
  type Choice,
  type CarryOut,
  type PlaceTile,
  type Square,
} from "./carcassonne/actions";
import { Board } from "./carcassonne/board";
import { Controls } from "./carcassonne/controls";
import { seatColour } from "./carcassonne/draw";
import { Scores } from "./carcassonne/scores";
import { targetKey } from "./carcassonne/words";
import { capitalised, listNames, seatName } from "./names";
import "./carcassonne.css";

type Props = TableProps<CarcassonneView, CarcassonneAction>;

const ZOOMS = [36, 48, 64, 80, 100, 128];
/** The phone layout's breakpoint, as in carcassonne.css. */
const PHONE = "(max-width: 760px)";

interface Selection {
  /** The turn this selection belongs to (board size, drawn tile, who moves, The Messengers'
   * phase, message and pending scorings, the number of listed actions): when that changes, the
   * selection starts afresh. */
  turn: string;
  square: string | null;
  /** How the drawn tile is turned: on the chosen square when that way fits there (else the
   * square's first listed way), and in the drawn tile's picture. */
  rotation: number;
  /** The piece (follower, large follower, builder, pig) and the spot of the drawn tile. */
  choice: Choice | null;
  /** Message 8: the follower (``x,y,spot``) chosen to score. */
  target: string | null;
}

export function CarcassonneTable(props: Props): JSX.Element {
  const { view, actions, you, players, toMove, busy } = props;
  const sorted = useMemo(() => sortActions(actions), [actions]);
  const messengers = view.messengers ?? null;
  const turn = useMemo(
    () =>
      JSON.stringify([
        view.board.length,
        view.tile,
        toMove,
        messengers?.phase ?? null,
        messengers?.message ?? null,
        messengers?.pending.length ?? 0,
        actions.length,
      ]),
    [view, toMove, messengers, actions],
  );
  const fresh: Selection = { turn, square: null, rotation: 0, choice: null, target: null };
  const [selState, setSelState] = useState<Selection>(fresh);
  const sel: Selection = selState.turn === turn ? selState : fresh;
  const setSel = (patch: Partial<Selection>) => setSelState({ ...sel, ...patch, turn });
  // 80 px tiles on a wide screen, 64 px on a phone
  const [zoomIndex, setZoomIndex] = useState(() =>
    typeof window !== "undefined" && window.matchMedia?.(PHONE).matches ? 2 : 3,
  );

  const square: Square | null = sel.square ? (sorted.squares.get(sel.square) ?? null) : null;
  const rotation: number | null = square
    ? square.rotations.includes(sel.rotation)
      ? sel.rotation
      : (square.rotations[0] ?? null)
    : null;
  const placements: PlaceTile[] =
    square && rotation !== null ? (square.byRotation.get(rotation) ?? []) : [];
  const choices = choicesOf(placements);
  const choice =
    choices.find((c) => c.spot === sel.choice?.spot && c.piece === sel.choice?.piece) ?? null;
  const chosen = square && rotation !== null ? placementWith(square, rotation, choice) : null;
  // the replay viewer passes the seat it replays as ``you``, with no actions
  const myTurn = you !== null && actions.length > 0 && toMove.includes(you) && !view.finished;

  const send = (action: CarcassonneAction | null) => {
    if (!action || busy) return;
    props.submit(action).catch(() => undefined);
  };

  const turnTile = (step: number) => {
    if (square && rotation !== null) {
      setSel({ rotation: nextRotation(square, rotation, step), choice: null });
    } else {
      setSel({ rotation: (((sel.rotation + step) % 4) + 4) % 4 });
    }
  };
  const chooseSquare = (key: string) => {
    if (busy) return;
    // a second click on the chosen square turns the tile to its next listed rotation
    if (sel.square === key && square) turnTile(1);
    else setSel({ square: key, choice: null });
  };

  // message 8: the listed followers it may score
  const targets = new Map<string, CarryOut[]>();
  for (const a of sorted.carryOut) {
    if (a.follower) {
      const key = targetKey(a.follower.x, a.follower.y, a.follower.spot);
      targets.set(key, [...(targets.get(key) ?? []), a]);
    }
  }
  const target = sel.target && targets.has(sel.target) ? sel.target : null;

  return (
    <div
      class="carc-table"
      data-testid="carc-table"
      data-your-turn={myTurn ? "true" : "false"}
      data-phase={messengers?.phase ?? (view.finished ? "finished" : "place_tile")}
    >
      <Board
        view={view}
        sorted={sorted}
        square={square}
        rotation={rotation}
        choice={choice}
        choices={choices}
        you={you}
        players={players}
        busy={busy}
        size={ZOOMS[zoomIndex] ?? 64}
        targets={targets}
        target={target}
        onSquare={chooseSquare}
        onSpot={(spot) => setSel({ choice: nextChoice(choices, spot, choice) })}
        onTarget={(key) => setSel({ target: key === target ? null : key })}
      />
      <div class="carc-zoom">
        <button
          type="button"
          aria-label="Zoom out"
          title="Zoom out"
          data-testid="carc-zoom-out"
          disabled={zoomIndex === 0}
          onClick={() => setZoomIndex(Math.max(0, zoomIndex - 1))}
        >
          −
        </button>
        <button
          type="button"
          aria-label="Zoom in"
          title="Zoom in"
          data-testid="carc-zoom-in"
          disabled={zoomIndex === ZOOMS.length - 1}
          onClick={() => setZoomIndex(Math.min(ZOOMS.length - 1, zoomIndex + 1))}
        >
          +
        </button>
        <span class="carc-muted">
          {view.board.length} {view.board.length === 1 ? "tile" : "tiles"} placed ·{" "}
          {view.tiles_left} left
        </span>
      </div>
      <Status view={view} players={players} you={you} toMove={toMove} myTurn={myTurn} />
      <Controls
        view={view}
        players={players}
        you={you}
        busy={busy}
        myTurn={myTurn}
        sorted={sorted}
        square={square}
        rotation={rotation}
        preview={sel.rotation}
        choices={choices}
        choice={choice}
        chosen={chosen}
        targets={targets}
        target={target}
        onTurn={turnTile}
        onChoice={(c) => setSel({ choice: c })}
        onCancel={() => setSel({ square: null, choice: null })}
        onTarget={(key) => setSel({ target: key })}
        send={send}
      />
      <Scores view={view} players={players} you={you} toMove={toMove} />
    </div>
  );
}

// ------------------------------------------------------------------ status

function Status(props: {
  view: CarcassonneView;
  players: string[];
  you: number | null;
  toMove: number[];
  myTurn: boolean;
}): JSX.Element {
  const { view, players, you, toMove } = props;
  if (view.finished) {
    const winners = capitalised(listNames(players, view.winners, you));
    return (
      <div class="carc-status" data-testid="carc-status">
        <strong>Game over.</strong>{" "}
        {winners
          ? `${winners} ${view.winners.length > 1 || view.winners[0] === you ? "win" : "wins"}.`
          : ""}
      </div>
    );
  }
  const seat = toMove[0];
  const phase = view.messengers?.phase ?? "place_tile";
  const [mine, theirs] =
    phase === "choose_figure"
      ? ["choose which figure moves", "choosing which figure moves"]
      : phase === "resolve_message"
        ? ["resolve the message", "resolving a message"]
        : ["place the drawn tile", "placing a tile"];
  return (
    <div class="carc-status" data-testid="carc-status">
      {seat === undefined ? (
        "Waiting…"
      ) : props.myTurn ? (
        <strong>Your turn: {mine}.</strong>
      ) : (
        <span>
          <span class="carc-dot" style={{ background: seatColour(seat) }} />{" "}
          {seatName(players, seat)} is {theirs}.
        </span>
      )}
      {you === null && <span class="carc-muted"> (watching)</span>}
      {seat !== undefined && <BuilderTurn view={view} seat={seat} you={you} players={players} />}
    </div>
  );
}

/** Traders & Builders: the tile being placed is the builder's second of the turn, or the
 * turn has earned one. */
function BuilderTurn(props: {
  view: CarcassonneView;
  seat: number;
  you: number | null;
  players: string[];
}): JSX.Element | null {
  const pieces = props.view.pieces;
  if (!pieces?.builder_turn && !pieces?.builder_turns_owed) return null;
  const whose = props.seat === props.you ? "Your" : `${seatName(props.players, props.seat)}'s`;
  return (
    <div class="carc-builder-turn" data-testid="carc-builder-turn">
      {pieces.builder_turn
        ? `${whose} builder: a second tile (this one earns no third).`
        : `${whose} builder has earned a second tile this turn.`}
    </div>
  );
}
