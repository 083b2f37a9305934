// Small pieces shared by the card-game tables (The Dingo Ate the Baby, Breaking News).
import type { ComponentChildren } from "preact";
import "./cardtable.css";
import { listNames, seatName, whoName } from "./names";

/** "1 turn", "2 turns": a count and its word, in the plural unless the count is one. */
export function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? "" : "s"}`;
}

/** The items in groups of equal ``keyOf``, in the order each group first appears. */
export function groupBy<T>(items: T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return groups;
}

/** The listed actions of one type, typed as that type's shape. */
export function listed<Action extends { type: string }, Type extends Action["type"]>(
  actions: Action[],
  type: Type,
): Extract<Action, { type: Type }>[] {
  return actions.filter(
    (action): action is Extract<Action, { type: Type }> => action.type === type,
  );
}

/** Whose move it is, in words, for the status line. */
export function turnLine(players: string[], toMove: number[], you: number | null): string {
  if (toMove.length === 0) return "";
  if (you !== null && toMove.includes(you)) {
    return toMove.length === 1
      ? "Your move"
      : `Your move (also ${listNames(
          players,
          toMove.filter((s) => s !== you),
          you,
        )})`;
  }
  return `Waiting for ${listNames(players, toMove, you)}`;
}

/** One listed action, offered as a button. ``action`` is written into ``data-action`` so
 * anyone (and the browser tests) can see exactly which listed move the control sends. */
export function ActionButton(props: {
  action: unknown;
  busy: boolean;
  onChoose: () => void;
  children: ComponentChildren;
  className?: string;
  title?: string;
  onHover?: (on: boolean) => void;
}) {
  return (
    <button
      type="button"
      class={`ct-action ${props.className ?? ""}`}
      data-testid="action"
      data-action={JSON.stringify(props.action)}
      disabled={props.busy}
      title={props.title}
      onClick={props.onChoose}
      onMouseEnter={props.onHover ? () => props.onHover?.(true) : undefined}
      onMouseLeave={props.onHover ? () => props.onHover?.(false) : undefined}
      onFocus={props.onHover ? () => props.onHover?.(true) : undefined}
      onBlur={props.onHover ? () => props.onHover?.(false) : undefined}
    >
      {props.children}
    </button>
  );
}

export function Section(props: {
  title: ComponentChildren;
  children: ComponentChildren;
  class?: string;
  testid?: string;
}) {
  return (
    <section class={`ct-section ${props.class ?? ""}`} data-testid={props.testid}>
      <h3 class="ct-section-title">{props.title}</h3>
      {props.children}
    </section>
  );
}

/** A label-value fact in the table's header strip. */
export function Fact(props: {
  label: string;
  children: ComponentChildren;
  testid?: string;
  title?: string;
}) {
  return (
    <div class="ct-fact" data-testid={props.testid} title={props.title}>
      <span class="ct-fact-label">{props.label}</span>
      <span class="ct-fact-value">{props.children}</span>
    </div>
  );
}

/** The final result as the view tells it: winners and every seat's score. */
function FinalResult(props: {
  players: string[];
  you: number | null;
  winners: number[];
  scores: number[];
  reason: string | null;
  extra?: ComponentChildren;
}) {
  const { players, you, winners, scores } = props;
  const headline =
    winners.length === 0
      ? "The game is over"
      : winners.length === 1
        ? winners[0] === you
          ? "You win!"
          : `${seatName(players, winners[0])} wins`
        : `Shared win: ${listNames(players, winners, you)}`;
  return (
    <div class="ct-final" data-testid="final-result" role="status">
      <strong class="ct-final-headline">{headline}</strong>
      <ol class="ct-final-scores">
        {scores.map((score, seat) => (
          <li
            key={seat}
            data-testid="final-score"
            data-seat={seat}
            data-score={score}
            data-winner={winners.includes(seat) ? "true" : "false"}
            class={winners.includes(seat) ? "ct-winner" : ""}
          >
            {whoName(players, seat, you)}: {score}
            {winners.includes(seat) ? " ★" : ""}
          </li>
        ))}
      </ol>
      {props.reason ? (
        <div class="ct-final-reason">Ended: {props.reason.replace(/_/g, " ")}</div>
      ) : null}
      {props.extra}
    </div>
  );
}

/** Who sits at the table: the players' names, the caller's seat (null for a spectator), the seats to move. */
export interface Seats {
  players: string[];
  you: number | null;
  toMove: number[];
}

/** Whose move it is (the status line, when there is one), then the final result once the game is over. */
export function StatusAndResult(props: {
  seats: Seats;
  status: string;
  over: boolean;
  winners: number[];
  scores: number[];
  reason: string | null;
  extra?: ComponentChildren;
}) {
  const { status } = props;
  const { players, you, toMove } = props.seats;
  return (
    <>
      {status ? (
        <div
          class={`ct-status ${you !== null && toMove.includes(you) ? "ct-your-turn" : ""}`}
          data-testid="status"
          role="status"
        >
          {status}
        </div>
      ) : null}
      {props.over ? (
        <FinalResult
          players={players}
          you={you}
          winners={props.winners}
          scores={props.scores}
          reason={props.reason}
          extra={props.extra}
        />
      ) : null}
    </>
  );
}

/** The players' table: a row a seat, the player (marked when to move), the score, then the
 * game's own columns. ``columns`` head the cells after "Player" (the score's included). */
export function ScoreTable(props: {
  seats: Seats;
  scores: number[];
  columns: { label: string; title?: string }[];
  nameExtra?: (seat: number) => ComponentChildren;
  cells: (seat: number) => ComponentChildren;
}) {
  const { players, you, toMove } = props.seats;
  return (
    <div class="ct-scroll">
      <table class="ct-scores" data-testid="scores">
        <thead>
          <tr>
            <th>Player</th>
            {props.columns.map((column) => (
              <th key={column.label} title={column.title}>
                {column.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {props.scores.map((score, seat) => (
            <tr
              key={seat}
              class={toMove.includes(seat) ? "ct-to-move" : ""}
              data-testid="score-row"
              data-seat={seat}
            >
              <td>
                {toMove.includes(seat) ? <span aria-hidden="true">▶ </span> : null}
                {whoName(players, seat, you)}
                {props.nameExtra ? props.nameExtra(seat) : null}
              </td>
              <td data-testid="score">{score}</td>
              {props.cells(seat)}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** Shown in place of the hand to a spectator (no seat) while the game runs; nothing otherwise. */
export function SpectatingNote(props: { you: number | null; over: boolean }) {
  if (props.you !== null || props.over) return null;
  return (
    <div class="ct-note" data-testid="spectating">
      Watching: hands stay hidden.
    </div>
  );
}
