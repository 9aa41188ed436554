package cfbench.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The proxy against an upstream on loopback that records what it got. */
class ProxyTest {

    record Seen(String host, String uri, Map<String, List<String>> headers, int remotePort) {
    }

    static HttpServer up;
    static final ConcurrentLinkedQueue<Seen> seen = new ConcurrentLinkedQueue<>();
    static final AtomicInteger inFlight = new AtomicInteger();
    static final AtomicInteger maxInFlight = new AtomicInteger();
    static final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    final List<Main.Server> started = new ArrayList<>();

    @BeforeAll
    static void upstream() throws IOException {
        up = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 128);
        up.setExecutor(Executors.newCachedThreadPool());
        up.createContext("/", ex -> {
            try (ex) {
                seen.add(new Seen(ex.getRequestHeaders().getFirst("Host"), ex.getRequestURI().toString(),
                        Map.copyOf(ex.getRequestHeaders()), ex.getRemoteAddress().getPort()));
                maxInFlight.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
                String path = ex.getRequestURI().getPath();
                String query = ex.getRequestURI().getQuery();
                try {
                    if (path.equals("/slow")) {
                        Thread.sleep(Long.parseLong(query.substring("ms=".length())));
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                } finally {
                    inFlight.decrementAndGet();
                }
                byte[] body = path.equals("/missing") ? "nope".getBytes(StandardCharsets.UTF_8)
                        : "x".repeat(query != null && query.startsWith("size=") ? Integer.parseInt(query.substring(5)) : 10)
                                .getBytes(StandardCharsets.UTF_8);
                ex.getResponseHeaders().set("X-Upstream", "yes");
                ex.getResponseHeaders().set("Content-Type", "text/plain");
                ex.sendResponseHeaders(path.equals("/missing") ? 404 : 200, body.length);
                try (OutputStream os = ex.getResponseBody()) {
                    os.write(body);
                }
            }
        });
        up.start();
    }

    @AfterAll
    static void stopUpstream() {
        up.stop(0);
    }

    @AfterEach
    void stopProxies() {
        started.forEach(Main.Server::close);
    }

    Main.Server proxy(String... kv) {
        Map<String, String> env = new HashMap<>(Map.of("PORT", "0", "UPSTREAM_URL", "http://127.0.0.1:" + up.getAddress().getPort()));
        for (int i = 0; i < kv.length; i += 2) {
            env.put(kv[i], kv[i + 1]);
        }
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        Main.Server s = Main.start(env, new PrintStream(new ByteArrayOutputStream()), new PrintStream(err));
        assertNotNull(s, err.toString(StandardCharsets.UTF_8));
        started.add(s);
        return s;
    }

    static HttpResponse<String> get(Main.Server s, String path, String... headers) throws Exception {
        return send(s, "GET", path, headers);
    }

