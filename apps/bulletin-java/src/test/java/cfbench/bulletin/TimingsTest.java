package cfbench.bulletin;

import static cfbench.bulletin.TestSupport.assertReply;
import static cfbench.bulletin.TestSupport.error;
import static cfbench.bulletin.TestSupport.get;
import static cfbench.bulletin.TestSupport.post;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import cfbench.bulletin.TestSupport.Res;
import com.fasterxml.jackson.databind.JsonNode;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.eclipse.jetty.server.LocalConnector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.util.BufferUtil;
import org.junit.jupiter.api.Test;

/** In-app timings over real HTTP: recording rules, the buffer, flush, the token. */
class TimingsTest {

    private static final String T = "/_cfbench/timings";

    static String id32(int n) {
        return String.format("%016x%016x", 0xabcdef0000000000L + n, 0x1234_5678_0000_0000L + n);
    }

    /** Waits (without timing assertions) until the app has buffered at least n rows. */
    static JsonNode awaitBuffered(App app, int n, String... headers) throws Exception {
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (true) {
            JsonNode s = get(app, T, headers).json();
            if (s.get("buffered").asInt() + s.get("dropped").asInt() >= n) {
                return s;
            }
            if (System.nanoTime() > deadline) {
                fail("timed out waiting for " + n + " timing rows, status " + s);
            }
            Thread.sleep(5);
        }
    }

    static JsonNode flush(App app, String... headers) throws Exception {
        Res r = post(app, T + "/flush", null, headers);
        assertEquals(200, r.status(), r.body());
        assertEquals("application/json", r.header("Content-Type"));
        return r.json();
    }

    static List<String> traceIds(JsonNode flushed) {
        List<String> ids = new ArrayList<>();
        flushed.get("rows").forEach(row -> ids.add(row.get(0).asText()));
        return ids;
    }

    /** Every row: a 32-hex id, at in Unix microseconds, durations that add up within total. */
    static void assertPlausible(JsonNode row) {
        assertEquals(5, row.size(), row.toString());
        assertTrue(row.get(0).asText().matches("[0-9a-f]{32}"), row.toString());
        for (int i = 1; i < 5; i++) {
            assertTrue(row.get(i).isIntegralNumber() && row.get(i).asLong() >= 0, row.toString());
        }
        long at = row.get(1).asLong();
        assertTrue(at > 1_000_000_000_000_000L && at < 100_000_000_000_000_000L, "at is in microseconds: " + row);
        long poolWait = row.get(2).asLong();
        long query = row.get(3).asLong();
        long total = row.get(4).asLong();
        assertTrue(total >= query, row.toString());
        assertTrue(total >= poolWait + query, row.toString());
    }

    @Test
    void offByDefault() throws Exception {
        try (App app = TestSupport.start()) {
            assertReply(get(app, T), 200, "{\"recording\":false,\"capacity\":100000,\"buffered\":0,\"dropped\":0}");
            assertEquals(200, get(app, "/ads/1", "X-B3-TraceId", id32(1)).status());
            assertEquals(200, get(app, "/ads?limit=2", "b3", id32(2) + "-0123456789abcdef-1").status());
            assertReply(get(app, T), 200, "{\"recording\":false,\"capacity\":100000,\"buffered\":0,\"dropped\":0}");
            assertReply(post(app, T + "/flush", null), 200,
                    "{\"instance_index\":0,\"capacity\":100000,\"dropped\":0,\"rows\":[]}");
        }
    }

