// The lobby: the app's key, the games from the catalogue (GET /games) and a form built from
// each one's options and bots, and the app's open tables.
import { useEffect, useState } from "preact/hooks";

import {
  createTable,
  type BotSeat,
  type CreateTable,
  type GameInfo,
  type GameOption,
  listGames,
  listTables,
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
  const title = (name: string) => games.find((game) => game.name === name)?.title ?? name;
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

/** An option's value as its field holds it: absent means the game's default. */
type Chosen = NonNullable<CreateTable["options"]>;
/** A bot's name as the contract spells it (the catalogue lists them as plain strings). */
type BotName = BotSeat["bot"];

function CreateTableForm(props: { games: GameInfo[] }) {
  const [gameName, setGameName] = useState(props.games[0]?.name ?? "");
  const game = props.games.find((candidate) => candidate.name === gameName);
  const [seats, setSeats] = useState(2);
  const [name, setName] = useState("");
  const [visibility, setVisibility] = useState<"public" | "private">("public");
  const [seed, setSeed] = useState("");
  const [perMove, setPerMove] = useState("");
  const [options, setOptions] = useState<Chosen>({});
  const [bots, setBots] = useState<Record<number, BotName | "">>({});
  const { busy, refused, run } = useCommands();
  if (game === undefined) return null;

  const choose = (option: string, value: unknown) =>
    setOptions((chosen) => {
      const { [option]: _, ...others } = chosen;
      return value === undefined ? others : { ...others, [option]: value as Chosen[string] };
    });

  const create = async () => {
    const body: CreateTable = {
      game: game.name,
      seats,
      name,
      visibility,
      options,
      bots: Object.entries(bots)
        .filter((entry): entry is [string, BotName] => entry[1] !== "" && Number(entry[0]) < seats)
        .map(([seat, bot]) => ({ bot, seat: Number(seat) })),
      ...(seed !== "" && { seed: Number(seed) }),
      ...(perMove !== "" && { hosting: { clock: { per_move_s: Number(perMove) } } }),
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
            max={game.max_players}
            value={seats}
            onInput={(event) => setSeats(Number(event.currentTarget.value))}
          />
        </label>
        <label>
          Name{" "}
          <input
            name="name"
            value={name}
            maxLength={80}
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
        {game.options.length > 0 && (
          <fieldset key={game.name}>
            <legend>Options</legend>
            {game.options.map((option) => (
              <OptionField
                key={option.name}
                option={option}
                value={options[option.name]}
                choose={choose}
              />
            ))}
          </fieldset>
        )}
        {game.bots.length > 0 && (
          <fieldset>
            <legend>Bots</legend>
            {Array.from({ length: seats }, (_, seat) => (
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
            ))}
          </fieldset>
        )}
        <button disabled={busy}>Create table</button>
      </form>
    </section>
  );
}

/** One option's field, by its catalogue type; left alone, the game's default applies. */
function OptionField(props: {
  option: GameOption;
  value: unknown;
  choose: (option: string, value: unknown) => void;
}) {
  const { option, value, choose } = props;
  const label = `${option.name}${option.secret ? " (secret)" : ""}`;
  const shownDefault = option.default === null ? "" : String(option.default);
  switch (option.type) {
    case "bool":
      return (
        <label title={option.description}>
          <input
            type="checkbox"
            name={option.name}
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
        <label title={option.description}>
          {label}{" "}
          <select
            name={option.name}
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
        <label title={option.description}>
          {label}{" "}
          <input
            type="number"
            name={option.name}
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
        <label title={option.description}>
          {label}{" "}
          <input
            name={option.name}
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
