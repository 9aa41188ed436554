'use strict';

// Unit tests of the configuration from the environment (no database needed).

const { describe, test } = require('node:test');
const assert = require('node:assert/strict');
const { ConfigError, dbConfigFromEnv, parsePostgresUri, settingsFromEnv, sslFor } = require('../lib/config');

function vcap(services) {
  return JSON.stringify(services);
}

function conn(c) {
  const { host, port, database, user, password, ssl } = c;
  return { host, port, database, user, password, ssl };
}

describe('DATABASE_URL', () => {
  test('postgres:// URI with sslmode=disable', () => {
    const c = dbConfigFromEnv({ DATABASE_URL: 'postgres://u:p%40ss@127.0.0.1:6543/db?sslmode=disable' });
    assert.deepEqual(conn(c), { host: '127.0.0.1', port: 6543, database: 'db', user: 'u', password: 'p@ss', ssl: false });
    assert.equal(c.source, 'DATABASE_URL');
  });

  test('postgresql:// URI, default port, no sslmode', () => {
    const c = dbConfigFromEnv({ DATABASE_URL: 'postgresql://u:p@db.example.com/bulletin' });
    assert.deepEqual(conn(c), { host: 'db.example.com', port: 5432, database: 'bulletin', user: 'u', password: 'p', ssl: false });
  });

  test('sslmode=require encrypts without verifying', () => {
    const c = dbConfigFromEnv({ DATABASE_URL: 'postgres://u:p@h:5432/d?sslmode=require' });
    assert.deepEqual(c.ssl, { rejectUnauthorized: false });
  });

  test('sslmode mapping', () => {
    assert.equal(sslFor(null), false);
    assert.equal(sslFor('disable'), false);
    assert.equal(sslFor('prefer'), false);
    assert.deepEqual(sslFor('require'), { rejectUnauthorized: false });
    assert.deepEqual(sslFor('verify-full'), { rejectUnauthorized: true });
    const ca = sslFor('verify-ca');
    assert.equal(ca.rejectUnauthorized, true);
    assert.equal(typeof ca.checkServerIdentity, 'function');
    assert.throws(() => sslFor('bogus'), ConfigError);
  });

  test('IPv6 host', () => {
    const c = parsePostgresUri('postgres://u:p@[::1]:5433/d', 'X');
    assert.equal(c.host, '::1');
    assert.equal(c.port, 5433);
  });

  test('not a postgres URI', () => {
    assert.throws(() => dbConfigFromEnv({ DATABASE_URL: 'mysql://u:p@h/d' }), ConfigError);
    assert.throws(() => dbConfigFromEnv({ DATABASE_URL: 'not a uri' }), ConfigError);
  });
});

