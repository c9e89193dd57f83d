/**
 * A reader of the Prometheus text exposition format (0.0.4), as a scraper reads it: `# TYPE` lines and
 * samples `name{label="value",...} number`.
 */
export function parsePrometheus(text: string) {
  const types = new Map<string, string>();
  const samples: Array<{ name: string; labels: Record<string, string>; value: number }> = [];
  for (const line of text.split("\n")) {
    if (line.startsWith("# TYPE ")) {
      const [, , name, type] = line.split(" ");
      types.set(name!, type!);
      continue;
    }
    if (line === "" || line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not a Prometheus sample: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[key!] = value!.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return {
    types,
    samples,
    /** The sample with exactly these labels; undefined when there is none. */
    value(name: string, labels: Record<string, string>): number | undefined {
      const wanted = Object.entries(labels);
      return samples.find(
        (s) =>
          s.name === name &&
          Object.keys(s.labels).length === wanted.length &&
          wanted.every(([key, value]) => s.labels[key] === value),
      )?.value;
    },
  };
}
