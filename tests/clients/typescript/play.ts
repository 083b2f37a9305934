/**
 * Plays one match per argument to the end through the client generated from
 * openapi/openapi.json, its SDK functions and types only, then reads each match's events, a
 * replay and the export: proof that the contract is enough for a typed TypeScript app.
 *
 * Usage: PLAYTABLE_URL=http://127.0.0.1:8080 node dist/play.js hanabi carcassonne:messengers
 * (`game:option` sets that boolean option). Prints one JSON line per match; exits 1 on any failure.
 */
import { randomUUID } from 'node:crypto';

import {
  createTable,
  exportMatch,
  getMatch,
  joinTable,
  listLegalActions,
  listMatchEvents,
  replayMatch,
  startTable,
  submitAction,
} from './generated';
import type {
  GameAction,
  HanabiPlayCard,
  LegalActions,
  MatchEvent,
  MatchInfo,
  SubmitAction,
} from './generated';
import { type Client, createClient, createConfig } from './generated/client';
import type { Auth, AuthToken } from './generated/core/auth.gen';

const PLAYERS = 2;
const SEED = 7;
const MAX_MOVES = 5000;

interface PlayedMatch {
  game: string;
  options: Record<string, boolean>;
  match_id: string;
  status: string;
  moves: number;
  events: number;
  hand_built_actions: number;
}

/** mulberry32: a seeded generator, so a failing run can be replayed move for move. */
function seededRandom(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let mixed = Math.imul(state ^ (state >>> 15), 1 | state);
    mixed = (mixed + Math.imul(mixed ^ (mixed >>> 7), 61 | mixed)) ^ mixed;
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4294967296;
  };
}

function pick<T>(items: readonly T[], random: () => number): T {
  const item = items[Math.floor(random() * items.length)];
  if (item === undefined) throw new Error('nothing to pick from');
  return item;
}

function check(condition: boolean, message: string): asserts condition {
  if (!condition) throw new Error(message);
}

function expectStatus(response: Response, status: number, what: string): void {
  check(response.status === status, `${what}: HTTP ${response.status}, expected ${status}`);
}

/** The contract names a game's schemas after it: `breaking_news` -> `BreakingNews...`. */
function schemaPrefix(game: string): string {
  return game
    .split('_')
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
}

/** Hanabi's first move is a PlayCard written out by hand, not echoed from the server. The
 * answer's `game` narrows its actions to that game's own (`type` tags repeat across games). */
function chooseAction(
  legal: LegalActions,
  moves: number,
  random: () => number,
): { action: GameAction; handBuilt: boolean } {
  if (legal.game === 'hanabi' && moves === 0) {
    for (const offered of legal.actions) {
      if (offered.type === 'PlayCard') {
        const play: HanabiPlayCard = { type: 'PlayCard', card: offered.card };
        return { action: play, handBuilt: true };
      }
    }
    throw new Error('no PlayCard among the first Hanabi legal actions');
  }
  const actions: GameAction[] = legal.actions;
  return { action: pick(actions, random), handBuilt: false };
}

/** The credential a client sends for each security scheme: the app's key, and a seat's token. */
function credentials(appKey: string, seatToken?: string): (scheme: Auth) => AuthToken {
  return (scheme) => (scheme.type === 'apiKey' ? appKey : seatToken);
}

async function openTable(
  app: Client,
  appKey: string,
  baseUrl: string,
  game: string,
  options: Record<string, boolean>,
): Promise<{ matchId: string; seats: Client[] }> {
  const created = await createTable({
    client: app,
    body: { game, seats: PLAYERS, options, seed: SEED },
    throwOnError: true,
  });
  expectStatus(created.response, 201, 'createTable');
  const tableId = created.data.table_id;
  const seats: Client[] = [];
  for (let seat = 0; seat < PLAYERS; seat++) {
    const joined = await joinTable({
      client: app,
      path: { table_id: tableId },
      body: { name: `typescript${seat}` },
      throwOnError: true,
    });
    expectStatus(joined.response, 201, 'joinTable');
    check(joined.data.seat === seat, `joined seat ${joined.data.seat}, expected ${seat}`);
    seats.push(createClient(createConfig({ baseUrl, auth: credentials(appKey, joined.data.token) })));
  }
  const [starter] = seats;
  check(starter !== undefined, 'no seat to start the table');
  const started = await startTable({ client: starter, path: { table_id: tableId }, throwOnError: true });
  expectStatus(started.response, 201, 'startTable');
  const matchId = started.data.match_id;
  check(matchId !== null, 'startTable answered without a match_id');
  return { matchId, seats };
}

