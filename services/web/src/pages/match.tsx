// A match, as its player (with the seat token this browser keeps) or a spectator: the game's
// table with the legal actions, kept current by the match's feed.
import { useEffect, useMemo, useRef, useState } from "preact/hooks";

import {
  type GameAction,
  getGame,
  getMatch,
  leaveMatch,
  listLegalActions,
  listMatchEvents,
  type MatchEvent,
  type MatchInfo,
  submitAction,
} from "../client";
import { api, credentials, idempotencyKey, problemOf, type Shown } from "../api";
import { Clocks, Players, ProblemBox, Result } from "../components";
import { EventLog, LOG_LENGTH, withEvents } from "../events";
import { type FeedMessage, follow, matchFeedUrl } from "../feed";
import { tableFor } from "../games";
import { links } from "../router";
import { takeRematchSeat } from "./table";

const CREATING_RETRY_MS = 1000;

export function MatchPage({ matchId }: { matchId: string }) {
  const [bearer, setBearer] = useState(() => credentials.match(matchId));
  const [match, setMatch] = useState<MatchInfo | null>(null);
  const [actions, setActions] = useState<GameAction[]>([]);
  const [lastEvent, setLastEvent] = useState<FeedMessage | null>(null);
  const [recent, setRecent] = useState<MatchEvent[]>([]);
  const [problem, setProblem] = useState<Shown | null>(null);
  const [busy, setBusy] = useState(false);
  /** The version on screen: reads and answers of older versions are dropped. */
  const shown = useRef(0);

  const show = (read: MatchInfo, legal: GameAction[]) => {
    if (read.version < shown.current) return;
    shown.current = read.version;
    setMatch(read);
    setActions(legal);
  };

  const refresh = useMemo(
    () =>
      serial(async () => {
        const client = api(bearer);
        const path = { match_id: matchId };
        try {
          const read = (await getMatch({ client, path, throwOnError: true })).data;
          if (read.status === "creating") {
            window.setTimeout(() => void refresh(), CREATING_RETRY_MS);
            return show(read, []);
          }
          const moving =
            read.status === "running" && read.you !== null && read.to_move.includes(read.you);
          if (!moving) return show(read, []);
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
          setProblem(problemOf(error));
        }
      }),
    [matchId, bearer],
  );

  useEffect(() => {
    shown.current = 0;
    void refresh();
  }, [refresh]);

  const game = match?.game;
  useEffect(() => {
    if (game === undefined) return;
    let stop = () => {};
    let stopped = false;
    // Named events reach only their own listeners: the catalogue names the game's.
    void listMatchEvents({
      client: api(bearer),
      path: { match_id: matchId },
      query: { after: Math.max(0, shown.current - LOG_LENGTH), limit: LOG_LENGTH },
      throwOnError: true,
    }).then(({ data }) => {
      if (!stopped) setRecent((events) => withEvents(events, data.items));
    });
    void getGame({ client: api(), path: { game }, throwOnError: true }).then(({ data }) => {
      if (stopped) return;
      const names = [...data.event_types, "MatchFinished"];
      // from the event before the one shown, so the page learns which event that was
      stop = follow(
        matchFeedUrl(matchId, bearer),
        Math.max(0, shown.current - 1),
        names,
        (message) => {
          if (message.type === "MatchFinished") stop();
          else {
            setLastEvent((last) =>
              last !== null && last.version > message.version ? last : message,
            );
            setRecent((events) => withEvents(events, [message.data as MatchEvent]));
          }
          if (message.version > shown.current || message.type === "MatchFinished") void refresh();
        },
      );
    });
    return () => {
      stopped = true;
      stop();
    };
  }, [game, matchId, bearer, refresh]);

  const submit = async (action: GameAction) => {
    if (match === null) return;
    setBusy(true);
    try {
      const accepted = (
        await submitAction({
          client: api(bearer),
          path: { match_id: matchId },
          body: { expected_version: match.version, action },
          headers: { "Idempotency-Key": idempotencyKey() },
          throwOnError: true,
        })
      ).data;
      const { view, version, to_move, status, result, clock } = accepted;
      show(
        { ...match, view, version, to_move, status, result, clock: clock ?? null },
        accepted.legal_actions,
      );
      setProblem(null);
    } catch (error) {
      setProblem(problemOf(error));
      void refresh();
    } finally {
      setBusy(false);
    }
  };

  const leave = async () => {
    if (!confirm("Leave this match? The table decides what happens to your seat.")) return;
    try {
      await leaveMatch({
        client: api(bearer),
        path: { match_id: matchId },
        headers: { "Idempotency-Key": idempotencyKey() },
        throwOnError: true,
      });
      credentials.forgetMatch(matchId);
      setBearer(null);
    } catch (error) {
      setProblem(problemOf(error));
    }
  };

  const rematch = async (tableId: string, token: string) => {
    setBusy(true);
    try {
      await takeRematchSeat(tableId, token);
    } catch (error) {
      setProblem(problemOf(error));
    } finally {
      setBusy(false);
    }
  };

  const Table = match ? tableFor(match.game) : null;
  /** A finished match's table and the seat token that takes this player's seat in its rematch. */
  const rematchable: [string, string] | null =
    match?.status === "finished" && match.you !== null && match.table_id && bearer
      ? [match.table_id, bearer]
      : null;
  return (
    <main>
      <nav>
        <a href={links.lobby()}>← Lobby</a>
        {match?.table_id && <a href={links.table(match.table_id)}>Table</a>}
        <a href={links.replay(matchId)}>Replay</a>
      </nav>
      <ProblemBox problem={problem} />
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
            {actions.length > 0 && (
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
            />
          )}
          <EventLog events={recent} players={match.players} />
          {match.you !== null && match.status === "running" && (
            <button class="leave" onClick={() => void leave()}>
              Leave match
            </button>
          )}
          {rematchable && (
            <button class="rematch" disabled={busy} onClick={() => void rematch(...rematchable)}>
              Rematch
            </button>
          )}
        </section>
      )}
    </main>
  );
}

/** Runs `task` one at a time; asked again while it runs, it runs once more afterwards. */
function serial(task: () => Promise<void>): () => Promise<void> {
  let running = false;
  let again = false;
  return async () => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        await task();
      } while (again);
    } finally {
      running = false;
    }
  };
}
