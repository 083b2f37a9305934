// A table before its match: its seats (live, from the table's feed), taking or leaving one,
// seating and unseating bots, the invitation link of a private table, and starting. Once the
// match exists, a seated player goes to it; once its rematch exists, they may take their seat
// there.
import { useEffect, useRef, useState } from "preact/hooks";

import {
  type BotInfo,
  getGame,
  getTable,
  joinTable,
  leaveTable,
  rematchTable,
  seatBot,
  startTable,
  type TableEvent,
  type TableInfo,
  unseatBot,
} from "../client";
import { api, credentials, idempotencyKey, problemOf, type Seat, type Shown } from "../api";
import { ProblemBox } from "../components";
import { follow, tableFeedUrl } from "../feed";
import { links } from "../router";

/** Every type of a table's events, each its own named event on the feed (checked against the
 * contract: a type missing or unknown here fails the type check). */
const TABLE_EVENTS = Object.keys({
  TableCreated: true,
  SeatTaken: true,
  SeatLeft: true,
  TableStarted: true,
  RematchOffered: true,
} satisfies Record<TableEvent["type"], true>);

export function TablePage(props: { tableId: string; invitation: string | null }) {
  const { tableId } = props;
  const invitation = props.invitation ?? credentials.invitation(tableId);
  const [seat, setSeat] = useState<Seat | null>(() => credentials.seat(tableId));
  const bearer = seat?.token ?? invitation;
  const [table, setTable] = useState<TableInfo | null>(null);
  const [problem, setProblem] = useState<Shown | null>(null);
  const [name, setName] = useState("");
  const [busy, setBusy] = useState(false);
  const [bots, setBots] = useState<BotInfo[]>([]);

  useEffect(() => {
    if (props.invitation) credentials.keepInvitation(tableId, props.invitation);
  }, [tableId, props.invitation]);

  useEffect(() => {
    let stop = () => {};
    let stopped = false;
    const load = async () => {
      try {
        const answer = await getTable({
          client: api(bearer),
          path: { table_id: tableId },
          throwOnError: true,
        });
        const read = answer.data; // reads overlap: an older one never replaces a newer
        setTable((shown) => (shown !== null && shown.version > read.version ? shown : read));
        return read.version;
      } catch (error) {
        setProblem(problemOf(error));
        return null;
      }
    };
    void load().then((version) => {
      if (version !== null && !stopped) {
        stop = follow(tableFeedUrl(tableId, bearer), version, TABLE_EVENTS, () => void load());
      }
    });
    return () => {
      stopped = true;
      stop();
    };
  }, [tableId, bearer]);

  // A seated player watching the table start goes to its match; one coming back to a started
  // table stays on this page.
  const sawOpen = useRef(false);
  const matchId = table?.match_id ?? null;
  const game = table?.game;
  useEffect(() => {
    if (game === undefined) return;
    getGame({ client: api(), path: { game }, throwOnError: true })
      .then((answer) => setBots(answer.data.bots))
      .catch((error: unknown) => setProblem(problemOf(error)));
  }, [game]);
  useEffect(() => {
    if (table?.status === "open") sawOpen.current = true;
    if (matchId === null || bearer === null) return;
    credentials.keepMatch(matchId, bearer);
    if (seat !== null && sawOpen.current) location.hash = links.match(matchId);
  }, [table?.status, matchId, bearer, seat]);

  const act = async (call: () => Promise<void>) => {
    setBusy(true);
    try {
      await call();
      setProblem(null);
    } catch (error) {
      setProblem(problemOf(error));
    } finally {
      setBusy(false);
    }
  };

  const join = () =>
    act(async () => {
      const joined = await joinTable({
        client: api(invitation),
        path: { table_id: tableId },
        body: { name },
        headers: { "Idempotency-Key": idempotencyKey() },
        throwOnError: true,
      });
      const taken = { seat: joined.data.seat, token: joined.data.token, name };
      credentials.keepSeat(tableId, taken);
      setSeat(taken);
      setTable(joined.data.table);
    });

  const leave = (held: Seat) =>
    act(async () => {
      const left = await leaveTable({
        client: api(held.token),
        path: { table_id: tableId, seat: held.seat },
        throwOnError: true,
      });
      credentials.forgetSeat(tableId);
      setSeat(null);
      setTable(left.data);
    });

  const addBot = (bot: string, at: number) =>
    act(async () => {
      const seated = await seatBot({
        client: api(invitation),
        path: { table_id: tableId },
        body: { bot, seat: at },
        headers: { "Idempotency-Key": idempotencyKey() },
        throwOnError: true,
      });
      setTable(seated.data);
    });

  const removeBot = (at: number) =>
    act(async () => {
      const unseated = await unseatBot({
        client: api(),
        path: { table_id: tableId, seat: at },
        throwOnError: true,
      });
      setTable(unseated.data);
    });

  const start = (token: string) =>
    act(async () => {
      const started = await startTable({
        client: api(token),
        path: { table_id: tableId },
        headers: { "Idempotency-Key": idempotencyKey() },
        throwOnError: true,
      });
      setTable(started.data);
    });

  return (
    <main>
      <p>
        <a href={links.lobby()}>← Lobby</a>
      </p>
      <ProblemBox problem={problem} />
      {table && (
        <section data-testid="table" data-table-id={table.table_id}>
          <h2>
            {table.name || table.game}{" "}
            <small>
              ({table.game}, {table.visibility}, {table.status})
            </small>
          </h2>
          <ol class="seats" start={0} data-testid="seats">
            {table.seats.map((info) => (
              <li key={info.seat}>
                {info.player ?? <em>empty</em>}
                {info.bot && <em> (bot {info.bot})</em>}
                {info.seat === seat?.seat && <em> (you)</em>}
                {table.status === "open" && info.seat === seat?.seat && (
                  <button disabled={busy} onClick={() => void leave(seat)}>
                    Leave seat
                  </button>
                )}
                {table.status === "open" && info.bot && (
                  <button disabled={busy} onClick={() => void removeBot(info.seat)}>
                    Remove bot
                  </button>
                )}
                {table.status === "open" && info.player === null && bots.length > 0 && (
                  <BotPicker seat={info.seat} bots={bots} busy={busy} onPick={addBot} />
                )}
              </li>
            ))}
          </ol>
          {table.visibility === "private" && invitation && (
            <InvitationLink tableId={tableId} invitation={invitation} />
          )}
          {table.status === "open" && seat === null && (
            <form
              class="join"
              onSubmit={(event) => {
                event.preventDefault();
                void join();
              }}
            >
              <label>
                Your name{" "}
                <input
                  name="player"
                  required
                  maxLength={40}
                  value={name}
                  onInput={(event) => setName(event.currentTarget.value)}
                />
              </label>
              <button disabled={busy}>Take a seat</button>
            </form>
          )}
          {table.status === "open" && seat !== null && (
            <button disabled={busy} onClick={() => void start(seat.token)}>
              Start
            </button>
          )}
          {matchId && (
            <p>
              <a href={links.match(matchId)}>{seat ? "Play the match" : "Watch the match"}</a>
            </p>
          )}
          {table.rematch_table_id && seat !== null && (
            <button
              disabled={busy}
              onClick={() => void act(() => takeRematchSeat(tableId, seat.token))}
            >
              Take your seat in the rematch
            </button>
          )}
          {table.rematch_table_id && seat === null && (
            <p>
              <a href={links.table(table.rematch_table_id)}>The rematch</a>
            </p>
          )}
        </section>
      )}
    </main>
  );
}

