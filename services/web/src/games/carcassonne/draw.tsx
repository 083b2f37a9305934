// SVG pieces of the Carcassonne table: tiles, followers, the scoring track.
import type { JSX } from "preact";
import { pathOf, tileShape, type Pt } from "./geometry";
import { TileMark } from "./marks";
import { isDark, TRACK_SPACES } from "./messages";

/** Follower colours per seat (6 with The Messengers' sixth colour). */
const SEAT_COLOURS = ["#d3302f", "#2458c9", "#f0c419", "#2b2b2b", "#8e44ad", "#ee82b8"];

export function seatColour(seat: number): string {
  return SEAT_COLOURS[seat % SEAT_COLOURS.length] ?? "#888";
}

const FIELD = "#86b84a";
const CITY = "#d8b477";
const CITY_EDGE = "#7a4f24";
const ROAD = "#f4ecd6";
const ROAD_EDGE = "#6f6149";

/** One tile in a 100 x 100 box, turned ``rotation`` clockwise quarter turns, drawn ``px``
 * across on screen (100 unless told: its marks grow on smaller tiles). */
export function TileArt(props: { letter: string; rotation: number; px?: number }): JSX.Element {
  const tilePx = props.px ?? 100;
  const shape = tileShape(props.letter);
  if (!shape) {
    return (
      <g>
        <rect width="100" height="100" fill="#ccc" />
        <text x="50" y="58" text-anchor="middle" font-size="30">
          {props.letter}
        </text>
      </g>
    );
  }
  const roads = shape.features.filter((f) => f.kind === "road" && f.line && f.line.length > 1);
  const cities = shape.features.filter((f) => f.kind === "city" && f.polygon);
  const cloisters = shape.features.filter((f) => f.kind === "cloister" && f.polygon);
  return (
    <g transform={`rotate(${props.rotation * 90} 50 50)`}>
      <rect width="100" height="100" fill={FIELD} />
      {shape.hedge && (
        <path d={shape.hedge} stroke="#4f7a26" stroke-width="2.2" stroke-linecap="round" />
      )}
      {roads.map((f) => (
        <path
          key={`re${f.index}`}
          d={pathOf(f.line ?? [], false)}
          stroke={ROAD_EDGE}
          stroke-width="11"
          fill="none"
        />
      ))}
      {roads.map((f) => (
        <path
          key={`r${f.index}`}
          d={pathOf(f.line ?? [], false)}
          stroke={ROAD}
          stroke-width="8"
          fill="none"
        />
      ))}
      {shape.junction && (
        <rect
          x="42"
          y="42"
          width="16"
          height="16"
          fill="#8b5a3c"
          stroke="#3c2a1c"
          stroke-width="1.5"
        />
      )}
      {cities.map((f) => (
        <path
          key={`c${f.index}`}
          d={pathOf(f.polygon ?? [], true)}
          fill={CITY}
          stroke={CITY_EDGE}
          stroke-width="2.5"
          stroke-linejoin="round"
        />
      ))}
      {cities.map((f) => (f.pennant ? <Pennant key={`p${f.index}`} at={f.pennant} /> : null))}
      {cloisters.map((f) => (
        <g key={`k${f.index}`} transform={`rotate(${-props.rotation * 90} 50 50)`}>
          <path
            d={pathOf(f.polygon ?? [], true)}
            fill="#c0563b"
            stroke="#5a2316"
            stroke-width="2"
          />
          <rect x="46" y="52" width="8" height="16" fill="#5a2316" />
          <path d="M50,30v-10M45,24h10" stroke="#5a2316" stroke-width="2.5" />
        </g>
      ))}
      {shape.features.map((f) => (
        <g key={`m${f.index}`}>
          {f.inn && <TileMark name="inn" at={f.inn} rotation={props.rotation} tilePx={tilePx} />}
          {f.cathedral && (
            <TileMark name="cathedral" at={f.cathedral} rotation={props.rotation} tilePx={tilePx} />
          )}
          {f.goods && (
            <TileMark
              name={f.goods.good}
              at={f.goods.at}
              rotation={props.rotation}
              tilePx={tilePx}
            />
          )}
        </g>
      ))}
    </g>
  );
}

function Pennant(props: { at: Pt }): JSX.Element {
  const [x, y] = props.at;
  return (
    <path
      d={`M${x - 6},${y - 7}h12v7q0,6 -6,9q-6,-3 -6,-9z`}
      fill="#2f55b5"
      stroke="#fff"
      stroke-width="1.6"
    />
  );
}

