// What the match page hands each game's table: the caller's view and legal actions as the API
// gave them (typed with the models generated from openapi/openapi.json), and a way to move.
// The table shows the view and offers exactly the legal actions: it never builds a move the
// server has not listed (except the free text of a Breaking News story, inside a listed
// action's shape).
import type { ComponentType } from "preact";

export interface TableProps<View, Action> {
  /** The caller's view of the match (`MatchInfo.view`, or a move's `ActionAccepted.view`). */
  view: View;
  /** The caller's legal actions now; empty when not to move, or for a spectator. */
  actions: Action[];
  /** The caller's seat; null for a spectator. */
  you: number | null;
  players: string[];
  toMove: number[];
  /** Sends the action at the version shown (with an Idempotency-Key); the page shows a
   * refusal's problem title and detail, and the new view once accepted. */
  submit: (action: Action) => Promise<void>;
  /** True while a move is being sent: the table offers nothing meanwhile. */
  busy: boolean;
  /** True when the view is the match as it stands now (the match page), not a past version
   * (a replay): what runs in real time, such as a story's clock, runs only then. */
  live?: boolean;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type GameTable = ComponentType<TableProps<any, any>>;
