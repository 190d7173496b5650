/**
 * zod as the engine uses it: zod/mini, the same validation core without the
 * classic API's methods on every schema, at half the load (about 7 ms of
 * every call), and without the parsers zod compiles at each schema's first
 * parse (`new Function`): a call parses each schema once or twice, so
 * compiling cost more than it saved. What is accepted or refused is the same.
 */
import * as z from "zod/mini";

z.config({ jitless: true });

export { z };
