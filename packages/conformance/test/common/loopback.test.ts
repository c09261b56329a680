import { describe, expect, it } from 'vitest';
import { isLoopbackHost } from '../../src/common/loopback.js';

describe('isLoopbackHost', () => {
  it('is true for the whole of 127.0.0.0/8, localhost, *.localhost and ::1', () => {
    for (const host of [
      'localhost',
      'api.localhost',
      '127.0.0.1',
      '127.0.0.2',
      '127.255.1.9',
      '[::1]',
      '::1',
      'LOCALHOST',
    ])
      expect(isLoopbackHost(host), host).toBe(true);
  });

  it('is false for every other host, however close it looks', () => {
    for (const host of [
      '127.0.0.1.example.com',
      'localhost.example',
      '128.0.0.1',
      '10.0.0.1',
      '[::2]',
      '1270.0.0.1',
      '',
    ])
      expect(isLoopbackHost(host), host).toBe(false);
  });
});
