#!/usr/bin/env node
// iop-edge entry point: wiring only (the body is run-edge.ts, shared with the release bundle).
import { run } from './run-edge.js';

process.exitCode = await run();