/** A follower (a little meeple) standing at ``at`` of a tile box, upright whatever the tile's
 * rotation. */
export function Meeple(props: {
  at: Pt;
  seat: number;
  size?: number | undefined;
  class?: string | undefined;
  onClick?: (() => void) | undefined;
  testid?: string | undefined;
  title?: string | undefined;
  data?: Record<string, string> | undefined;
}): JSX.Element {
  const s = (props.size ?? 22) / 22;
  const [x, y] = props.at;
  return (
    <g
      transform={`translate(${x} ${y}) scale(${s})`}
      class={props.class}
      onClick={props.onClick}
      data-testid={props.testid}
      {...(props.data ?? {})}
    >
      {props.title && <title>{props.title}</title>}
      <path
        d="M0,-10C3,-10 4,-8 4,-6C4,-4.5 3.5,-3.8 3,-3.3L9,-1.5C10.5,-1 10.5,1.5 9,2L5,3L8,10L2,10L0,6L-2,10L-8,10L-5,3L-9,2C-10.5,1.5 -10.5,-1 -9,-1.5L-3,-3.3C-3.5,-3.8 -4,-4.5 -4,-6C-4,-8 -3,-10 0,-10Z"
        fill={seatColour(props.seat)}
        stroke="#fff"
        stroke-width="1.4"
        stroke-linejoin="round"
      />
    </g>
  );
}

/** The 50-space scoring track, with each seat's figure(s); ``figures`` per seat: one entry
 * (the score) in the base game, two with The Messengers. */
export function ScoreTrack(props: { figures: number[][]; players: string[] }): JSX.Element {
  const cols = 10;
  const cell = 30;
  const rows = Math.ceil(TRACK_SPACES / cols);
  const onSpace = new Map<number, Array<{ seat: number; figure: number; points: number }>>();
  props.figures.forEach((figs, seat) =>
    figs.forEach((points, figure) => {
      const space = ((points % TRACK_SPACES) + TRACK_SPACES) % TRACK_SPACES;
      const list = onSpace.get(space) ?? [];
      list.push({ seat, figure, points });
      onSpace.set(space, list);
    }),
  );
  return (
    <svg
      class="carc-track"
      viewBox={`0 0 ${cols * cell} ${rows * cell}`}
      role="img"
      aria-label="Scoring track"
      data-testid="carc-track"
    >
      {Array.from({ length: TRACK_SPACES }, (_, space) => {
        const row = Math.floor(space / cols);
        const col = space % cols;
        const x = col * cell;
        const y = row * cell;
        const here = onSpace.get(space) ?? [];
        return (
          <g key={space} transform={`translate(${x} ${y})`}>
            <rect
              x="1"
              y="1"
              width={cell - 2}
              height={cell - 2}
              rx="3"
              fill={isDark(space) ? "#6d5a3f" : "#efe3c6"}
              stroke="#8d7650"
            />
            <text x="4" y="10" font-size="8" fill={isDark(space) ? "#fff" : "#6d5a3f"}>
              {space}
            </text>
            {here.map((m, i) => {
              // up to 6 markers in 3 columns, up to 12 (6 seats, 2 figures each) in 4 smaller
              // ones, all below the number and inside the square
              const many = here.length > 6;
              const across = many ? 4 : 3;
              const step = many ? 6 : 8;
              const r = many ? 2.6 : 3.5;
              const cx = (cell - (across - 1) * step) / 2 + (i % across) * step;
              const cy = (many ? 13.5 : 15) + Math.floor(i / across) * step;
              const name = props.players[m.seat] ?? `Seat ${m.seat + 1}`;
              const label = `${name}${props.figures[m.seat]?.length === 2 ? (m.figure ? " (messenger)" : " (scoring figure)") : ""}: ${m.points}`;
              return m.figure === 1 ? (
                <rect
                  key={i}
                  x={cx - r / Math.SQRT2}
                  y={cy - r / Math.SQRT2}
                  width={r * Math.SQRT2}
                  height={r * Math.SQRT2}
                  transform={`rotate(45 ${cx} ${cy})`}
                  fill={seatColour(m.seat)}
                  stroke="#fff"
                  stroke-width="1"
                >
                  <title>{label}</title>
                </rect>
              ) : (
                <circle
                  key={i}
                  cx={cx}
                  cy={cy}
                  r={r}
                  fill={seatColour(m.seat)}
                  stroke="#fff"
                  stroke-width="1"
                >
                  <title>{label}</title>
                </circle>
              );
            })}
          </g>
        );
      })}
    </svg>
  );
}
