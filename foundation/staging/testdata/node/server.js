// A tiny web app for the staging tests.
const http = require('http');

const server = http.createServer((req, res) => {
  res.writeHead(200, { 'Content-Type': 'text/plain' });
  res.end(`hello from node ${process.version}, NODE_ENV=${process.env.NODE_ENV || ''}\n`);
});
server.listen(Number(process.env.PORT || 8080), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
