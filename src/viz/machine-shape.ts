/**
 * A machine's observable structure as plain sorted lists: every state (type, initial child, entry and
 * exit actions, invoked actors) and every transition (source, event, guard, targets, actions). Two
 * machines with equal shapes behave alike for every event; tests use it to check that a generated
 * config loads back into the machine it came from.
 */
import type { AnyStateMachine, AnyStateNode, AnyTransitionDefinition } from "xstate";
import { actionName, guardLabel, isInternal } from "./labels.js";

export interface MachineShape {
  states: string[];
  transitions: string[];
}

/**
 * @example
 * ```ts
 * expect(machineShape(createMachine(toMachineConfig(runMachine)))).toEqual(machineShape(runMachine));
 * ```
 */
export function machineShape(machine: AnyStateMachine): MachineShape {
  const states: string[] = [];
  const transitions: string[] = [];
  const visit = (node: AnyStateNode): void => {
    const initial = node.type === "compound" ? node.initial?.target.map((t) => t.id).join(",") : "";
    const invoked = node.invoke.map((def) => {
      const src: unknown = (def as { src: unknown }).src;
      return `${def.id}=${typeof src === "string" ? src : def.id}`;
    });
    states.push(
      [
        node.id,
        node.type,
        `initial:${initial ?? ""}`,
        `entry:${node.entry.map(actionName).join(",")}`,
        `exit:${node.exit.map(actionName).join(",")}`,
        `invoke:${invoked.join(",")}`,
        `description:${node.description ?? ""}`,
      ].join(" | "),
    );
    for (const [eventType, list] of node.transitions) {
      list.forEach((t, order) => {
        if (!isInternal(t)) transitions.push(describe(node, eventType, order, t));
      });
    }
    (node.always ?? []).forEach((t, order) => {
      transitions.push(describe(node, "always", order, t));
    });
    Object.values(node.states).forEach(visit);
  };
  visit(machine.root);
  return { states: states.sort(), transitions: transitions.sort() };
}

function describe(node: AnyStateNode, event: string, order: number, t: AnyTransitionDefinition): string {
  const guard = t.guard === undefined ? "" : guardLabel(t.guard);
  const targets = (t.target ?? []).map((target) => target.id).join(",");
  const actions = t.actions.map(actionName).join(",");
  return `${node.id} ${event}#${order} [${guard}] -> ${targets} {${actions}}${t.reenter ? " reenter" : ""}`;
}
