import { type ChildProcess, spawn } from "node:child_process";

/** A child process that prints one JSON fact per line; the test waits on those facts. */
export class DriverProcess {
  readonly facts: Array<Record<string, unknown>> = [];
  stderr = "";
  private readonly waiters = new Set<() => void>();
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private constructor(readonly child: ChildProcess) {
    let buffered = "";
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
      buffered += chunk;
      const lines = buffered.split("\n");
      buffered = lines.pop()!;
      for (const line of lines) if (line.trim()) this.facts.push(JSON.parse(line));
      for (const wake of this.waiters) wake();
    });
    child.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
      this.stderr += chunk;
    });
    this.exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
    void this.exited.then(() => {
      for (const wake of this.waiters) wake();
    });
  }

  static start(command: string[], args: string[]): DriverProcess {
    return new DriverProcess(
      spawn(process.execPath, [...command, ...args], { stdio: ["pipe", "pipe", "pipe"] }),
    );
  }

  /** Resolves with the first fact that matches, rejects after `timeoutMs` (with what the process said). */
  waitFor(
    match: (fact: Record<string, unknown>) => boolean,
    timeoutMs = 15_000,
  ): Promise<Record<string, unknown>> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = this.facts.find(match);
        if (found) {
          this.waiters.delete(check);
          clearTimeout(timer);
          resolve(found);
        } else if (this.child.exitCode !== null || this.child.signalCode !== null) {
          this.waiters.delete(check);
          clearTimeout(timer);
          reject(new Error(`driver exited without the fact; stderr: ${this.stderr.slice(-2000)}`));
        }
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`no such fact within ${timeoutMs} ms; stderr: ${this.stderr.slice(-2000)}`));
      }, timeoutMs);
      this.waiters.add(check);
      check();
    });
  }

  /** Writes one line to the process's stdin. */
  send(line: string): void {
    this.child.stdin!.write(`${line}\n`);
  }

  kill(signal: NodeJS.Signals = "SIGKILL"): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
  }
}
