// The authorization server of the OAuth end-to-end tests: the `oidc-provider` npm package
// (OpenID Certified), installed by scripts/oidc.sh into .oidc/, on 127.0.0.1.
//
// Environment: PORT (0: any free one; the URL is printed as "ready <issuer>"), RESOURCE (the
// MCP server's canonical URI: the `aud` of every access token, RFC 8707; RESOURCES: more of
// them, space-separated, e.g. the upstreams behind a gateway), JWKS (the signing keys, private,
// as a JSON key set, the first signs; the tests rotate them by restarting on the same PORT with
// a new set). OIDC_PROVIDER: the package's directory (.oidc/node_modules/oidc-provider; an ES
// module is not found through NODE_PATH).
//
// Clients. Client credentials: air-writer (mcp:tools notes:write), air-reader (mcp:tools),
// air-gateway (mcp:tools notes:write: the gateway's own, for its upstreams). Authorization
// code + PKCE: air-desktop, a public native client (no secret, PKCE required, redirect URI
// REDIRECT_URI), signing in through the package's own login and consent pages
// (devInteractions: any login name, any password), which the tests fill in over HTTP.
// Dynamic client registration (RFC 7591) is open, as the MCP clients (Claude, the Inspector)
// register themselves. CC_TTL: the lifetime of client-credentials tokens in seconds (600).
import http from 'node:http';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const { default: Provider } = await import(
  pathToFileURL(path.join(process.env.OIDC_PROVIDER, 'lib', 'index.js')).href
);

const resource = process.env.RESOURCE;
const resources = new Set([resource, ...(process.env.RESOURCES || '').split(' ').filter(Boolean)]);
const jwks = JSON.parse(process.env.JWKS);
const clients = [
  ['air-writer', 'mcp:tools notes:write'],
  ['air-reader', 'mcp:tools'],
  ['air-gateway', 'mcp:tools notes:write'],
].map(([id, scope]) => ({
  client_id: id,
  client_secret: `${id}-secret`,
  grant_types: ['client_credentials'],
  redirect_uris: [],
  response_types: [],
  scope,
  id_token_signed_response_alg: 'ES256',
}));
clients.push({
  client_id: 'air-desktop',
  application_type: 'native',
  token_endpoint_auth_method: 'none',
  grant_types: ['authorization_code'],
  response_types: ['code'],
  redirect_uris: [process.env.REDIRECT_URI || 'http://127.0.0.1/callback'],
  scope: 'mcp:tools notes:write',
  id_token_signed_response_alg: 'ES256',
});

function start(port) {
  const issuer = `http://127.0.0.1:${port}`;
  const provider = new Provider(issuer, {
    clients,
    clientDefaults: { id_token_signed_response_alg: 'ES256' }, // registered ones: the keys' alg
    jwks,
    scopes: ['mcp:tools', 'notes:write'],
    ttl: { ClientCredentials: Number(process.env.CC_TTL || 600) }, // seconds
    features: {
      devInteractions: { enabled: true }, // its login and consent pages
      clientCredentials: { enabled: true },
      registration: { enabled: true }, // dynamic client registration (RFC 7591), as MCP hosts use
      introspection: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => resource,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, requested) => {
          if (!resources.has(requested)) throw new Error(`unknown resource ${requested}`);
          return {
            scope: 'mcp:tools notes:write',
            audience: requested,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'ES256' } },
          };
        },
      },
    },
  });
  return provider;
}

// The issuer URL names the port, so bind first, then build the provider for that port.
const server = http.createServer();
server.listen(Number(process.env.PORT || 0), '127.0.0.1', () => {
  const { port } = server.address();
  const provider = start(port);
  server.on('request', provider.callback());
  console.log(`ready http://127.0.0.1:${port}`);
});
