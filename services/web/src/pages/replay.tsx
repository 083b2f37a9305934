// A match at any version (GET /matches/{id}/replay), as this browser's seat saw it then or as a
// spectator, drawn by the game's own table with nothing to play, with the event that led to it
// in the log's words; once the match is over, the complete state too ("full"). The version
// shown stays on screen, marked as loading, until the next one arrives.
import { useEffect, useMemo, useRef, useState } from "preact/hooks";

import {
  getMatch,
  type MatchEvent,
  type MatchInfo,
  type MatchReplay,
  replayMatch,
} from "../client";
import { api, credentials, isProblemOfType, problemOf, type ShownProblem } from "../api";
import { Players, ProblemBox, Result } from "../components";
import { tableFor } from "../games";
import { readHistory, tell } from "../log";
import { links } from "../router";

const readOnly = async () => {};
const LATEST_EVERY_MS = 5000;

export function ReplayPage({ matchId }: { matchId: string }) {
  const bearer = credentials.match(matchId);
  const [latest, setLatest] = useState<MatchInfo | null>(null);
  const [version, setVersion] = useState(0);
  /** The first version a replay shows: those of the match's setup come before it, and are
   * learnt as the server refuses them. */
  const [first, setFirst] = useState(1);
  const [full, setFull] = useState(false);
  const [replay, setReplay] = useState<MatchReplay | null>(null);
  const [problem, setProblem] = useState<ShownProblem | null>(null);
  const [loading, setLoading] = useState(false);
  const [history, setHistory] = useState<MatchEvent[]>([]);

  // The match's latest version, read again now and then while it runs: the slider grows
  // with it, and starts at the end.
  const running = latest === null || latest.status !== "finished";
  useEffect(() => {
    if (!running) return;
    const read = () =>
      getMatch({ client: api(bearer), path: { match_id: matchId }, throwOnError: true })
        .then(({ data }) => {
          setLatest(data);
          setVersion((at) => (at === 0 ? data.version : at));
        })
        .catch((error: unknown) => setProblem(problemOf(error)));
    void read();
    const timer = window.setInterval(() => void read(), LATEST_EVERY_MS);
    return () => window.clearInterval(timer);
  }, [matchId, bearer, running]);

  // The log up to the latest version, read again as it grows: each version's line.
  const latestVersion = latest?.version ?? 0;
  const newest = useRef(0);
  newest.current = latestVersion;
  useEffect(() => {
    if (latestVersion < 1) return;
    let wanted = true;
    readHistory(matchId, bearer)
      .then((events) => {
        if (wanted) setHistory(events);
      })
      .catch((error: unknown) => {
        if (wanted) setProblem(problemOf(error));
      });
    return () => {
      wanted = false;
    };
  }, [matchId, bearer, latestVersion]);
  const players = latest?.players;
  const lines = useMemo(
    () => new Map(tell(history, players ?? []).map((line) => [line.version, line.text])),
    [history, players],
  );

  useEffect(() => {
    if (version < 1) return;
    let wanted = true; // a slider dragged fast asks for many: only the last one is shown
    setLoading(true);
    replayMatch({
      client: api(bearer),
      path: { match_id: matchId },
      query: { version, full },
      throwOnError: true,
    })
      .then(({ data }) => {
        if (!wanted) return;
        setReplay(data);
        setProblem(null);
      })
      .catch((error: unknown) => {
        if (!wanted) return;
        if (isProblemOfType(error, "version-not-found") && version < newest.current) {
          setFirst(version + 1); // part of the setup: the next one, then
          setVersion((at) => Math.max(at, version + 1));
        } else setProblem(problemOf(error));
      })
      .finally(() => {
        if (wanted) setLoading(false);
      });
    return () => {
      wanted = false;
    };
  }, [matchId, bearer, version, full]);

  if (latest === null || latest.version < 1) {
    return (
      <main>
        <ProblemBox problem={problem} />
        {latest === null && problem === null && <Loading text="Loading the replay…" />}
        {latest && <p>Nothing to replay yet: the match is being set up.</p>}
      </main>
    );
  }
  const finished = latest.status === "finished";
  const Table = tableFor(latest.game);
  return (
    <main>
      <nav>
        <a href={links.lobby()}>← Lobby</a>
        <a href={links.match(matchId)}>Match</a>
      </nav>
      <h2>
        Replay of {latest.game}{" "}
        <small>{replay?.you == null ? "as a spectator" : `as ${latest.players[replay.you]}`}</small>
      </h2>
      <div class="replay-controls">
        <button disabled={version <= first} onClick={() => setVersion(version - 1)}>
          ◀ Back
        </button>
        <input
          type="range"
          name="version"
          min={first}
          max={latest.version}
          value={version}
          onInput={(event) => setVersion(Number(event.currentTarget.value))}
        />
        <button disabled={version >= latest.version} onClick={() => setVersion(version + 1)}>
          Forward ▶
        </button>
        <span>
          version <span data-testid="replay-version">{replay?.version ?? "…"}</span> of{" "}
          {latest.version}
        </span>
        <label>
          <input
            type="checkbox"
            name="full"
            disabled={!finished}
            checked={full}
            onChange={(event) => setFull(event.currentTarget.checked)}
          />{" "}
          full
        </label>
        {loading && <Loading text={`Loading version ${version}…`} />}
      </div>
      <p class="replay-full-note" data-testid="full-explained">
        Full: the complete state, every hand and the deck included, shown only once the match is
        over{finished ? "" : " (this one is still running)"}. Without it, the replay shows what{" "}
        {replay?.you == null ? "a spectator" : "your seat"} saw then.
      </p>
      <ProblemBox problem={problem} />
      {replay && (
        <section
          data-testid="replay"
          data-version={replay.version}
          class={loading ? "replay-stale" : ""}
          aria-busy={loading}
        >
          <p class="replay-move" data-testid="replay-move">
            v{replay.version}: {lines.get(replay.version) ?? "…"}
          </p>
          <Players players={replay.players} toMove={replay.to_move} you={replay.you} />
          {replay.result && <Result result={replay.result} players={replay.players} />}
          <Table
            view={replay.view}
            actions={[]}
            you={replay.you}
            players={replay.players}
            toMove={replay.to_move}
            submit={readOnly}
            busy={false}
          />
          {full && replay.state && (
            <details open>
              <summary>Complete state</summary>
              <pre data-testid="full-state">{JSON.stringify(replay.state, null, 2)}</pre>
            </details>
          )}
        </section>
      )}
    </main>
  );
}

/** A visible sign that something is on its way. */
function Loading({ text }: { text: string }) {
  return (
    <span class="loading" role="status" data-testid="replay-loading">
      {text}
    </span>
  );
}
