// The lobby: the app's key, this browser's tables and matches, the running matches to watch,
// the games from the catalogue (GET /games) and a form built from each one's options, bots and
// hosting policies, and the app's open tables.
import { useEffect, useState } from "preact/hooks";

import {
  createTable,
  type BotSeat,
  type CreateTable,
  type GameInfo,
  type GameOption,
  type Hosting,
  joinTable,
  listGames,
  listTables,
  type PolicyInfo,
  type TableInfo,
} from "../client";
import {
  api,
  appKey,
  credentials,
  problemOf,
  sendOnce,
  setAppKey,
  type ShownProblem,
} from "../api";
import { ProblemBox, StackedWarning, useCommands } from "../components";
import { links } from "../router";
import { gameTitle, MatchesToWatch, YourTables } from "./lobby-yours";
import {
  boundSeats,
  type Chosen,
  maxSeats,
  optionsToSend,
  requirementsMet,
  requirementText,
  seatBoundsText,
} from "./lobby-options";

const TABLES_PER_PAGE = 50;

export function Lobby() {
  const [games, setGames] = useState<GameInfo[]>([]);
  const [gamesProblem, setGamesProblem] = useState<ShownProblem | null>(null);
  const [tables, setTables] = useState<TableInfo[] | null>(null);
  const [more, setMore] = useState<string | null>(null);
  const [tablesProblem, setTablesProblem] = useState<ShownProblem | null>(null);

  /** The open tables, oldest first (those waiting longest), a page at a time: `cursor` null
   * reads the first page again. */
  const loadTables = async (cursor: string | null = null) => {
    try {
      const page = await listTables({
        client: api(),
        query: { status: "open", limit: TABLES_PER_PAGE, ...(cursor && { cursor }) },
        throwOnError: true,
      });
      setTables((shown) => [...(cursor && shown ? shown : []), ...page.data.items]);
      setMore(page.data.next_cursor ?? null);
      setTablesProblem(null);
    } catch (error) {
      setTablesProblem(problemOf(error));
    }
  };
  useEffect(() => {
    listGames({ client: api(), throwOnError: true })
      .then((answer) => setGames(answer.data))
      .catch((error: unknown) => setGamesProblem(problemOf(error)));
    void loadTables();
  }, []);

  return (
    <main>
      <AppKeyField onSaved={() => void loadTables()} />
      <ProblemBox problem={gamesProblem ?? tablesProblem} />
      <YourTables games={games} />
      <MatchesToWatch games={games} />
      {games.length > 0 && <CreateTableForm games={games} />}
      <section>
        <h2>
          Open tables <button onClick={() => void loadTables()}>Refresh</button>
        </h2>
        {tables !== null && <TableList tables={tables} games={games} />}
        {more && <button onClick={() => void loadTables(more)}>More tables</button>}
      </section>
    </main>
  );
}

function AppKeyField({ onSaved }: { onSaved: () => void }) {
  const [key, setKey] = useState(appKey);
  return (
    <form
      class="app-key"
      onSubmit={(event) => {
        event.preventDefault();
        setAppKey(key);
        onSaved();
      }}
    >
      <label>
        App key (X-API-Key){" "}
        <input
          name="app-key"
          value={key}
          onInput={(event) => setKey(event.currentTarget.value)}
          placeholder="pt_..."
          autocomplete="off"
        />
      </label>
      <button>Save</button>
    </form>
  );
}

function TableList({ tables, games }: { tables: TableInfo[]; games: GameInfo[] }) {
  if (tables.length === 0) return <p>No tables yet.</p>;
  const title = (name: string) => gameTitle(games, name);
  return (
    <ul class="tables" data-testid="tables">
      {tables.map((table) => {
        const taken = table.seats.filter((seat) => seat.player !== null).length;
        return (
          <li key={table.table_id}>
            <a href={links.table(table.table_id)}>{table.name || title(table.game)}</a>{" "}
            {title(table.game)} · {taken}/{table.seats.length} seated · {table.status}{" "}
            <StackedWarning table={table} />
          </li>
        );
      })}
    </ul>
  );
}

