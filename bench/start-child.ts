/** Starts a process of the PostgreSQL benches (postgres-child.ts) and reads the facts it prints. */
import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

export function startChild(mode: string, args: Record<string, unknown>) {
  const compiled = import.meta.url.endsWith(".js");
  const file = fileURLToPath(new URL(`./postgres-child.${compiled ? "js" : "ts"}`, import.meta.url));
  // TILLER_BENCH_CPU_PROF=DIR: each child writes a V8 CPU profile there (node --cpu-prof) when it exits.
  const profile = process.env.TILLER_BENCH_CPU_PROF;
  const argv = [
    ...(profile ? ["--cpu-prof", `--cpu-prof-dir=${profile}`] : []),
    ...(compiled ? [] : ["--import", "tsx"]),
    file,
    mode,
    JSON.stringify(args),
  ];
  const child: ChildProcess = spawn(process.execPath, argv, { stdio: ["pipe", "pipe", "inherit"] });
  const facts: Array<Record<string, unknown>> = [];
  const waiters: Array<() => void> = [];
  createInterface({ input: child.stdout! }).on("line", (line) => {
    facts.push(JSON.parse(line));
    for (const wake of waiters.splice(0)) wake();
  });
  return {
    child,
    async fact(event: string): Promise<Record<string, unknown>> {
      for (;;) {
        const found = facts.find((f) => f.event === event);
        if (found) return found;
        if (child.exitCode !== null) throw new Error(`postgres-child ${mode} exited before "${event}"`);
        await new Promise<void>((resolve) => waiters.push(resolve));
      }
    },
  };
}
