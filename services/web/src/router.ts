// Hash routes: the server only ever serves the one page, whatever the route.
import { useEffect, useState } from "preact/hooks";

export type Route =
  | { page: "lobby" }
  | { page: "table"; tableId: string; invitation: string | null }
  | { page: "match"; matchId: string }
  | { page: "replay"; matchId: string }
  | { page: "unknown"; hash: string };

export function parseRoute(hash: string): Route {
  const [path = "", query = ""] = hash.replace(/^#/, "").split("?");
  let parts: string[];
  try {
    parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  } catch {
    return { page: "unknown", hash }; // a stray "%" that is no escape
  }
  const [section, id, sub] = parts;
  if (parts.length === 0) return { page: "lobby" };
  if (section === "tables" && id !== undefined && parts.length === 2) {
    return { page: "table", tableId: id, invitation: new URLSearchParams(query).get("invitation") };
  }
  if (section === "matches" && id !== undefined && parts.length === 2) {
    return { page: "match", matchId: id };
  }
  if (section === "matches" && id !== undefined && sub === "replay" && parts.length === 3) {
    return { page: "replay", matchId: id };
  }
  return { page: "unknown", hash };
}

export const links = {
  lobby: () => "#/",
  table: (tableId: string, invitation?: string | null) =>
    `#/tables/${encodeURIComponent(tableId)}` +
    (invitation ? `?invitation=${encodeURIComponent(invitation)}` : ""),
  match: (matchId: string) => `#/matches/${encodeURIComponent(matchId)}`,
  replay: (matchId: string) => `#/matches/${encodeURIComponent(matchId)}/replay`,
};

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const changed = () => setRoute(parseRoute(location.hash));
    addEventListener("hashchange", changed);
    changed(); // a change between the first render and this effect fired no event heard here
    return () => removeEventListener("hashchange", changed);
  }, []);
  return route;
}