function InvitationLink({ tableId, invitation }: { tableId: string; invitation: string }) {
  const url = `${location.origin}${location.pathname}${links.table(tableId, invitation)}`;
  return (
    <p class="invitation">
      <label>
        Invitation link{" "}
        <input
          readOnly
          value={url}
          data-testid="invitation-link"
          onFocus={(event) => event.currentTarget.select()}
        />
      </label>{" "}
      <button type="button" onClick={() => void navigator.clipboard?.writeText(url)}>
        Copy
      </button>
    </p>
  );
}

/** A bot for an empty seat, from those the game's catalogue entry offers. */
function BotPicker(props: {
  seat: number;
  bots: BotInfo[];
  busy: boolean;
  onPick: (bot: string, seat: number) => void;
}) {
  const [bot, setBot] = useState(props.bots[0]?.name ?? "");
  return (
    <span class="bot-picker">
      <select
        name={`seat-bot-${props.seat}`}
        value={bot}
        onChange={(event) => setBot(event.currentTarget.value)}
      >
        {props.bots.map((offered) => (
          <option key={offered.name} value={offered.name} title={offered.description}>
            {offered.name}
          </option>
        ))}
      </select>
      <button disabled={props.busy} onClick={() => props.onPick(bot, props.seat)}>
        Seat bot
      </button>
    </span>
  );
}

/** Takes back this player's seat in the rematch of a finished table (opening the rematch if
 * nobody has yet) with the seat's `token`, keeps the new seat, and goes to the new table. */
export async function takeRematchSeat(tableId: string, token: string): Promise<void> {
  const joined = await rematchTable({
    client: api(token),
    path: { table_id: tableId },
    headers: { "Idempotency-Key": idempotencyKey() },
    throwOnError: true,
  });
  const { seat, token: newToken, table } = joined.data;
  const name = table.seats[seat]?.player ?? "";
  credentials.keepSeat(table.table_id, { seat, token: newToken, name });
  location.hash = links.table(table.table_id);
}
