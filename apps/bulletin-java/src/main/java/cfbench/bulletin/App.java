package cfbench.bulletin;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.nio.ByteBuffer;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.http.UriCompliance;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.thread.QueuedThreadPool;

/** The running app: a HikariCP pool, the ads table, the timings buffer and a Jetty server. */
final class App implements AutoCloseable {

    /** HikariCP refuses shorter connection timeouts (it would silently use 30 s instead). */
    static final int MIN_POOL_TIMEOUT_MS = 250;

    /**
     * How long the start waits for its first database connection while that is on its way.
     * DB_POOL_TIMEOUT_MS bounds a request's wait for a pooled connection (a knob of the
     * benchmark, 5 s by default); a cold JVM on a busy cell can take longer for its first
     * connection (the driver's classes, SCRAM), and the platform gives a start far more (Cloud
     * Foundry's health check: 60 s by default). A connection that fails (refused, a wrong
     * password) still fails the start at the pool's timeout.
     */
    static final long START_CONNECT_MS = 30_000;

    private final Config config;
    private HikariDataSource dataSource;
    private Timings timings;
    private Server server;
    private ServerConnector connector;

    App(Config config) {
        this.config = config;
    }

    App start() throws Exception {
        dataSource = new HikariDataSource(poolConfig(config));
        createAndSeed(dataSource, config.seedAds());
        timings = new Timings(config.timingsCapacity(), config.timingsOn(), config.instanceIndex());

        // Jetty's thread pool serves the requests (blocking JDBC calls hold a thread each):
        // its size is SERVER_THREADS, one dimension of a pool × threads matrix.
        server = new Server(new QueuedThreadPool(config.serverThreads(), Math.min(8, config.serverThreads())));
        HttpConfiguration http = new HttpConfiguration();
        http.setSendServerVersion(false);
        http.setSendXPoweredBy(false);
        // Route on the raw path, like Node's req.url: no 400 for "//", "%2F", ".." or bad UTF-8
        // escapes. Safe here: the path is only compared with fixed routes, never decoded or served.
        http.setUriCompliance(UriCompliance.UNSAFE);
        connector = new ServerConnector(server, new HttpConnectionFactory(http));
        connector.setPort(config.port());
        // Longer than the idle timeout of the routers' connection pools (gorouter: 90 s), so the
        // app never closes a kept-alive connection that a router is about to reuse.
        connector.setIdleTimeout(120_000);
        server.addConnector(connector);
        server.setHandler(new BulletinHandler(new Ads(dataSource), timings, config.timingsToken()));
        server.setErrorHandler(App::jsonError);
        server.start();
        return this;
    }

    /** The schema step, given START_CONNECT_MS for a first connection that is on its way. */
    private static void createAndSeed(HikariDataSource ds, int seedAds) throws SQLException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(START_CONNECT_MS);
        while (true) {
            try {
                Ads.createAndSeed(ds, seedAds);
                return;
            } catch (SQLTransientConnectionException e) {
                // The pool's wait ran out. Without a cause no connection attempt failed: the
                // pool is still making the first one (it goes on in the background).
                if (e.getCause() != null || System.nanoTime() - deadline > 0) {
                    throw e;
                }
            }
        }
    }

    /** The most threads Jetty serves requests on (SERVER_THREADS). */
    int serverThreads() {
        return server.getThreadPool() instanceof QueuedThreadPool q ? q.getMaxThreads() : -1;
    }

    static HikariConfig poolConfig(Config config) {
        HikariConfig hc = new HikariConfig();
        hc.setPoolName("bulletin");
        hc.setJdbcUrl(config.db().jdbcUrl());
        if (config.db().user() != null) {
            hc.setUsername(config.db().user());
        }
        if (config.db().password() != null) {
            hc.setPassword(config.db().password());
        }
        hc.setMaximumPoolSize(config.poolSize());
        hc.setMinimumIdle(1);
        long timeout = Math.max(MIN_POOL_TIMEOUT_MS, config.poolTimeoutMs());
        hc.setConnectionTimeout(timeout);
        hc.setValidationTimeout(Math.min(5000, timeout));
        // Do not connect in the constructor: the schema step right after reports an unreachable
        // database in one line (Hikari's own initialization failure logs a stack trace).
        hc.setInitializationFailTimeout(-1);
        return hc;
    }

    /** Errors Jetty answers itself (malformed requests) get a JSON body too. */
    private static boolean jsonError(Request request, org.eclipse.jetty.server.Response response,
                                     org.eclipse.jetty.util.Callback callback) {
        int status = response.getStatus();
        String reason = HttpStatus.getMessage(status);
        byte[] body = JsonOut.error(reason == null ? "error" : reason.toLowerCase(Locale.ROOT));
        response.getHeaders().put(HttpHeader.CONTENT_TYPE, "application/json");
        response.getHeaders().put(HttpHeader.CONTENT_LENGTH, body.length);
        response.write(true, ByteBuffer.wrap(body), callback);
        return true;
    }

    int port() {
        return connector.getLocalPort();
    }

    HikariDataSource dataSource() {
        return dataSource;
    }

    Timings timings() {
        return timings;
    }

    Config config() {
        return config;
    }

    @Override
    public void close() {
        if (server != null) {
            try {
                server.stop();
            } catch (Exception e) {
                System.err.println("bulletin-java: stopping the server: " + BulletinHandler.oneLine(e));
            }
        }
        if (dataSource != null) {
            dataSource.close();
        }
    }
}
