// The same desk with a planted bug: lookup_order still says it can be cancelled, but never hands its
// signal on, so a /stop or an interrupting message cannot stop it.
import { lookupOrder, refund, warehouse } from "./tools.mjs";

export const stubbornLookup = {
  ...lookupOrder,
  async execute(args) {
    return warehouse.find(args.order);
  },
};

export default [stubbornLookup, refund];
