// Generates src/client/ from the committed contract at build time (never committed): the web
// client's only way to the server, with the typed game models its tables use.
import { defineConfig } from "@hey-api/openapi-ts";

export default defineConfig({
  input: "../../openapi/openapi.json",
  output: "src/client",
  plugins: ["@hey-api/client-fetch", "@hey-api/typescript", "@hey-api/sdk"],
});
