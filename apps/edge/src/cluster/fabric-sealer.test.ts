import { createDecipheriv } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { KEY_ID_BYTES, keyringOf } from './fabric-keyring.js';
import { FabricSealer, NonceSequence, kvContext, messageContext } from './fabric-sealer.js';

const KEY_A = Buffer.alloc(32, 1);
const KEY_B = Buffer.alloc(32, 2);
const text = (value: string) => new TextEncoder().encode(value);
const read = (value: Uint8Array) => new TextDecoder().decode(value);

/** Work the sealers deferred (ciphers made ahead), run when a test says so. */
const deferred: (() => void)[] = [];
function runDeferred(): void {
  for (let work = deferred.shift(); work; work = deferred.shift()) work();
}

function sealer(sender: string, keys: Buffer[], clock: { now: number }, replayCachePerSender?: number) {
  return new FabricSealer({
    keyring: keyringOf(keys),
    sender,
    now: () => clock.now,
    maxSkewMs: 30_000,
    defer: (work) => deferred.push(work),
    ...(replayCachePerSender !== undefined ? { replayCachePerSender } : {}),
  });
}

const nonceOf = (sealed: Uint8Array): string => {
  const bytes = Buffer.from(sealed);
  const headerLength = 1 + KEY_ID_BYTES + 1 + (bytes[1 + KEY_ID_BYTES] ?? 0) + 12;
  return bytes.subarray(headerLength - 12, headerLength).toString('base64');
};

