// A real OpenID provider (oidc-provider, OpenID certified) for blendmesh's OAuth tests.
//
// node server.mjs CONFIG.json
//
// CONFIG names the signing keys file (made, with one fresh RSA key, when it does not exist,
// so a second provider given the same file signs with the same key and only its issuer
// differs), the resource (the audience every access token gets) and the clients, each
// {id, secret, ttl}: client_credentials only, whose tokens are JWTs (sub = client id) that
// live ttl seconds. It listens on a free loopback port and prints one JSON line,
// {"issuer": URL}, once it answers; it stops when its stdin closes.

import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';

import Provider from 'oidc-provider';

const config = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));

function signingKeys(path) {
  if (!fs.existsSync(path)) {
    const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
    const jwk = privateKey.export({ format: 'jwk' });
    const kid = crypto.randomBytes(8).toString('hex');
    fs.writeFileSync(path, JSON.stringify({ keys: [{ ...jwk, kid, alg: 'RS256', use: 'sig' }] }));
  }
  return JSON.parse(fs.readFileSync(path, 'utf8'));
}

const server = http.createServer();
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address();
  const issuer = `http://127.0.0.1:${port}`;
  const ttls = new Map(config.clients.map((c) => [c.id, c.ttl]));
  const provider = new Provider(issuer, {
    jwks: signingKeys(config.keys),
    clients: config.clients.map((c) => ({
      client_id: c.id,
      client_secret: c.secret,
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      scope: 'blendmesh',
    })),
    scopes: ['blendmesh'],
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => config.resource,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, resource, client) => ({
          scope: 'blendmesh',
          audience: resource,
          accessTokenTTL: ttls.get(client.clientId),
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        }),
      },
    },
  });
  server.on('request', provider.callback());
  process.stdout.write(`${JSON.stringify({ issuer })}\n`);
});

process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
