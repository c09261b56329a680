import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type InProcessService, inProcessService } from './support/in-process.js';

// A known path asked with a method it does not answer is a 405 with Allow (RFC 9110 §15.5.6), the
// methods read from the service's own OpenAPI document; an unknown path stays a 404.
describe('methods a path does not answer', () => {
  let svc: InProcessService;
  let key: string;
  beforeAll(async () => {
    svc = await inProcessService();
    key = (await svc.partner('Method Lending')).apiKey;
  });
  afterAll(async () => {
    await svc?.close();
  });

  it.each([
    ['DELETE', '/api/runs', 'GET, POST, HEAD'],
    ['PUT', '/api/runs/run_abc', 'GET, HEAD'],
    ['PATCH', '/api/decisions', 'GET, HEAD'],
    ['POST', '/healthz', 'GET, HEAD'],
  ])('%s %s is a 405 allowing %s', async (method, path, allow) => {
    const answer = await fetch(`${svc.service.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}` },
    });
    expect(answer.status).toBe(405);
    expect(answer.headers.get('allow')).toBe(allow);
    expect(answer.headers.get('content-type')).toBe('application/problem+json');
    const body = (await answer.json()) as { status: number; detail: string };
    expect(body.status).toBe(405);
    expect(body.detail).toContain(`use ${allow}`);
  });

  it('an unknown path, a request without a key, and a known path with its own method are not (the controls)', async () => {
    const unknown = await fetch(`${svc.service.url}/api/nothing-here`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${key}` },
    });
    expect(unknown.status).toBe(404);
    // The key is checked first: who may not call the API learns nothing of its methods.
    expect((await fetch(`${svc.service.url}/api/runs`, { method: 'DELETE' })).status).toBe(401);
    expect(unknown.headers.get('allow')).toBeNull();
    const document = await fetch(`${svc.service.url}/openapi.json`);
    expect(document.status).toBe(200);
    const { paths } = (await document.json()) as { paths: Record<string, Record<string, unknown>> };
    expect(Object.keys(paths['/api/runs'] ?? {})).toContain('post');
  });
});
