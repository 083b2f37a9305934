// A table before its match: its seats (live, from the table's feed), taking (a chosen free one)
// or leaving one, seating and unseating bots, the invitation link of a private table, starting,
// and closing it while its player waits there alone. Once the match exists, a seated player
// goes to it; once its rematch exists, they may take their seat there.
import { useEffect, useRef, useState } from "preact/hooks";

import {
  type BotInfo,
  type BotSeat,
  closeTable,
  type GameInfo,
  getGame,
  getTable,
  type Hosting,
  joinTable,
  leaveTable,
  seatBot,
  startTable,
  type TableEvent,
  type TableInfo,
  unseatBot,
} from "../client";
import {
  api,
  credentials,
  problemOf,
  type Seat,
  sendOnce,
  type ShownProblem,
  takeRematchSeat,
} from "../api";
import { ProblemBox, StackedWarning, useCommands } from "../components";
import { follow, serial, tableFeedUrl } from "../feed";
import { links } from "../router";

/** Every type of a table's events, each its own named event on the feed (checked against the
 * contract: a type missing or unknown here fails the type check). */
const TABLE_EVENTS = Object.keys({
  TableCreated: true,
  SeatTaken: true,
  SeatLeft: true,
  TableStarted: true,
  RematchOffered: true,
  TableClosed: true,
} satisfies Record<TableEvent["type"], true>);

