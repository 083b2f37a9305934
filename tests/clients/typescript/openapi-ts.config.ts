// Generates the client the tests build (tests/clients/typescript_client.py): never committed.
import { defineConfig } from '@hey-api/openapi-ts';

export default defineConfig({
  input: '../../../openapi/openapi.json',
  output: 'generated',
  plugins: ['@hey-api/client-fetch', '@hey-api/typescript', '@hey-api/sdk'],
});
