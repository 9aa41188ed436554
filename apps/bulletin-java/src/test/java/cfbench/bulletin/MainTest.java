package cfbench.bulletin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/** Start-up: one line on stdout when it works, one line on stderr (and exit 1) when it does not. */
class MainTest {

    record Outcome(App app, String out, String err) {
    }

    static Outcome start(Map<String, String> env) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        App app = Main.start(env, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Outcome(app, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    static void assertOneErrorLine(Outcome o, String prefix) {
        assertNull(o.app());
        assertEquals("", o.out());
        assertTrue(o.err().startsWith(prefix), o.err());
        assertTrue(o.err().endsWith("\n"), o.err());
        assertEquals(1, o.err().split("\n").length, o.err());
    }

    @Test
    void missingDatabaseIsOneLine() {
        assertOneErrorLine(start(Map.of()), "bulletin-java: no database: neither VCAP_SERVICES nor DATABASE_URL is set");
        assertOneErrorLine(start(Map.of("DATABASE_URL", "postgres://u@h/d", "PORT", "x")),
                "bulletin-java: PORT must be an integer");
    }

    @Test
    void unreachableDatabaseIsOneLine() {
        assertOneErrorLine(start(Map.of("DATABASE_URL", "postgres://u:p@127.0.0.1:1/d", "DB_POOL_TIMEOUT_MS", "250")),
                "bulletin-java: cannot start: ");
    }

    /**
     * A first connection slower than a request's pool wait does not fail the start: on a busy
     * host a cold JVM's first connection took over 5 s (the default wait), and the app exited.
     */
    @Test
    void slowFirstConnectionStillStarts() throws Exception {
        URI db = URI.create(TestSupport.databaseUrl());
        try (SlowProxy proxy = new SlowProxy(db.getHost(), db.getPort(), 1000)) {
            String via = new URI(db.getScheme(), db.getUserInfo(), "127.0.0.1", proxy.port(), db.getPath(),
                    db.getQuery(), null).toString();
            Outcome o = start(TestSupport.env("DATABASE_URL", via, "DB_POOL_TIMEOUT_MS", "250"));
            assertNotNull(o.app(), o.err());
            o.app().close();
        }
    }

    /** A TCP proxy to host:port that holds each new connection delayMs before it forwards. */
    static final class SlowProxy implements AutoCloseable {
        private final ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        private final List<Socket> sockets = new CopyOnWriteArrayList<>();

        SlowProxy(String host, int port, long delayMs) throws IOException {
            Thread accept = new Thread(() -> {
                while (!server.isClosed()) {
                    try {
                        Socket in = server.accept();
                        sockets.add(in);
                        Thread.sleep(delayMs);
                        Socket up = new Socket(host, port);
                        sockets.add(up);
                        pipe(in, up);
                        pipe(up, in);
                    } catch (IOException | InterruptedException e) {
                        return; // closed
                    }
                }
            }, "slow-proxy");
            accept.setDaemon(true);
            accept.start();
        }

        private static void pipe(Socket from, Socket to) {
            Thread t = new Thread(() -> {
                try {
                    from.getInputStream().transferTo(to.getOutputStream());
                } catch (IOException ignored) {
                    // one side closed
                }
                try {
                    to.shutdownOutput();
                } catch (IOException ignored) {
                    // already closed
                }
            }, "slow-proxy-pipe");
            t.setDaemon(true);
            t.start();
        }

        int port() {
            return server.getLocalPort();
        }

        @Override
        public void close() throws IOException {
            server.close();
            for (Socket s : sockets) {
                s.close();
            }
        }
    }

    @Test
    void startLine() throws Exception {
        Outcome o = start(TestSupport.env("DB_POOL_SIZE", "3", "CFBENCH_TIMINGS", "on"));
        assertNotNull(o.app(), o.err());
        try (App app = o.app()) {
            assertEquals("bulletin-java listening on port " + app.port() + " (db pool 3, timings on, capacity 100000)\n",
                    o.out());
            assertEquals("", o.err());
        }
    }
}