async function readMatch(app: Client, matchId: string): Promise<MatchInfo> {
  const match = await getMatch({ client: app, path: { match_id: matchId }, throwOnError: true });
  expectStatus(match.response, 200, 'getMatch');
  return match.data;
}

async function readEvents(app: Client, matchId: string): Promise<MatchEvent[]> {
  const events: MatchEvent[] = [];
  let after = 0;
  for (;;) {
    const page = await listMatchEvents({
      client: app,
      path: { match_id: matchId },
      query: { after, limit: 500 },
      throwOnError: true,
    });
    expectStatus(page.response, 200, 'listMatchEvents');
    events.push(...page.data.items);
    if (page.data.next_after === null) return events;
    after = page.data.next_after;
  }
}

async function playMatch(baseUrl: string, appKey: string, spec: string): Promise<PlayedMatch> {
  const [game = '', ...optionNames] = spec.split(':');
  const options = Object.fromEntries(optionNames.map((name): [string, boolean] => [name, true]));
  const random = seededRandom(SEED);
  const app = createClient(createConfig({ baseUrl, auth: credentials(appKey) }));
  const { matchId, seats } = await openTable(app, appKey, baseUrl, game, options);

  let moves = 0;
  let handBuilt = 0;
  let match = await readMatch(app, matchId);
  while (match.status !== 'finished') {
    check(moves < MAX_MOVES, `${spec} match ${matchId} did not end in ${MAX_MOVES} moves`);
    const seat = seats[pick(match.to_move, random)];
    check(seat !== undefined, `seat to move out of range: ${JSON.stringify(match.to_move)}`);
    const legal = await listLegalActions({ client: seat, path: { match_id: matchId }, throwOnError: true });
    expectStatus(legal.response, 200, 'listLegalActions');
    check(legal.data.game === game, `legal actions of ${legal.data.game}`);
    check(legal.data.version === match.version, 'legal actions of another version');
    const choice = chooseAction(legal.data, moves, random);
    handBuilt += choice.handBuilt ? 1 : 0;
    const body: SubmitAction = { action: choice.action, expected_version: match.version };
    const accepted = await submitAction({
      client: seat,
      path: { match_id: matchId },
      headers: { 'Idempotency-Key': randomUUID() },
      body,
      throwOnError: true,
    });
    expectStatus(accepted.response, 201, 'submitAction');
    check(accepted.data.version > match.version, 'submitAction did not advance the version');
    moves += 1;
    match = await readMatch(app, matchId);
  }

  const events = await readEvents(app, matchId);
  check(events.at(-1)?.version === match.version, 'the event log ends before the match does');
  const replay = await replayMatch({
    client: app,
    path: { match_id: matchId },
    query: { version: match.version, full: true },
    throwOnError: true,
  });
  expectStatus(replay.response, 200, 'replayMatch');
  check(replay.data.status === 'finished', `replay status ${replay.data.status}`);
  const expectedView = `${schemaPrefix(game)}View`;
  check(replay.data.view.type === expectedView, `replay view ${replay.data.view.type}`);
  const exported = await exportMatch({ client: app, path: { match_id: matchId }, throwOnError: true });
  expectStatus(exported.response, 200, 'exportMatch');
  check(Object.keys(exported.data).length > 0, 'empty export');

  return {
    game,
    options,
    match_id: matchId,
    status: match.status,
    moves,
    events: events.length,
    hand_built_actions: handBuilt,
  };
}

function describe(failure: unknown): string {
  return failure instanceof Error ? (failure.stack ?? failure.message) : JSON.stringify(failure);
}

async function main(): Promise<number> {
  const baseUrl = process.env.PLAYTABLE_URL;
  const appKey = process.env.PLAYTABLE_APP_KEY;
  const specs = process.argv.slice(2);
  if (!baseUrl || !appKey || specs.length === 0) {
    console.error(
      'usage: PLAYTABLE_URL=<gateway> PLAYTABLE_APP_KEY=<key> node dist/play.js <game>[:<option>]...',
    );
    return 2;
  }
  const outcomes = await Promise.allSettled(specs.map((spec) => playMatch(baseUrl, appKey, spec)));
  let failed = 0;
  outcomes.forEach((outcome, index) => {
    if (outcome.status === 'fulfilled') {
      console.log(JSON.stringify(outcome.value));
    } else {
      failed += 1;
      console.error(`${specs[index]}: ${describe(outcome.reason)}`);
    }
  });
  return failed === 0 ? 0 : 1;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (failure: unknown) => {
    console.error(describe(failure));
    process.exitCode = 1;
  },
);
