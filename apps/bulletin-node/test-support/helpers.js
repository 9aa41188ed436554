'use strict';

// Shared by the tests in ../test/ (kept outside test/ so that `node --test` does not run
// it as a test file of its own).

const { Client } = require('pg');
const { createApp } = require('../server');

// The tests need a real Postgres; without DATABASE_URL they fail rather than skip.
function databaseUrl() {
  const url = process.env.DATABASE_URL;
  if (!url) {
    throw new Error(
      'DATABASE_URL is not set: these tests need a real Postgres, e.g. ' +
        'DATABASE_URL=$(cd ../.. && scripts/pg-local.sh start --state-dir /tmp/nodeapp-pg --db bulletin_node_test) npm test'
    );
  }
  return url;
}

function dbClientConfig() {
  const { parsePostgresUri } = require('../lib/config');
  const c = parsePostgresUri(databaseUrl(), 'DATABASE_URL');
  return { host: c.host, port: c.port, database: c.database, user: c.user, password: c.password, ssl: c.ssl };
}

// A direct connection that holds a session advisory lock while a test file uses the
// database, so test files that node --test runs in parallel take turns on the ads table.
async function lockDatabase() {
  const client = new Client(dbClientConfig());
  await client.connect();
  await client.query('SELECT pg_advisory_lock(727273)');
  return {
    client,
    async release() {
      try {
        await client.query('SELECT pg_advisory_unlock(727273)');
      } finally {
        await client.end();
      }
    },
  };
}

// Starts an app in-process on an ephemeral port with DATABASE_URL plus the given env.
async function startApp(extraEnv = {}, { init = true } = {}) {
  const env = { DATABASE_URL: databaseUrl(), ...extraEnv };
  const app = createApp(env);
  if (init) await app.init();
  const port = await app.listen(0, '127.0.0.1');
  const base = `http://127.0.0.1:${port}`;
  return {
    app,
    base,
    // fetch relative to the app; resolves to {status, headers, text, json}.
    async request(path, options = {}) {
      const res = await fetch(base + path, options);
      const text = await res.text();
      let json;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      return { status: res.status, headers: res.headers, text, json };
    },
    close: () => app.close(),
  };
}

// warmPool opens every connection of pool before a test that times the waits for them:
// a short pool timeout bounds making a connection too, and on a busy host making one
// took longer than the 250 ms such a test sets, so its request failed before it ran.
async function warmPool(pool) {
  const timeout = pool.options.connectionTimeoutMillis;
  pool.options.connectionTimeoutMillis = 30000;
  const clients = [];
  try {
    for (let i = 0; i < pool.options.max; i++) clients.push(await pool.connect());
  } finally {
    for (const c of clients) c.release();
    pool.options.connectionTimeoutMillis = timeout;
  }
}

module.exports = { databaseUrl, dbClientConfig, lockDatabase, startApp, warmPool };
