'use strict';

// Everything the proxy reads from its environment (apps/proxy-node/README.md).

class ConfigError extends Error {}

function intVar(env, name, dflt, min, max) {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return dflt;
  const s = raw.trim();
  if (/^[0-9]{1,18}$/.test(s)) {
    const v = Number(s);
    if (v >= min && v <= max) return v;
  }
  throw new ConfigError(`${name} must be an integer from ${min} to ${max}, not "${raw}"`);
}

function blankToNull(s) {
  return s === undefined || s.trim() === '' ? null : s.trim();
}

function upstreamUrl(raw) {
  if (raw === undefined || raw.trim() === '') {
    throw new ConfigError('no upstream: set UPSTREAM_URL (e.g. http://stub.apps.example.com)');
  }
  let u;
  try {
    u = new URL(raw.trim());
  } catch {
    throw new ConfigError(`UPSTREAM_URL is not a URL: "${raw}"`);
  }
  if (!['http:', 'https:'].includes(u.protocol) || u.hostname === '' || u.search !== '' || u.hash !== '' ||
      u.username !== '' || u.password !== '') {
    throw new ConfigError(`UPSTREAM_URL must be http(s)://host[:port][/base-path], not "${raw}"`);
  }
  return u;
}

function fromEnv(env) {
  const port = intVar(env, 'PORT', 8080, 0, 65535);
  const upstream = upstreamUrl(env.UPSTREAM_URL);
  const connectTo = blankToNull(env.CONNECT_TO);
  let connectHost = null;
  let connectPort = null;
  if (connectTo !== null) {
    const m = /^([A-Za-z0-9.-]+):([0-9]{1,5})$/.exec(connectTo);
    if (m === null || Number(m[2]) > 65535) throw new ConfigError(`CONNECT_TO must be host:port, not "${connectTo}"`);
    if (upstream.protocol !== 'http:') {
      throw new ConfigError("CONNECT_TO needs an http:// UPSTREAM_URL (TLS would check the certificate against CONNECT_TO's host)");
    }
    [connectHost, connectPort] = [m[1], Number(m[2])];
  }
  const cfg = {
    port,
    upstream,
    connectTo,
    connectHost,
    connectPort,
    poolSize: intVar(env, 'UPSTREAM_POOL_SIZE', 50, 1, 10000),
    poolTimeoutMs: intVar(env, 'UPSTREAM_POOL_TIMEOUT_MS', 5000, 1, 2147483647),
    upstreamTimeoutMs: intVar(env, 'UPSTREAM_TIMEOUT_MS', 10000, 1, 2147483647),
    timingsOn: (env.CFBENCH_TIMINGS || '').trim().toLowerCase() === 'on',
    timingsCapacity: intVar(env, 'CFBENCH_TIMINGS_CAPACITY', 100000, 0, 10000000),
    timingsToken: blankToNull(env.CFBENCH_TIMINGS_TOKEN),
    instanceIndex: intVar(env, 'CF_INSTANCE_INDEX', 0, 0, 2147483647),
    appName: 'proxy-node',
  };
  const vcap = blankToNull(env.VCAP_APPLICATION);
  if (vcap !== null) {
    let app;
    try {
      app = JSON.parse(vcap);
    } catch (err) {
      throw new ConfigError(`VCAP_APPLICATION is not JSON: ${err.message}`);
    }
    if (app === null || typeof app !== 'object' || Array.isArray(app)) throw new ConfigError('VCAP_APPLICATION is not a JSON object');
    if (typeof app.application_name === 'string' && app.application_name !== '') cfg.appName = app.application_name;
    const uris = Array.isArray(app.uris) ? app.uris : [];
    if (uris.some((r) => typeof r === 'string' && r.toLowerCase() === upstream.host.toLowerCase())) {
      throw new ConfigError(`UPSTREAM_URL ${upstream.href} is this app's own route (VCAP_APPLICATION uris): it would forward to itself`);
    }
  }
  return cfg;
}

module.exports = { ConfigError, fromEnv };
