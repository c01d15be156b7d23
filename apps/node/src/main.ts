#!/usr/bin/env node
// iop-node entry point: wiring only (the body is run-node.ts, shared with the release bundle).
import { run } from './run-node.js';

process.exitCode = await run();
