// The bootstrap server's request handler: GET/HEAD of /install.sh, /install.ps1, /manifest.json,
// /artifacts/SHA256SUMS and /artifacts/<file> for files listed in SHA256SUMS. The artifact set is re-read per
// request (a small file), so `bootstrap pack` or a new artifact takes effect without a restart. Nothing outside
// the listed set is reachable; errors answer 404/405/500 with one plain-text line.
import fs from 'node:fs';
import type http from 'node:http';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { EdgeConfig } from '@iop/config';
import type { Logger } from '../logging.js';
import { CHECKSUMS_FILE, formatChecksums, readArtifactSet } from './artifact-set.js';
import { renderBootstrapContent } from './bootstrap-content.js';
import type { NetworkInterfaces } from '../http/host-guard.js';

export interface BootstrapHandlerDeps {
  config: EdgeConfig;
  logger: Logger;
  interfaces: NetworkInterfaces;
  /** Version named by the scripts when no artifact is present. */
  edgeVersion: string;
  /** The port the server bound (for a public URL derived from an ephemeral listen port). */
  boundPort?: () => number | undefined;
  /** sha256:<hex> of the edge's TLS key, written into the install scripts; undefined when edge.tls is off. */
  edgeFingerprint?: string;
}

function send(
  response: http.ServerResponse,
  status: number,
  type: string,
  body: string | undefined,
  head: boolean,
): void {
  const bytes = Buffer.from(body ?? '', 'utf8');
  response.writeHead(status, {
    'content-type': type,
    'content-length': bytes.length,
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
  });
  response.end(head ? undefined : bytes);
}

function sendText(response: http.ServerResponse, status: number, text: string, head: boolean): void {
  send(response, status, 'text/plain; charset=utf-8', `${text}\n`, head);
}

export function createBootstrapHandler(deps: BootstrapHandlerDeps): http.RequestListener {
  const dir = deps.config.bootstrap.artifact_dir;
  const logger = deps.logger;

  async function serveArtifact(
    response: http.ServerResponse,
    file: string,
    size: number,
    head: boolean,
  ): Promise<void> {
    response.writeHead(200, {
      'content-type': 'application/gzip',
      'content-length': size,
      'content-disposition': `attachment; filename="${file}"`,
    });
    if (head) {
      response.end();
      return;
    }
    await pipeline(fs.createReadStream(path.join(dir, file)), response);
  }

  async function handle(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const method = request.method ?? 'GET';
    const head = method === 'HEAD';
    if (method !== 'GET' && !head) {
      response.setHeader('allow', 'GET, HEAD');
      sendText(response, 405, `method ${method} not allowed`, false);
      return;
    }
    let pathname: string;
    try {
      pathname = decodeURIComponent(new URL(request.url ?? '/', 'http://bootstrap').pathname);
    } catch {
      sendText(response, 400, 'bad request path', head);
      return;
    }
    const set = readArtifactSet(dir);
    if (pathname.startsWith('/artifacts/')) {
      const file = pathname.slice('/artifacts/'.length);
      if (file === CHECKSUMS_FILE) {
        send(response, 200, 'text/plain; charset=utf-8', formatChecksums(set.artifacts), head);
        return;
      }
      const artifact = set.artifacts.find((candidate) => candidate.file === file);
      if (!artifact) {
        sendText(response, 404, `no artifact ${file} on this edge`, head);
        return;
      }
      logger.info({ file, remote: request.socket.remoteAddress }, 'artifact download');
      await serveArtifact(response, artifact.file, artifact.size, head);
      return;
    }
    const content = renderBootstrapContent(deps.config, set, {
      interfaces: deps.interfaces,
      fallbackVersion: deps.edgeVersion,
      boundPort: deps.boundPort?.(),
      edgeFingerprint: deps.edgeFingerprint,
    });
    switch (pathname) {
      case '/install.sh':
        send(response, 200, 'text/x-shellscript; charset=utf-8', content.installSh, head);
        return;
      case '/install.ps1':
        send(response, 200, 'text/plain; charset=utf-8', content.installPs1, head);
        return;
      case '/manifest.json':
        send(response, 200, 'application/json', `${JSON.stringify(content.manifest, null, 2)}\n`, head);
        return;
      default:
        sendText(
          response,
          404,
          'not found: this edge serves /install.sh, /install.ps1, /manifest.json, /artifacts/',
          head,
        );
    }
  }

  return (request, response) => {
    handle(request, response).catch((error: unknown) => {
      logger.error({ err: error, url: request.url }, 'bootstrap request failed');
      if (!response.headersSent) sendText(response, 500, 'bootstrap server error (see the edge log)', false);
      else response.destroy();
    });
  };
}
