/**
 * The floor under the store bench's reopen figure, in a fresh process as the reopen is measured:
 *
 *   node --import tsx bench/parse-floor-child.ts FILE   (or the compiled tmp/bench-build/bench/parse-floor-child.js)
 *
 * Reads the transcript file and parses its records with one `JSON.parse` of them all as an array: what
 * a plain reader of the same bytes into objects pays, with no checksum check, index or window. Prints
 * `{"ms":…,"cpuMs":…,"records":…}` (timed like bench/reopen-child.ts, after the process is up).
 */
import { readFile } from "node:fs/promises";

const [file] = process.argv.slice(2);
if (!file) throw new Error("usage: parse-floor-child.ts FILE");
const started = performance.now();
const cpuBefore = process.cpuUsage();
const text = (await readFile(file)).toString("utf8");
// Every line after the header (each with its checksum field, which the reopen's records leave out).
const body = text.slice(text.indexOf("\n") + 1).trimEnd();
const records = JSON.parse(`[${body.replaceAll("\n", ",")}]`) as unknown[];
const ms = performance.now() - started;
const cpu = process.cpuUsage(cpuBefore);
console.log(JSON.stringify({ ms, cpuMs: (cpu.user + cpu.system) / 1000, records: records.length }));
