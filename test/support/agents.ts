/** Worlds of named agents, for the tests of who published what (`log`'s crossings, `agents`). */
import { commit } from "../../src/engine/commit.ts";
import type { EngineDeps } from "../../src/engine/engine.ts";
import { pull } from "../../src/engine/pull.ts";
import { type World, write } from "./fixture.ts";

/** Deps that publish as `agent`. */
export function asAgent(world: World, agent: string, overrides: Partial<EngineDeps> = {}): EngineDeps {
  return world.deps({ agent: () => agent, ...overrides });
}

/** Checkouts `names`, each pulled at generation 1 (ann's first commit). */
export async function pulledAtOne(world: World, ...names: string[]): Promise<string[]> {
  const first = world.checkout("first");
  await pull(asAgent(world, "ann"), { path: first });
  write(first, "shared.md", "one\n");
  await commit(asAgent(world, "ann"), { path: first, message: "first" });
  const dirs = names.map((n) => world.checkout(n));
  for (const d of dirs) await pull(asAgent(world, "ann"), { path: d });
  return dirs;
}
