/**
 * Plays one match per argument to the end through the client generated from
 * openapi/openapi.json, its SDK functions and types only, then reads each match's events, a
 * replay and the export: proof that the contract is enough for a typed TypeScript app.
 *
 * Usage: PLAYTABLE_URL=http://127.0.0.1:8080 node dist/play.js hanabi carcassonne:messengers
 * (`game:option` sets that boolean option). Prints one JSON line per match; exits 1 on any failure.
 * With `--play-cards` instead: a Hanabi and a Dingo PlayCard, each sent to both games' matches,
 * one JSON line per card.
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
  DingoPlayCard,
  DingoSubmitAction,
  HanabiPlayCard,
  HanabiSubmitAction,
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

/** A random legal move, as the game's own move (`legal.game` narrows the actions to that game's
 * own: `type` tags repeat across games). Hanabi's first move is a PlayCard written out by hand,
 * not echoed from the server. */
function chooseMove(
  legal: LegalActions,
  moves: number,
  random: () => number,
): { body: SubmitAction; handBuilt: boolean } {
  const expected_version = legal.version;
  switch (legal.game) {
    case 'hanabi': {
      if (moves === 0) {
        const action = handBuiltPlayCard(legal.actions);
        return { body: { game: 'hanabi', action, expected_version }, handBuilt: true };
      }
      const action = pick(legal.actions, random);
      return { body: { game: legal.game, action, expected_version }, handBuilt: false };
    }
    case 'carcassonne': {
      const action = pick(legal.actions, random);
      return { body: { game: legal.game, action, expected_version }, handBuilt: false };
    }
    case 'dingo': {
      const action = pick(legal.actions, random);
      return { body: { game: legal.game, action, expected_version }, handBuilt: false };
    }
    case 'breaking_news': {
      const action = pick(legal.actions, random);
      return { body: { game: legal.game, action, expected_version }, handBuilt: false };
    }
  }
}

function handBuiltPlayCard(offered: HanabiSubmitAction['action'][]): HanabiPlayCard {
  for (const action of offered) {
    if (action.type === 'PlayCard') return { type: 'PlayCard', card: action.card };
  }
  throw new Error('no PlayCard among the first Hanabi legal actions');
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
    const choice = chooseMove(legal.data, moves, random);
    handBuilt += choice.handBuilt ? 1 : 0;
    const accepted = await submitAction({
      client: seat,
      path: { match_id: matchId },
      headers: { 'Idempotency-Key': randomUUID() },
      body: choice.body,
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

interface PlayedCard {
  game: string;
  /** Sent to the other game's match first: its status, problem code, and whether that match
   * kept its version. */
  refused_elsewhere: [number, string, boolean];
  accepted: number;
  answer_game: string;
  event_types: string[];
}

/** A Hanabi PlayCard and a Dingo PlayCard (the same tag), each built as its game's type and
 * sent as its game's move: first to the other game's match (refused), then to its own. */
async function playCards(baseUrl: string, appKey: string): Promise<PlayedCard[]> {
  const app = createClient(createConfig({ baseUrl, auth: credentials(appKey) }));
  const hanabi = await openTable(app, appKey, baseUrl, 'hanabi', {});
  const dingo = await openTable(app, appKey, baseUrl, 'dingo', {});
  const hanabiSeat = await seatToMove(app, hanabi);
  const dingoSeat = await seatToMove(app, dingo);
  const hanabiLegal = await listLegalActions({
    client: hanabiSeat,
    path: { match_id: hanabi.matchId },
    throwOnError: true,
  });
  const dingoLegal = await listLegalActions({
    client: dingoSeat,
    path: { match_id: dingo.matchId },
    throwOnError: true,
  });
  check(hanabiLegal.data.game === 'hanabi', `legal actions of ${hanabiLegal.data.game}`);
  check(dingoLegal.data.game === 'dingo', `legal actions of ${dingoLegal.data.game}`);
  const hanabiMove: HanabiSubmitAction = {
    game: 'hanabi',
    action: handBuiltPlayCard(hanabiLegal.data.actions),
    expected_version: hanabiLegal.data.version,
  };
  let dingoCard: DingoPlayCard | undefined;
  for (const action of dingoLegal.data.actions) {
    if (action.type === 'PlayCard') {
      dingoCard = { type: 'PlayCard', card: action.card, ranch: action.ranch };
      break;
    }
  }
  check(dingoCard !== undefined, 'no PlayCard among the first Dingo legal actions');
  const dingoMove: DingoSubmitAction = {
    game: 'dingo',
    action: dingoCard,
    expected_version: dingoLegal.data.version,
  };
  // @ts-expect-error: a Dingo PlayCard is no Hanabi action, though both are tagged PlayCard
  const mixed: HanabiSubmitAction = { ...hanabiMove, action: dingoCard };
  check(mixed.game === 'hanabi', 'unreachable');
  return [
    await playCard(app, hanabiMove, hanabi.matchId, hanabiSeat, dingo.matchId, dingoSeat),
    await playCard(app, dingoMove, dingo.matchId, dingoSeat, hanabi.matchId, hanabiSeat),
  ];
}

async function seatToMove(app: Client, table: { matchId: string; seats: Client[] }) {
  const match = await readMatch(app, table.matchId);
  const seat = table.seats[match.to_move[0] ?? -1];
  check(seat !== undefined, `no seat to move: ${JSON.stringify(match.to_move)}`);
  return seat;
}

async function playCard(
  app: Client,
  move: SubmitAction,
  matchId: string,
  seat: Client,
  otherId: string,
  otherSeat: Client,
): Promise<PlayedCard> {
  const before = (await readMatch(app, otherId)).version;
  const refused = await submitAction({ client: otherSeat, path: { match_id: otherId }, body: move });
  check(refused.error !== undefined, `${move.game}'s move accepted by the other game's match`);
  const code = refused.error.type.split('/').at(-1) ?? '';
  const unchanged = (await readMatch(app, otherId)).version === before;
  const accepted = await submitAction({
    client: seat,
    path: { match_id: matchId },
    body: move,
    throwOnError: true,
  });
  return {
    game: move.game,
    refused_elsewhere: [refused.response.status, code, unchanged],
    accepted: accepted.response.status,
    answer_game: accepted.data.game,
    event_types: accepted.data.events.map((event) => event.type),
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
  if (specs[0] === '--play-cards') {
    for (const played of await playCards(baseUrl, appKey)) console.log(JSON.stringify(played));
    return 0;
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
