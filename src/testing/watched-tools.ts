import type { ToolDefinition } from "../ports/tool.js";

/**
 * Your tools, run on a path in place of its stubs: each call runs your `execute` and the stub (which
 * holds the path's timing on the simulated clock), and answers with your result. A tool declared
 * `cancellable` must look at its abort signal (listen to it, read it, or hand it on to `fetch` and the
 * like); one that never does while the path stops it is reported in `problems`, since an interrupt
 * would be acked as stopping a tool that goes on running.
 */
export function watchedTools(
  stubs: readonly ToolDefinition[],
  yours: readonly ToolDefinition[],
  problems: string[],
): ToolDefinition[] {
  return stubs.map((stub) => {
    const tool = yours.find((candidate) => candidate.name === stub.name);
    if (!tool) return stub;
    return {
      ...tool,
      async execute(args, context) {
        const controller = new AbortController();
        let looked = false;
        const signal = controller.signal;
        const add = signal.addEventListener.bind(signal);
        signal.addEventListener = ((...rest: Parameters<typeof add>) => {
          looked = true;
          return add(...rest);
        }) as typeof signal.addEventListener;
        for (const key of ["aborted", "reason"] as const) {
          const read = Object.getOwnPropertyDescriptor(AbortSignal.prototype, key)!.get!;
          Object.defineProperty(signal, key, {
            get() {
              looked = true;
              return read.call(signal);
            },
          });
        }
        const throwIfAborted = signal.throwIfAborted.bind(signal);
        signal.throwIfAborted = () => {
          looked = true;
          throwIfAborted();
        };
        const onAbort = () => {
          controller.abort(context.signal.reason);
          if (tool.cancellable && !looked) {
            problems.push(
              `tool ${tool.name} is declared cancellable but ignores its abort signal: it was stopped on this path and never looked at context.signal, so it runs on after the user was told it stopped`,
            );
          }
        };
        context.signal.addEventListener("abort", onAbort, { once: true });
        const real = Promise.resolve().then(() => tool.execute(args, { ...context, signal }));
        real.catch(() => {});
        try {
          await stub.execute(args, context);
        } finally {
          context.signal.removeEventListener("abort", onAbort);
        }
        return await real;
      },
    };
  });
}
