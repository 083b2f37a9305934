// Pieces every page shows: a refused call's problem, the turn clocks, the player list; and
// how a page runs what its buttons ask.
import { useEffect, useMemo, useState } from "preact/hooks";

import type { ClockView, Outcome, TableInfo } from "./client";
import { problemOf, type ShownProblem } from "./api";
import { names, standings } from "./log/words";

/** A page's commands, one at a time: `busy` while one runs (its buttons are disabled), and the
 * problem of the last one refused, until the next succeeds. */
export function useCommands() {
  const [busy, setBusy] = useState(false);
  const [refused, setRefused] = useState<ShownProblem | null>(null);
  const run = async (command: () => Promise<void>) => {
    setBusy(true);
    try {
      await command();
      setRefused(null);
    } catch (error) {
      setRefused(problemOf(error));
    } finally {
      setBusy(false);
    }
  };
  return { busy, refused, run };
}

/** The problems on screen, by what they say, each with the boxes that would show it in the
 * order they came, and what redraws those boxes when that changes. */
const showing = new Map<string, symbol[]>();
const redraws = new Set<() => void>();

function setShowing(said: string, boxes: symbol[]): void {
  if (boxes.length === 0) showing.delete(said);
  else showing.set(said, boxes);
  for (const redraw of redraws) redraw();
}

/** A refused call's problem, shown once however many parts of the page met it (a wrong app
 * key refuses the lobby's list and its form alike): the box that showed it first keeps it. */
export function ProblemBox({ problem }: { problem: ShownProblem | null }) {
  const [box] = useState(() => Symbol("problem box"));
  const [, setDrawn] = useState(0);
  const said = problem === null ? null : `${problem.title}\n${problem.detail}`;
  useEffect(() => {
    const redraw = () => setDrawn((count) => count + 1);
    redraws.add(redraw);
    return () => void redraws.delete(redraw);
  }, []);
  useEffect(() => {
    if (said === null) return;
    setShowing(said, [...(showing.get(said) ?? []), box]);
    return () =>
      setShowing(
        said,
        (showing.get(said) ?? []).filter((other) => other !== box),
      );
  }, [said, box]);
  if (problem === null || said === null) return null;
  const first = showing.get(said)?.[0];
  if (first !== undefined && first !== box) return null;
  return (
    <div class="problem" role="alert" data-testid="problem">
      <strong data-testid="problem-title">{problem.title}</strong>
      {problem.detail && <span data-testid="problem-detail">{problem.detail}</span>}
    </div>
  );
}

/** Said to everyone before they sit down: the table's creator set a secret option (a deck,
 * tile or message order), whose value the server hides but never that it is set. */
export function StackedWarning({ table }: { table: TableInfo }) {
  if (table.secret_options_set.length === 0) return null;
  return (
    <span class="stacked" role="note" data-testid="stacked">
      This table's deck was set by its creator ({table.secret_options_set.join(", ")})
    </span>
  );
}

/** The time each seat has left, counted down from the server's figures since they arrived
 * (never from this machine's clock, which may be off). */
export function Clocks({ clock, players }: { clock: ClockView; players: string[] }) {
  const arrived = useMemo(() => performance.now(), [clock]);
  const [now, setNow] = useState(arrived);
  useEffect(() => {
    const timer = window.setInterval(() => setNow(performance.now()), 500);
    return () => window.clearInterval(timer);
  }, []);
  const running = Math.max(0, now - arrived);
  return (
    <ul class="clocks" data-testid="clocks">
      {clock.remaining_ms.map((remaining, seat) => {
        const ticking = clock.on_clock.includes(seat);
        const left = Math.max(0, remaining - (ticking ? running : 0));
        return (
          <li key={seat} class={ticking ? "ticking" : ""}>
            {players[seat] ?? `seat ${seat}`} {formatSeconds(left / 1000)}
          </li>
        );
      })}
    </ul>
  );
}

function formatSeconds(seconds: number): string {
  const whole = Math.ceil(seconds);
  return `${Math.floor(whole / 60)}:${String(whole % 60).padStart(2, "0")}`;
}

export function Players(props: {
  players: string[];
  toMove: number[];
  you: number | null;
  bots?: Record<string, string>;
}) {
  return (
    <ol class="players" start={0}>
      {props.players.map((name, seat) => (
        <li key={seat} class={props.toMove.includes(seat) ? "to-move" : ""}>
          {name}
          {props.bots?.[String(seat)] && <em> (bot {props.bots[String(seat)]})</em>}
          {seat === props.you && <em> (you)</em>}
          {props.toMove.includes(seat) && <span class="marker"> to move</span>}
        </li>
      ))}
    </ol>
  );
}

/** Why a match ended, in words: the games' reasons and a forfeit's; "finished" says nothing
 * more, and a reason not listed is said as written. */
const ENDINGS: Record<string, string> = {
  finished: "",
  perfect: "every firework is complete",
  strike_out: "the third fuse burned",
  deck_out: "the deck ran out",
  tie_shared: "the lead is shared",
  objects_completed: "enough objects were completed",
  deck_empty: "the element deck is empty",
  timeout: "a player ran out of time",
  abandoned: "a player left",
};

export function Result({ result, players }: { result: Outcome; players: string[] }) {
  const why = ENDINGS[result.reason ?? "finished"] ?? (result.reason ?? "").replaceAll("_", " ");
  return (
    <p class="result" data-testid="result">
      Finished{why && `, ${why}`}: {standings(players, result.scores)}
      {result.winners.length > 0 && `; won by ${names(players, result.winners)}`}
      {result.forfeited &&
        result.forfeited.length > 0 &&
        `; forfeited by ${names(players, result.forfeited)}`}
    </p>
  );
}
