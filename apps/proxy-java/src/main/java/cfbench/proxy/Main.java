package cfbench.proxy;

import cfbench.bulletin.Timings;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The thread-per-request proxy: com.sun.net.httpserver hands every request to one of
 * PROXY_THREADS threads, which forwards it upstream and blocks until the answer is in, as a
 * servlet container's request threads do (Tomcat's default is 200).
 */
public final class Main {

    /** A running proxy. */
    static final class Server implements AutoCloseable {
        final HttpServer http;
        final ExecutorService threads;
        final Timings timings;

        Server(HttpServer http, ExecutorService threads, Timings timings) {
            this.http = http;
            this.threads = threads;
            this.timings = timings;
        }

        int port() {
            return http.getAddress().getPort();
        }

        /** Stops accepting, lets requests in flight finish for up to graceSeconds, then stops the threads. */
        void stop(int graceSeconds) {
            http.stop(graceSeconds);
            threads.shutdownNow();
        }

        /** Stops at once. */
        @Override
        public void close() {
            stop(0);
        }
    }

    public static void main(String[] args) {
        Server s = start(System.getenv(), System.out, System.err);
        if (s == null) {
            System.exit(1);
        }
        // SIGTERM: CF kills 10 s later; requests in flight get 5 s to finish.
        Runtime.getRuntime().addShutdownHook(new Thread(() -> s.stop(5), "shutdown"));
    }

    /** Starts the proxy from env; on a bad environment prints one line on err and returns null. */
    static Server start(Map<String, String> env, PrintStream out, PrintStream err) {
        Config cfg;
        try {
            cfg = Config.fromEnv(env);
        } catch (Config.Invalid e) {
            err.println("proxy-java: " + e.getMessage());
            return null;
        }
        // Read once, when the JDK's HTTP classes first load: set before any connection.
        System.setProperty("http.maxConnections", Integer.toString(cfg.poolSize()));
        System.setProperty("sun.net.http.allowRestrictedHeaders", "true"); // to send the upstream's Host
        System.setProperty("sun.net.httpserver.nodelay", "true"); // no Nagle delay on kept-alive answers
        AtomicInteger n = new AtomicInteger();
        ThreadFactory named = r -> {
            Thread t = new Thread(r, "request-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
        ExecutorService threads = Executors.newFixedThreadPool(cfg.threads(), named);
        Timings timings = new Timings(cfg.timingsCapacity(), cfg.timingsOn(), cfg.instanceIndex());
        HttpServer http;
        try {
            http = HttpServer.create(new InetSocketAddress(cfg.port()), 1024);
        } catch (IOException e) {
            threads.shutdownNow();
            err.println("proxy-java: cannot listen on port " + cfg.port() + ": " + e.getMessage());
            return null;
        }
        http.setExecutor(threads);
        http.createContext("/", new ProxyHandler(new Upstream(cfg), timings, cfg.timingsToken()));
        http.start();
        out.println(cfg.appName() + " listening on port " + http.getAddress().getPort() + " (upstream " + cfg.upstream()
                + (cfg.connectTo() == null ? "" : " via " + cfg.connectTo()) + ", pool " + cfg.poolSize() + ", threads "
                + cfg.threads() + ", timings " + (cfg.timingsOn() ? "on" : "off") + ", capacity " + cfg.timingsCapacity() + ")");
        return new Server(http, threads, timings);
    }

    private Main() {
    }
}
