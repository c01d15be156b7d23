#!/usr/bin/env node
// Release e2e helper: edits the edge.yaml `iop-edge config init` wrote in the unpacked release so the test owns
// its ports (loopback, chosen at run time) and gives the bootstrapped node one provider: an Ollama adapter on the
// testkit's fake Ollama, served to clients through the OpenAI-compatible surface as model `e2e-model`.
// Usage: configure-edge.mjs <edge.yaml> <node-id> <edge-port> <bootstrap-port> <openai-port> <admin-port> <ollama-url>
//        [<ui-port>] (the ops dashboard on loopback, served from the executable's embedded assets)
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const YAML = createRequire(path.join(repo, 'packages/config/package.json'))('yaml');
const [file, nodeId, edgePort, bootstrapPort, openaiPort, adminPort, ollamaUrl, uiPort] =
  process.argv.slice(2);
if (!ollamaUrl) {
  process.stderr.write(
    'usage: configure-edge.mjs <edge.yaml> <node-id> <edge-port> <bootstrap-port> <openai-port> <admin-port> <ollama-url>\n',
  );
  process.exit(2);
}
const document = YAML.parseDocument(fs.readFileSync(file, 'utf8'));
document.setIn(['edge', 'listen'], `127.0.0.1:${edgePort}`);
document.setIn(['bootstrap', 'listen'], `127.0.0.1:${bootstrapPort}`);
document.setIn(['refresh', 'listen'], `127.0.0.1:${adminPort}`);
document.setIn(['openai', 'enabled'], true);
document.setIn(['openai', 'listen'], `127.0.0.1:${openaiPort}`);
document.setIn(['logging', 'level'], 'info');
if (uiPort) {
  document.setIn(['ui', 'enabled'], true);
  document.setIn(['ui', 'listen'], `127.0.0.1:${uiPort}`);
}
document.set('models', [{ id: 'e2e-model', providers: { 'e2e-ollama': 'e2e-model' } }]);
document.set('nodes', [
  {
    id: nodeId,
    adapters: { ollama: { enabled: true, base_url: ollamaUrl } },
    providers: [
      {
        id: 'e2e-ollama',
        type: 'ollama',
        category: 'local_inference',
        adapter: 'ollama',
        models: ['e2e-model'],
        capacity: 2,
      },
    ],
  },
]);
fs.writeFileSync(file, document.toString());
