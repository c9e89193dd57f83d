import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

// The page is built into dist/web/, which `tiller serve` serves at `/`. Everything it loads is in that
// folder (no CDN), so the page works offline.
export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  base: "./",
  build: {
    outDir: fileURLToPath(new URL("../dist/web", import.meta.url)),
    emptyOutDir: true,
    chunkSizeWarningLimit: 2000,
  },
  server: { proxy: { "/v1": "http://127.0.0.1:8787" } },
});
