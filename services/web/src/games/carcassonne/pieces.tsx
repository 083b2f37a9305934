// The pieces Inns & Cathedrals and Traders & Builders add: the builder and the pig (the large
// follower is draw.tsx's follower drawn bigger), drawn upright about (0, 0) in tile units (a
// tile is 100 x 100), so the caller places and scales them.
import type { JSX } from "preact";
import type { Piece as PieceName } from "./actions";
import { Meeple, seatColour } from "./draw";

/** The builder: a pawn, taller than a follower and without arms. */
export function BuilderShape(props: { seat: number }): JSX.Element {
  return (
    <g stroke="#fff" stroke-width="1.4" stroke-linejoin="round" fill={seatColour(props.seat)}>
      <path d="M-3.5,-4H3.5L7.5,11H-7.5Z" />
      <circle cx="0" cy="-8" r="4.5" />
      <path d="M-5.5,-10.5H5.5" stroke-width="1.8" />
    </g>
  );
}

/** The pig: a round body, snout, ear and curly tail. */
export function PigShape(props: { seat: number }): JSX.Element {
  const fill = seatColour(props.seat);
  return (
    <g stroke="#fff" stroke-width="1.3" stroke-linejoin="round">
      <path d="M-10,1q-4,-1 -3,-4" fill="none" stroke={fill} stroke-width="1.6" />
      <rect x="-7" y="4" width="3" height="6" fill={fill} />
      <rect x="3" y="4" width="3" height="6" fill={fill} />
      <ellipse cx="-1" cy="0" rx="10" ry="7" fill={fill} />
      <circle cx="8" cy="-3" r="5" fill={fill} />
      <path d="M6,-7l1,-4l3,3z" fill={fill} />
      <ellipse cx="12.5" cy="-2" rx="2.2" ry="2.6" fill="#f4a9bd" stroke-width="0.8" />
    </g>
  );
}

/** What players call a piece. */
export const PIECE_WORDS: Record<PieceName, string> = {
  follower: "follower",
  large_follower: "large follower",
  builder: "builder",
  pig: "pig",
};

/** Any piece of a seat at ``at`` (tile units), ``size`` about a follower's 22; a large
 * follower is drawn half as big again. */
export function Piece(props: {
  piece: PieceName;
  seat: number;
  at: readonly [number, number];
  size?: number;
  class?: string;
  testid?: string;
  title?: string;
  data?: Record<string, string>;
  onClick?: () => void;
}): JSX.Element {
  const size = props.size ?? 22;
  if (props.piece === "follower" || props.piece === "large_follower") {
    return (
      <Meeple
        at={props.at}
        seat={props.seat}
        size={props.piece === "large_follower" ? size * 1.45 : size}
        class={props.class}
        testid={props.testid}
        title={props.title}
        data={{ ...(props.data ?? {}), "data-piece": props.piece }}
        onClick={props.onClick}
      />
    );
  }
  const [x, y] = props.at;
  return (
    <g
      transform={`translate(${x} ${y}) scale(${size / 22})`}
      class={props.class}
      data-testid={props.testid}
      data-piece={props.piece}
      {...(props.data ?? {})}
      onClick={props.onClick}
    >
      {props.title && <title>{props.title}</title>}
      {props.piece === "builder" ? (
        <BuilderShape seat={props.seat} />
      ) : (
        <PigShape seat={props.seat} />
      )}
    </g>
  );
}
