/**
 * One restart of the store bench's reopen figure, in a fresh process as a real restart is:
 *
 *   node --import tsx bench/reopen-child.ts DIR KEY   (or the compiled tmp/bench-build/bench/reopen-child.js)
 *
 * Opens the store at DIR, opens KEY and reads its whole window, and prints
 * `{"ms":…,"cpuMs":…,"records":…}` (the timing starts after the process and its modules are up).
 */
import { JsonlStore } from "../src/adapters/jsonl/jsonl-store.js";

const [dir, key] = process.argv.slice(2);
if (!dir || !key) throw new Error("usage: reopen-child.ts DIR KEY");
const started = performance.now();
const cpuBefore = process.cpuUsage();
const store = await JsonlStore.openDir({ dir });
await store.open(key);
const window = await store.readWindow(key);
const ms = performance.now() - started;
const cpu = process.cpuUsage(cpuBefore);
await store.close();
console.log(JSON.stringify({ ms, cpuMs: (cpu.user + cpu.system) / 1000, records: window.length }));