    @Test
    void recordsTracedAdsRequestsWhileOn() throws Exception {
        try (App app = TestSupport.start("CF_INSTANCE_INDEX", "3")) {
            assertReply(post(app, T + "/start", null), 200,
                    "{\"recording\":true,\"capacity\":100000,\"buffered\":0,\"dropped\":0}");
            List<String> expected = new ArrayList<>();

            // recorded: both headers, 32 and 16 digits, any /ads answer
            get(app, "/ads/1", "X-B3-TraceId", id32(1));
            expected.add(id32(1));
            get(app, "/ads?limit=3", "X-B3-TraceId", "00f067aa0ba902b7");
            expected.add("000000000000000000f067aa0ba902b7");
            get(app, "/ads/2", "X-B3-TraceId", "80F198EE56343BA864FE8B2A57D3EFF7");
            expected.add("80f198ee56343ba864fe8b2a57d3eff7");
            get(app, "/ads/3", "b3", id32(3) + "-e457b5a2e4d86bd1-1-05e3ac9a4f6e3b90");
            expected.add(id32(3));
            get(app, "/ads/4", "b3", "a3ce929d0e0e4736-00f067aa0ba902b7");
            expected.add("0000000000000000a3ce929d0e0e4736");
            get(app, "/ads/999999", "X-B3-TraceId", id32(5));
            expected.add(id32(5));
            get(app, "/ads/0", "X-B3-TraceId", id32(6));
            expected.add(id32(6));
            post(app, "/ads", "{\"title\":\"traced\"}", "X-B3-TraceId", id32(7));
            expected.add(id32(7));
            post(app, "/ads", "{}", "X-B3-TraceId", id32(8));
            expected.add(id32(8));
            get(app, "/ads/6", "X-B3-TraceId", "not-an-id", "b3", id32(9) + "-0123456789abcdef-d");
            expected.add(id32(9));

            // not recorded: no id, malformed ids, other paths
            get(app, "/ads/1");
            get(app, "/ads/1", "X-B3-TraceId", "0123456789abcde");
            get(app, "/ads/1", "X-B3-TraceId", "0123456789abcdef0");
            get(app, "/ads/1", "X-B3-TraceId", "0123456789abcdeg");
            get(app, "/ads/1", "X-B3-TraceId", id32(18) + "0");
            get(app, "/ads/1", "X-B3-TraceId", "");
            get(app, "/ads/1", "X-B3-TraceId", "zz", "b3", "zz-0123456789abcdef");
            get(app, "/ads/1", "b3", id32(10) + "-0123456789abcdef-x");
            get(app, "/ads/1", "b3", "1");
            get(app, "/ads/1", "b3", id32(11));
            get(app, "/ads/1", "b3", id32(12) + "-0123");
            get(app, "/ads/1", "b3", "xyz-0123456789abcdef");
            // a repeated header is its values joined with ", ", which is no trace id
            get(app, "/ads/1", "X-B3-TraceId", id32(19), "X-B3-TraceId", id32(19));
            get(app, "/health", "X-B3-TraceId", id32(13));
            get(app, "/nope", "X-B3-TraceId", id32(14));
            get(app, "/adsx", "X-B3-TraceId", id32(15));
            get(app, T, "X-B3-TraceId", id32(16));

            // a last recorded one, so that waiting for it covers everything sent before
            get(app, "/ads/5", "X-B3-TraceId", id32(17));
            expected.add(id32(17));

            awaitBuffered(app, expected.size());
            JsonNode flushed = flush(app);
            assertEquals(3, flushed.get("instance_index").asInt());
            assertEquals(100000, flushed.get("capacity").asInt());
            assertEquals(0, flushed.get("dropped").asInt());
            assertEquals(expected, traceIds(flushed));
            long lastAt = 0;
            for (JsonNode row : flushed.get("rows")) {
                assertPlausible(row);
                assertTrue(row.get(1).asLong() >= lastAt, "rows in arrival order");
                lastAt = row.get(1).asLong();
            }
            // answered without the database: no pool wait, no query
            JsonNode badId = flushed.get("rows").get(6);
            assertEquals(0, badId.get(2).asLong());
            assertEquals(0, badId.get(3).asLong());

            assertReply(post(app, T + "/flush", null), 200,
                    "{\"instance_index\":3,\"capacity\":100000,\"dropped\":0,\"rows\":[]}");

            // stop: nothing more is recorded, and buffered rows stay until a flush
            get(app, "/ads/1", "X-B3-TraceId", id32(20));
            awaitBuffered(app, 1);
            assertReply(post(app, T + "/stop", null), 200,
                    "{\"recording\":false,\"capacity\":100000,\"buffered\":1,\"dropped\":0}");
            get(app, "/ads/1", "X-B3-TraceId", id32(21));
            assertEquals(List.of(id32(20)), traceIds(flush(app)));
        }
    }

