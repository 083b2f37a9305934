// A table before its match: its seats (live, from the table's feed), taking one, the invitation
// link of a private table, and starting. Once the match exists, a seated player goes to it.
import { useEffect, useRef, useState } from "preact/hooks";

import { getTable, joinTable, startTable, type TableEvent, type TableInfo } from "../client";
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
          <ol class="seats" start={0}>
            {table.seats.map((info) => (
              <li key={info.seat}>
                {info.player ?? <em>empty</em>}
                {info.bot && <em> (bot {info.bot})</em>}
                {info.seat === seat?.seat && <em> (you)</em>}
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