describe('VCAP_SERVICES', () => {
  test('uri form, found by label', () => {
    const c = dbConfigFromEnv({
      VCAP_SERVICES: vcap({
        'p.redis': [{ name: 'cache', label: 'p.redis', tags: ['redis'], plan: 'small', credentials: { uri: 'redis://x' } }],
        postgresql: [
          {
            name: 'db',
            label: 'postgresql',
            tags: [],
            plan: 'small',
            credentials: { uri: 'postgres://pu:pp@pg.internal:5433/pdb?sslmode=require' },
          },
        ],
      }),
    });
    assert.deepEqual(conn(c), {
      host: 'pg.internal',
      port: 5433,
      database: 'pdb',
      user: 'pu',
      password: 'pp',
      ssl: { rejectUnauthorized: false },
    });
    assert.equal(c.source, 'VCAP_SERVICES service "db"');
  });

  test('found by tag and by plan', () => {
    const byTag = dbConfigFromEnv({
      VCAP_SERVICES: vcap({
        'user-provided': [
          { name: 'other', label: 'user-provided', tags: [], credentials: { uri: 'postgres://a:b@wrong/x' } },
          { name: 'mine', label: 'user-provided', tags: ['sql', 'PostgreSQL'], credentials: { uri: 'postgresql://a:b@right/x' } },
        ],
      }),
    });
    assert.equal(byTag.host, 'right');
    const byPlan = dbConfigFromEnv({
      VCAP_SERVICES: vcap({
        dbaas: [{ name: 'p', label: 'dbaas', tags: [], plan: 'postgres-small', credentials: { uri: 'postgres://a:b@plan/x' } }],
      }),
    });
    assert.equal(byPlan.host, 'plan');
  });

  test('hostname/name/username form', () => {
    const c = dbConfigFromEnv({
      VCAP_SERVICES: vcap({
        postgres: [
          { name: 'db', label: 'postgres', credentials: { hostname: 'h1', port: '6000', name: 'n1', username: 'u1', password: 'p1' } },
        ],
      }),
    });
    assert.deepEqual(conn(c), { host: 'h1', port: 6000, database: 'n1', user: 'u1', password: 'p1', ssl: false });
  });

  test('host/db_name/user form, default port', () => {
    const c = dbConfigFromEnv({
      VCAP_SERVICES: vcap({
        postgres: [{ name: 'db', label: 'postgres', credentials: { host: 'h2', db_name: 'n2', user: 'u2', password: 'p2' } }],
      }),
    });
    assert.deepEqual(conn(c), { host: 'h2', port: 5432, database: 'n2', user: 'u2', password: 'p2', ssl: false });
  });

  test('database field', () => {
    const c = dbConfigFromEnv({
      VCAP_SERVICES: vcap({
        postgres: [{ name: 'db', label: 'postgres', credentials: { host: 'h3', port: 7000, database: 'n3', username: 'u3' } }],
      }),
    });
    assert.deepEqual(conn(c), { host: 'h3', port: 7000, database: 'n3', user: 'u3', password: undefined, ssl: false });
  });

  test('a non-postgres uri falls back to the host fields', () => {
    const c = dbConfigFromEnv({
      VCAP_SERVICES: vcap({
        postgres: [{ name: 'db', label: 'postgres', credentials: { uri: 'jdbc:postgresql://x/y', hostname: 'h4', name: 'n4' } }],
      }),
    });
    assert.equal(c.host, 'h4');
    assert.equal(c.database, 'n4');
  });

  test('DB_SERVICE selects by name, even a non-postgres-looking one', () => {
    const env = {
      DB_SERVICE: 'second',
      VCAP_SERVICES: vcap({
        postgres: [{ name: 'first', label: 'postgres', credentials: { uri: 'postgres://a:b@first/x' } }],
        'user-provided': [{ name: 'second', label: 'user-provided', tags: [], credentials: { uri: 'postgres://a:b@second/x' } }],
      }),
    };
    assert.equal(dbConfigFromEnv(env).host, 'second');
  });

  test('DB_SERVICE naming a missing service is an error', () => {
    const env = {
      DB_SERVICE: 'nope',
      DATABASE_URL: 'postgres://a:b@h/d',
      VCAP_SERVICES: vcap({ postgres: [{ name: 'first', label: 'postgres', credentials: { uri: 'postgres://a:b@first/x' } }] }),
    };
    assert.throws(() => dbConfigFromEnv(env), { message: /no service named "nope"/ });
  });

  test('VCAP_SERVICES wins over DATABASE_URL', () => {
    const c = dbConfigFromEnv({
      DATABASE_URL: 'postgres://a:b@url/x',
      VCAP_SERVICES: vcap({ postgres: [{ name: 'db', label: 'postgres', credentials: { uri: 'postgres://a:b@vcap/x' } }] }),
    });
    assert.equal(c.host, 'vcap');
  });

  test('no postgres service in VCAP_SERVICES: DATABASE_URL', () => {
    const c = dbConfigFromEnv({ DATABASE_URL: 'postgres://a:b@url/x', VCAP_SERVICES: '{}' });
    assert.equal(c.host, 'url');
  });

  test('credentials without uri or host are an error', () => {
    const env = { VCAP_SERVICES: vcap({ postgres: [{ name: 'db', label: 'postgres', credentials: { name: 'x' } }] }) };
    assert.throws(() => dbConfigFromEnv(env), ConfigError);
  });

  test('invalid JSON is an error', () => {
    assert.throws(() => dbConfigFromEnv({ VCAP_SERVICES: '{nope' }), { message: 'VCAP_SERVICES is not valid JSON' });
  });
});

describe('no database', () => {
  test('neither VCAP_SERVICES nor DATABASE_URL → a one-line error', () => {
    assert.throws(
      () => dbConfigFromEnv({}),
      (err) => err instanceof ConfigError && /VCAP_SERVICES/.test(err.message) && /DATABASE_URL/.test(err.message) && !err.message.includes('\n')
    );
  });

  test('VCAP_SERVICES without a postgres service and no DATABASE_URL', () => {
    const env = { VCAP_SERVICES: vcap({ redis: [{ name: 'r', label: 'redis', credentials: {} }] }) };
    assert.throws(() => dbConfigFromEnv(env), ConfigError);
  });
});

describe('settings', () => {
  test('defaults', () => {
    assert.deepEqual(settingsFromEnv({}), {
      port: 8080,
      poolSize: 10,
      poolTimeoutMs: 5000,
      seedAds: 100,
      timingsOn: false,
      timingsCapacity: 100000,
      timingsToken: null,
      instanceIndex: 0,
    });
  });

  test('from the environment', () => {
    const s = settingsFromEnv({
      PORT: '9000',
      DB_POOL_SIZE: '4',
      DB_POOL_TIMEOUT_MS: '250',
      SEED_ADS: '0',
      CFBENCH_TIMINGS: 'on',
      CFBENCH_TIMINGS_CAPACITY: '3',
      CFBENCH_TIMINGS_TOKEN: 'secret',
      CF_INSTANCE_INDEX: '2',
    });
    assert.deepEqual(s, {
      port: 9000,
      poolSize: 4,
      poolTimeoutMs: 250,
      seedAds: 0,
      timingsOn: true,
      timingsCapacity: 3,
      timingsToken: 'secret',
      instanceIndex: 2,
    });
    assert.equal(settingsFromEnv({ CFBENCH_TIMINGS: 'off' }).timingsOn, false);
  });

  test('invalid numbers are errors', () => {
    assert.throws(() => settingsFromEnv({ DB_POOL_SIZE: '0' }), ConfigError);
    assert.throws(() => settingsFromEnv({ PORT: 'abc' }), ConfigError);
    assert.throws(() => settingsFromEnv({ CFBENCH_TIMINGS_CAPACITY: '-1' }), ConfigError);
  });
});
