/** Agent levels: L0 executive > L1 manager > L2 worker. Pure, so it is property-tested. */
import type { AgentLevel } from '../db/schema.js';

export const LEVELS: readonly AgentLevel[] = ['L0', 'L1', 'L2'];

const RANK: Record<AgentLevel, number> = { L0: 0, L1: 1, L2: 2 };

/** Whether an agent of level `actual` may call a route whose minimum level is `required`. */
export function levelSatisfies(actual: AgentLevel, required: AgentLevel): boolean {
  return RANK[actual] <= RANK[required];
}

export function isAgentLevel(value: unknown): value is AgentLevel {
  return value === 'L0' || value === 'L1' || value === 'L2';
}
