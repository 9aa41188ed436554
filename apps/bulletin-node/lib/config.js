'use strict';

// Configuration from the environment: the database (VCAP_SERVICES or DATABASE_URL) and
// the app settings. Pure functions of an env object, so they are unit-testable.

class ConfigError extends Error {}

// --- database -------------------------------------------------------------------------

// The pg connection options for an sslmode. sslmode=require encrypts without verifying
// the server (as libpq and pgjdbc do); verify-ca checks the chain only, verify-full the
// chain and the host name; anything else (absent, disable, allow, prefer) is plain TCP.
function sslFor(mode) {
  switch (mode === undefined || mode === null ? '' : mode) {
    case '':
    case 'disable':
    case 'allow':
    case 'prefer':
      return false;
    case 'require':
      return { rejectUnauthorized: false };
    case 'verify-ca':
      return { rejectUnauthorized: true, checkServerIdentity: () => undefined };
    case 'verify-full':
      return { rejectUnauthorized: true };
    default:
      throw new ConfigError(`unknown sslmode "${mode}"`);
  }
}

function decode(s) {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

// postgres://user:password@host:port/database?sslmode=... → pg connection options.
function parsePostgresUri(uri, source) {
  let u;
  try {
    u = new URL(uri);
  } catch {
    throw new ConfigError(`${source} is not a valid postgres:// URI`);
  }
  if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:') {
    throw new ConfigError(`${source} is not a postgres:// or postgresql:// URI`);
  }
  let host = u.hostname;
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  const database = decode(u.pathname.replace(/^\//, ''));
  return {
    host: decode(host) || 'localhost',
    port: u.port ? Number(u.port) : 5432,
    database: database || undefined,
    user: u.username ? decode(u.username) : undefined,
    password: u.password ? decode(u.password) : undefined,
    ssl: sslFor(u.searchParams.get('sslmode')),
    source,
  };
}

function first(obj, keys) {
  for (const k of keys) {
    const v = obj[k];
    if (v !== undefined && v !== null && v !== '') return v;
  }
  return undefined;
}

function fromCredentials(service) {
  const source = `VCAP_SERVICES service "${service.name}"`;
  const c = service.credentials && typeof service.credentials === 'object' ? service.credentials : {};
  if (typeof c.uri === 'string' && /^postgres(ql)?:\/\//i.test(c.uri)) {
    return parsePostgresUri(c.uri, source);
  }
  const host = first(c, ['hostname', 'host']);
  if (host === undefined) {
    throw new ConfigError(`${source} has neither a postgres uri nor a hostname/host in its credentials`);
  }
  const port = first(c, ['port']);
  const portNumber = port === undefined ? 5432 : Number(port);
  if (!Number.isInteger(portNumber) || portNumber < 1 || portNumber > 65535) {
    throw new ConfigError(`${source} has an invalid port "${port}"`);
  }
  const database = first(c, ['name', 'db_name', 'database']);
  const user = first(c, ['username', 'user']);
  const password = first(c, ['password']);
  return {
    host: String(host),
    port: portNumber,
    database: database === undefined ? undefined : String(database),
    user: user === undefined ? undefined : String(user),
    password: password === undefined ? undefined : String(password),
    ssl: false,
    source,
  };
}

function mentionsPostgres(service) {
  const words = [];
  if (typeof service.label === 'string') words.push(service.label);
  if (typeof service.plan === 'string') words.push(service.plan);
  if (Array.isArray(service.tags)) {
    for (const t of service.tags) if (typeof t === 'string') words.push(t);
  }
  return words.some((w) => /postgres/i.test(w));
}

// The database to use: in VCAP_SERVICES the service named DB_SERVICE if set, else the
// first one whose label, tags or plan mention postgres; without such a service,
// DATABASE_URL. Throws ConfigError (a one-line message) when there is none.
function dbConfigFromEnv(env) {
  const vcap = env.VCAP_SERVICES;
  const wanted = env.DB_SERVICE ? env.DB_SERVICE : undefined;
  if (vcap !== undefined && vcap.trim() !== '') {
    let parsed;
    try {
      parsed = JSON.parse(vcap);
    } catch {
      throw new ConfigError('VCAP_SERVICES is not valid JSON');
    }
    const services = [];
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) {
      for (const list of Object.values(parsed)) {
        if (!Array.isArray(list)) continue;
        for (const s of list) if (s && typeof s === 'object') services.push(s);
      }
    }
    if (wanted !== undefined) {
      const named = services.find((s) => s.name === wanted);
      if (!named) throw new ConfigError(`VCAP_SERVICES has no service named "${wanted}" (DB_SERVICE)`);
      return fromCredentials(named);
    }
    const pg = services.find(mentionsPostgres);
    if (pg) return fromCredentials(pg);
  } else if (wanted !== undefined) {
    throw new ConfigError(`DB_SERVICE is "${wanted}" but VCAP_SERVICES is not set`);
  }
  if (env.DATABASE_URL) return parsePostgresUri(env.DATABASE_URL, 'DATABASE_URL');
  if (vcap !== undefined && vcap.trim() !== '') {
    throw new ConfigError('no database: VCAP_SERVICES has no postgres service and DATABASE_URL is not set');
  }
  throw new ConfigError('no database: neither VCAP_SERVICES nor DATABASE_URL is set');
}

// --- settings -------------------------------------------------------------------------

function intSetting(env, name, def, min, max) {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return def;
  const s = raw.trim();
  if (!/^[0-9]+$/.test(s) || Number(s) < min || Number(s) > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, not "${raw}"`);
  }
  return Number(s);
}

function settingsFromEnv(env) {
  const token = env.CFBENCH_TIMINGS_TOKEN;
  return {
    port: intSetting(env, 'PORT', 8080, 0, 65535),
    poolSize: intSetting(env, 'DB_POOL_SIZE', 10, 1, 10000),
    poolTimeoutMs: intSetting(env, 'DB_POOL_TIMEOUT_MS', 5000, 1, 2147483647),
    seedAds: intSetting(env, 'SEED_ADS', 100, 0, 100000000),
    timingsOn: (env.CFBENCH_TIMINGS || '').trim().toLowerCase() === 'on',
    timingsCapacity: intSetting(env, 'CFBENCH_TIMINGS_CAPACITY', 100000, 0, 100000000),
    timingsToken: token ? token : null,
    instanceIndex: intSetting(env, 'CF_INSTANCE_INDEX', 0, 0, 2147483647),
  };
}

module.exports = { ConfigError, dbConfigFromEnv, parsePostgresUri, settingsFromEnv, sslFor };
