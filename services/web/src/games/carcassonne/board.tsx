// The Carcassonne board: the placed tiles, the followers, builders and pigs on them, the
// squares where the drawn tile fits (only the listed ones), the drawn tile on the chosen square
// with the listed pieces' spots, and message 8's followers to score. It opens with its tiles
// in the middle of the view and keeps what the player looks at in place as it grows or zooms.
import type { JSX } from "preact";
import { useLayoutEffect, useRef } from "preact/hooks";
import type { CarcassonneFollower, CarcassonnePlacedTile, CarcassonneView } from "../../client";
import { seatName } from "../names";
import {
  nextChoice,
  squareKey,
  type Choice,
  type CarryOut,
  type Sorted,
  type Square,
} from "./actions";
import { TileArt } from "./draw";
import { featureKind, spotPoint, TILES } from "./geometry";
import { Piece, PIECE_WORDS } from "./pieces";
import { spotLabel, targetKey } from "./words";

export interface BoardProps {
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

export function Board(props: BoardProps): JSX.Element {
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
        data-tile-px={size}
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
            <TileArt letter={t.tile} rotation={t.rotation} px={size} />
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
                <TileArt letter={drawn} rotation={rotation} px={size} />
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
