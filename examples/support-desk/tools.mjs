// A support desk's two tools. `lookup_order` asks the warehouse and stops when its signal aborts;
// `refund` moves money, so it cannot be stopped half-way and needs the `payments` scope.

/** The warehouse API, in memory here: a real one would be `fetch(url, { signal })`. */
export const warehouse = {
  async find(order, { signal } = {}) {
    signal?.throwIfAborted();
    return { order, status: "shipped" };
  },
};

/** @type {import("tiller-gateway").ToolDefinition} */
export const lookupOrder = {
  name: "lookup_order",
  description: "Find an order by its number (A-1234).",
  parameters: {
    type: "object",
    properties: { order: { type: "string", pattern: "^A-[0-9]{4}$" } },
    required: ["order"],
    additionalProperties: false,
  },
  readOnly: true,
  cancellable: true,
  async execute(args, { signal }) {
    return warehouse.find(args.order, { signal });
  },
};

/** @type {import("tiller-gateway").ToolDefinition} */
export const refund = {
  name: "refund",
  description: "Refund part of an order, in cents.",
  parameters: {
    type: "object",
    properties: {
      order: { type: "string", pattern: "^A-[0-9]{4}$" },
      cents: { type: "integer", minimum: 1, maximum: 50000 },
    },
    required: ["order", "cents"],
    additionalProperties: false,
  },
  requires: ["payments"],
  cancellable: false,
  async execute(args) {
    return { refunded: args.cents };
  },
};

export default [lookupOrder, refund];
