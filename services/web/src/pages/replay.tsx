// A match at any version (GET /matches/{id}/replay), as this browser's seat saw it then or as a
// spectator, drawn by the game's own table with nothing to play; once the match is over, the
// complete state too ("full").
import { useEffect, useState } from "preact/hooks";

import { getMatch, type MatchInfo, type MatchReplay, replayMatch } from "../client";
import { api, credentials, problemOf, type ShownProblem } from "../api";
import { Players, ProblemBox, Result } from "../components";
import { tableFor } from "../games";
import { links } from "../router";

const readOnly = async () => {};
const LATEST_EVERY_MS = 5000;

export function ReplayPage({ matchId }: { matchId: string }) {
  const bearer = credentials.match(matchId);
  const [latest, setLatest] = useState<MatchInfo | null>(null);
  const [version, setVersion] = useState(0);
  const [full, setFull] = useState(false);
  const [replay, setReplay] = useState<MatchReplay | null>(null);
  const [problem, setProblem] = useState<ShownProblem | null>(null);

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

  useEffect(() => {
    if (version < 1) return;
    let wanted = true; // a slider dragged fast asks for many: only the last one is shown
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
        if (wanted) setProblem(problemOf(error));
      });
    return () => {
      wanted = false;
    };
  }, [matchId, bearer, version, full]);

  if (latest === null || latest.version < 1) {
    return (
      <main>
        <ProblemBox problem={problem} />
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
        <button disabled={version <= 1} onClick={() => setVersion(version - 1)}>
          ◀ Back
        </button>
        <input
          type="range"
          name="version"
          min={1}
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
        <label title={finished ? "every hand and the deck" : "once the match is over"}>
          <input
            type="checkbox"
            name="full"
            disabled={!finished}
            checked={full}
            onChange={(event) => setFull(event.currentTarget.checked)}
          />{" "}
          full
        </label>
      </div>
      <ProblemBox problem={problem} />
      {replay && (
        <section data-testid="replay" data-version={replay.version}>
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