    static HttpResponse<String> send(Main.Server s, String method, String path, String... headers) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + s.port() + path))
                .method(method, HttpRequest.BodyPublishers.noBody());
        if (headers.length > 0) {
            b.headers(headers);
        }
        return client.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    static Seen last() {
        Seen l = null;
        for (Seen x : seen) {
            l = x;
        }
        return l;
    }

    @Test
    void forwardsGetWithStatusBodyAndEndToEndHeaders() throws Exception {
        Main.Server s = proxy();
        HttpResponse<String> r = get(s, "/bytes?size=10240", "X-B3-TraceId", "ab".repeat(16), "Proxy-Authorization", "x");
        assertEquals(200, r.statusCode());
        assertEquals(10240, r.body().length());
        assertEquals("yes", r.headers().firstValue("X-Upstream").orElse(null));
        Seen got = last();
        assertEquals("/bytes?size=10240", got.uri());
        assertEquals("127.0.0.1:" + up.getAddress().getPort(), got.host());
        assertEquals(List.of("ab".repeat(16)), got.headers().get("X-b3-traceid"));
        assertNull(got.headers().get("Proxy-authorization"));
        HttpResponse<String> miss = get(s, "/missing");
        assertEquals(404, miss.statusCode());
        assertEquals("nope", miss.body());
    }

    @Test
    void basePathAndConnectTo() throws Exception {
        Main.Server s = proxy("UPSTREAM_URL", "http://stub.apps.localhost/base/", "CONNECT_TO", "127.0.0.1:" + up.getAddress().getPort());
        assertEquals(200, get(s, "/hello?a=1").statusCode());
        assertEquals("/base/hello?a=1", last().uri());
        assertEquals("stub.apps.localhost", last().host());
    }

    @Test
    void atMostPoolSizeAtOnceOnKeptAliveConnections() throws Exception {
        Main.Server s = proxy("UPSTREAM_POOL_SIZE", "2");
        Set<Integer> before = ConcurrentHashMap.newKeySet();
        seen.forEach(x -> before.add(x.remotePort()));
        maxInFlight.set(0);
        for (int round = 0; round < 3; round++) {
            List<CompletableFuture<HttpResponse<String>>> rs = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                rs.add(client.sendAsync(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + s.port() + "/slow?ms=20")).build(),
                        HttpResponse.BodyHandlers.ofString()));
            }
            for (CompletableFuture<HttpResponse<String>> r : rs) {
                assertEquals(200, r.get().statusCode());
            }
        }
        Set<Integer> opened = ConcurrentHashMap.newKeySet();
        seen.forEach(x -> {
            if (!before.contains(x.remotePort())) {
                opened.add(x.remotePort());
            }
        });
        assertTrue(maxInFlight.get() >= 1 && maxInFlight.get() <= 2, "upstream requests at once: " + maxInFlight.get());
        assertTrue(!opened.isEmpty() && opened.size() <= 2, "24 requests over " + opened.size() + " connections, want 2 at most");
    }

    @Test
    void poolTimeoutIs503SlowUpstream504NoUpstream502() throws Exception {
        Main.Server s = proxy("UPSTREAM_POOL_SIZE", "1", "UPSTREAM_POOL_TIMEOUT_MS", "50");
        int n = seen.size();
        CompletableFuture<HttpResponse<String>> holding = client.sendAsync(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + s.port() + "/slow?ms=2000")).build(), HttpResponse.BodyHandlers.ofString());
        while (seen.size() == n) {
            Thread.sleep(5);
        }
        HttpResponse<String> waited = get(s, "/hello"); // the one connection is busy for 2 s
        assertEquals(503, waited.statusCode());
        assertTrue(waited.body().contains("no upstream connection free within 50 ms (UPSTREAM_POOL_SIZE 1)"), waited.body());
        assertEquals(200, holding.get().statusCode());
        assertEquals(200, get(s, "/hello").statusCode());

        Main.Server slow = proxy("UPSTREAM_TIMEOUT_MS", "50");
        assertEquals(504, get(slow, "/slow?ms=3000").statusCode());

        int dead;
        try (ServerSocket ss = new ServerSocket(0)) {
            dead = ss.getLocalPort();
        }
        Main.Server none = proxy("UPSTREAM_URL", "http://127.0.0.1:" + dead);
        HttpResponse<String> r = get(none, "/hello");
        assertEquals(502, r.statusCode());
        assertTrue(r.body().startsWith("{\"error\":\"upstream: java.net.ConnectException"), r.body());
    }

    @Test
    void healthzIsAnsweredOtherMethodsAre405() throws Exception {
        Main.Server s = proxy();
        int n = seen.size();
        HttpResponse<String> h = get(s, "/healthz");
        assertEquals(200, h.statusCode());
        assertEquals("{\"status\":\"ok\"}", h.body());
        HttpResponse<String> p = send(s, "POST", "/hello");
        assertEquals(405, p.statusCode());
        assertEquals("GET", p.headers().firstValue("Allow").orElse(null));
        assertEquals(n, seen.size());
    }

    @Test
    void timingsOneRowPerTracedRequestNestedBehindTheToken() throws Exception {
        Main.Server s = proxy("CFBENCH_TIMINGS", "on", "CFBENCH_TIMINGS_TOKEN", "sesame", "CF_INSTANCE_INDEX", "3");
        assertEquals(401, send(s, "POST", "/_cfbench/timings/flush").statusCode());
        assertEquals(401, send(s, "POST", "/_cfbench/timings/flush", "Authorization", "Bearer nope").statusCode());
        get(s, "/slow?ms=30", "X-B3-TraceId", "0123456789abcdef");
        get(s, "/hello", "b3", "fedcba9876543210fedcba9876543210-0123456789abcdef-1");
        get(s, "/hello");
        get(s, "/healthz", "X-B3-TraceId", "1111111111111111");
        assertEquals("{\"recording\":true,\"capacity\":100000,\"buffered\":2,\"dropped\":0}",
                get(s, "/_cfbench/timings", "Authorization", "Bearer sesame").body());
        String f = send(s, "POST", "/_cfbench/timings/flush", "Authorization", "Bearer sesame").body();
        assertTrue(f.startsWith("{\"instance_index\":3,\"capacity\":100000,\"dropped\":0,\"rows\":[[\"00000000000000000123456789abcdef\","), f);
        assertTrue(f.contains("],[\"fedcba9876543210fedcba9876543210\","), f);
        String[] row = f.substring(f.indexOf("[[") + 2, f.indexOf("]")).split(",");
        long at = Long.parseLong(row[1]);
        long poolWait = Long.parseLong(row[2]);
        long upstreamUs = Long.parseLong(row[3]);
        long total = Long.parseLong(row[4]);
        assertTrue(Math.abs(at - System.currentTimeMillis() * 1000) < 60_000_000L, "at " + at);
        assertTrue(upstreamUs >= 30_000, "the upstream held it 30 ms: query_us " + upstreamUs);
        assertTrue(poolWait + upstreamUs <= total, f);
        assertTrue(send(s, "POST", "/_cfbench/timings/flush", "Authorization", "Bearer sesame").body().endsWith("\"rows\":[]}"));
    }

    @Test
    void badEnvironmentIsOneLine() {
        String[][] cases = {
            {"no upstream: set UPSTREAM_URL"},
            {"UPSTREAM_URL must be http(s)://host[:port][/base-path], not \"ftp://x\"", "UPSTREAM_URL", "ftp://x"},
            {"PORT must be an integer from 0 to 65535, not \"eighty\"", "UPSTREAM_URL", "http://s", "PORT", "eighty"},
            {"PROXY_THREADS must be an integer from 1 to 10000, not \"0\"", "UPSTREAM_URL", "http://s", "PROXY_THREADS", "0"},
            {"CONNECT_TO needs an http:// UPSTREAM_URL", "UPSTREAM_URL", "https://s", "CONNECT_TO", "127.0.0.1:1"},
            {"VCAP_APPLICATION is not a JSON object", "UPSTREAM_URL", "http://s", "VCAP_APPLICATION", "[1]"},
            {"UPSTREAM_URL http://proxy.apps.example.com is this app's own route", "UPSTREAM_URL", "http://proxy.apps.example.com",
                "VCAP_APPLICATION", "{\"application_name\":\"px\",\"uris\":[\"proxy.apps.example.com\"]}"},
        };
        for (String[] c : cases) {
            Map<String, String> env = new HashMap<>();
            for (int i = 1; i < c.length; i += 2) {
                env.put(c[i], c[i + 1]);
            }
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            assertNull(Main.start(env, new PrintStream(out), new PrintStream(err)));
            String e = err.toString(StandardCharsets.UTF_8);
            assertTrue(e.startsWith("proxy-java: " + c[0]) && e.endsWith("\n") && e.split("\n").length == 1, e);
            assertEquals("", out.toString(StandardCharsets.UTF_8));
        }
    }
}
