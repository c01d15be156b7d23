// Cross-process end to end in a real browser (issue 19): a headless system Chromium, driven by playwright-core
// (which downloads no browser), opens the ops dashboard of a real edge process with a real `iop-node run` process,
// fake Ollama / vLLM backends and the repo's fake CLI, all on 127.0.0.1. It sees the node and its providers,
// watches a provider's in_flight rise to 1 for a slow request and fall back to 0, dry-runs and applies a capacity
// change (applied / live), sends a playground prompt and reads the streamed answer, opens a run's timeline and
// terminates a CLI session. Screenshots go to .cache/ui-browser/.
//
// Without a Chromium (IOP_CHROMIUM, or chromium / chromium-browser / google-chrome on the usual paths) the suite
// prints one line saying so and is skipped (under CI=true it fails naming Chromium); `.ci/run` installs Debian's chromium.
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { requireTool, type FakeServer } from '@iop/testkit';
import {
  ProcessGroup,
  repoRoot,
  startEdgeProcess,
  waitUntil,
  type EdgeProcess,
} from '../support/e2e-processes.js';
import { MODEL_LLAMA, fabricConfig, ollamaProviderId } from '../support/fabric-config.js';
import { startFabricNode, startFakeBackends } from '../support/fabric-setup.js';

const CHROMIUM_CANDIDATES = [
  process.env['IOP_CHROMIUM'] ?? '',
  '/usr/bin/chromium',
  '/usr/bin/chromium-browser',
  '/usr/bin/google-chrome',
];
const executablePath = CHROMIUM_CANDIDATES.find((candidate) => candidate !== '' && existsSync(candidate));
requireTool(
  'chromium',
  executablePath !== undefined,
  'ui browser tests',
  'set IOP_CHROMIUM or apt-get install chromium; bash .ci/run installs it',
);

/** Flags that work for a root user in a container with no GPU and no network but loopback. */
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const SCREENSHOTS = path.join(repoRoot, '.cache', 'ui-browser');
const FAKE_CLI = path.join(repoRoot, 'bin', 'iop-fake-cli');
const CLI_MODEL = 'fake-cli';
const API_KEY_ID = 'team-ui';
/** A test-only key for the edge started here (its digest is all the edge keeps in memory). */
const API_KEY = 'sk-ui-browser-test-key';

jest.setTimeout(90_000);

const group = new ProcessGroup();
let ollama: FakeServer;
let vllm: FakeServer;
let edge: EdgeProcess;
let uiUrl: string;
let browser: Browser;
let page: Page;
let config: Record<string, unknown>;

function dashboardConfig(dir: string): Record<string, unknown> {
  const base = fabricConfig({
    dataDir: `${dir}/data`,
    nodes: [{ id: 'n1', ollamaUrl: ollama.url, vllmUrl: vllm.url, capacity: 4 }],
  });
  const nodes = base.nodes as { adapters: { instances: Record<string, unknown>[] } }[];
  // A CLI adapter on the node (the repo's fake CLI) so the dashboard has sessions to list and terminate.
  nodes[0]?.adapters.instances.push({
    name: 'cli',
    type: 'cli',
    enabled: true,
    max_sessions: 4,
    session_idle_ttl_ms: 600_000,
    profiles: {
      [CLI_MODEL]: {
        command: FAKE_CLI,
        mode: 'persistent',
        persistent: true,
        // The fake CLI stays silent after answering: this much silence ends a run (the session lives on).
        idle_timeout_ms: 800,
        request_timeout_ms: 0,
        result_grace_ms: 2000,
      },
    },
  });
  return {
    ...base,
    openai: {
      ...(base.openai as Record<string, unknown>),
      model_routes: [{ model: CLI_MODEL, adapter: 'cli', target: CLI_MODEL }],
      // One API key with a daily budget, so the Keys view has a key's usage and budget to show.
      api_keys: [{ id: API_KEY_ID, key: API_KEY, rpm: 600, token_budget: { tokens: 100_000, per: 'day' } }],
    },
    ui: { enabled: true, listen: '127.0.0.1:0' },
  };
}

