// The Carcassonne table's scores and supplies: each seat's score (and The Messengers' two
// figures), the pieces in its supply (followers; with Inns & Cathedrals the large follower,
// with Traders & Builders the builder and pig) and its goods tokens, which are public; then
// the scoring track.
import type { JSX } from "preact";
import type { CarcassonneView } from "../../client";
import { seatName } from "../names";
import type { Piece as PieceName } from "./actions";
import { ScoreTrack, seatColour } from "./draw";
import { GOODS, totalTiles } from "./geometry";
import { GoodsMark } from "./marks";
import { figureName, TRACK_SPACES } from "./messages";
import { Piece, PIECE_WORDS } from "./pieces";

export function Scores(props: {
  view: CarcassonneView;
  players: string[];
  you: number | null;
  toMove: number[];
}): JSX.Element {
  const { view, players, you, toMove } = props;
  const m = view.messengers ?? null;
  const pieces = view.pieces ?? null;
  const figures = view.scores.map((score, seat) =>
    m && !m.figures_summed ? (m.figures[seat] ?? [score]) : [score],
  );
  return (
    <div class="carc-scores">
      <table class="carc-score-table" data-testid="carc-scores">
        <thead>
          <tr>
            <th>Player</th>
            <th>Score</th>
            {m && !m.figures_summed && <th title="scoring figure / messenger">Figures</th>}
            <th
              title={`the pieces in each player's supply${pieces?.traders_builders ? "; goods tokens" : ""}`}
            >
              {pieces?.traders_builders ? "Supply, goods" : pieces ? "Supply" : "Followers"}
            </th>
          </tr>
        </thead>
        <tbody>
          {view.scores.map((score, seat) => (
            <tr
              key={seat}
              class={toMove.includes(seat) && !view.finished ? "carc-to-move" : ""}
              data-seat={seat}
            >
              <td>
                <span class="carc-dot" style={{ background: seatColour(seat) }} />{" "}
                {seatName(players, seat)}
                {seat === you ? " (you)" : ""}
                {view.finished && view.winners.includes(seat) ? " ★ winner" : ""}
              </td>
              <td class="carc-num" data-testid="carc-score">
                {score}
              </td>
              {m && !m.figures_summed && (
                <td class="carc-num">
                  {(m.figures[seat] ?? []).join(" / ")}
                  {m.preferences[seat] !== null && m.preferences[seat] !== undefined ? (
                    <span class="carc-muted" title="standing preference">
                      {" "}
                      ↦{figureName(m.preferences[seat] ?? 0, true)}
                    </span>
                  ) : null}
                </td>
              )}
              <td>
                <Supply view={view} seat={seat} players={players} />
                {pieces?.traders_builders && (
                  <Goods goods={pieces.goods[seat] ?? {}} seat={seat} players={players} />
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <ScoreTrack figures={figures} players={players} />
      <div class="carc-muted carc-small">
        Each lap of the track is {TRACK_SPACES} points.
        {m
          ? ` Messages face down: ${m.messages_left} (${m.edition}${m.zmg_alone_rule ? ", ZMG reading" : ""}).`
          : ""}
        {` Tiles: ${view.board.length} placed, ${view.tiles_left} in the stack (${totalTiles(!!pieces?.inns_cathedrals, !!pieces?.traders_builders)} in the boxes played).`}
      </div>
    </div>
  );
}

/** A piece drawn in a small box of its own, dimmed while it is on the board. */
function PieceIcon(props: { piece: PieceName; seat: number; away?: boolean }): JSX.Element {
  const large = props.piece === "large_follower";
  return (
    <svg
      class={props.away ? "carc-away" : undefined}
      width={large ? 22 : 17}
      height={large ? 22 : 17}
      viewBox={large ? "-15 -15 30 30" : "-12 -12 24 24"}
      aria-hidden="true"
    >
      <Piece piece={props.piece} seat={props.seat} at={[0, 0]} size={20} />
    </svg>
  );
}

/** A seat's supply: its followers (×n), and each expansion piece it plays, dimmed while on
 * the board. */
function Supply(props: { view: CarcassonneView; seat: number; players: string[] }): JSX.Element {
  const { view, seat } = props;
  const followers = view.supply[seat] ?? 0;
  const extra = view.pieces?.supply[seat] ?? {};
  const played: PieceName[] = [
    ...(view.pieces?.inns_cathedrals ? (["large_follower"] as const) : []),
    ...(view.pieces?.traders_builders ? (["builder", "pig"] as const) : []),
  ];
  const said = played.map(
    (piece) => `the ${PIECE_WORDS[piece]} ${(extra[piece] ?? 0) > 0 ? "in hand" : "on the board"}`,
  );
  const title = `${seatName(props.players, seat)}'s supply: ${followers} follower${followers === 1 ? "" : "s"}${said.length ? `, ${said.join(", ")}` : ""}`;
  return (
    <span
      class="carc-supply"
      data-testid="carc-supply"
      data-followers={followers}
      title={title}
      aria-label={title}
      {...Object.fromEntries(played.map((p) => [`data-${p.replace("_", "-")}`, extra[p] ?? 0]))}
    >
      <span class="carc-supply-piece">
        <PieceIcon piece="follower" seat={seat} />×{followers}
      </span>
      {played.map((piece) => (
        <span key={piece} class="carc-supply-piece">
          <PieceIcon piece={piece} seat={seat} away={(extra[piece] ?? 0) === 0} />
        </span>
      ))}
    </span>
  );
}

/** A seat's goods tokens, each good's symbol and count (public). */
function Goods(props: {
  goods: { [good: string]: number };
  seat: number;
  players: string[];
}): JSX.Element {
  const counts = GOODS.map((good) => props.goods[good] ?? 0);
  const title = `${seatName(props.players, props.seat)}'s goods: ${GOODS.map((g, i) => `${counts[i]} ${g}`).join(", ")}`;
  return (
    <span
      class="carc-goods"
      data-testid="carc-goods"
      title={title}
      aria-label={title}
      {...Object.fromEntries(GOODS.map((g, i) => [`data-${g}`, counts[i]]))}
    >
      {GOODS.map((good, i) => (
        <span key={good} class={counts[i] ? "carc-good" : "carc-good carc-away"}>
          <svg width="17" height="17" viewBox="-11 -11 22 22" aria-hidden="true">
            <GoodsMark good={good} />
          </svg>
          {counts[i]}
        </span>
      ))}
    </span>
  );
}
