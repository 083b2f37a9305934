// The Carcassonne table's controls: the drawn tile and its turning, the chosen square's
// rotations and pieces, The Messengers' figure and message choices and the standing
// preference; each sends one of the listed actions unchanged.
import type { ComponentChildren, JSX } from "preact";
import type { CarcassonneAction, CarcassonneView } from "../../client";
import { capitalised, seatName } from "../names";
import {
  PIECES,
  type Choice,
  type CarryOut,
  type PlaceTile,
  type Sorted,
  type Square,
} from "./actions";
import { TileArt } from "./draw";
import { featureKind, TILES } from "./geometry";
import { figureName, isDark, messageCard } from "./messages";
import { PIECE_WORDS } from "./pieces";
import { spotLabel } from "./words";

/** A message's button: what it does, and which figure takes the points when one is named. */
function withFigure(label: string, figure: number | null | undefined): string {
  return figure === null || figure === undefined
    ? label
    : `${label}, points to the ${figureName(figure)}`;
}

export interface ControlsProps {
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

export function Controls(props: ControlsProps): JSX.Element {
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
