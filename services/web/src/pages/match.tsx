// A match, as its player (with the seat token this browser keeps) or a spectator: the game's
// table with the legal actions, kept current by the match's feed.
import { useEffect, useMemo, useRef, useState } from "preact/hooks";

import {
  type GameInfo,
  getGame,
  getMatch,
  type LegalActions,
  leaveMatch,
  listLegalActions,
  type MatchEvent,
  type MatchInfo,
  type SubmitAction,
  submitAction,
} from "../client";
import {
  api,
  credentials,
  isProblemOfType,
  problemOf,
  sendOnce,
  type ShownProblem,
  takeRematchSeat,
} from "../api";
import { Clocks, Players, ProblemBox, Result, useCommands } from "../components";
import { EventLog, withEvents } from "../events";
import { type FeedMessage, follow, matchFeedUrl, serial } from "../feed";
import { tableFor } from "../games";
import { readHistory } from "../log";
import { links } from "../router";

const CREATING_RETRY_MS = 1000;

/** One of any game's legal actions: this page is every game's (each table knows its own). */
type GameAction = LegalActions["actions"][number];

export function MatchPage({ matchId }: { matchId: string }) {
  const [bearer, setBearer] = useState(() => credentials.match(matchId));
  const [match, setMatch] = useState<MatchInfo | null>(null);
  const [actions, setActions] = useState<GameAction[]>([]);
  const [lastEvent, setLastEvent] = useState<FeedMessage | null>(null);
  /** The game's catalogue entry: its events, and what its policies do, in words. */
  const [gameInfo, setGameInfo] = useState<GameInfo | null>(null);
  const [recent, setRecent] = useState<MatchEvent[]>([]);
  const [readProblem, setReadProblem] = useState<ShownProblem | null>(null);
  const [seatLost, setSeatLost] = useState(false);
  const { busy, refused, run } = useCommands();
  /** The version on screen: reads and answers of older versions are dropped. */
  const shown = useRef(0);

  const show = (read: MatchInfo, legal: GameAction[]) => {
    if (read.version < shown.current) return;
    shown.current = read.version;
    setMatch(read);
    setActions(legal);
  };

  // The match, and the caller's legal actions whenever they play in it: some games list
  // actions out of turn (Carcassonne's standing preference).
  const retry = useRef<number | undefined>(undefined);
  const refresh = useMemo(
    () =>
      serial(async () => {
        const client = api(bearer);
        const path = { match_id: matchId };
        try {
          const read = (await getMatch({ client, path, throwOnError: true })).data;
          setReadProblem(null);
          if (read.status === "creating") {
            window.clearTimeout(retry.current);
            retry.current = window.setTimeout(() => void refresh(), CREATING_RETRY_MS);
            return show(read, []);
          }
          if (read.status !== "running" || read.you === null) return show(read, []);
          const legal = (
            await listLegalActions({
              client,
              path,
              query: { version: read.version },
              throwOnError: true,
            })
          ).data;
          // the match moved on meanwhile: its feed brings the news and the next read
          if (legal.version === read.version) show(read, legal.actions);
        } catch (error) {
          if (bearer !== null && isProblemOfType(error, "unknown-token")) {
            watchInstead();
            return;
          }
          setReadProblem(problemOf(error));
        }
      }),
    [matchId, bearer],
  );

  useEffect(() => {
    void refresh();
    return () => window.clearTimeout(retry.current);
  }, [refresh]);

  // Opened from a link, not from its table: the seat this browser holds at the table plays.
  const tableId = match?.table_id ?? null;
  useEffect(() => {
    if (tableId === null || bearer !== null || credentials.knowsMatch(matchId)) return;
    const held = credentials.seat(tableId);
    if (held === null) return;
    credentials.keepMatch(matchId, held.token);
    setBearer(held.token);
  }, [tableId, bearer, matchId]);

  const game = match?.game;
  const created = match !== null && match.status !== "creating";
  useEffect(() => {
    if (game === undefined || !created) return;
    let stop = () => {};
    let stopped = false;
    const failed = (error: unknown) => {
      if (!stopped) setReadProblem(problemOf(error));
    };
    readHistory(matchId, bearer)
      .then((history) => {
        if (!stopped) setRecent((events) => withEvents(events, history));
      })
      .catch(failed);
    // Named events reach only their own listeners: the catalogue names the game's.
    getGame({ client: api(), path: { game }, throwOnError: true })
      .then(({ data }) => {
        if (stopped) return;
        setGameInfo(data);
        // from the event before the one shown, so the page learns which event that was
        stop = follow(
          matchFeedUrl(matchId, bearer),
          Math.max(0, shown.current - 1),
          [...data.event_types, "MatchFinished"],
          (message) => {
            if (message.type === "MatchFinished") stop();
            else {
              setLastEvent((last) =>
                last !== null && last.version > message.version ? last : message,
              );
              setRecent((events) => withEvents(events, [message.data as MatchEvent]));
            }
            if (message.version > shown.current || message.type === "MatchFinished") {
              void refresh();
            }
          },
        );
      })
      .catch(failed);
    return () => {
      stopped = true;
      stop();
    };
  }, [game, created, matchId, bearer, refresh]);

  const submit = (action: GameAction) =>
    run(async () => {
      if (match === null) return;
      // the table offers only this match's legal actions: the move is its game's
      const body = { game: match.game, expected_version: match.version, action } as SubmitAction;
      try {
        const accepted = await sendOnce(["submitAction", matchId, body], (key) =>
          submitAction({
            client: api(bearer),
            path: { match_id: matchId },
            body,
            headers: { "Idempotency-Key": key },
            throwOnError: true,
          }),
        );
        const { view, version, to_move, status, result, clock, legal_actions } = accepted.data;
        // the answer is of the match's own game, as its view
        const after = { ...match, view, version, to_move, status, result, clock: clock ?? null };
        show(after as MatchInfo, legal_actions);
      } catch (error) {
        void refresh();
        throw error;
      }
    });

  /** The seat token no longer holds a seat (a bot took it over, or the app gave the seat to
   * another): from now on this browser watches, as after leaving, and says why. */
  function watchInstead() {
    const watching = tableId ? credentials.invitation(tableId) : null;
    credentials.keepMatch(matchId, watching);
    setSeatLost(true);
    setBearer(watching);
  }

  const leave = () => {
    if (
      !confirm(`Leave this match? ${leaving ?? "The table decides what happens to your seat."}`)
    ) {
      return;
    }
    void run(async () => {
      await sendOnce(["leaveMatch", matchId], (key) =>
        leaveMatch({
          client: api(bearer),
          path: { match_id: matchId },
          headers: { "Idempotency-Key": key },
          throwOnError: true,
        }),
      );
      // from now on a spectator: of a private table, by its invitation
      const watching = match?.table_id ? credentials.invitation(match.table_id) : null;
      credentials.keepMatch(matchId, watching);
      setBearer(watching);
    });
  };

  /** What leaving does at this table, in the catalogue's words (a forfeit, or a bot's seat). */
  const leaving = gameInfo?.leave_policies.find(
    (policy) => policy.name === (match?.hosting.on_leave ?? "abandon"),
  )?.description;
  /** What running out of time does at this table, in the catalogue's words (a forfeit, a bot's
   * seat, or a pass where the game has one), said beside the clocks before it happens. */
  const timingOut = gameInfo?.timeout_policies.find(
    (policy) => policy.name === (match?.hosting.on_timeout ?? "forfeit"),
  )?.description;
  const Table = match ? tableFor(match.game) : null;
  const rematchId = tableId === null ? null : credentials.rematch(tableId);
  /** A finished match's table and the seat token that takes this player's seat in its rematch. */
  const rematchable: [string, string] | null =
    match?.status === "finished" && match.you !== null && tableId && bearer && !rematchId
      ? [tableId, bearer]
      : null;
  const yourMove =
    match?.status === "running" && match.you !== null && match.to_move.includes(match.you);
  return (
    <main>
      <nav>
        <a href={links.lobby()}>← Lobby</a>
        {tableId && <a href={links.table(tableId)}>Table</a>}
        <a href={links.replay(matchId)}>Replay</a>
      </nav>
      <ProblemBox problem={refused ?? readProblem} />
      {seatLost && (
        <p class="notice" data-testid="seat-lost">
          Your seat is no longer yours: a bot took it over (your time ran out) or the table gave it
          to another player. You are watching the match.
        </p>
      )}
      {match && Table && (
        <section data-testid="match" data-status={match.status} data-you={match.you ?? "spectator"}>
          <h2>
            {match.game}{" "}
            <small>
              {match.you === null ? "watching" : `playing as ${match.players[match.you]}`}
            </small>
          </h2>
          <p class="status">
            version <span data-testid="version">{match.version}</span> · last event{" "}
            <span data-testid="last-event">
              {lastEvent ? `${lastEvent.version} ${lastEvent.type}` : "–"}
            </span>
            {yourMove && (
              <strong class="your-turn" data-testid="your-turn">
                {" "}
                · your move
              </strong>
            )}
          </p>
          <Players
            players={match.players}
            toMove={match.to_move}
            you={match.you}
            bots={match.bots}
          />
          {match.clock && <Clocks clock={match.clock} players={match.players} />}
          {match.clock && match.you !== null && match.status === "running" && timingOut && (
            <p class="timing-out">
              <small data-testid="timing-out">If your time runs out: {timingOut}</small>
            </p>
          )}
          {match.result && <Result result={match.result} players={match.players} />}
          {match.view && (
            <Table
              view={match.view}
              actions={actions}
              you={match.you}
              players={match.players}
              toMove={match.to_move}
              submit={submit}
              busy={busy}
              live
            />
          )}
          <EventLog events={recent} players={match.players} />
          {match.you !== null && match.status === "running" && (
            <p class="leave">
              <button disabled={busy} onClick={leave}>
                Leave match
              </button>{" "}
              {leaving && <small data-testid="leaving">If you leave: {leaving}</small>}
            </p>
          )}
          {rematchable && (
            <button
              class="rematch"
              disabled={busy}
              onClick={() => void run(() => takeRematchSeat(...rematchable))}
            >
              Rematch
            </button>
          )}
          {rematchId && (
            <p>
              <a href={links.table(rematchId)}>The rematch</a>
            </p>
          )}
        </section>
      )}
    </main>
  );
}
