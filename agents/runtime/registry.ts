/** Task name -> definition, per agent. */
import type { ZodType } from 'zod';
import type { AgentKind } from '../auth/principal.js';
import type { TaskDefinition } from './types.js';

export class TaskRegistry {
  private readonly tasks = new Map<string, TaskDefinition>();

  register(def: TaskDefinition): this {
    const key = `${def.agent}/${def.name}`;
    if (this.tasks.has(key)) throw new Error(`task ${key} registered twice`);
    this.tasks.set(key, def);
    return this;
  }

  /** Builder helper that keeps the handler's params typed by its schema. */
  add<S extends ZodType>(def: TaskDefinition<S>): this {
    return this.register(def as unknown as TaskDefinition);
  }

  get(agent: AgentKind, name: string): TaskDefinition | undefined {
    return this.tasks.get(`${agent}/${name}`);
  }

  /** Every task of an agent, in registration order (MCP tool lists, A2A skills). */
  list(agent: AgentKind): TaskDefinition[] {
    return [...this.tasks.values()].filter((t) => t.agent === agent);
  }
}
