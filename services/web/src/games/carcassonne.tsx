// The Carcassonne table (base game, with The Messengers, Inns & Cathedrals and Traders &
// Builders).
//
// The board is drawn from the game's tile data (seeds/carcassonne/*.json, bundled), the
// followers, builders and pigs on their features, the scoring track and each seat's supply.
// Every control offers only what the API listed in ``actions``: the highlighted squares are
// exactly those of the listed PlaceTile actions, the rotations offered on a square exactly
// those listed for it, the pieces and spots exactly those listed for that square and rotation; The Messengers' figure
// and message choices are the listed ChooseFigure / CarryOutMessage / TakeMessagePoints
// actions, the standing preference the listed SetScoringPreference ones. A move is sent as the
// listed action object itself. Spectators and the replay viewer (actions = []) see the same
// board read-only.
import type { ComponentChildren, JSX } from "preact";
import { useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";
import type {
  CarcassonneAction,
  CarcassonneFollower,
  CarcassonnePlacedTile,
  CarcassonneView,
} from "../client";
import type { TableProps } from "./types";
import {
  choicesOf,
  nextChoice,
  nextRotation,
  PIECES,
  placementWith,
  sortActions,
  squareKey,
  type Choice,
  type CarryOut,
  type PlaceTile,
  type Sorted,
  type Square,
} from "./carcassonne/actions";
import { seatColour, TileArt } from "./carcassonne/draw";
import { compass, featureKind, spotPoint, TILES } from "./carcassonne/geometry";
import { figureName, isDark, messageCard } from "./carcassonne/messages";
import { Piece, PIECE_WORDS } from "./carcassonne/pieces";
import { Scores } from "./carcassonne/scores";
import { capitalised, listNames, seatName } from "./names";
import "./carcassonne.css";

type Props = TableProps<CarcassonneView, CarcassonneAction>;

const KIND_WORDS: Record<string, string> = {
  city: "city (knight)",
  road: "road (thief)",
  cloister: "cloister (monk)",
  field: "field (farmer)",
};
const ZOOMS = [36, 48, 64, 80, 100, 128];
/** The phone layout's breakpoint, as in carcassonne.css. */
const PHONE = "(max-width: 760px)";

/** A message's button: what it does, and which figure takes the points when one is named. */
function withFigure(label: string, figure: number | null | undefined): string {
  return figure === null || figure === undefined
    ? label
    : `${label}, points to the ${figureName(figure)}`;
}

/** A follower spot of the drawn tile in words: the feature and where it lies on the tile
 * ("field (farmer), south-west"). */
function spotLabel(letter: string, rotation: number, spot: number): string {
  const kind = featureKind(letter, spot);
  const what = (kind && KIND_WORDS[kind]) ?? `spot ${spot}`;
  return `${what}, ${compass(spotPoint(letter, rotation, spot))}`;
}

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

function targetKey(x: number, y: number, spot: number): string {
  return `${x},${y},${spot}`;
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

// ------------------------------------------------------------------ the board

interface BoardProps {
  view: CarcassonneView;
  sorted: Sorted;
  square: Square | null;
  rotation: number | null;
  choice: Choice | null;
  choices: Choice[];
  you: number | null;
  players: string[];
  busy: boolean;
  size: number;
  targets: Map<string, CarryOut[]>;
  target: string | null;
  onSquare: (key: string) => void;
  onSpot: (spot: number) => void;
  onTarget: (key: string) => void;
}

/** The board's extent, zoom and place in its scroller when last drawn. */
interface BoardOrigin {
  minX: number;
  maxY: number;
  size: number;
  margin: { x: number; y: number };
  scrollLeft: number;
  scrollTop: number;
}

/** Where the board's drawing starts in its scroller's content: the margins that centre it
 * while it is smaller than the view, else 0. */
function marginIn(scroller: HTMLElement, drawing: Element): { x: number; y: number } {
  const outer = scroller.getBoundingClientRect();
  const inner = drawing.getBoundingClientRect();
  return {
    x: inner.left - outer.left - scroller.clientLeft + scroller.scrollLeft,
    y: inner.top - outer.top - scroller.clientTop + scroller.scrollTop,
  };
}

function Board(props: BoardProps): JSX.Element {
  const { view, sorted, square, rotation, size, busy, you, players } = props;
  const tiles = view.board;
  const byKey = new Map<string, CarcassonnePlacedTile>(tiles.map((t) => [squareKey(t.x, t.y), t]));
  let minX = 0;
  let maxX = 0;
  let minY = 0;
  let maxY = 0;
  const extend = (x: number, y: number) => {
    minX = Math.min(minX, x);
    maxX = Math.max(maxX, x);
    minY = Math.min(minY, y);
    maxY = Math.max(maxY, y);
  };
  tiles.forEach((t) => extend(t.x, t.y));
  const tilesSpan = { minX, maxX, minY, maxY };
  sorted.squares.forEach((s) => extend(s.x, s.y));
  // one empty row and column all around, so the board never ends at a tile's edge, and as
  // many on either side of the tiles: the board's middle is the tiles' middle
  const aside = Math.max(tilesSpan.minX - minX, maxX - tilesSpan.maxX) + 1;
  const above = Math.max(tilesSpan.minY - minY, maxY - tilesSpan.maxY) + 1;
  minX = tilesSpan.minX - aside;
  maxX = tilesSpan.maxX + aside;
  minY = tilesSpan.minY - above;
  maxY = tilesSpan.maxY + above;
  const width = (maxX - minX + 1) * size;
  const height = (maxY - minY + 1) * size;
  const left = (x: number) => (x - minX) * size;
  const top = (y: number) => (maxY - y) * size;
  const scale = size / 100;

  // Keep what the player looks at in place when the board grows or shrinks (a board smaller
  // than the view sits in its middle by its margins, which change too), and start with the
  // tiles in the middle of the view.
  const scroller = useRef<HTMLDivElement>(null);
  const drawing = useRef<SVGSVGElement>(null);
  const origin = useRef<BoardOrigin | null>(null);
  useLayoutEffect(() => {
    const el = scroller.current;
    const svg = drawing.current;
    if (!el || !svg) return;
    const before = origin.current;
    const margin = marginIn(el, svg);
    if (!before) {
      el.scrollLeft = (width - el.clientWidth) / 2;
      el.scrollTop = (height - el.clientHeight) / 2;
    } else if (before.size !== size) {
      // zoom: keep the middle of the view in the middle
      const ratio = size / before.size;
      const middleX = before.scrollLeft + el.clientWidth / 2 - before.margin.x;
      const middleY = before.scrollTop + el.clientHeight / 2 - before.margin.y;
      el.scrollLeft = middleX * ratio + margin.x - el.clientWidth / 2;
      el.scrollTop = middleY * ratio + margin.y - el.clientHeight / 2;
    } else {
      el.scrollLeft = before.scrollLeft + (before.minX - minX) * size + margin.x - before.margin.x;
      el.scrollTop = before.scrollTop + (maxY - before.maxY) * size + margin.y - before.margin.y;
    }
    origin.current = {
      minX,
      maxY,
      size,
      margin,
      scrollLeft: el.scrollLeft,
      scrollTop: el.scrollTop,
    };
  }, [minX, maxY, size, width, height]);
  // where the view was scrolled to, as the player left it: a board that shrank has already
  // clamped the scroller's own numbers when the effect above reads them
  const onScroll = () => {
    const el = scroller.current;
    if (el && origin.current) {
      origin.current.scrollLeft = el.scrollLeft;
      origin.current.scrollTop = el.scrollTop;
    }
  };

  // Once a square is chosen its highlight (which may have had the focus) is gone: keyboard
  // focus goes on to the tile shown there, which turns it as a click does.
  const ghost = useRef<SVGGElement>(null);
  const ghostAt = square?.key ?? null;
  useLayoutEffect(() => {
    const active = document.activeElement;
    if (ghostAt && ghost.current && (!active || active === document.body)) {
      ghost.current.focus({ preventScroll: true });
    }
  }, [ghostAt]);

  // Drag with the mouse to pan (touch screens scroll natively).
  const drag = useRef<{ x: number; y: number; left: number; top: number; moved: boolean } | null>(
    null,
  );
  const onPointerDown = (e: PointerEvent) => {
    if (e.pointerType !== "mouse" || e.button !== 0 || !scroller.current) return;
    drag.current = {
      x: e.clientX,
      y: e.clientY,
      left: scroller.current.scrollLeft,
      top: scroller.current.scrollTop,
      moved: false,
    };
  };
  const onPointerMove = (e: PointerEvent) => {
    const d = drag.current;
    const el = scroller.current;
    if (!d || !el) return;
    const dx = e.clientX - d.x;
    const dy = e.clientY - d.y;
    if (!d.moved && Math.hypot(dx, dy) < 6) return;
    d.moved = true;
    el.scrollLeft = d.left - dx;
    el.scrollTop = d.top - dy;
  };
  const endDrag = () => {
    // a drag that moved swallows the click that follows it
    const d = drag.current;
    drag.current = null;
    if (d?.moved) {
      const swallow = (ev: Event) => {
        ev.stopPropagation();
        ev.preventDefault();
      };
      window.addEventListener("click", swallow, { capture: true, once: true });
      setTimeout(() => window.removeEventListener("click", swallow, { capture: true }), 0);
    }
  };

  const last = tiles[tiles.length - 1];
  const drawn = view.tile;
  const whose = (seat: number) => (seat === you ? "Your" : `${seatName(players, seat)}'s`);
  const followersAt = (f: CarcassonneFollower) => {
    const tile = byKey.get(squareKey(f.x, f.y));
    return tile ? spotPoint(tile.tile, tile.rotation, f.spot) : ([50, 50] as const);
  };

  return (
    <div
      class="carc-board-scroll"
      ref={scroller}
      onScroll={onScroll}
      onPointerDown={onPointerDown}
      onPointerMove={onPointerMove}
      onPointerUp={endDrag}
      onPointerLeave={() => {
        drag.current = null;
      }}
    >
      <svg
        ref={drawing}
        class="carc-board"
        data-testid="carc-board"
        data-placed={tiles.length}
        width={width}
        height={height}
        viewBox={`0 0 ${width} ${height}`}
        role="group"
        aria-label={`The board: ${tiles.length} tiles placed${sorted.squares.size ? `, ${sorted.squares.size} squares where the drawn tile fits` : ""}`}
      >
        <defs>
          <pattern
            id="carc-grid"
            width={size}
            height={size}
            patternUnits="userSpaceOnUse"
            x={0}
            y={0}
          >
            <rect width={size} height={size} fill="none" stroke="#d7ccb4" stroke-width="1" />
          </pattern>
        </defs>
        <rect width={width} height={height} fill="url(#carc-grid)" />
        {tiles.map((t) => (
          <g
            key={squareKey(t.x, t.y)}
            class="carc-tile"
            data-x={t.x}
            data-y={t.y}
            data-tile={t.tile}
            data-rotation={t.rotation}
            transform={`translate(${left(t.x)} ${top(t.y)}) scale(${scale})`}
          >
            <title>{`${t.tile} (${t.x}, ${t.y}) turned ${t.rotation * 90}°: ${TILES.get(t.tile)?.description ?? ""}`}</title>
            <TileArt letter={t.tile} rotation={t.rotation} />
          </g>
        ))}
        {last && (
          <rect
            x={left(last.x) + 1.5}
            y={top(last.y) + 1.5}
            width={size - 3}
            height={size - 3}
            fill="none"
            stroke="#fff"
            stroke-width="3"
            stroke-dasharray="6 4"
            pointer-events="none"
          />
        )}
        {view.followers.map((f) => {
          const key = targetKey(f.x, f.y, f.spot);
          const isTarget = props.targets.has(key);
          const at = followersAt(f);
          return (
            <g
              key={`${key}-${f.seat}`}
              transform={`translate(${left(f.x)} ${top(f.y)}) scale(${scale})`}
            >
              <Piece
                piece={f.large ? "large_follower" : "follower"}
                at={at}
                seat={f.seat}
                size={26}
                testid="carc-follower"
                title={`${whose(f.seat)} ${f.large ? "large follower (counts as two)" : "follower"} on a ${f.feature}`}
                data={{ "data-seat": String(f.seat), "data-feature": f.feature }}
              />
              {isTarget && (
                <circle
                  class={`carc-target${props.target === key ? " carc-target-chosen" : ""}`}
                  data-testid="carc-target"
                  data-target={key}
                  cx={at[0]}
                  cy={at[1]}
                  r="17"
                  onClick={() => {
                    if (!busy) props.onTarget(key);
                  }}
                >
                  <title>{`${whose(f.seat)} follower on a ${f.feature}: score it`}</title>
                </circle>
              )}
            </g>
          );
        })}
        {(view.pieces?.pieces ?? []).map((p) => {
          const tile = byKey.get(squareKey(p.x, p.y));
          const piece = p.piece === "pig" ? "pig" : "builder";
          const kind = tile ? featureKind(tile.tile, p.spot) : null;
          return (
            <g
              key={`${p.piece}-${p.seat}`}
              transform={`translate(${left(p.x)} ${top(p.y)}) scale(${scale})`}
            >
              <Piece
                piece={piece}
                at={tile ? spotPoint(tile.tile, tile.rotation, p.spot) : [50, 50]}
                seat={p.seat}
                size={26}
                testid="carc-piece"
                title={`${whose(p.seat)} ${PIECE_WORDS[piece]} on a ${kind ?? "feature"}`}
                data={{ "data-seat": String(p.seat), "data-x": String(p.x), "data-y": String(p.y) }}
              />
            </g>
          );
        })}
        {[...sorted.squares.values()].map((s) =>
          square && s.key === square.key ? null : (
            <rect
              key={`legal-${s.key}`}
              class="carc-legal"
              data-testid="carc-legal"
              data-x={s.x}
              data-y={s.y}
              data-rotations={s.rotations.join(" ")}
              x={left(s.x) + 3}
              y={top(s.y) + 3}
              width={size - 6}
              height={size - 6}
              rx={size / 12}
              tabIndex={0}
              role="button"
              aria-label={`Place the tile at (${s.x}, ${s.y})`}
              onClick={() => props.onSquare(s.key)}
              onKeyDown={(e) => {
                if (e.key === "Enter" || e.key === " ") {
                  e.preventDefault();
                  props.onSquare(s.key);
                }
              }}
            >
              <title>{`Place the tile at (${s.x}, ${s.y})`}</title>
            </rect>
          ),
        )}
        {square && drawn && rotation !== null && (
          <g data-testid="carc-ghost" data-x={square.x} data-y={square.y} data-rotation={rotation}>
            <g
              ref={ghost}
              transform={`translate(${left(square.x)} ${top(square.y)}) scale(${scale})`}
              onClick={() => props.onSquare(square.key)}
              tabIndex={0}
              role="button"
              aria-label={`The tile at (${square.x}, ${square.y}), turned ${rotation * 90}°${square.rotations.length > 1 ? ": turn it" : ""}`}
              onKeyDown={(e) => {
                if (e.key === "Enter" || e.key === " ") {
                  e.preventDefault();
                  props.onSquare(square.key);
                }
              }}
              style={{ cursor: square.rotations.length > 1 ? "pointer" : "default" }}
            >
              <title>
                {square.rotations.length > 1
                  ? "Click to turn the tile"
                  : "The only way this tile fits here"}
              </title>
              <g opacity="0.9">
                <TileArt letter={drawn} rotation={rotation} />
              </g>
              <rect width="100" height="100" fill="none" stroke="#ffeb3b" stroke-width="5" />
            </g>
            <g transform={`translate(${left(square.x)} ${top(square.y)}) scale(${scale})`}>
              {[...new Set(props.choices.map((c) => c.spot))].map((spot) => {
                const at = spotPoint(drawn, rotation, spot);
                const on = props.choice?.spot === spot ? props.choice : null;
                const label = spotLabel(drawn, rotation, spot);
                const here = props.choices.filter((c) => c.spot === spot).map((c) => c.piece);
                const next = nextChoice(props.choices, spot, on);
                const then = next ? `your ${PIECE_WORDS[next.piece]} instead` : "take it back";
                return on && you !== null ? (
                  <Piece
                    key={spot}
                    piece={on.piece}
                    at={at}
                    seat={you}
                    size={26}
                    class="carc-spot carc-spot-chosen"
                    testid="carc-spot"
                    title={`Your ${PIECE_WORDS[on.piece]}: ${label} (click: ${then})`}
                    data={{ "data-spot": String(spot) }}
                    onClick={() => {
                      if (!busy) props.onSpot(spot);
                    }}
                  />
                ) : (
                  <circle
                    key={spot}
                    class="carc-spot"
                    data-testid="carc-spot"
                    data-spot={spot}
                    cx={at[0]}
                    cy={at[1]}
                    r="10"
                    onClick={() => {
                      if (!busy) props.onSpot(spot);
                    }}
                  >
                    <title>{`Here (${label}): your ${here.map((p) => PIECE_WORDS[p]).join(" or ")}`}</title>
                  </circle>
                );
              })}
            </g>
          </g>
        )}
      </svg>
    </div>
  );
}

// ------------------------------------------------------------------ status and scores

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

// ------------------------------------------------------------------ controls

interface ControlsProps {
  view: CarcassonneView;
  players: string[];
  you: number | null;
  busy: boolean;
  myTurn: boolean;
  sorted: Sorted;
  square: Square | null;
  rotation: number | null;
  /** How the drawn tile is shown turned before a square is chosen. */
  preview: number;
  /** The pieces and spots listed for the chosen square and rotation. */
  choices: Choice[];
  choice: Choice | null;
  chosen: PlaceTile | null;
  targets: Map<string, CarryOut[]>;
  target: string | null;
  onTurn: (step: number) => void;
  onChoice: (choice: Choice | null) => void;
  onCancel: () => void;
  onTarget: (key: string | null) => void;
  send: (action: CarcassonneAction | null) => void;
}

/** A button that sends one listed action, written into ``data-action`` for all (and the browser tests) to see. */
function SendButton(props: {
  action: CarcassonneAction;
  testid: string;
  class?: string;
  busy: boolean;
  send: (action: CarcassonneAction) => void;
  children: ComponentChildren;
}) {
  return (
    <button
      type="button"
      class={props.class}
      data-testid={props.testid}
      data-action={JSON.stringify(props.action)}
      disabled={props.busy}
      onClick={() => props.send(props.action)}
    >
      {props.children}
    </button>
  );
}

/** A choice among several (a rotation, a follower's spot, a follower to score), ringed when chosen. */
function Chip(props: {
  on: boolean;
  testid: string;
  data: Record<`data-${string}`, string | number>;
  busy: boolean;
  onClick: () => void;
  children: ComponentChildren;
}) {
  return (
    <button
      type="button"
      class={props.on ? "carc-chip carc-chip-on" : "carc-chip"}
      data-testid={props.testid}
      aria-pressed={props.on}
      {...props.data}
      disabled={props.busy}
      onClick={props.onClick}
    >
      {props.children}
    </button>
  );
}

function Controls(props: ControlsProps): JSX.Element {
  const { view, sorted, busy, square, rotation } = props;
  const m = view.messengers ?? null;
  const drawn = view.tile;
  const parts: JSX.Element[] = [];

  // The drawn tile, turned as it would go down.
  if (drawn && !view.finished) {
    const shown = rotation ?? props.preview;
    parts.push(
      <div class="carc-drawn" key="drawn">
        <svg
          class="carc-drawn-tile"
          viewBox="-4 -4 108 108"
          width="84"
          height="84"
          data-testid="carc-drawn"
          data-tile={drawn}
        >
          <TileArt letter={drawn} rotation={shown} />
          <rect x="0" y="0" width="100" height="100" fill="none" stroke="#333" stroke-width="2" />
        </svg>
        <div>
          <div>
            Drawn tile <strong>{drawn}</strong>
          </div>
          <div class="carc-muted carc-small">{TILES.get(drawn)?.description}</div>
          {sorted.squares.size > 0 && (
            <div class="carc-row">
              <button
                type="button"
                data-testid="carc-rotate-left"
                disabled={busy || (square !== null && square.rotations.length < 2)}
                onClick={() => props.onTurn(-1)}
                aria-label="Turn anticlockwise"
                title="Turn anticlockwise"
              >
                ⟲
              </button>
              <button
                type="button"
                data-testid="carc-rotate"
                disabled={busy || (square !== null && square.rotations.length < 2)}
                onClick={() => props.onTurn(1)}
                aria-label="Turn clockwise"
                title="Turn clockwise"
              >
                ⟳
              </button>
              {square && (
                <span class="carc-muted carc-small">
                  {square.rotations.length > 1
                    ? `${square.rotations.length} ways fit here`
                    : "only one way fits here"}
                </span>
              )}
            </div>
          )}
        </div>
      </div>,
    );
  }

  if (sorted.squares.size > 0) {
    if (!square) {
      parts.push(
        <p key="hint" class="carc-hint">
          Choose one of the {sorted.squares.size} highlighted squares for the tile.
        </p>,
      );
    } else if (rotation !== null) {
      parts.push(
        <div key="place">
          <div class="carc-small">
            At ({square.x}, {square.y}), turned {rotation * 90}°. Rotations here:{" "}
            {square.rotations.map((r) => (
              <Chip
                key={r}
                on={r === rotation}
                testid="carc-rotation"
                data={{ "data-rotation": r }}
                busy={busy}
                onClick={() =>
                  props.onTurn(square.rotations.indexOf(r) - square.rotations.indexOf(rotation))
                }
              >
                {r * 90}°
              </Chip>
            ))}
          </div>
          {PIECES.map((piece) => {
            const here = props.choices.filter((c) => c.piece === piece);
            if (piece !== "follower" && here.length === 0) return null;
            return (
              <div class="carc-small" key={piece} data-testid="carc-piece-row" data-piece={piece}>
                {capitalised(PIECE_WORDS[piece])}:{" "}
                {piece === "follower" && (
                  <Chip
                    on={props.choice === null}
                    testid="carc-follower-choice"
                    data={{ "data-spot": "", "data-piece": "" }}
                    busy={busy}
                    onClick={() => props.onChoice(null)}
                  >
                    none
                  </Chip>
                )}
                {here.map((c) => (
                  <Chip
                    key={c.spot}
                    on={props.choice?.spot === c.spot && props.choice.piece === piece}
                    testid="carc-follower-choice"
                    data={{ "data-spot": c.spot, "data-piece": piece }}
                    busy={busy}
                    onClick={() => props.onChoice(c)}
                  >
                    {drawn ? spotLabel(drawn, rotation, c.spot) : `spot ${c.spot}`}
                  </Chip>
                ))}
                {piece === "follower" && here.length === 0 && (
                  <span class="carc-muted">
                    {props.you !== null && (view.supply[props.you] ?? 0) === 0
                      ? " (no followers left)"
                      : " (no free feature)"}
                  </span>
                )}
              </div>
            );
          })}
          <div class="carc-row">
            <button
              type="button"
              class="carc-primary"
              data-testid="carc-place"
              data-action={props.chosen ? JSON.stringify(props.chosen) : ""}
              disabled={busy || !props.chosen}
              onClick={() => props.send(props.chosen)}
            >
              Place tile{props.choice ? ` and ${PIECE_WORDS[props.choice.piece]}` : ""}
            </button>
            <button
              type="button"
              data-testid="carc-cancel"
              disabled={busy}
              onClick={props.onCancel}
            >
              Cancel
            </button>
          </div>
        </div>,
      );
    }
  }

  // The Messengers: a figure for each of the placing player's scorings.
  if (m && m.phase === "choose_figure") {
    const first = m.pending[0];
    parts.push(
      <div key="figures" class="carc-messengers-box" data-testid="carc-pending">
        <div>
          {first ? (
            <span>
              {props.myTurn ? "Your" : `${seatName(props.players, props.view.to_move[0] ?? 0)}'s`}{" "}
              {first.feature} scored <strong>{first.points}</strong> points: which figure moves?
            </span>
          ) : (
            "Scorings wait for a figure."
          )}
          {m.pending.length > 1 && (
            <span class="carc-muted"> ({m.pending.length - 1} more after this)</span>
          )}
        </div>
        <div class="carc-row">
          {sorted.figures.map((a) => {
            const seat = props.view.to_move[0] ?? 0;
            const now = m.figures[seat]?.[a.figure] ?? 0;
            const then = now + (first?.points ?? 0);
            return (
              <SendButton
                key={a.figure}
                action={a}
                class="carc-primary"
                testid="carc-choose-figure"
                busy={busy}
                send={props.send}
              >
                Move {figureName(a.figure)} {now} → {then}
                {isDark(then) ? " ◆" : ""}
              </SendButton>
            );
          })}
        </div>
        {sorted.figures.length > 0 && (
          <div class="carc-muted carc-small">
            ◆ lands on a dark space (a message may be drawn when the scoring is over).
          </div>
        )}
      </div>,
    );
  }

  // The Messengers: the drawn message.
  if (m && m.message) {
    const card = messageCard(m.message);
    const seat = props.view.to_move[0] ?? 0;
    const withFollower = sorted.carryOut.filter((a) => a.follower);
    const plain = sorted.carryOut.filter((a) => !a.follower);
    const forTarget = props.target ? (props.targets.get(props.target) ?? []) : [];
    parts.push(
      <div
        key="message"
        class="carc-messengers-box carc-message"
        data-testid="carc-message"
        data-message={m.message}
      >
        <div>
          Message {m.message}: <strong>{card?.title ?? ""}</strong>
          {!props.myTurn && (
            <span class="carc-muted"> (drawn by {seatName(props.players, seat)})</span>
          )}
        </div>
        <div class="carc-small">{card?.text}</div>
        {props.myTurn && (
          <>
            {sorted.carryOut.length === 0 && sorted.takePoints.length > 0 && (
              <div class="carc-muted carc-small">
                It cannot be carried out now: take its points instead.
              </div>
            )}
            {plain.length > 0 && (
              <div class="carc-row">
                {plain.map((a, i) => (
                  <SendButton
                    key={`c${i}`}
                    action={a}
                    class="carc-primary"
                    testid="carc-carry-out"
                    busy={busy}
                    send={props.send}
                  >
                    {withFigure("Carry it out", a.figure)}
                  </SendButton>
                ))}
              </div>
            )}
            {withFollower.length > 0 && (
              <div class="carc-small">
                <div>Choose the follower to score (ringed on the board):</div>
                <div class="carc-row">
                  {[...props.targets.keys()].map((key) => {
                    const [x, y, spot] = key.split(",").map(Number) as [number, number, number];
                    const tile = view.board.find((t) => t.x === x && t.y === y);
                    const kind = tile ? featureKind(tile.tile, spot) : null;
                    return (
                      <Chip
                        key={key}
                        on={props.target === key}
                        testid="carc-target-choice"
                        data={{ "data-target": key }}
                        busy={busy}
                        onClick={() => props.onTarget(key)}
                      >
                        {kind ?? "follower"} at ({x}, {y})
                      </Chip>
                    );
                  })}
                </div>
                {forTarget.length > 0 && (
                  <div class="carc-row">
                    {forTarget.map((a, i) => (
                      <SendButton
                        key={`t${i}`}
                        action={a}
                        class="carc-primary"
                        testid="carc-carry-out"
                        busy={busy}
                        send={props.send}
                      >
                        {withFigure("Score it", a.figure)}
                      </SendButton>
                    ))}
                  </div>
                )}
              </div>
            )}
            {sorted.takePoints.length > 0 && (
              <div class="carc-row">
                {sorted.takePoints.map((a) => (
                  <SendButton
                    key={`p${a.figure}`}
                    action={a}
                    testid="carc-take-points"
                    busy={busy}
                    send={props.send}
                  >
                    Take {card?.instead_points ?? 2} points instead: {figureName(a.figure)}
                  </SendButton>
                ))}
              </div>
            )}
          </>
        )}
      </div>,
    );
  }

  // The Messengers: the standing preference, any time, in or out of turn.
  if (m && props.you !== null && !view.finished) {
    const current = m.preferences[props.you] ?? null;
    const label = (figure: number | null) =>
      figure === null ? "whichever is behind" : figureName(figure);
    parts.push(
      <div key="pref" class="carc-small" data-testid="carc-preference">
        Your points scored out of your own choices go to: <strong>{label(current)}</strong>
        {sorted.preferences.length > 0 && (
          <span>
            {" "}
            · change to{" "}
            {sorted.preferences.map((a) => (
              <SendButton
                key={String(a.figure ?? "behind")}
                action={a}
                class="carc-chip"
                testid="carc-set-preference"
                busy={busy}
                send={props.send}
              >
                {label(a.figure ?? null)}
              </SendButton>
            ))}
          </span>
        )}
      </div>,
    );
  }

  if (parts.length === 0) return <></>;
  return (
    <div class="carc-controls" data-testid="carc-controls">
      {parts}
    </div>
  );
}
