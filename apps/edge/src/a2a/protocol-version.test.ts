import { describe, expect, it } from '@jest/globals';
import { selectProtocol } from './protocol-version.js';

describe('selectProtocol', () => {
  it('follows the method name when there is no header', () => {
    expect(selectProtocol('SendMessage', undefined)).toBe('1.0');
    expect(selectProtocol('message/send', undefined)).toBe('0.3');
    expect(selectProtocol('message/send', ' ')).toBe('0.3');
  });

  it('accepts a header that agrees with the method', () => {
    expect(selectProtocol('GetTask', '1.0')).toBe('1.0');
    expect(selectProtocol('GetTask', '1')).toBe('1.0');
    expect(selectProtocol('tasks/get', '0.3.0')).toBe('0.3');
  });

  it('refuses an unknown version (-32009) and a method of the other version (-32601)', () => {
    expect(() => selectProtocol('GetTask', '2.0')).toThrow(expect.objectContaining({ code: -32009 }));
    expect(() => selectProtocol('GetTask', 'latest')).toThrow(expect.objectContaining({ code: -32009 }));
    expect(() => selectProtocol('tasks/get', '1.0')).toThrow(expect.objectContaining({ code: -32601 }));
    expect(() => selectProtocol('GetTask', '0.3')).toThrow(expect.objectContaining({ code: -32601 }));
  });
});
