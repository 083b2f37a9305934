import { render } from "preact";

import { loadServerAppKey } from "./api";
import { Lobby } from "./pages/lobby";
import { MatchPage } from "./pages/match";
import { ReplayPage } from "./pages/replay";
import { TablePage } from "./pages/table";
import { links, useRoute } from "./router";
import "./style.css";

function App() {
  const route = useRoute();
  return (
    <>
      <header>
        <a href={links.lobby()} class="brand">
          playtable
        </a>
      </header>
      {route.page === "lobby" && <Lobby />}
      {route.page === "table" && (
        <TablePage key={route.tableId} tableId={route.tableId} invitation={route.invitation} />
      )}
      {route.page === "match" && <MatchPage key={route.matchId} matchId={route.matchId} />}
      {route.page === "replay" && <ReplayPage key={route.matchId} matchId={route.matchId} />}
      {route.page === "unknown" && (
        <main>
          <p>
            Nothing at {route.hash}: back to the <a href={links.lobby()}>lobby</a>.
          </p>
        </main>
      )}
    </>
  );
}

const root = document.getElementById("app");
if (root !== null) void loadServerAppKey().then(() => render(<App />, root));
