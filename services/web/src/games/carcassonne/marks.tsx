// The marks the expansions' tiles carry: Inns & Cathedrals' inn and cathedral, Traders &
// Builders' goods symbols. Each is drawn upright about (0, 0) in tile units (a tile is 100 x
// 100), so the caller places and turns it.
import type { JSX } from "preact";
import type { Good } from "./geometry";

const INK = "#3c2a1c";

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
