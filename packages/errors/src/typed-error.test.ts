import { describe, expect, it } from '@jest/globals';
import { errorGuard, typedError, type FaultTable } from './typed-error.js';

type SampleCode = 'bad_input' | 'busy';
const SAMPLE_FAULT: FaultTable<SampleCode> = { bad_input: 'caller', busy: 'transient' };

class SampleError extends typedError('SampleError', SAMPLE_FAULT) {}
const isSampleError = errorGuard(SampleError);

class PlainError extends typedError<'gone'>('PlainError') {}

class DetailedError extends typedError('DetailedError', SAMPLE_FAULT) {
  constructor(
    code: SampleCode,
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(code, message);
  }
}

describe('typedError', () => {
  it('makes a class with its name, code, message, cause and the fault its table gives the code', () => {
    const cause = new Error('below');
    const error = new SampleError('busy', 'try later', { cause });
    expect(error).toBeInstanceOf(SampleError);
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('SampleError');
    expect(error.code).toBe('busy');
    expect(error.message).toBe('try later');
    expect(error.cause).toBe(cause);
    expect(error.fault).toBe('transient');
    expect(new SampleError('bad_input', 'no').fault).toBe('caller');
    expect(String(error)).toBe('SampleError: try later');
  });

  it('leaves no cause when none is given, and no fault without a table', () => {
    const error = new PlainError('gone', 'it left');
    expect('cause' in error).toBe(false);
    expect('fault' in error).toBe(false);
    expect(error.name).toBe('PlainError');
  });

  it('lets a subclass add fields through its own constructor', () => {
    const error = new DetailedError('busy', 'wait', 3);
    expect(error.retryAfterSeconds).toBe(3);
    expect(error.fault).toBe('transient');
    expect(error.name).toBe('DetailedError');
  });

  it('keeps classes apart: each class is its own, and the guard matches only its class', () => {
    expect(isSampleError(new SampleError('busy', 'x'))).toBe(true);
    expect(isSampleError(new DetailedError('busy', 'x', 1))).toBe(false);
    expect(isSampleError(new PlainError('gone', 'x'))).toBe(false);
    expect(isSampleError({ code: 'busy', name: 'SampleError' })).toBe(false);
  });
});