async function chat(model: string, content: string): Promise<Response> {
  // A CLI agent takes no sampling parameters (max_tokens is refused for it by name): only the HTTP models get one.
  const limit = model === CLI_MODEL ? {} : { max_tokens: 32 };
  return fetch(`${edge.addresses.openai}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}` },
    body: JSON.stringify({ model, messages: [{ role: 'user', content }], ...limit }),
  });
}

async function openView(name: string): Promise<void> {
  await page.getByRole('link', { name }).click();
  // The page's CSP forbids eval, so waits use locators and the URL rather than page functions.
  await page.waitForURL(new RegExp(`#${name.split(' ')[0]?.toLowerCase() ?? ''}$`));
}

async function screenshot(name: string): Promise<void> {
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

const suite = executablePath ? describe : describe.skip;

suite('ops dashboard in headless Chromium → edge process → node process → fake backends', () => {
  beforeAll(async () => {
    await mkdir(SCREENSHOTS, { recursive: true });
    ({ ollama, vllm } = await startFakeBackends());
    const dir = await group.tempDir('iop-e2e-ui-');
    config = dashboardConfig(dir);
    edge = await startEdgeProcess(group, dir, config);
    uiUrl = /^ {2}ui\s+(\S+)/m.exec(edge.stdout())?.[1] ?? '';
    if (!uiUrl) throw new Error(`the edge printed no ui address\n${edge.describe()}`);
    const node = await startFabricNode(group, edge);
    await waitUntil(
      async () => {
        const overview = (await (await fetch(`${uiUrl}api/v1/overview`)).json()) as {
          providers: { status: string }[];
        };
        return (
          overview.providers.length === 2 && overview.providers.every((entry) => entry.status === 'ready')
        );
      },
      30_000,
      () => `providers ready\n${node.describe()}\n${edge.describe()}`,
    );
    browser = await chromium.launch({ executablePath, headless: true, args: CHROMIUM_ARGS, timeout: 30_000 });
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    page.setDefaultTimeout(20_000);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await group.close();
    await ollama?.close();
    await vllm?.close();
  });

  it('shows the node with its platform, agent and providers', async () => {
    await page.goto(uiUrl);
    const row = page.locator('tr[data-node="n1"]');
    await row.waitFor();
    const text = (await row.textContent()) ?? '';
    expect(text).toContain('node0');
    expect(text).toContain('linux/');
    expect(text).toContain('ollama, vllm, cli');
    // The node's own discovery report (host size) reaches the fleet view.
    await row.filter({ hasText: 'cores' }).waitFor();
    await page.locator('.live.on').waitFor();
    // No admin token on this edge: nothing to sign out of.
    expect(await page.getByRole('button', { name: 'Sign out' }).count()).toBe(0);
    await screenshot('fleet');
    await openView('Providers & models');
    await page.locator(`tr[data-provider="${ollamaProviderId('n1')}"][data-in-flight="0"]`).waitFor();
    expect(await page.locator('tr[data-model]').count()).toBe(2);
  });

  it("watches a provider's in_flight rise to 1 for a slow request and fall back to 0", async () => {
    await openView('Providers & models');
    ollama.setBehavior({ firstTokenDelayMs: 4000 });
    const provider = `tr[data-provider="${ollamaProviderId('n1')}"]`;
    const request = chat(MODEL_LLAMA, 'slow one please');
    try {
      await page.locator(`${provider}[data-in-flight="1"]`).waitFor();
      expect(await page.locator(`${provider} [data-testid="in-flight"]`).textContent()).toBe('1 / 4');
      await screenshot('providers-busy');
      const response = await request;
      expect(response.status).toBe(200);
      await response.text();
    } finally {
      ollama.setBehavior({ firstTokenDelayMs: 0 });
    }
    await page.locator(`${provider}[data-in-flight="0"]`).waitFor();
  });

  it('lists that run live and opens it into its timeline and text', async () => {
    await openView('Runs');
    const row = page.locator('tr[data-status="completed"]', { hasText: MODEL_LLAMA }).first();
    await row.waitFor();
    // The service says how it admitted the run: through the OpenAI surface, onto the ollama provider.
    expect(await row.locator('td').nth(2).textContent()).toBe('openai');
    expect(await row.locator('td').nth(4).textContent()).toBe(ollamaProviderId('n1'));
    await row.getByRole('button').click();
    await page.getByTestId('run-text').filter({ hasText: 'slow' }).waitFor();
    expect(await page.locator('.timeline li').count()).toBeGreaterThanOrEqual(3);
    await screenshot('runs');
  });

  it("shows the key's runs, tokens and budget left in the Keys view, never its secret", async () => {
    await openView('Keys');
    const row = page.locator(`tr[data-key="${API_KEY_ID}"]`);
    await row.waitFor();
    const cells = row.locator('td');
    expect(Number(await cells.nth(1).textContent())).toBeGreaterThanOrEqual(1);
    expect(Number((await cells.nth(3).textContent())?.replace(/\D/g, ''))).toBeGreaterThan(0);
    expect(await cells.nth(6).textContent()).toContain('left today');
    expect(await cells.nth(7).textContent()).toBe('600 rpm');
    expect(await page.content()).not.toContain(API_KEY);
    await screenshot('keys');
  });

  it('dry-runs a capacity change (applied, live) and applies it', async () => {
    await openView('Config');
    const nodes = structuredClone(config.nodes) as { providers: { id: string; capacity: number }[] }[];
    const ollamaProvider = nodes[0]?.providers.find((entry) => entry.id === ollamaProviderId('n1'));
    if (!ollamaProvider) throw new Error('no ollama provider in the test config');
    ollamaProvider.capacity = 2;
    await page.locator('#candidate').fill(JSON.stringify({ ...config, nodes }, null, 2));
    await page.getByRole('button', { name: 'Dry run' }).click();
    const result = page.locator('[data-testid="refresh-result"][data-mode="dry-run"][data-status="applied"]');
    await result.waitFor();
    const report = result.locator(`tr[data-path="nodes[n1].providers[${ollamaProviderId('n1')}].capacity"]`);
    expect(await report.getAttribute('data-class')).toBe('live');
    await screenshot('config-dry-run');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.locator('[data-testid="refresh-result"][data-mode="apply"][data-status="applied"]').waitFor();
    await openView('Providers & models');
    await page.locator(`tr[data-provider="${ollamaProviderId('n1')}"][data-capacity="2"]`).waitFor();
  });

  it('sends a playground prompt and shows the streamed answer with its provider', async () => {
    await openView('Playground');
    await page.locator('select').selectOption(MODEL_LLAMA);
    await page.locator('#prompt').fill('hello dashboard');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.locator('[data-testid="playground-done"][data-status="completed"]').waitFor();
    expect(await page.getByTestId('playground-answer').textContent()).toContain('hello dashboard');
    expect(await page.getByTestId('playground-meta').textContent()).toContain(ollamaProviderId('n1'));
    await screenshot('playground');
  });

  it('terminates a CLI session', async () => {
    const response = await chat(CLI_MODEL, 'open a session');
    expect(`${response.status} ${await response.text()}`).toMatch(/^200 /);
    await openView('Sessions');
    await page.getByRole('button', { name: 'Refresh' }).click();
    const row = page.locator('tr[data-session]').first();
    await row.waitFor();
    const sessionId = (await row.getAttribute('data-session')) ?? '';
    await screenshot('sessions');
    await row.getByRole('button', { name: 'Terminate' }).click();
    await row.getByRole('button', { name: 'Confirm terminate' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: `Terminated ${sessionId}` })
      .waitFor();
    await page.locator(`tr[data-session="${sessionId}"]`).waitFor({ state: 'detached' });
  });

  it("charts the last hour's finished runs", async () => {
    await openView('Charts');
    // The view renders its figures after the URL changes: wait for the fourth before counting.
    await page.locator('figure.chart').nth(3).waitFor();
    expect(await page.locator('figure.chart').count()).toBe(4);
    // The latency chart gets its first point once a chart push (every 5 s) carries the runs finished above.
    // Empty buckets draw nothing; a finished run's bucket draws a dot or a line.
    const latencyMarks = page.locator('figure.chart', { hasText: 'Latency' }).locator('polyline, circle');
    await waitUntil(async () => (await latencyMarks.count()) > 0, 15_000, 'a mark on the latency chart');
    await screenshot('charts');
  });

  it('moves between views with the keyboard alone', async () => {
    await page.goto(`${uiUrl}#fleet`);
    await page.locator('tr[data-node="n1"]').waitFor();
    for (let presses = 0; presses < 20; presses += 1) {
      await page.keyboard.press('Tab');
      if ((await page.locator('a.tab:focus', { hasText: 'Runs' }).count()) === 1) break;
    }
    await page.keyboard.press('Enter');
    await page.waitForURL(/#runs$/);
    expect(await page.locator('h2#runs-title').textContent()).toBe('Runs');
  });

  it('is readable on a phone-sized screen', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await openView('Providers & models');
    await page.locator(`tr[data-provider="${ollamaProviderId('n1')}"]`).waitFor();
    // The tab bar wraps instead of overflowing the page.
    const overflow = Number(await page.evaluate('document.documentElement.scrollWidth - window.innerWidth'));
    expect(overflow).toBeLessThanOrEqual(0);
    await screenshot('phone');
    await page.setViewportSize({ width: 1280, height: 800 });
    expect((await readFile(path.join(SCREENSHOTS, 'providers-busy.png'))).length).toBeGreaterThan(1000);
  });
});

suite('ops dashboard with an admin token, in headless Chromium', () => {
  const tokenGroup = new ProcessGroup();
  let tokenBrowser: Browser;

  afterAll(async () => {
    await tokenBrowser?.close();
    await tokenGroup.close();
  });

  it('asks for the token, then loads and goes live with a login cookie (never the token), and signs out', async () => {
    const dir = await tokenGroup.tempDir('iop-e2e-ui-token-');
    const base = fabricConfig({ dataDir: `${dir}/data`, nodes: [] });
    const tokened = await startEdgeProcess(tokenGroup, dir, {
      ...base,
      refresh: { ...(base.refresh as Record<string, unknown>), admin_token: 'ui-e2e-admin-token' },
      ui: { enabled: true, listen: '127.0.0.1:0' },
    });
    const url = /^ {2}ui\s+(\S+)/m.exec(tokened.stdout())?.[1] ?? '';
    expect((await fetch(`${url}api/v1/overview`)).status).toBe(401);
    tokenBrowser = await chromium.launch({
      executablePath,
      headless: true,
      args: CHROMIUM_ARGS,
      timeout: 30_000,
    });
    const tokenPage = await tokenBrowser.newPage({ viewport: { width: 1280, height: 800 } });
    tokenPage.setDefaultTimeout(20_000);
    await tokenPage.goto(url);
    await tokenPage.getByLabel('Admin token').fill('wrong-token');
    await tokenPage.getByRole('button', { name: 'Sign in' }).click();
    await tokenPage.getByRole('alert').filter({ hasText: 'wrong token' }).waitFor();
    await tokenPage.getByLabel('Admin token').fill('ui-e2e-admin-token');
    await tokenPage.getByRole('button', { name: 'Sign in' }).click();
    // The live feed (an EventSource, which sends no headers) authenticates with the HttpOnly cookie.
    await tokenPage.locator('.live.on').waitFor();
    expect(await tokenPage.getByTestId('totals').textContent()).toContain('0 nodes');
    const cookies = await tokenPage.context().cookies();
    const session = cookies.find((cookie) => cookie.name === 'iop_ui_session');
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
    expect(session?.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(session?.value).not.toContain('ui-e2e-admin-token');
    // Sign out: the edge forgets the session, the app asks for the token again, the old id is refused.
    await tokenPage.getByRole('button', { name: 'Sign out' }).click();
    await tokenPage.getByLabel('Admin token').waitFor();
    const stale = await fetch(`${url}api/v1/overview`, {
      headers: { cookie: `iop_ui_session=${session?.value ?? ''}` },
    });
    expect(stale.status).toBe(401);
  });
});
