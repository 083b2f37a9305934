// Bundles the app into dist/, which the gateway serves at / (services/operator/gateway.py).
import { defineConfig } from "vite";

/** The API's paths: `npm run dev` sends them to a running stack's gateway. */
const API_PATHS = ["/games", "/tables", "/matches", "/web-config.json"];

export default defineConfig({
  esbuild: { jsx: "automatic", jsxImportSource: "preact" },
  server: {
    proxy: Object.fromEntries(
      API_PATHS.map((path) => [path, process.env.PLAYTABLE_URL ?? "http://127.0.0.1:8080"]),
    ),
  },
});