/** A bot's name as the contract spells it (the catalogue lists them as plain strings). */
type BotName = BotSeat["bot"];
type TimeoutPolicy = NonNullable<Hosting["on_timeout"]>;
type LeavePolicy = NonNullable<Hosting["on_leave"]>;

/** The table's name when none is typed: the creator's and the game's ("Ada's Hanabi"). */
function defaultTableName(player: string, game: GameInfo): string {
  return player.trim() ? `${player.trim()}'s ${game.title}` : `${game.title} table`;
}

function CreateTableForm(props: { games: GameInfo[] }) {
  const [gameName, setGameName] = useState(props.games[0]?.name ?? "");
  const game = props.games.find((candidate) => candidate.name === gameName);
  const [seatsWanted, setSeats] = useState(2);
  const [name, setName] = useState("");
  const [player, setPlayer] = useState("");
  const [playerSeat, setPlayerSeat] = useState(0);
  const [visibility, setVisibility] = useState<"public" | "private">("public");
  const [seed, setSeed] = useState("");
  const [perMove, setPerMove] = useState("");
  const [onTimeout, setOnTimeout] = useState<TimeoutPolicy>("forfeit");
  const [onLeave, setOnLeave] = useState<LeavePolicy>("abandon");
  const [options, setOptions] = useState<Chosen>({});
  const [bots, setBots] = useState<Record<number, BotName | "">>({});
  const { busy, refused, run } = useCommands();
  if (game === undefined) return null;
  const seats = boundSeats(game, options, seatsWanted);
  const mySeat = player.trim() ? Math.min(playerSeat, seats - 1) : null;

  const choose = (option: string, value: unknown) =>
    setOptions((chosen) => {
      const { [option]: _, ...others } = chosen;
      return value === undefined ? others : { ...others, [option]: value as Chosen[string] };
    });

  const hosting = (): Hosting | undefined => {
    const clock = perMove !== "" ? { per_move_s: Number(perMove) } : null;
    if (clock === null && onLeave === "abandon") return undefined;
    return { clock, on_timeout: clock === null ? "forfeit" : onTimeout, on_leave: onLeave };
  };

  const create = async () => {
    const chosenHosting = hosting();
    const body: CreateTable = {
      game: game.name,
      seats,
      name: name.trim() || defaultTableName(player, game),
      visibility,
      options: optionsToSend(game, options),
      bots: Object.entries(bots)
        .filter(
          (entry): entry is [string, BotName] =>
            entry[1] !== "" && Number(entry[0]) < seats && Number(entry[0]) !== mySeat,
        )
        .map(([seat, bot]) => ({ bot, seat: Number(seat) })),
      ...(seed !== "" && { seed: Number(seed) }),
      ...(chosenHosting && { hosting: chosenHosting }),
    };
    return run(async () => {
      const created = await sendOnce(["createTable", body], (key) =>
        createTable({
          client: api(),
          body,
          headers: { "Idempotency-Key": key },
          throwOnError: true,
        }),
      );
      const { table_id: tableId, invitation_token: invitation } = created.data;
      if (invitation) credentials.keepInvitation(tableId, invitation);
      if (mySeat !== null) await sitDown(tableId, invitation ?? null, player.trim(), mySeat);
      location.hash = links.table(tableId);
    });
  };

  return (
    <section>
      <h2>New table</h2>
      <ProblemBox problem={refused} />
      <form
        class="create-table"
        data-testid="create-table"
        onSubmit={(event) => {
          event.preventDefault();
          void create();
        }}
      >
        <label>
          Game{" "}
          <select
            name="game"
            value={game.name}
            onChange={(event) => {
              const picked = props.games.find(
                (candidate) => candidate.name === event.currentTarget.value,
              );
              setGameName(event.currentTarget.value);
              setSeats(picked?.min_players ?? 2);
              setOptions({});
              setBots({});
              setOnTimeout("forfeit");
            }}
          >
            {props.games.map((candidate) => (
              <option key={candidate.name} value={candidate.name}>
                {candidate.title}
              </option>
            ))}
          </select>
        </label>
        <p class="description">{game.description}</p>
        <label>
          Seats{" "}
          <input
            name="seats"
            type="number"
            min={game.min_players}
            max={maxSeats(game, options)}
            value={seats}
            onInput={(event) =>
              setSeats(boundSeats(game, options, Number(event.currentTarget.value)))
            }
          />{" "}
          <small class="help" data-testid="seat-bounds">
            {seatBoundsText(game, options)}
          </small>
        </label>
        <label>
          Your name{" "}
          <input
            name="creator"
            value={player}
            maxLength={40}
            placeholder="to sit down at once"
            onInput={(event) => setPlayer(event.currentTarget.value)}
          />
        </label>
        {mySeat !== null && (
          <label>
            Your seat{" "}
            <select
              name="creator-seat"
              value={mySeat}
              onChange={(event) => setPlayerSeat(Number(event.currentTarget.value))}
            >
              {Array.from({ length: seats }, (_, seat) => (
                <option key={seat} value={seat}>
                  Seat {seat}
                </option>
              ))}
            </select>
          </label>
        )}
        <label>
          Table name{" "}
          <input
            name="name"
            value={name}
            maxLength={80}
            placeholder={defaultTableName(player, game)}
            onInput={(event) => setName(event.currentTarget.value)}
          />
        </label>
        <label>
          Visibility{" "}
          <select
            name="visibility"
            value={visibility}
            onChange={(event) => setVisibility(event.currentTarget.value as "public" | "private")}
          >
            <option value="public">public: listed, anyone may join</option>
            <option value="private">private: by invitation link</option>
          </select>
        </label>
        <label>
          Seed{" "}
          <input
            name="seed"
            type="number"
            min={0}
            max={Number.MAX_SAFE_INTEGER}
            value={seed}
            placeholder="random"
            onInput={(event) => setSeed(event.currentTarget.value)}
          />
        </label>
        <fieldset key={`${game.name}-hosting`}>
          <legend>Clock and absences</legend>
          <label>
            Seconds per move{" "}
            <input
              name="per-move"
              type="number"
              min={1}
              value={perMove}
              placeholder="no clock"
              onInput={(event) => setPerMove(event.currentTarget.value)}
            />
          </label>
          <PolicyField
            name="on-timeout"
            label="When time runs out"
            policies={game.timeout_policies}
            value={onTimeout}
            disabled={perMove === ""}
            onChoose={(policy) => setOnTimeout(policy as TimeoutPolicy)}
          />
          <PolicyField
            name="on-leave"
            label="When a player leaves"
            policies={game.leave_policies}
            value={onLeave}
            disabled={false}
            onChoose={(policy) => setOnLeave(policy as LeavePolicy)}
          />
        </fieldset>
        {game.options.length > 0 && (
          <fieldset key={game.name}>
            <legend>Options</legend>
            {game.options.map((option) => (
              <OptionField
                key={option.name}
                option={option}
                value={options[option.name]}
                choose={choose}
                needs={
                  requirementsMet(option, game, options) ? null : requirementText(option, game)
                }
              />
            ))}
          </fieldset>
        )}
        {game.bots.length > 0 && (
          <fieldset>
            <legend>Bots</legend>
            {Array.from({ length: seats }, (_, seat) =>
              seat === mySeat ? (
                <p key={seat} class="help">
                  Seat {seat}: you
                </p>
              ) : (
                <label key={seat}>
                  Seat {seat}{" "}
                  <select
                    name={`bot-${seat}`}
                    value={bots[seat] ?? ""}
                    onChange={(event) =>
                      setBots({ ...bots, [seat]: event.currentTarget.value as BotName })
                    }
                  >
                    <option value="">a player</option>
                    {game.bots.map((bot) => (
                      <option key={bot.name} value={bot.name} title={bot.description}>
                        {bot.name}
                      </option>
                    ))}
                  </select>
                </label>
              ),
            )}
          </fieldset>
        )}
        <button disabled={busy}>Create table</button>
      </form>
    </section>
  );
}

