// Derives the operation → scope map from the spec's security requirements. This is the only place
// that reads scopes out of the spec; the SDK, mock and conformance suite import the result.
// Plain ESM (not TypeScript) because it runs before anything is compiled.

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

export class OperationMapError extends Error {
  constructor(message) {
    super(message);
    this.name = 'OperationMapError';
  }
}

/** The server variable that an operation's `servers` (or its path item's) names: 'auth' or 'api'. */
function serverKind(doc, pathItem, operation, where) {
  const servers = operation.servers ?? pathItem.servers ?? doc.servers ?? [];
  const url = servers[0]?.url;
  if (url === '{auth_url}') return 'auth';
  if (url === '{base_url}') return 'api';
  throw new OperationMapError(
    `${where}: its server is ${JSON.stringify(url)}; expected '{auth_url}' (token endpoint) or '{base_url}' (partner API). Fix the operation's \`servers\` in spec/openapi.yaml.`,
  );
}

/**
 * @param {any} doc a parsed OpenAPI 3.1 document
 * @returns {{ scopes: string[], audience: string, operations: Record<string, { method: string, path: string, server: 'auth' | 'api', scope: string | null }> }}
 */
export function deriveOperationMap(doc) {
  const schemes = doc?.components?.securitySchemes ?? {};
  const oauthNames = Object.keys(schemes).filter((name) => schemes[name]?.type === 'oauth2');
  if (oauthNames.length !== 1) {
    throw new OperationMapError(
      `expected exactly one oauth2 security scheme in components.securitySchemes, found ${oauthNames.length}.`,
    );
  }
  const schemeName = oauthNames[0];
  const scheme = schemes[schemeName];
  const declared = Object.keys(scheme.flows?.clientCredentials?.scopes ?? {});
  if (declared.length === 0) {
    throw new OperationMapError(`the ${schemeName} scheme declares no clientCredentials scopes.`);
  }
  const audience = scheme['x-audience'];
  if (typeof audience !== 'string') {
    throw new OperationMapError(
      `the ${schemeName} scheme has no x-audience extension naming the token audience.`,
    );
  }

  const operations = {};
  for (const [path, pathItem] of Object.entries(doc.paths ?? {})) {
    for (const method of METHODS) {
      const operation = pathItem[method];
      if (!operation) continue;
      const where = `${method.toUpperCase()} ${path}`;
      const id = operation.operationId;
      if (typeof id !== 'string' || id === '') {
        throw new OperationMapError(`${where} has no operationId.`);
      }
      if (operations[id]) throw new OperationMapError(`operationId ${id} is used twice.`);
      const server = serverKind(doc, pathItem, operation, where);
      const security = operation.security ?? doc.security;
      let scope = null;
      if (server === 'auth') {
        if (!Array.isArray(security) || security.length !== 0) {
          throw new OperationMapError(`${where} is on the auth server and must say \`security: []\`.`);
        }
      } else {
        const requirement = Array.isArray(security) && security.length === 1 ? security[0] : undefined;
        const names = requirement ? Object.keys(requirement) : [];
        const scopes = requirement?.[schemeName];
        if (names.length !== 1 || !Array.isArray(scopes) || scopes.length !== 1) {
          throw new OperationMapError(
            `${where} (${id}) must name exactly one scope of the ${schemeName} scheme in its security requirement; found ${JSON.stringify(security ?? null)}.`,
          );
        }
        scope = scopes[0];
        if (!declared.includes(scope)) {
          throw new OperationMapError(
            `${where} (${id}) requires the unknown scope ${JSON.stringify(scope)}; declared scopes: ${declared.join(', ')}.`,
          );
        }
      }
      operations[id] = { method: method.toUpperCase(), path, server, scope };
    }
  }
  return { scopes: declared, audience, operations };
}

/** The TypeScript module written to src/generated/operations.ts. */
export function renderOperationModule(map) {
  return `// Generated from spec/openapi.yaml by \`pnpm generate\` (spec/scripts/generate.mjs). Do not edit.

/** Every scope of the oauth2 clientCredentials flow, in spec order. */
export const scopes = ${JSON.stringify(map.scopes)} as const;

/** The token audience, as a server-variable template (the partner API base address). */
export const audienceTemplate = ${JSON.stringify(map.audience)} as const;

/** operationId → method, path template, server ('auth' = {auth_url}, 'api' = {base_url}) and required scope. */
export const operations = ${JSON.stringify(map.operations, null, 2)} as const;
`;
}
