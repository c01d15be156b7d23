import type { A2ASettings } from '../task-manager.js';

/** A2A settings for tests: every route goes to the `fake-cli` CLI target, generous limits. */
export const TEST_A2A_SETTINGS: A2ASettings = {
  node: '',
  adapter: 'cli',
  target: 'fake-cli',
  sessionId: 'a2a',
  timeoutSec: 30,
  maxContexts: 100,
};