/** The creator takes `seat` at the table just created, and this browser keeps the seat. */
async function sitDown(tableId: string, invitation: string | null, name: string, seat: number) {
  const joined = await sendOnce(["joinTable", tableId, name, seat], (key) =>
    joinTable({
      client: api(invitation),
      path: { table_id: tableId },
      body: { name, seat },
      headers: { "Idempotency-Key": key },
      throwOnError: true,
    }),
  );
  credentials.keepSeat(tableId, { seat: joined.data.seat, token: joined.data.token, name });
}

/** A hosting policy to choose, each said in the catalogue's words for this game. */
function PolicyField(props: {
  name: string;
  label: string;
  policies: PolicyInfo[];
  value: string;
  disabled: boolean;
  onChoose: (policy: string) => void;
}) {
  const chosen = props.policies.find((policy) => policy.name === props.value);
  return (
    <div class="policy">
      <label>
        {props.label}{" "}
        <select
          name={props.name}
          value={props.value}
          disabled={props.disabled}
          onChange={(event) => props.onChoose(event.currentTarget.value)}
        >
          {props.policies.map((policy) => (
            <option key={policy.name} value={policy.name}>
              {policy.name}
            </option>
          ))}
        </select>
      </label>
      <small class="help" data-testid={`${props.name}-help`}>
        {props.disabled ? "Set a clock first." : chosen?.description}
      </small>
    </div>
  );
}

