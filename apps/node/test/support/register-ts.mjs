// `node --import ./register-ts.mjs file.ts` runs TypeScript sources in a child process (tests only).
import { register } from 'node:module';

register('./ts-hooks.mjs', import.meta.url);
