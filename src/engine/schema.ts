/**
 * zod as the engine uses it: without the parsers zod compiles at each
 * schema's first parse (`new Function`). A call parses each of its schemas
 * once or twice, so compiling cost more than it saved: a few milliseconds of
 * every CLI call. What is accepted or refused is the same either way.
 */
import { z } from "zod";

z.config({ jitless: true });

export { z };