export function TablePage(props: { tableId: string; invitation: string | null }) {
  const { tableId } = props;
  const invitation = props.invitation ?? credentials.invitation(tableId);
  const [seat, setSeat] = useState<Seat | null>(() => credentials.seat(tableId));
  const bearer = seat?.token ?? invitation;
  const [table, setTable] = useState<TableInfo | null>(null);
  const [readProblem, setReadProblem] = useState<ShownProblem | null>(null);
  const [name, setName] = useState("");
  const [wantedSeat, setWantedSeat] = useState<number | null>(null);
  const [gameInfo, setGameInfo] = useState<GameInfo | null>(null);
  const bots = gameInfo?.bots ?? [];
  const { busy, refused, run } = useCommands();

  /** Reads, feed and answers overlap: an older table never replaces a newer one. */
  const show = (read: TableInfo) =>
    setTable((shown) => (shown !== null && shown.version > read.version ? shown : read));

  useEffect(() => {
    let stopped = false;
    const load = serial(async () => {
      try {
        const read = await getTable({
          client: api(bearer),
          path: { table_id: tableId },
          throwOnError: true,
        });
        if (stopped) return;
        show(read.data);
        setReadProblem(null);
        // a link's invitation replaces the one kept only once it has opened the table
        if (props.invitation) credentials.keepInvitation(tableId, props.invitation);
      } catch (error) {
        if (!stopped) setReadProblem(problemOf(error));
      }
    });
    void load();
    // every event reads the table again, so a failed read is retried by the next one
    const stop = follow(tableFeedUrl(tableId, bearer), 0, TABLE_EVENTS, () => void load());
    return () => {
      stopped = true;
      stop();
    };
  }, [tableId, bearer, props.invitation]);

  const game = table?.game;
  useEffect(() => {
    if (game === undefined) return;
    getGame({ client: api(), path: { game }, throwOnError: true })
      .then((answer) => setGameInfo(answer.data))
      .catch((error: unknown) => setReadProblem(problemOf(error)));
  }, [game]);

  // A seated player watching the table start goes to its match; one coming back to a started
  // table stays on this page. The match keeps the bearer it was first given: a player who
  // left it is not made its player again.
  const sawOpen = useRef(false);
  const matchId = table?.match_id ?? null;
  useEffect(() => {
    if (table?.status === "open") sawOpen.current = true;
    if (matchId === null || bearer === null) return;
    if (!credentials.knowsMatch(matchId)) credentials.keepMatch(matchId, bearer);
    if (seat !== null && sawOpen.current) location.hash = links.match(matchId);
  }, [table?.status, matchId, bearer, seat]);

  // The seat a joiner picked is sent as picked (the first free one otherwise, the server's
  // choice), so a retry repeats the same request whatever the table shows meanwhile.
  const freeSeats = table?.seats.filter((info) => info.player === null).map((info) => info.seat);
  const shownSeat =
    wantedSeat !== null && freeSeats?.includes(wantedSeat) ? wantedSeat : freeSeats?.[0];

  const join = () =>
    run(async () => {
      const joined = await sendOnce(["joinTable", tableId, name, wantedSeat], (key) =>
        joinTable({
          client: api(invitation),
          path: { table_id: tableId },
          body: { name, ...(wantedSeat !== null && { seat: wantedSeat }) },
          headers: { "Idempotency-Key": key },
          throwOnError: true,
        }),
      );
      const taken = { seat: joined.data.seat, token: joined.data.token, name };
      credentials.keepSeat(tableId, taken);
      setSeat(taken);
      show(joined.data.table);
    });

  const leave = (held: Seat) =>
    run(async () => {
      const left = await leaveTable({
        client: api(held.token),
        path: { table_id: tableId, seat: held.seat },
        throwOnError: true,
      });
      credentials.forgetSeat(tableId);
      setSeat(null);
      show(left.data);
    });

  // A browser's (publishable) key seats or removes bots only with this table's seat token.
  const addBot = (bot: BotSeat["bot"], at: number) =>
    run(async () => {
      const seated = await sendOnce(["seatBot", tableId, bot, at], (key) =>
        seatBot({
          client: api(bearer),
          path: { table_id: tableId },
          body: { bot, seat: at },
          headers: { "Idempotency-Key": key },
          throwOnError: true,
        }),
      );
      show(seated.data);
    });

  const removeBot = (at: number) =>
    run(async () => {
      const unseated = await unseatBot({
        client: api(bearer),
        path: { table_id: tableId, seat: at },
        throwOnError: true,
      });
      show(unseated.data);
    });

  const start = (token: string) =>
    run(async () => {
      const started = await sendOnce(["startTable", tableId], (key) =>
        startTable({
          client: api(token),
          path: { table_id: tableId },
          headers: { "Idempotency-Key": key },
          throwOnError: true,
        }),
      );
      show(started.data);
    });

  // A browser closes its table only while its player is the one person seated (see closeTable).
  const close = (held: Seat) =>
    run(async () => {
      const closed = await closeTable({
        client: api(held.token),
        path: { table_id: tableId },
        throwOnError: true,
      });
      credentials.forgetSeat(tableId);
      setSeat(null);
      show(closed.data);
    });
  const alone =
    seat !== null &&
    table !== null &&
    table.seats.every((info) => info.seat === seat.seat || info.player === null || info.bot);

  const rematchId = table?.rematch_table_id ?? null;
  const rematchSeated = credentials.rematch(tableId) !== null;
  return (
    <main>
      <p>
        <a href={links.lobby()}>← Lobby</a>
      </p>
      <ProblemBox problem={refused ?? readProblem} />
      {table && (
        <section data-testid="table" data-table-id={table.table_id}>
          <h2>
            {table.name || table.game}{" "}
            <small>
              ({table.game}, {table.visibility}, {table.status})
            </small>
          </h2>
          <StackedWarning table={table} />
          {gameInfo && <HostingSaid hosting={table.hosting} game={gameInfo} />}
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
              </label>{" "}
              {freeSeats && freeSeats.length > 0 && (
                <label>
                  Seat{" "}
                  <select
                    name="seat"
                    value={shownSeat}
                    onChange={(event) => setWantedSeat(Number(event.currentTarget.value))}
                  >
                    {freeSeats.map((free) => (
                      <option key={free} value={free}>
                        Seat {free}
                      </option>
                    ))}
                  </select>
                </label>
              )}{" "}
              <button disabled={busy}>Take a seat</button>
            </form>
          )}
          {table.status === "open" && seat !== null && (
            <button disabled={busy} onClick={() => void start(seat.token)}>
              Start
            </button>
          )}
          {table.status === "open" && seat !== null && alone && (
            <button disabled={busy} onClick={() => void close(seat)}>
              Close table
            </button>
          )}
          {matchId && (
            <p>
              <a href={links.match(matchId)}>{seat ? "Play the match" : "Watch the match"}</a>
            </p>
          )}
          {rematchId && seat !== null && !rematchSeated && (
            <button
              disabled={busy}
              onClick={() => void run(() => takeRematchSeat(tableId, seat.token))}
            >
              Take your seat in the rematch
            </button>
          )}
          {rematchId && (seat === null || rematchSeated) && (
            <p>
              <a href={links.table(rematchId)}>The rematch</a>
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
      {navigator.clipboard && ( // only in a secure context (HTTPS or this machine)
        <button
          type="button"
          onClick={() => void navigator.clipboard.writeText(url).catch(() => {})}
        >
          Copy
        </button>
      )}
    </p>
  );
}

/** The table's clock and what happens to a slow or absent player, in the catalogue's words for
 * its game: said before anyone takes a seat or starts. */
function HostingSaid({ hosting, game }: { hosting: Hosting; game: GameInfo }) {
  const said = (policies: GameInfo["leave_policies"], name: string | undefined) =>
    policies.find((policy) => policy.name === name)?.description ?? name;
  const clock = hosting.clock;
  return (
    <ul class="hosting" data-testid="hosting">
      {clock ? (
        <li>
          Clock:{" "}
          {clock.per_move_s != null
            ? `${clock.per_move_s} s per move`
            : `${clock.bank_s} s for the game, +${clock.increment_s ?? 0} s a move`}
          . {said(game.timeout_policies, hosting.on_timeout ?? "forfeit")}
        </li>
      ) : (
        <li>No clock: each player takes the time they need.</li>
      )}
      <li>{said(game.leave_policies, hosting.on_leave ?? "abandon")}</li>
    </ul>
  );
}

/** A bot for an empty seat, from those the game's catalogue entry offers. */
function BotPicker(props: {
  seat: number;
  bots: BotInfo[];
  busy: boolean;
  onPick: (bot: BotSeat["bot"], seat: number) => void;
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
      <button disabled={props.busy} onClick={() => props.onPick(bot as BotSeat["bot"], props.seat)}>
        Seat bot
      </button>
    </span>
  );
}
