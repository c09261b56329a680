/**
 * The suite's one loopback rule: a host name only this machine can reach — `localhost`, `*.localhost`,
 * 127.0.0.0/8 and `::1` (bracketed or not). Plain http is accepted there only, and a target there can
 * reach the suite's own issuer. The certifier keeps its own copy of the rule, apart from the SDK's
 * (a shared bug would make the two agree).
 */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (host === '[::1]' || host === '::1') return true;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}
