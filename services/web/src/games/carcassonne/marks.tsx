// The marks the expansions' tiles carry: Inns & Cathedrals' inn and cathedral, Traders &
// Builders' goods symbols. Each is drawn upright about (0, 0) in tile units (a tile is 100 x
// 100); ``TileMark`` places one on a tile, named, and big enough to tell apart however small
// the board draws its tiles.
import type { JSX } from "preact";
import type { Good, Pt } from "./geometry";

const INK = "#3c2a1c";

export type MarkName = "inn" | "cathedral" | Good;

/** A mark's name and what it changes, for screen readers and as its tooltip. */
const MARK_WORDS: Record<MarkName, string> = {
  inn: "Inn: its road scores 2 a tile when completed, nothing if not",
  cathedral: "Cathedral: its city scores 3 a tile and pennant when completed, nothing if not",
  wine: "Wine: a token for whoever completes this city",
  grain: "Grain: a token for whoever completes this city",
  cloth: "Cloth: a token for whoever completes this city",
};

/** How big each mark is drawn on a large tile: scale and the widest side at that scale (tile
 * units, strokes included). */
const MARK_SIZE: Record<MarkName, { scale: number; span: number }> = {
  inn: { scale: 1.3, span: 21.4 },
  cathedral: { scale: 1.5, span: 35.4 },
  wine: { scale: 1.3, span: 21.3 },
  grain: { scale: 1.3, span: 21.3 },
  cloth: { scale: 1.3, span: 21.3 },
};

/** The least a mark measures on screen: at 36 px tiles the goods would be 10 px across, too
 * small to tell wine from cloth. */
export const SMALLEST_MARK_PX = 15;

/** The scale of a mark on a tile drawn ``tilePx`` across: its own, or more on a tile so small
 * that it would measure under ``SMALLEST_MARK_PX``. */
export function markScale(name: MarkName, tilePx: number): number {
  const { scale, span } = MARK_SIZE[name];
  return Math.max(scale, (SMALLEST_MARK_PX * 100) / (span * tilePx));
}

/** A mark at ``at`` of a tile turned ``rotation`` and drawn ``tilePx`` across, kept upright,
 * named, and moved in to keep clear of the tile's edge (a neighbour drawn later would cover
 * it). */
export function TileMark(props: {
  name: MarkName;
  at: Pt;
  rotation: number;
  tilePx: number;
}): JSX.Element {
  const scale = markScale(props.name, props.tilePx);
  const half = (MARK_SIZE[props.name].span * scale) / 2;
  const inside = (v: number) => Math.min(98 - half, Math.max(2 + half, v));
  const [x, y] = props.at.map(inside) as [number, number];
  const words = MARK_WORDS[props.name];
  return (
    <g
      transform={`translate(${x} ${y}) rotate(${-props.rotation * 90}) scale(${scale})`}
      data-testid="carc-mark"
      data-mark={props.name}
      role="img"
      aria-label={words}
      pointer-events="visiblePainted"
    >
      <title>{words}</title>
      {props.name === "inn" && <Inn />}
      {props.name === "cathedral" && <Cathedral />}
      {props.name !== "inn" && props.name !== "cathedral" && <GoodsMark good={props.name} />}
    </g>
  );
}

/** An inn: a small house with a red roof and a hanging sign. */
export function Inn(): JSX.Element {
  return (
    <g>
      <path d="M-10,-1L0,-10L10,-1Z" fill="#b0412a" stroke={INK} stroke-width="1.4" />
      <rect x="-8" y="-1" width="16" height="10" fill="#f6e7c4" stroke={INK} stroke-width="1.4" />
      <rect x="-2" y="3" width="4" height="6" fill="#6b4423" />
      <rect x="3.5" y="1" width="3" height="3" fill="#6b4423" />
    </g>
  );
}

/** A cathedral: two towers, a nave and a rose window. */
export function Cathedral(): JSX.Element {
  return (
    <g stroke={INK} stroke-width="1.4" stroke-linejoin="round">
      <rect x="-11" y="-8" width="22" height="20" fill="#f1ece2" />
      <path d="M-11,-8L0,-17L11,-8Z" fill="#8a6fa6" />
      <rect x="-17" y="-12" width="7" height="24" fill="#e3dccd" />
      <rect x="10" y="-12" width="7" height="24" fill="#e3dccd" />
      <path d="M-17,-12L-13.5,-20L-10,-12ZM10,-12L13.5,-20L17,-12Z" fill="#8a6fa6" />
      <circle cx="0" cy="-2" r="3.5" fill="#e7c44a" />
      <path d="M-3,12V7a3,3 0 0 1 6,0V12Z" fill="#6b4423" />
    </g>
  );
}

/** The goods symbols on a light disc: grapes for wine, an ear for grain, a bolt for cloth. */
export function GoodsMark(props: { good: Good; r?: number }): JSX.Element {
  const scale = (props.r ?? 10) / 10;
  return (
    <g transform={`scale(${scale})`}>
      <circle r="10" fill="#fffaf0" stroke={INK} stroke-width="1.3" />
      {props.good === "wine" && <Grapes />}
      {props.good === "grain" && <Ear />}
      {props.good === "cloth" && <Bolt />}
    </g>
  );
}

function Grapes(): JSX.Element {
  const berries: Array<[number, number]> = [
    [-3.6, -2.5],
    [0, -2.5],
    [3.6, -2.5],
    [-1.8, 0.8],
    [1.8, 0.8],
    [0, 4.1],
  ];
  return (
    <g>
      <path d="M0,-5Q1,-8 4,-8" stroke="#3f7a2a" stroke-width="1.4" fill="none" />
      {berries.map(([x, y], i) => (
        <circle key={i} cx={x} cy={y} r="2.1" fill="#6a1b6e" stroke="#2e0a30" stroke-width="0.6" />
      ))}
    </g>
  );
}

function Ear(): JSX.Element {
  const grains = [-5, -2, 1, 4];
  return (
    <g fill="#d9a521" stroke="#7a5a0e" stroke-width="0.6">
      <path d="M0,8V-7" stroke="#7a5a0e" stroke-width="1.2" fill="none" />
      {grains.map((y) => (
        <g key={y}>
          <ellipse cx="-2.2" cy={y} rx="2.2" ry="1.3" transform={`rotate(-35 -2.2 ${y})`} />
          <ellipse cx="2.2" cy={y} rx="2.2" ry="1.3" transform={`rotate(35 2.2 ${y})`} />
        </g>
      ))}
      <ellipse cx="0" cy="-7.5" rx="1.3" ry="2" />
    </g>
  );
}

function Bolt(): JSX.Element {
  return (
    <g stroke="#123f5c" stroke-width="0.9">
      <path d="M-6,-4H5V6H-6Z" fill="#2f86b8" />
      <path d="M-6,-1H5M-6,2.5H5" stroke="#bfe3f5" stroke-width="1.2" />
      <ellipse cx="5" cy="1" rx="2" ry="5" fill="#6fb6dc" />
    </g>
  );
}