/** One option's field, by its catalogue type, labelled by its title with its help below; left
 * alone, the game's default applies. While `needs` says what it waits for, it is disabled. */
function OptionField(props: {
  option: GameOption;
  value: unknown;
  choose: (option: string, value: unknown) => void;
  needs: string | null;
}) {
  const { option, value, choose, needs } = props;
  const disabled = needs !== null;
  const help = (
    <small class="help">
      {option.description}
      {needs && <em class="needs"> ({needs})</em>}
    </small>
  );
  return (
    <div class={`option${disabled ? " disabled" : ""}`} data-option={option.name}>
      <OptionInput
        option={option}
        value={disabled ? undefined : value}
        choose={choose}
        disabled={disabled}
      />
      {help}
    </div>
  );
}

function OptionInput(props: {
  option: GameOption;
  value: unknown;
  choose: (option: string, value: unknown) => void;
  disabled: boolean;
}) {
  const { option, value, choose, disabled } = props;
  const label = option.title;
  const shownDefault = option.default === null ? "" : String(option.default);
  switch (option.type) {
    case "bool":
      return (
        <label>
          <input
            type="checkbox"
            name={option.name}
            disabled={disabled}
            checked={Boolean(value ?? option.default)}
            onChange={(event) => {
              const checked = event.currentTarget.checked;
              choose(option.name, checked === option.default ? undefined : checked);
            }}
          />{" "}
          {label}
        </label>
      );
    case "enum": {
      const choices = option.choices ?? [];
      return (
        <label>
          {label}{" "}
          <select
            name={option.name}
            disabled={disabled}
            value={String(value ?? option.default)}
            onChange={(event) => {
              const picked = choices.find((choice) => String(choice) === event.currentTarget.value);
              choose(option.name, picked === option.default ? undefined : picked);
            }}
          >
            {choices.map((choice) => (
              <option key={String(choice)} value={String(choice)}>
                {String(choice)}
              </option>
            ))}
          </select>
        </label>
      );
    }
    case "int":
      return (
        <label>
          {label}{" "}
          <input
            type="number"
            name={option.name}
            disabled={disabled}
            min={option.minimum ?? undefined}
            max={option.maximum ?? undefined}
            placeholder={shownDefault || "default"}
            value={value === undefined ? "" : String(value)}
            onInput={(event) => {
              const text = event.currentTarget.value;
              choose(option.name, text === "" ? undefined : Number(text));
            }}
          />
        </label>
      );
    default: {
      // list[int] and list[str]: comma-separated, the field left to hold what is typed
      const numbers = option.type === "list[int]";
      return (
        <label>
          {label}{" "}
          <input
            name={option.name}
            disabled={disabled}
            placeholder="default"
            onInput={(event) => {
              const items = event.currentTarget.value
                .split(",")
                .map((item) => item.trim())
                .filter(Boolean)
                .map((item) => (numbers ? Number(item) : item));
              choose(option.name, items.length === 0 ? undefined : items);
            }}
          />
        </label>
      );
    }
  }
}
