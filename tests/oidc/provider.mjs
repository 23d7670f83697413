// A real authorization server for tests/test_oauth_oidc.py: npm oidc-provider (installed by
// scripts/install_oidc.sh), configured for PKCE, resource indicators (JWT access tokens for
// the test's MCP endpoint), dynamic registration, DPoP, client credentials, introspection and
// revocation.
//
// The test copies this file into the install prefix (so `oidc-provider` and `jose` resolve)
// and runs it with: OIDC_PORT (loopback port), OIDC_RESOURCE (the MCP endpoint URL),
// OIDC_DPOP_NONCE=1 (require DPoP nonces). It prints "ready <issuer>" when listening.
import crypto from 'node:crypto';
import * as jose from 'jose';
import Provider, { errors } from 'oidc-provider';

const port = Number(process.env.OIDC_PORT);
const resource = process.env.OIDC_RESOURCE;
const issuer = `http://127.0.0.1:${port}`;

async function key(alg, kid) {
  const { privateKey } = await jose.generateKeyPair(alg, { extractable: true });
  return { ...(await jose.exportJWK(privateKey)), alg, use: 'sig', kid };
}

const confidential = (id, secret) => ({
  client_id: id, client_secret: secret, grant_types: ['client_credentials'], redirect_uris: [],
  response_types: [], token_endpoint_auth_method: 'client_secret_basic',
});

const provider = new Provider(issuer, {
  jwks: { keys: [await key('RS256', 'rs'), await key('ES256', 'es')] },
  clients: [confidential('cc-client', 'cc-secret')],
  scopes: ['openid', 'offline_access'],
  pkce: { required: () => true },
  findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
  features: {
    devInteractions: { enabled: true },
    registration: { enabled: true },
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    revocation: { enabled: true },
    dPoP: process.env.OIDC_DPOP_NONCE === '1'
      ? { enabled: true, nonceSecret: crypto.randomBytes(32), requireNonce: () => true }
      : { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => resource,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, indicator) => {
        if (indicator !== resource) throw new errors.InvalidTarget();
        return {
          scope: 'mcp:tools', audience: resource, accessTokenTTL: 3600,
          accessTokenFormat: 'jwt', jwt: { sign: { alg: 'ES256' } },
        };
      },
    },
  },
});
provider.on('server_error', (_ctx, err) => console.error('server_error', err));

provider.listen(port, '127.0.0.1', () => console.log(`ready ${issuer}`));
