/**
 * Ends the process with status 1 and a line on stderr when the event loop empties while `work` is still
 * pending: work waiting on something nothing will ever bring (a defect) would otherwise end the process
 * with status 0 and no output, which a script or a test reads as success.
 *
 * @example
 * ```ts
 * reportStall(main(process.argv.slice(2)));
 * ```
 */
export function reportStall(work: Promise<unknown>, stderr: NodeJS.WritableStream = process.stderr): void {
  let pending = true;
  const done = () => {
    pending = false;
  };
  work.then(done, done);
  process.once("beforeExit", () => {
    if (!pending) return;
    stderr.write("internal error: the command stopped with work still waiting, which nothing will finish\n");
    process.exitCode = 1;
  });
}
