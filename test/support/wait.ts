/**
 * Waiting for a condition instead of sleeping for a time: a test that
 * sleeps guesses how long something takes, and fails on a busy machine or
 * wastes time on an idle one.
 */

/**
 * Resolve once `condition` holds, looking again every `everyMs`; after
 * `ms`, fail saying what was waited for. For what nothing announces: a
 * file appearing, a process's state in /proc, work a call left running in
 * the background.
 */
export async function waitFor(condition: () => boolean | Promise<boolean>, what: string, ms = 10_000, everyMs = 5): Promise<void> {
  const deadline = performance.now() + ms;
  while (!(await condition())) {
    if (performance.now() >= deadline) throw new Error(`waited ${ms} ms for ${what}, in vain`);
    await Bun.sleep(everyMs);
  }
}
