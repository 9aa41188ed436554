'use strict';

// Entry point: `node server.js` starts the bulletin board; require('./server') gives
// createApp/start for tests and embedding.

const { createApp, start, oneLine } = require('./lib/app');
const { ConfigError } = require('./lib/config');

module.exports = { createApp, start };

if (require.main === module) {
  start(process.env).then(
    (app) => {
      // Finish the requests in flight, then close the pool; give up after 10 s.
      const stop = () => {
        setTimeout(() => process.exit(0), 10000).unref();
        app.server.close(() => {
          app.pool.end().finally(() => process.exit(0));
        });
        app.server.closeIdleConnections();
      };
      process.once('SIGTERM', stop);
      process.once('SIGINT', stop);
    },
    (err) => {
      const what = err instanceof ConfigError ? '' : 'database setup failed: ';
      process.stderr.write(`bulletin-node: ${what}${oneLine(err)}\n`);
      process.exit(1);
    }
  );
}
