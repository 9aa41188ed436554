package cfbench.proxy;

import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.URL;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * The blocking upstream client: HttpURLConnection on the JDK's keep-alive cache, at most
 * {@code poolSize} requests at once (a fair semaphore, the "pool"), each of which returns its
 * connection to the cache, which keeps up to {@code poolSize} idle ones (http.maxConnections,
 * set by Main before the first connection). So at most poolSize connections are open, and
 * reused. Safe for concurrent use.
 */
final class Upstream {

    /** Hop-by-hop headers (RFC 9110 7.6.1) and the ones this client sets itself: not forwarded. */
    static final Set<String> HOP_BY_HOP = Set.of("connection", "keep-alive", "proxy-connection", "proxy-authenticate",
            "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade", "host", "content-length");

    /** The largest upstream body the proxy buffers; a bigger one is a 502. */
    static final int MAX_BODY = 16 << 20;

    /** What the upstream answered, and where the time went (nanoseconds). */
    record Answer(int status, List<Map.Entry<String, String>> headers, byte[] body, long poolWaitNanos, long upstreamNanos) {
    }

    /** Why a request was not forwarded or not answered: the proxy's status and message. */
    static final class Failure extends Exception {
        private static final long serialVersionUID = 1L;
        final int status;

        Failure(int status, String message) {
            super(message, null, false, false);
            this.status = status;
        }
    }

    private final Config cfg;
    private final Semaphore pool;
    private final String base; // scheme://authority-to-dial/base-path, without a trailing slash

    Upstream(Config cfg) {
        this.cfg = cfg;
        this.pool = new Semaphore(cfg.poolSize(), true);
        URI u = cfg.upstream();
        String dial = cfg.connectTo() != null ? cfg.connectTo() : u.getRawAuthority();
        String path = u.getRawPath() == null ? "" : u.getRawPath();
        this.base = u.getScheme() + "://" + dial + (path.endsWith("/") ? path.substring(0, path.length() - 1) : path);
    }

    /** Forwards a GET of pathAndQuery (raw, starting with /) with the client's end-to-end headers. */
    Answer get(String pathAndQuery, Map<String, List<String>> headers) throws Failure {
        long t0 = System.nanoTime();
        try {
            if (!pool.tryAcquire(cfg.poolTimeoutMs(), TimeUnit.MILLISECONDS)) {
                throw new Failure(503, "no upstream connection free within " + cfg.poolTimeoutMs() + " ms (UPSTREAM_POOL_SIZE "
                        + cfg.poolSize() + ")");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new Failure(503, "interrupted while waiting for an upstream connection");
        }
        long t1 = System.nanoTime();
        try {
            HttpURLConnection c = (HttpURLConnection) new URL(base + pathAndQuery).openConnection();
            c.setConnectTimeout(cfg.upstreamTimeoutMs());
            c.setReadTimeout(cfg.upstreamTimeoutMs());
            c.setInstanceFollowRedirects(false);
            c.setUseCaches(false);
            for (Map.Entry<String, List<String>> h : headers.entrySet()) {
                if (!HOP_BY_HOP.contains(h.getKey().toLowerCase(Locale.ROOT))) {
                    for (String v : h.getValue()) {
                        c.addRequestProperty(h.getKey(), v);
                    }
                }
            }
            // Restricted for HttpURLConnection unless sun.net.http.allowRestrictedHeaders (Main sets it).
            c.setRequestProperty("Host", cfg.upstream().getRawAuthority());
            int status = c.getResponseCode();
            List<Map.Entry<String, String>> out = new ArrayList<>();
            for (Map.Entry<String, List<String>> h : c.getHeaderFields().entrySet()) {
                if (h.getKey() != null && !HOP_BY_HOP.contains(h.getKey().toLowerCase(Locale.ROOT))) {
                    for (String v : h.getValue()) {
                        out.add(Map.entry(h.getKey(), v));
                    }
                }
            }
            byte[] body;
            // Read to the end and close: that returns the connection to the keep-alive cache.
            try (InputStream in = status >= 400 ? c.getErrorStream() : c.getInputStream()) {
                body = in == null ? new byte[0] : readAll(in);
            }
            return new Answer(status, out, body, t1 - t0, System.nanoTime() - t1);
        } catch (SocketTimeoutException e) {
            throw new Failure(504, "upstream did not answer within " + cfg.upstreamTimeoutMs() + " ms");
        } catch (IOException e) {
            throw new Failure(502, "upstream: " + e);
        } finally {
            pool.release();
        }
    }

    private static byte[] readAll(InputStream in) throws IOException {
        byte[] b = in.readNBytes(MAX_BODY + 1);
        if (b.length > MAX_BODY) {
            throw new IOException("body over " + MAX_BODY + " bytes");
        }
        return b;
    }

    int poolSize() {
        return cfg.poolSize();
    }
}
