'use strict';

// Entry point: `node server.js` starts the proxy; require('./server') gives start for tests.

const { ConfigError, fromEnv } = require('./lib/config');
const { createProxy } = require('./lib/proxy');

// start(env) → Promise of { cfg, server, agent, timings, port } once listening.
function start(env) {
  let cfg;
  try {
    cfg = fromEnv(env);
  } catch (err) {
    return Promise.reject(err);
  }
  const p = createProxy(cfg);
  return new Promise((resolve, reject) => {
    p.server.once('error', (err) => reject(new ConfigError(`cannot listen on port ${cfg.port}: ${err.message}`)));
    p.server.listen(cfg.port, () => resolve({ cfg, ...p, port: p.server.address().port }));
  });
}

function describe(app) {
  const c = app.cfg;
  return `${c.appName} listening on port ${app.port} (upstream ${c.upstream.href}` +
    `${c.connectTo === null ? '' : ' via ' + c.connectTo}, pool ${c.poolSize}, timings ${c.timingsOn ? 'on' : 'off'}, ` +
    `capacity ${c.timingsCapacity})`;
}

module.exports = { start, describe };

if (require.main === module) {
  start(process.env).then(
    (app) => {
      process.stdout.write(describe(app) + '\n');
      // Finish the requests in flight, then exit; give up after 10 s.
      const stop = () => {
        setTimeout(() => process.exit(0), 10000).unref();
        app.server.close(() => process.exit(0));
        app.server.closeIdleConnections();
        app.agent.destroy();
      };
      process.once('SIGTERM', stop);
      process.once('SIGINT', stop);
    },
    (err) => {
      process.stderr.write(`proxy-node: ${String(err.message).replace(/\s+/g, ' ')}\n`);
      process.exit(1);
    }
  );
}
