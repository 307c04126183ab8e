import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

/**
 * The console's build: web/ in, web/dist/ out (committed, so that `npm install` and `npm start`
 * stay all a newcomer needs; CI rebuilds it and fails on a difference). Served by Warden under
 * /app/ (src/console/static.ts).
 */
export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  base: "/app/",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    // The polyfill would be an inline script, which the console's Content-Security-Policy refuses;
    // every browser the console supports has modulepreload.
    modulePreload: { polyfill: false },
    // One small app: no source maps to ship, and no chunk-size noise.
    sourcemap: false,
    reportCompressedSize: false,
  },
  server: {
    // `npm run console:dev`: the console with hot reload, its API calls sent to a Warden on 8080.
    proxy: { "/v1": "http://127.0.0.1:8080" },
  },
});
