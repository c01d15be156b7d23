import { describe, expect, it } from '@jest/globals';
import type { RunKey, RunRecordMirror, StoredRun } from '../placement/run-directory.js';
import { mirroredRunRecords } from './mirrored-run-record-store.js';
import type { RunRecordStore } from './run-record-store.js';
import { MemoryRunRecordStore } from './test-support/memory-run-record-store.js';

const key: RunKey = { principal: 'team', kind: 'openai.response', id: 'r1' };
const stored: StoredRun = {
  key,
  state: { status: 'queued' },
  createdAt: 1,
  updatedAt: 1,
  endedAt: undefined,
  edgeId: 'edge-1',
  boot: 'b',
};

function recordingMirror(): RunRecordMirror & { seen: string[] } {
  const seen: string[] = [];
  return {
    seen,
    saved: (record) => seen.push(`saved ${record.key.id}`),
    removed: (runKey) => seen.push(`removed ${runKey.id}`),
  };
}

describe('mirroredRunRecords', () => {
  it('writes the local store first and copies each write to the mirror; loads from the local store only', () => {
    const local = new MemoryRunRecordStore();
    const mirror = recordingMirror();
    const store = mirroredRunRecords(local, mirror);
    store.save(stored);
    expect(local.find(key)).toEqual(stored);
    expect(store.load()).toEqual([stored]);
    store.remove(key);
    expect(local.find(key)).toBeUndefined();
    expect(mirror.seen).toEqual(['saved r1', 'removed r1']);
  });

  it('keeps a resume payload in the local store and never copies it to the mirror', () => {
    const local = new MemoryRunRecordStore();
    const copies: StoredRun[] = [];
    const store = mirroredRunRecords(local, {
      saved: (record) => copies.push(record),
      removed: () => undefined,
    });
    store.save({ ...stored, resume: { v: 1, body: { input: 'secret prompt' } } });
    expect(local.find(key)?.resume).toEqual({ v: 1, body: { input: 'secret prompt' } });
    expect(copies).toEqual([stored]);
    expect('resume' in (copies[0] ?? {})).toBe(false);
  });

  it('copies nothing when the local write fails (the registry sees the failure as before)', () => {
    const failing: RunRecordStore = {
      save: () => {
        throw new Error('disk full');
      },
      remove: () => {
        throw new Error('disk full');
      },
      load: () => [],
    };
    const mirror = recordingMirror();
    const store = mirroredRunRecords(failing, mirror);
    expect(() => store.save(stored)).toThrow('disk full');
    expect(() => store.remove(key)).toThrow('disk full');
    expect(mirror.seen).toEqual([]);
  });
});
