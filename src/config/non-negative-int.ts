import { z } from "zod";

/** A whole number of zero or more (a count, or milliseconds). */
export const nonNegativeInt = z.number().int().nonnegative();