describe('FabricSealer', () => {
  const clock = { now: 1_800_000_000_000 };
  const run = messageContext('iop.run.edge-1', 'iop.events.edge-2.f1');

  it('opens what an edge with the same key sealed for the same subject, once, naming the sender', () => {
    const sent = sealer('edge-2', [KEY_A], clock).seal(run, text('the prompt'));
    const receiver = sealer('edge-1', [KEY_A], clock);
    const opened = receiver.open(run, sent);
    expect(opened).toMatchObject({ ok: true, sender: 'edge-2', sentAtMs: clock.now });
    if (opened.ok) expect(read(opened.data)).toBe('the prompt');
    // The payload is not in the sealed bytes.
    expect(Buffer.from(sent).includes(Buffer.from('the prompt'))).toBe(false);
    expect(receiver.open(run, sent)).toEqual({ ok: false, reason: 'replay', claimed: 'edge-2' });
  });

  it('refuses a changed byte anywhere (header, body or tag)', () => {
    const sent = sealer('edge-2', [KEY_A], clock).seal(run, text('the prompt'));
    const receiver = sealer('edge-1', [KEY_A], clock);
    for (const index of [5, 8, sent.length - 20, sent.length - 1]) {
      const tampered = Buffer.from(sent);
      tampered[index] = (tampered[index] ?? 0) ^ 0x01;
      const opened = receiver.open(run, tampered);
      expect(opened.ok).toBe(false);
      if (!opened.ok) expect(['auth_failed', 'malformed']).toContain(opened.reason);
    }
    // The sender's name is authenticated too: edge-3 cannot take edge-2's message as its own.
    const renamed = Buffer.from(sent);
    renamed[7] = 'X'.charCodeAt(0);
    expect(receiver.open(run, renamed)).toMatchObject({ ok: false, reason: 'auth_failed' });
    expect(receiver.open(run, sent).ok).toBe(true);
  });

  it('refuses a message moved to another subject, reply subject or KV key', () => {
    const from = sealer('edge-2', [KEY_A], clock);
    const receiver = sealer('edge-1', [KEY_A], clock);
    const sent = from.seal(run, text('x'));
    expect(receiver.open(messageContext('iop.run.edge-3', 'iop.events.edge-2.f1'), sent)).toMatchObject({
      ok: false,
      reason: 'auth_failed',
    });
    expect(receiver.open(messageContext('iop.run.edge-1', 'iop.events.edge-9.f1'), sent)).toMatchObject({
      ok: false,
      reason: 'auth_failed',
    });
    const claim = from.seal(kvContext('iop_nodes', 'node-a'), text('{}'));
    expect(receiver.openValue(kvContext('iop_nodes', 'node-b'), claim, 3000)).toMatchObject({
      ok: false,
      reason: 'auth_failed',
    });
    expect(receiver.openValue(kvContext('iop_edges', 'node-a'), claim, 3000)).toMatchObject({
      ok: false,
      reason: 'auth_failed',
    });
    expect(receiver.openValue(kvContext('iop_nodes', 'node-a'), claim, 3000).ok).toBe(true);
  });

  it('refuses a message older or newer than the skew window, and a KV value older than its TTL', () => {
    const past = { now: clock.now - 31_000 };
    const future = { now: clock.now + 31_000 };
    // Started a minute ago (what it refuses for being sent before its start is the next test's).
    const receiverClock = { now: clock.now - 60_000 };
    const receiver = sealer('edge-1', [KEY_A], receiverClock);
    receiverClock.now = clock.now;
    expect(receiver.open(run, sealer('edge-2', [KEY_A], past).seal(run, text('x')))).toMatchObject({
      ok: false,
      reason: 'stale',
    });
    expect(receiver.open(run, sealer('edge-2', [KEY_A], future).seal(run, text('x')))).toMatchObject({
      ok: false,
      reason: 'stale',
    });
    const within = { now: clock.now - 29_000 };
    expect(receiver.open(run, sealer('edge-2', [KEY_A], within).seal(run, text('x'))).ok).toBe(true);
    const kv = kvContext('iop_edges', 'edge-2');
    const old = sealer('edge-2', [KEY_A], { now: clock.now - 34_000 }).seal(kv, text('{}'));
    expect(receiver.openValue(kv, old, 3000)).toMatchObject({ ok: false, reason: 'stale' });
    const recent = sealer('edge-2', [KEY_A], { now: clock.now - 32_000 }).seal(kv, text('{}'));
    expect(receiver.openValue(kv, recent, 3000).ok).toBe(true);
  });

  it('refuses a message sealed with another key, and opens one sealed with any key of a rotated ring', () => {
    const receiver = sealer('edge-1', [KEY_A], clock);
    expect(receiver.open(run, sealer('edge-2', [KEY_B], clock).seal(run, text('x')))).toEqual({
      ok: false,
      reason: 'unknown_key',
      claimed: 'edge-2',
    });
    // Rotation: edge-2 already sends with B (A still accepted); edge-1 accepts both while it still sends with A.
    const rotated = sealer('edge-1', [KEY_A, KEY_B], clock);
    const sentWithB = sealer('edge-2', [KEY_B, KEY_A], clock).seal(run, text('new'));
    const sentWithA = sealer('edge-3', [KEY_A, KEY_B], clock).seal(run, text('old'));
    expect(rotated.open(run, sentWithB).ok).toBe(true);
    expect(rotated.open(run, sentWithA).ok).toBe(true);
    // An edge that still holds only B refuses what the primary A sealed.
    expect(
      sealer('edge-4', [KEY_B], clock).open(
        run,
        sealer('edge-1', [KEY_A, KEY_B], clock).seal(run, text('x')),
      ),
    ).toMatchObject({ ok: false, reason: 'unknown_key' });
  });

  it('refuses garbage and a message of another format without opening it', () => {
    const receiver = sealer('edge-1', [KEY_A], clock);
    expect(receiver.open(run, text('{"forwardId":"x"}'))).toEqual({
      ok: false,
      reason: 'malformed',
      claimed: '',
    });
    expect(receiver.open(run, new Uint8Array(0))).toEqual({ ok: false, reason: 'malformed', claimed: '' });
    const sent = sealer('edge-2', [KEY_A], clock).seal(run, text('x'));
    expect(receiver.open(run, sent.subarray(0, 30))).toMatchObject({ ok: false, reason: 'malformed' });
  });

  it('keeps a bounded replay cache per sender and never lets a forgotten nonce through', () => {
    const now = { now: clock.now };
    const receiver = sealer('edge-1', [KEY_A], now, 4);
    const sender = sealer('edge-2', [KEY_A], now);
    const sent: Uint8Array[] = [];
    for (let index = 0; index < 6; index++) {
      now.now += 1;
      sent.push(sender.seal(run, text(String(index))));
    }
    for (const message of sent) expect(receiver.open(run, message).ok).toBe(true);
    // Every one is refused again: the last four are remembered, the first two are below the cache's floor.
    for (const message of sent)
      expect(receiver.open(run, message)).toMatchObject({ ok: false, reason: 'replay' });
    // Other senders have their own cache; newer messages still pass.
    now.now += 1;
    expect(receiver.open(run, sender.seal(run, text('next'))).ok).toBe(true);
    expect(receiver.open(run, sealer('edge-3', [KEY_A], now).seal(run, text('x'))).ok).toBe(true);
  });

  it('forgets nonces whose time left the window (a quiet fabric holds no old entries)', () => {
    const now = { now: clock.now };
    const receiver = sealer('edge-1', [KEY_A], now, 1000);
    const sender = sealer('edge-2', [KEY_A], now);
    const first = sender.seal(run, text('1'));
    expect(receiver.open(run, first).ok).toBe(true);
    now.now += 40_000;
    expect(receiver.open(run, sender.seal(run, text('2'))).ok).toBe(true);
    // The first is out of the window now: refused as stale, not accepted as unseen.
    expect(receiver.open(run, first)).toMatchObject({ ok: false, reason: 'stale' });
  });

  it('writes the documented format: the header in clear, then AES-256-GCM of sender · time · boot · context · payload', () => {
    // Decrypted here from the format alone (not through the sealer), so edges of another build still open it.
    const context = messageContext('iop.events.edge-2.f9', '');
    const sent = Buffer.from(sealer('edge-2', [KEY_A], clock).seal(context, text('the events'), 'boot-1'));
    const senderLength = sent[1 + KEY_ID_BYTES] ?? 0;
    const headerLength = 1 + KEY_ID_BYTES + 1 + senderLength + 12;
    expect(sent[0]).toBe(3);
    expect(sent.subarray(2 + KEY_ID_BYTES, 2 + KEY_ID_BYTES + senderLength).toString()).toBe('edge-2');
    const decipher = createDecipheriv('aes-256-gcm', KEY_A, sent.subarray(headerLength - 12, headerLength));
    decipher.setAuthTag(sent.subarray(sent.length - 16));
    const plain = Buffer.concat([
      decipher.update(sent.subarray(headerLength, sent.length - 16)),
      decipher.final(),
    ]);
    expect(plain[0]).toBe(senderLength);
    expect(plain.subarray(1, 1 + senderLength).toString()).toBe('edge-2');
    expect(Number(plain.readBigUInt64BE(1 + senderLength))).toBe(clock.now);
    const bootAt = 1 + senderLength + 8;
    expect(plain[bootAt]).toBe(6);
    expect(plain.subarray(bootAt + 1, bootAt + 7).toString()).toBe('boot-1');
    const contextAt = bootAt + 7 + 2;
    expect(plain.readUInt16BE(bootAt + 7)).toBe(Buffer.byteLength(context));
    expect(plain.subarray(contextAt, contextAt + Buffer.byteLength(context)).toString()).toBe(context);
    expect(plain.subarray(contextAt + Buffer.byteLength(context)).toString()).toBe('the events');
  });

  it('binds a subject that is not ASCII byte for byte', () => {
    const sender = sealer('edge-2', [KEY_A], clock);
    const receiver = sealer('edge-1', [KEY_A], clock);
    const kv = kvContext('iop_edges', 'édge-2');
    const sent = sender.seal(kv, text('state'));
    expect(receiver.open(kvContext('iop_edges', 'edge-2'), sent)).toMatchObject({ reason: 'auth_failed' });
    expect(receiver.open(kvContext('iop_edges', 'èdge-2'), sent)).toMatchObject({ reason: 'auth_failed' });
    const opened = receiver.open(kv, sent);
    expect(opened.ok && read(opened.data)).toBe('state');
  });

  it('binds long subjects whole and keeps nothing of one message in the next', () => {
    const sender = sealer('edge-2', [KEY_A], clock);
    const receiver = sealer('edge-1', [KEY_A], clock);
    // Longer than the sealer's reusable plaintext buffer: it grows, and every byte of the subject still counts.
    const long = messageContext(`iop.events.edge-2.${'x'.repeat(5000)}`, 'iop.events.edge-2.reply');
    const other = messageContext(`iop.events.edge-2.${'x'.repeat(4999)}y`, 'iop.events.edge-2.reply');
    const first = sender.seal(long, text('first'));
    const second = sender.seal(run, text('second'));
    expect(receiver.open(other, first)).toMatchObject({ ok: false, reason: 'auth_failed' });
    const openedSecond = receiver.open(run, second);
    const openedFirst = receiver.open(long, first);
    expect(openedSecond.ok && read(openedSecond.data)).toBe('second');
    expect(openedFirst.ok && read(openedFirst.data)).toBe('first');
    // A text is sealed as its UTF-8 bytes.
    const written = receiver.open(run, sender.seal(run, 'ünïcode {"a":1}'));
    expect(written.ok && read(written.data)).toBe('ünïcode {"a":1}');
    // An empty payload (a KV tombstone) seals and opens as empty.
    const empty = sender.seal(run, new Uint8Array(0));
    const openedEmpty = receiver.open(run, empty);
    expect(openedEmpty.ok && openedEmpty.data.length).toBe(0);
  });

  it('refuses what was sent before it started: a restarted edge does not take a replay of its earlier life', () => {
    const now = { now: clock.now };
    const sender = sealer('edge-2', [KEY_A], now);
    const first = sealer('edge-1', [KEY_A], now);
    const sent = sender.seal(run, text('the prompt'));
    expect(first.open(run, sent).ok).toBe(true);
    now.now += 5_000;
    // The same edge restarted (a new sealer, no nonces remembered) within the skew window.
    const restarted = sealer('edge-1', [KEY_A], now);
    expect(restarted.open(run, sent)).toEqual({ ok: false, reason: 'replay', claimed: 'edge-2' });
    expect(restarted.open(run, sender.seal(run, text('new'))).ok).toBe(true);
  });

  it('seals and opens with ciphers made ahead, in the turn after', () => {
    const sender = sealer('edge-2', [KEY_A], clock);
    const receiver = sealer('edge-1', [KEY_A], clock);
    const first = sender.seal(run, text('1'));
    expect(sender.madeAhead.seals).toBe(0);
    runDeferred();
    const sent = [sender.seal(run, text('2')), sender.seal(run, text('3'))];
    expect(sender.madeAhead.seals).toBe(2);
    // Each made-ahead cipher has its own nonce, used once.
    expect(new Set([first, ...sent].map(nonceOf)).size).toBe(3);
    for (const [index, message] of [first, ...sent].entries()) {
      const opened = receiver.open(run, message);
      expect(opened.ok && read(opened.data)).toBe(String(index + 1));
    }
  });

  it('binds a request to the receiver boot id it names, inside the ciphertext', () => {
    const sender = sealer('edge-2', [KEY_A], clock);
    const receiver = sealer('edge-1', [KEY_A], clock);
    const bound = receiver.open(run, sender.seal(run, text('to boot b1'), 'b1'));
    expect(bound).toMatchObject({ ok: true, boot: 'b1' });
    const unbound = receiver.open(run, sender.seal(run, text('answer')));
    expect(unbound).toMatchObject({ ok: true, boot: '' });
    // The boot id is not in the clear: changing any byte of the ciphertext fails the tag.
    const sealed = Buffer.from(sender.seal(run, text('x'), 'b1'));
    expect(sealed.includes(Buffer.from('b1'))).toBe(false);
    expect(() => sender.seal(run, text('x'), 'b'.repeat(65))).toThrow(RangeError);
  });

  it('never seals two messages with one (key, nonce), across peers, restarts and a key rotation', () => {
    // Property: whatever the fabric sends (requests, answers, replays of them, events), every seal of every
    // sealer — several edges, each restarted several times, some within one clock millisecond, with a skewed
    // clock, before and after a rotation — uses a (key id, nonce) pair no other seal used.
    const seen = new Set<string>();
    const now = { now: clock.now };
    let seals = 0;
    let opened = 0;
    const pairOf = (sealed: Uint8Array): string => {
      const bytes = Buffer.from(sealed);
      return `${bytes.subarray(1, 1 + KEY_ID_BYTES).toString('hex')}:${nonceOf(sealed)}`;
    };
    const record = (sealed: Uint8Array): void => {
      const pair = pairOf(sealed);
      expect(seen.has(pair)).toBe(false);
      seen.add(pair);
      seals += 1;
    };
    for (const keys of [[KEY_A], [KEY_B, KEY_A]]) {
      for (let life = 0; life < 6; life++) {
        // Every edge restarts (a new sealer) in each life; edge-2's clock runs 20 s ahead.
        const edges = ['edge-1', 'edge-2', 'edge-3'].map((id) =>
          sealer(id, keys, id === 'edge-2' ? { now: now.now + 20_000 } : now),
        );
        const recorded: Uint8Array[] = [];
        for (let round = 0; round < 200; round++) {
          const from = edges[round % 3];
          const to = edges[(round + 1) % 3];
          if (!from || !to) throw new Error('three edges');
          const request = from.seal(run, text(`request ${round}`), `boot-${life}`);
          record(request);
          recorded.push(request);
          const taken = to.open(run, request);
          if (taken.ok) opened += 1;
          // The answer, and a few event messages, all sealed by the receiver with nonces of its own.
          record(to.seal(messageContext('iop.events.edge-2.f1', ''), text(`answer ${round}`)));
          for (let event = 0; event < 3; event++) record(to.seal(run, text(`event ${event}`)));
          // A replay of everything recorded so far makes the receivers seal nothing with a nonce of the past.
          if (round % 50 === 49) for (const old of recorded) for (const edge of edges) edge.open(run, old);
          if (round % 7 === 0) runDeferred();
        }
        runDeferred();
        // Restarts within the same millisecond: a new process draws a new nonce prefix.
        if (life % 2 === 0) now.now += 1;
      }
    }
    expect(opened).toBeGreaterThan(0);
    expect(seen.size).toBe(seals);
    expect(seals).toBe(2 * 6 * 200 * 5);
  });

  it('draws nonces of its own: a prefix per process and a counter', () => {
    const first = new NonceSequence();
    const second = new NonceSequence();
    const a = first.next();
    const b = first.next();
    expect(a.subarray(0, 8).equals(b.subarray(0, 8))).toBe(true);
    expect(b.readUInt32BE(8)).toBe(a.readUInt32BE(8) + 1);
    expect(second.next().subarray(0, 8).equals(a.subarray(0, 8))).toBe(false);
  });
});
