import { z } from "zod";

/**
 * `laneGroups`: each group's budget and lanes. A lane belongs to at most one group (the lane
 * scheduler's own rule, checked here so a bad config is refused before anything runs).
 */
export const laneGroupsSchema = z
  .record(
    z.string().min(1),
    z
      .object({
        capacity: z.number().int().positive(),
        lanes: z
          .array(
            z
              .string()
              .min(1)
              .refine((lane) => !lane.startsWith("session:"), {
                message: "a workload lane name, not session:...",
              }),
          )
          .min(1),
      })
      .strict(),
  )
  .superRefine((groups, ctx) => {
    const groupOf = new Map<string, string>();
    for (const [name, group] of Object.entries(groups)) {
      for (const lane of group.lanes) {
        const other = groupOf.get(lane);
        if (other !== undefined) {
          const where = other === name ? "listed twice" : `already in group ${other}`;
          ctx.addIssue({
            code: "custom",
            path: [name, "lanes"],
            message: `a lane in one group only (${lane} is ${where})`,
          });
        }
        groupOf.set(lane, name);
      }
    }
  });