    @Test
    void onFromTheStartWithCfbenchTimingsOn() throws Exception {
        try (App app = TestSupport.start("CFBENCH_TIMINGS", "on")) {
            assertReply(get(app, T), 200, "{\"recording\":true,\"capacity\":100000,\"buffered\":0,\"dropped\":0}");
            get(app, "/ads/1", "X-B3-TraceId", id32(1));
            awaitBuffered(app, 1);
            assertEquals(List.of(id32(1)), traceIds(flush(app)));
        }
    }

    @Test
    void fullBufferCountsDropped() throws Exception {
        try (App app = TestSupport.start("CFBENCH_TIMINGS", "on", "CFBENCH_TIMINGS_CAPACITY", "3")) {
            List<String> sent = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                sent.add(id32(100 + i));
                assertEquals(200, get(app, "/ads/" + (i + 1), "X-B3-TraceId", id32(100 + i)).status());
            }
            awaitBuffered(app, 5);
            assertReply(get(app, T), 200, "{\"recording\":true,\"capacity\":3,\"buffered\":3,\"dropped\":2}");
            JsonNode flushed = flush(app);
            assertEquals(3, flushed.get("capacity").asInt());
            assertEquals(2, flushed.get("dropped").asInt());
            List<String> kept = traceIds(flushed);
            assertEquals(3, kept.size());
            assertTrue(sent.containsAll(kept), kept.toString());
            flushed.get("rows").forEach(TimingsTest::assertPlausible);

            assertReply(get(app, T), 200, "{\"recording\":true,\"capacity\":3,\"buffered\":0,\"dropped\":0}");
            assertReply(post(app, T + "/flush", null), 200,
                    "{\"instance_index\":0,\"capacity\":3,\"dropped\":0,\"rows\":[]}");
            get(app, "/ads/1", "X-B3-TraceId", id32(200));
            awaitBuffered(app, 1);
            assertEquals(List.of(id32(200)), traceIds(flush(app)));
        }
    }

    @Test
    void tokenGuardsTheTimingsEndpoints() throws Exception {
        try (App app = TestSupport.start("CFBENCH_TIMINGS_TOKEN", "s3cret-token")) {
            String denied = error("timings need the bearer token of CFBENCH_TIMINGS_TOKEN");
            String[][] requests = {{"GET", T}, {"POST", T + "/start"}, {"POST", T + "/stop"}, {"POST", T + "/flush"}};
            for (String[] r : requests) {
                assertReply(TestSupport.send(app, r[0], r[1], new byte[0]), 401, denied);
                assertReply(TestSupport.send(app, r[0], r[1], new byte[0], "Authorization", "Bearer wrong"), 401, denied);
                assertReply(TestSupport.send(app, r[0], r[1], new byte[0], "Authorization", "s3cret-token"), 401, denied);
                assertReply(TestSupport.send(app, r[0], r[1], new byte[0], "Authorization", "Bearer s3cret-tokenx"), 401, denied);
                assertReply(TestSupport.send(app, r[0], r[1], new byte[0], "Authorization", "Basic s3cret-token"), 401, denied);
            }
            String[] auth = {"Authorization", "Bearer s3cret-token"};
            assertReply(get(app, T, auth), 200, "{\"recording\":false,\"capacity\":100000,\"buffered\":0,\"dropped\":0}");
            assertReply(post(app, T + "/start", null, auth), 200,
                    "{\"recording\":true,\"capacity\":100000,\"buffered\":0,\"dropped\":0}");
            get(app, "/ads/1", "X-B3-TraceId", id32(1));
            awaitBuffered(app, 1, auth);
            assertEquals(List.of(id32(1)), traceIds(flush(app, auth)));
            assertReply(post(app, T + "/stop", null, auth), 200,
                    "{\"recording\":false,\"capacity\":100000,\"buffered\":0,\"dropped\":0}");
            // the ads themselves need no token
            assertEquals(200, get(app, "/ads/1").status());
        }
    }

    @Test
    void poolWaitIsRecordedWhenThePoolTimesOut() throws Exception {
        try (App app = TestSupport.start("CFBENCH_TIMINGS", "on", "DB_POOL_SIZE", "1", "DB_POOL_TIMEOUT_MS", "250")) {
            try (Connection held = app.dataSource().getConnection()) {
                assertEquals(503, get(app, "/ads/1", "X-B3-TraceId", id32(1)).status());
            }
            awaitBuffered(app, 1);
            JsonNode row = flush(app).get("rows").get(0);
            assertPlausible(row);
            assertTrue(row.get(2).asLong() > 0, row.toString());
            assertEquals(0, row.get(3).asLong(), row.toString());
        }
    }

    @Test
    void concurrentRequestsAndFlushesLoseAndDuplicateNothing() throws Exception {
        int threads = 8;
        int perThread = 200;
        try (App app = TestSupport.start("CFBENCH_TIMINGS", "on")) {
            Map<String, Integer> seen = new HashMap<>();
            AtomicBoolean done = new AtomicBoolean();
            ExecutorService pool = Executors.newFixedThreadPool(threads + 1);
            try {
                Future<List<JsonNode>> flusher = pool.submit(() -> {
                    List<JsonNode> flushes = new ArrayList<>();
                    do {
                        flushes.add(flush(app));
                        Thread.sleep(3);
                    } while (!done.get());
                    return flushes;
                });
                List<Future<?>> workers = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    int thread = t;
                    workers.add(pool.submit(() -> {
                        for (int i = 0; i < perThread; i++) {
                            int n = thread * perThread + i;
                            String path = switch (n % 4) {
                                case 0 -> "/ads/" + (1 + n % 100);
                                case 1 -> "/ads?limit=5&before=" + (2 + n % 99);
                                case 2 -> "/ads/0";
                                default -> "/ads/" + (1 + n % 50);
                            };
                            String[] header = n % 5 == 0
                                    ? new String[] {"b3", id32(n) + "-0123456789abcdef-1"}
                                    : new String[] {"X-B3-TraceId", id32(n)};
                            Res r = get(app, path, header);
                            if (r.status() != 200 && r.status() != 400) {
                                throw new AssertionError(path + " -> " + r.status() + " " + r.body());
                            }
                        }
                        return null;
                    }));
                }
                for (Future<?> w : workers) {
                    w.get();
                }
                done.set(true);
                List<JsonNode> flushes = new ArrayList<>(flusher.get());
                int total = threads * perThread;
                long deadline = System.nanoTime() + 30_000_000_000L;
                int collected = flushes.stream().mapToInt(f -> f.get("rows").size()).sum();
                while (collected < total && System.nanoTime() < deadline) {
                    JsonNode f = flush(app);
                    flushes.add(f);
                    collected += f.get("rows").size();
                    Thread.sleep(5);
                }
                for (JsonNode f : flushes) {
                    assertEquals(0, f.get("dropped").asInt());
                    for (JsonNode row : f.get("rows")) {
                        assertPlausible(row);
                        seen.merge(row.get(0).asText(), 1, Integer::sum);
                    }
                }
                assertEquals(total, seen.size(), "distinct trace ids flushed");
                for (int n = 0; n < total; n++) {
                    assertEquals(1, seen.getOrDefault(id32(n), 0), "rows for trace " + n);
                }
                assertEquals("{\"instance_index\":0,\"capacity\":100000,\"dropped\":0,\"rows\":[]}",
                        post(app, T + "/flush", null).body());
            } finally {
                done.set(true);
                pool.shutdownNow();
            }
        }
    }

    /**
     * total ends as the handler hands the response to Jetty, before any of it is written, so a
     * row never exceeds the time from sending the request to the first byte of its answer (a
     * router in front would otherwise see the app's time exceed its own). Here Jetty writes
     * into a 16-byte buffer that the test empties only after a pause, so the write cannot
     * complete before then: an end mark taken when Jetty reports the write done would come
     * after the pause, long after the first byte (once the first requests have warmed the
     * JVM and the pool up, so that the pause outlasts the request's way to the handler).
     */
    @Test
    void totalEndsBeforeTheResponseIsWritten() throws Exception {
        try (App app = TestSupport.start()) {
            Timings timings = new Timings(16, true, 0);
            Server server = new Server();
            LocalConnector local = new LocalConnector(server);
            server.addConnector(local);
            server.setHandler(new BulletinHandler(new Ads(app.dataSource()), timings, null));
            server.start();
            try {
                for (int i = 0; i < 4; i++) {
                    LocalConnector.LocalEndPoint ep = local.connect();
                    ep.setGrowOutput(false);
                    ep.setOutput(BufferUtil.allocate(16));
                    long sent = System.nanoTime();
                    ep.addInput("GET /ads?limit=20 HTTP/1.1\r\nHost: t\r\nX-B3-TraceId: " + id32(40 + i)
                            + "\r\nConnection: close\r\n\r\n");
                    StringBuilder response = new StringBuilder();
                    ByteBuffer first = ep.waitForOutput(30, TimeUnit.SECONDS);
                    long firstByte = System.nanoTime();
                    if (first == null || !first.hasRemaining()) {
                        fail("no response");
                    }
                    response.append(StandardCharsets.UTF_8.decode(first));
                    Thread.sleep(200);
                    readRest(ep, response);
                    assertTrue(response.toString().startsWith("HTTP/1.1 200 "), response.toString());

                    // The row is recorded in the write's callback, which Jetty may run after it
                    // has shut the connection's output (Connection: close), so wait for it.
                    JsonNode rows = TestSupport.JSON.readTree(timings.flushJson()).get("rows");
                    long rowDeadline = System.nanoTime() + 30_000_000_000L;
                    while (rows.size() == 0 && System.nanoTime() < rowDeadline) {
                        Thread.sleep(5);
                        rows = TestSupport.JSON.readTree(timings.flushJson()).get("rows");
                    }
                    assertEquals(1, rows.size(), rows.toString());
                    assertPlausible(rows.get(0));
                    long total = rows.get(0).get(4).asLong();
                    long toFirstByte = (firstByte - sent) / 1000;
                    assertTrue(total <= toFirstByte, "request " + i + ": total " + total
                            + " µs, but the first byte of the response came " + toFirstByte
                            + " µs after the request was sent");
                }
            } finally {
                server.stop();
            }
        }
    }

    /**
     * Reads the rest of a response until the server shuts its output. A take that lands
     * between Jetty's incomplete flush and its write becoming pending wakes nobody (the
     * write then waits for the 30 s idle timeout and fails), so when nothing comes for a
     * while the output is taken again, which completes a pending write.
     */
    private static void readRest(LocalConnector.LocalEndPoint ep, StringBuilder response) throws Exception {
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (true) {
            ByteBuffer b = ep.waitForOutput(100, TimeUnit.MILLISECONDS);
            if (b == null) {
                if (System.nanoTime() > deadline) {
                    fail("the response stalled after " + response);
                }
                b = ep.takeOutput();
            }
            if (!b.hasRemaining() && ep.isOutputShutdown()) {
                return;
            }
            response.append(StandardCharsets.UTF_8.decode(b));
        }
    }
}
