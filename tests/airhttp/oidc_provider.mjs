// The authorization server of the OAuth end-to-end tests: the `oidc-provider` npm package
// (OpenID Certified), installed by scripts/oidc.sh into .oidc/, on 127.0.0.1.
//
// Environment: PORT (0: any free one; the URL is printed as "ready <issuer>"), RESOURCE (the
// MCP server's canonical URI: the `aud` of every access token, RFC 8707), JWKS (the signing
// keys, private, as a JSON key set; the tests rotate them by restarting with a new set).
// OIDC_PROVIDER: the package's directory (.oidc/node_modules/oidc-provider; an ES module is
// not found through NODE_PATH). Clients (client credentials): air-writer (mcp:tools
// notes:write), air-reader (mcp:tools).
import http from 'node:http';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const { default: Provider } = await import(
  pathToFileURL(path.join(process.env.OIDC_PROVIDER, 'lib', 'index.js')).href
);

const resource = process.env.RESOURCE;
const jwks = JSON.parse(process.env.JWKS);
const clients = [
  ['air-writer', 'mcp:tools notes:write'],
  ['air-reader', 'mcp:tools'],
].map(([id, scope]) => ({
  client_id: id,
  client_secret: `${id}-secret`,
  grant_types: ['client_credentials'],
  redirect_uris: [],
  response_types: [],
  scope,
  id_token_signed_response_alg: 'ES256',
}));

function start(port) {
  const issuer = `http://127.0.0.1:${port}`;
  const provider = new Provider(issuer, {
    clients,
    jwks,
    scopes: ['mcp:tools', 'notes:write'],
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => resource,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, requested) => {
          if (requested !== resource) throw new Error(`unknown resource ${requested}`);
          return {
            scope: 'mcp:tools notes:write',
            audience: resource,
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
