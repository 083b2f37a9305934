// The lobby's memory of this browser: the tables it holds a seat at (the seat tokens it keeps),
// each with how its match stands and a link back; and the running public matches to watch.
import { useEffect, useState } from "preact/hooks";

import { type GameInfo, getMatch, getTable, listTables, type TableInfo } from "../client";
import { api, credentials, problemOf, type Seat, type ShownProblem } from "../api";
import { ProblemBox } from "../components";
import { links } from "../router";

const MATCHES_TO_WATCH = 50;

/** Where a held seat's table stands, from the holder's side. */
type Standing = "waiting" | "your turn" | "running" | "finished" | "closed";

interface Held {
  tableId: string;
  seat: Seat;
  table: TableInfo | null;
  standing: Standing | null;
  problem: ShownProblem | null;
}

/** The game's title from the catalogue (its name until the catalogue has come). */
export function gameTitle(games: GameInfo[], name: string): string {
  return games.find((game) => game.name === name)?.title ?? name;
}

/** The bearer a held seat's match is read with: the one this browser settled on for the
 * match (null once its player left it: a spectator's view), else the seat's token. */
function matchBearer(matchId: string, seat: Seat): string | null {
  return credentials.knowsMatch(matchId) ? credentials.match(matchId) : seat.token;
}

async function standingOf(table: TableInfo, seat: Seat): Promise<Standing> {
  if (table.status === "open") return "waiting";
  if (table.status === "closed" || table.match_id === null) return "closed";
  const bearer = matchBearer(table.match_id, seat);
  const match = await getMatch({
    client: api(bearer),
    path: { match_id: table.match_id },
    throwOnError: true,
  });
  if (match.data.status === "finished") return "finished";
  return bearer !== null && match.data.to_move.includes(seat.seat) ? "your turn" : "running";
}

async function readHeld(tableId: string, seat: Seat): Promise<Held> {
  try {
    const table = await getTable({
      client: api(seat.token),
      path: { table_id: tableId },
      throwOnError: true,
    });
    const standing = await standingOf(table.data, seat);
    return { tableId, seat, table: table.data, standing, problem: null };
  } catch (error) {
    return { tableId, seat, table: null, standing: null, problem: problemOf(error) };
  }
}

/** The link back to a held table: its match once there is one, else the table. */
function linkBack(held: Held): string {
  const matchId = held.table?.match_id;
  return matchId ? links.match(matchId) : links.table(held.tableId);
}

export function YourTables({ games }: { games: GameInfo[] }) {
  const [held, setHeld] = useState<Held[] | null>(null);
  useEffect(() => {
    let stopped = false;
    void Promise.all(credentials.seats().map(({ tableId, seat }) => readHeld(tableId, seat))).then(
      (read) => {
        if (!stopped) setHeld(read);
      },
    );
    return () => {
      stopped = true;
    };
  }, []);
  if (held === null) return null;
  return (
    <section>
      <h2>Your tables and matches</h2>
      {held.length === 0 ? (
        <p>None yet: create a table or take a seat at one.</p>
      ) : (
        <ul class="your-tables" data-testid="your-tables">
          {held.map((entry) => (
            <li
              key={entry.tableId}
              data-table-id={entry.tableId}
              data-standing={entry.standing ?? "unknown"}
            >
              <a href={linkBack(entry)}>{entry.table?.name || entry.tableId}</a>{" "}
              {entry.table && gameTitle(games, entry.table.game)} · seat {entry.seat.seat} as{" "}
              {entry.seat.name} ·{" "}
              {entry.standing ? (
                <strong class={`standing standing-${entry.standing.replace(" ", "-")}`}>
                  {entry.standing}
                </strong>
              ) : (
                <em>{entry.problem?.title ?? "unknown"}</em>
              )}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

export function MatchesToWatch({ games }: { games: GameInfo[] }) {
  const [tables, setTables] = useState<TableInfo[] | null>(null);
  const [problem, setProblem] = useState<ShownProblem | null>(null);
  const load = async () => {
    try {
      const page = await listTables({
        client: api(),
        query: { status: "started", match_status: "running", limit: MATCHES_TO_WATCH },
        throwOnError: true,
      });
      setTables(page.data.items);
      setProblem(null);
    } catch (error) {
      setProblem(problemOf(error));
    }
  };
  useEffect(() => void load(), []);
  return (
    <section>
      <h2>
        Matches to watch <button onClick={() => void load()}>Refresh</button>
      </h2>
      <ProblemBox problem={problem} />
      {tables !== null && tables.length === 0 && <p>No match is being played.</p>}
      {tables !== null && tables.length > 0 && (
        <ul class="tables" data-testid="matches-to-watch">
          {tables.map((table) => (
            <li key={table.table_id} data-match-id={table.match_id}>
              {table.name || gameTitle(games, table.game)} · {gameTitle(games, table.game)} ·{" "}
              {table.seats.map((seat) => seat.player ?? "?").join(", ")}{" "}
              {table.match_id && <a href={links.match(table.match_id)}>Watch</a>}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
