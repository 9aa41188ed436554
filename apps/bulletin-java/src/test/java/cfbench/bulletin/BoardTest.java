package cfbench.bulletin;

import static cfbench.bulletin.TestSupport.assertReply;
import static cfbench.bulletin.TestSupport.error;
import static cfbench.bulletin.TestSupport.get;
import static cfbench.bulletin.TestSupport.post;
import static cfbench.bulletin.TestSupport.send;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import cfbench.bulletin.TestSupport.Res;
import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The bulletin board's endpoints, over real HTTP, against a real Postgres (DATABASE_URL). */
class BoardTest {

    private static App app;
    /** created_at of the seeded ads (one transaction, so one value), as the app must print it. */
    private static String seededAt;

    private static final String UTC_MS = "to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')";

    @BeforeAll
    static void startOnFreshTable() throws Exception {
        try (Connection c = TestSupport.jdbc(); Statement s = c.createStatement()) {
            s.execute("DROP TABLE IF EXISTS ads");
        }
        app = TestSupport.start();
        seededAt = createdAt(1);
    }

    @AfterAll
    static void stop() {
        if (app != null) {
            app.close();
        }
    }

    static String createdAt(long id) throws Exception {
        try (Connection c = TestSupport.jdbc();
             PreparedStatement ps = c.prepareStatement("SELECT " + UTC_MS + " FROM ads WHERE id = ?")) {
            ps.setLong(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                assertTrue(rs.next(), "ad " + id + " exists");
                return rs.getString(1);
            }
        }
    }

    static long scalar(String sql) throws Exception {
        try (Connection c = TestSupport.jdbc(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /** The exact JSON of seeded ad n. */
    static String seeded(int n) {
        return "{\"id\":" + n + ",\"title\":\"Ad " + n + "\",\"text\":\"Seed advertisement " + n
                + "\",\"price\":" + (n * 10) + ",\"created_at\":\"" + seededAt + "\"}";
    }

    static String page(int fromId, int toId, String next) {
        StringBuilder sb = new StringBuilder("{\"ads\":[");
        for (int n = fromId; n >= toId; n--) {
            if (n != fromId) {
                sb.append(',');
            }
            sb.append(seeded(n));
        }
        return sb.append("],\"next\":").append(next).append('}').toString();
    }

    // --- seeding

    @Test
    void seedsAdsOneToHundredInOrder() throws Exception {
        assertEquals(100, scalar("SELECT count(*) FROM ads WHERE id <= 100"));
        assertEquals(100, scalar("SELECT count(*) FROM ads WHERE id BETWEEN 1 AND 100 AND title = 'Ad ' || id"
                + " AND text = 'Seed advertisement ' || id AND price = id * 10"));
        assertTrue(seededAt.matches("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z"), seededAt);
        assertReply(get(app, "/ads/1"), 200,
                "{\"id\":1,\"title\":\"Ad 1\",\"text\":\"Seed advertisement 1\",\"price\":10,\"created_at\":\"" + seededAt + "\"}");
        assertReply(get(app, "/ads/100"), 200, seeded(100));
    }

    @Test
    void doesNotSeedATableThatHasAds() throws Exception {
        long before = scalar("SELECT count(*) FROM ads");
        try (App second = TestSupport.start()) {
            assertEquals(200, get(second, "/health").status());
        }
        assertEquals(before, scalar("SELECT count(*) FROM ads"));
    }

    @Test
    void createdAtIsUtcWithMillisecondsTruncated() throws Exception {
        long id;
        try (Connection c = TestSupport.jdbc(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("INSERT INTO ads (title, created_at) VALUES ('t', "
                     + "'2026-11-23 12:34:56.789999+02') RETURNING id")) {
            rs.next();
            id = rs.getLong(1);
        }
        assertReply(get(app, "/ads/" + id), 200, "{\"id\":" + id
                + ",\"title\":\"t\",\"text\":\"\",\"price\":0,\"created_at\":\"2026-11-23T10:34:56.789Z\"}");
        try (Connection c = TestSupport.jdbc(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("INSERT INTO ads (title, created_at) VALUES ('u', "
                     + "'0999-01-02 03:04:05+00') RETURNING id")) {
            rs.next();
            id = rs.getLong(1);
        }
        assertReply(get(app, "/ads/" + id), 200, "{\"id\":" + id
                + ",\"title\":\"u\",\"text\":\"\",\"price\":0,\"created_at\":\"0999-01-02T03:04:05.000Z\"}");
    }

    // --- GET /ads

    @Test
    void listsTwentyNewestFirstByDefault() throws Exception {
        assertReply(get(app, "/ads?before=101"), 200, page(100, 81, "81"));
        Res all = get(app, "/ads");
        assertEquals(200, all.status());
        JsonNode ads = all.json().get("ads");
        assertEquals(20, ads.size());
        long maxId = scalar("SELECT max(id) FROM ads");
        assertEquals(maxId, ads.get(0).get("id").asLong());
        assertEquals(ads.get(19).get("id").asLong(), all.json().get("next").asLong());
    }

    @Test
    void pagesWithLimitAndBefore() throws Exception {
        List<Long> ids = new ArrayList<>();
        String before = "101";
        int pages = 0;
        while (true) {
            Res r = get(app, "/ads?limit=30&before=" + before);
            assertEquals(200, r.status(), r.body());
            JsonNode doc = r.json();
            doc.get("ads").forEach(a -> ids.add(a.get("id").asLong()));
            pages++;
            if (doc.get("next").isNull()) {
                assertEquals(10, doc.get("ads").size());
                break;
            }
            assertEquals(30, doc.get("ads").size());
            before = doc.get("next").asText();
        }
        assertEquals(4, pages);
        assertEquals(100, ids.size());
        for (int i = 0; i < 100; i++) {
            assertEquals(100 - i, ids.get(i));
        }
        assertReply(get(app, "/ads?limit=1&before=101"), 200, page(100, 100, "100"));
        assertReply(get(app, "/ads?before=101&limit=100"), 200, page(100, 1, "1"));
    }

    @Test
    void nextIsNullOnlyWhenThePageIsNotFull() throws Exception {
        assertReply(get(app, "/ads?limit=5&before=3"), 200, page(2, 1, "null"));
        assertReply(get(app, "/ads?limit=2&before=3"), 200, page(2, 1, "1"));
        assertReply(get(app, "/ads?limit=2&before=1"), 200, "{\"ads\":[],\"next\":null}");
        assertReply(get(app, "/ads?limit=1&before=2"), 200, page(1, 1, "1"));
        assertEquals(200, get(app, "/ads?limit=100&before=9223372036854775807").status());
    }

    @Test
    void firstOccurrenceOfAQueryParameterCounts() throws Exception {
        assertReply(get(app, "/ads?limit=2&limit=abc&before=3&before=x"), 200, page(2, 1, "1"));
        assertReply(get(app, "/ads?limit=%32&before=3"), 200, page(2, 1, "1"));
    }

    @Test
    void rejectsBadLimit() throws Exception {
        for (String l : new String[] {"0", "101", "abc", "", "-1", "1.5", "+5", "%205", "5x", "99999999999999999999"}) {
            assertReply(get(app, "/ads?limit=" + l), 400, error("limit must be an integer from 1 to 100"));
        }
        assertReply(get(app, "/ads?limit"), 400, error("limit must be an integer from 1 to 100"));
    }

    @Test
    void rejectsBadBefore() throws Exception {
        for (String b : new String[] {"0", "-5", "x", "", "1e3", "9223372036854775808"}) {
            assertReply(get(app, "/ads?before=" + b), 400, error("before must be a positive integer"));
        }
    }

    // --- GET /ads/{id}

    @Test
    void getsOneAd() throws Exception {
        assertReply(get(app, "/ads/7"), 200, seeded(7));
        assertReply(get(app, "/ads/007"), 200, seeded(7));
    }

    @Test
    void unknownAdIs404() throws Exception {
        assertReply(get(app, "/ads/999999"), 404, error("ad 999999 not found"));
        assertReply(get(app, "/ads/9223372036854775807"), 404, error("ad 9223372036854775807 not found"));
        assertReply(get(app, "/ads/0999999"), 404, error("ad 999999 not found"));
    }

    @Test
    void badIdIs400() throws Exception {
        for (String id : new String[] {"0", "-1", "abc", "1.0", "1e3", "9223372036854775808", "99999999999999999999", "%31", ""}) {
            assertReply(get(app, "/ads/" + id), 400, error("id must be a positive integer"));
        }
    }

    // --- POST /ads

    @Test
    void createsAnAd() throws Exception {
        Res r = post(app, "/ads", "{\"price\":12000,\"title\":\"Bike\",\"extra\":[1,{\"a\":null}],\"text\":\"Red, barely used\"}");
        assertEquals(201, r.status(), r.body());
        long id = r.json().get("id").asLong();
        assertTrue(id > 100);
        assertEquals("/ads/" + id, r.header("Location"));
        String expected = "{\"id\":" + id + ",\"title\":\"Bike\",\"text\":\"Red, barely used\",\"price\":12000,\"created_at\":\""
                + createdAt(id) + "\"}";
        assertReply(r, 201, expected);
        assertReply(get(app, "/ads/" + id), 200, expected);
    }

    @Test
    void createDefaultsTextAndPrice() throws Exception {
        Res r = post(app, "/ads", "{\"title\":\"x\"}");
        long id = r.json().get("id").asLong();
        assertReply(r, 201, "{\"id\":" + id + ",\"title\":\"x\",\"text\":\"\",\"price\":0,\"created_at\":\"" + createdAt(id) + "\"}");
    }

    @Test
    void acceptsIntegralNumbersAndBoundaries() throws Exception {
        assertEquals(5, post(app, "/ads", "{\"title\":\"a\",\"price\":5.0}").json().get("price").asInt());
        assertEquals(500, post(app, "/ads", "{\"title\":\"a\",\"price\":5e2}").json().get("price").asInt());
        assertEquals(0, post(app, "/ads", "{\"title\":\"a\",\"price\":-0}").json().get("price").asInt());
        assertEquals(1_000_000_000, post(app, "/ads", "{\"title\":\"a\",\"price\":1000000000}").json().get("price").asInt());
        String t200 = "t".repeat(200);
        String x4000 = "x".repeat(4000);
        Res r = post(app, "/ads", "{\"title\":\"" + t200 + "\",\"text\":\"" + x4000 + "\"}");
        assertEquals(201, r.status(), r.body());
        assertEquals(t200, r.json().get("title").asText());
        assertEquals(x4000, r.json().get("text").asText());
        // the last of duplicate keys wins, as in JSON.parse
        assertEquals("b", post(app, "/ads", "{\"title\":\"a\",\"title\":\"b\"}").json().get("title").asText());
        // 200 UTF-16 code units (100 emoji) is the limit
        assertEquals(201, post(app, "/ads", "{\"title\":\"" + "\uD83D\uDE00".repeat(100) + "\"}").status());
        assertReply(post(app, "/ads", "{\"title\":\"" + "\uD83D\uDE00".repeat(100) + "a\"}"), 400,
                error("title must be a string of 1 to 200 characters"));
    }

    @Test
    void escapesStringsAsJsonStringify() throws Exception {
        String title = "ü😀 \"q\" \\ / \n\t\r\b\f \u0001\u001f\u007f\u2028";
        String body = "{\"title\":" + TestSupport.JSON.writeValueAsString(title) + "}";
        Res r = post(app, "/ads", body);
        assertEquals(201, r.status(), r.body());
        assertEquals(title, r.json().get("title").asText());
        assertTrue(r.body().contains("\"title\":\"ü😀 \\\"q\\\" \\\\ / \\n\\t\\r\\b\\f \\u0001\\u001f\u007f\u2028\""), r.body());
    }

    @Test
    void loneSurrogatesAreStoredAsReplacementCharacters() throws Exception {
        Res r = post(app, "/ads", "{\"title\":\"a\\ud800b\",\"text\":\"\\udc00\\ud83d\\ude00\"}");
        assertEquals(201, r.status(), r.body());
        assertEquals("a\uFFFDb", r.json().get("title").asText());
        assertEquals("\uFFFD\uD83D\uDE00", r.json().get("text").asText());
    }

    @Test
    void databaseErrorsAre503() throws Exception {
        // Postgres text cannot hold NUL: the insert fails in the database
        assertReply(post(app, "/ads", "{\"title\":\"a\\u0000b\"}"), 503, error("database unavailable"));
    }

    @Test
    void rejectsInvalidBodiesNamingTheField() throws Exception {
        String body = "body must be a JSON object";
        String title = "title must be a string of 1 to 200 characters";
        String text = "text must be a string of at most 4000 characters";
        String price = "price must be an integer from 0 to 1000000000";
        String[][] cases = {
            {"", body}, {"nope", body}, {"[1]", body}, {"null", body}, {"\"x\"", body}, {"42", body},
            {"{\"title\":\"a\"", body}, {"{\"title\":\"a\"} x", body}, {"{'title':'a'}", body},
            {"{}", title}, {"{\"title\":\"\"}", title}, {"{\"title\":null}", title}, {"{\"title\":5}", title},
            {"{\"title\":[\"a\"]}", title}, {"{\"title\":\"" + "t".repeat(201) + "\"}", title},
            {"{\"text\":5}", title},
            {"{\"title\":\"a\",\"text\":5}", text}, {"{\"title\":\"a\",\"text\":null}", text},
            {"{\"title\":\"a\",\"text\":\"" + "x".repeat(4001) + "\"}", text},
            {"{\"title\":\"a\",\"text\":5,\"price\":-1}", text},
            {"{\"title\":\"a\",\"price\":-1}", price}, {"{\"title\":\"a\",\"price\":1000000001}", price},
            {"{\"title\":\"a\",\"price\":1.5}", price}, {"{\"title\":\"a\",\"price\":\"5\"}", price},
            {"{\"title\":\"a\",\"price\":true}", price}, {"{\"title\":\"a\",\"price\":null}", price},
            {"{\"title\":\"a\",\"price\":1e400}", price}, {"{\"title\":\"a\",\"price\":99999999999999999999999}", price},
        };
        long count = scalar("SELECT count(*) FROM ads");
        for (String[] c : cases) {
            Res r = post(app, "/ads", c[0]);
            assertEquals(400, r.status(), c[0]);
            assertEquals(error(c[1]), r.body(), c[0]);
            assertEquals("application/json", r.header("Content-Type"));
        }
        assertEquals(count, scalar("SELECT count(*) FROM ads"));
    }

    @Test
    void bodyOver64KiBIs413() throws Exception {
        String prefix = "{\"title\":\"big\"";
        byte[] exact = (prefix + " ".repeat(65536 - prefix.length() - 1) + "}").getBytes(StandardCharsets.US_ASCII);
        assertEquals(65536, exact.length);
        assertEquals(201, send(app, "POST", "/ads", exact).status());

        byte[] over = (prefix + " ".repeat(65537 - prefix.length() - 1) + "}").getBytes(StandardCharsets.US_ASCII);
        assertReply(send(app, "POST", "/ads", over), 413, error("body too large"));
        assertReply(TestSupport.sendChunked(app, "POST", "/ads", over), 413, error("body too large"));
        assertReply(TestSupport.sendChunked(app, "POST", "/ads", new byte[200_000]), 413, error("body too large"));
        assertEquals(201, TestSupport.sendChunked(app, "POST", "/ads", exact).status());
        // a client that waits for "100 Continue" gets the 413 without sending the body
        String answer = TestSupport.raw(app, "POST /ads HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + "Content-Length: 65537\r\nExpect: 100-continue\r\n\r\n");
        assertTrue(answer.startsWith("HTTP/1.1 413 "), answer);
        assertTrue(answer.endsWith("\r\n\r\n" + error("body too large")), answer);
        // the app keeps serving afterwards
        assertReply(get(app, "/ads/3"), 200, seeded(3));
    }

    // --- other paths and methods

    @Test
    void otherMethodsAre405WithAllow() throws Exception {
        String[][] cases = {
            {"DELETE", "/ads", "GET, POST"}, {"PUT", "/ads", "GET, POST"}, {"PATCH", "/ads", "GET, POST"},
            {"DELETE", "/ads/1", "GET"}, {"POST", "/ads/1", "GET"}, {"PUT", "/ads/abc", "GET"},
            {"POST", "/health", "GET"}, {"DELETE", "/health", "GET"},
            {"POST", "/_cfbench/timings", "GET"}, {"GET", "/_cfbench/timings/flush", "POST"},
            {"GET", "/_cfbench/timings/start", "POST"}, {"PUT", "/_cfbench/timings/stop", "POST"},
        };
        for (String[] c : cases) {
            Res r = send(app, c[0], c[1], new byte[0]);
            assertReply(r, 405, error("method not allowed"));
            assertEquals(c[2], r.header("Allow"), c[0] + " " + c[1]);
        }
    }

    @Test
    void unknownPathsAre404() throws Exception {
        for (String p : new String[] {"/", "/nope", "/ads/1/x", "/ads//", "/adsx", "/health/x", "/ADS",
            "/_cfbench/timings/nope", "/_cfbench"}) {
            Res r = get(app, p);
            assertReply(r, 404, error("not found"));
            assertNull(r.header("Allow"));
        }
        assertReply(send(app, "DELETE", "/nope", new byte[0]), 404, error("not found"));
    }

    @Test
    void health() throws Exception {
        assertReply(get(app, "/health"), 200, "{\"status\":\"ok\"}");
        assertReply(get(app, "/health?x=1"), 200, "{\"status\":\"ok\"}");
    }

    // --- sleep_ms

    @Test
    void sleepAnswersAsWithout() throws Exception {
        assertReply(get(app, "/ads/42?sleep_ms=20"), 200, seeded(42));
        assertReply(get(app, "/ads/42?sleep_ms=0"), 200, seeded(42));
        assertReply(get(app, "/ads?before=101&limit=3&sleep_ms=005"), 200, page(100, 98, "98"));
        assertReply(get(app, "/ads?before=3&sleep_ms=1&sleep_ms=x"), 200, page(2, 1, "null"));
    }

    @Test
    void rejectsBadSleepAfterTheOtherParameters() throws Exception {
        for (String v : new String[] {"-1", "10001", "abc", "", "1.5", "+5", "%2B5", "1e3", "99999999999999999999"}) {
            assertReply(get(app, "/ads/1?sleep_ms=" + v), 400, error("sleep_ms must be an integer from 0 to 10000"));
            assertReply(get(app, "/ads?sleep_ms=" + v), 400, error("sleep_ms must be an integer from 0 to 10000"));
        }
        assertReply(get(app, "/ads/0?sleep_ms=x"), 400, error("id must be a positive integer"));
        assertReply(get(app, "/ads?limit=0&sleep_ms=x"), 400, error("limit must be an integer from 1 to 100"));
    }

    @Test
    void serverThreadsSizeJettysPool() throws Exception {
        try (App few = TestSupport.start("SERVER_THREADS", String.valueOf(Config.MIN_SERVER_THREADS))) {
            assertEquals(Config.MIN_SERVER_THREADS, few.serverThreads());
            assertReply(get(few, "/ads/1"), 200, seeded(1));
        }
    }

    @Test
    void sleepHoldsThePooledConnection() throws Exception {
        try (App small = TestSupport.start("DB_POOL_SIZE", "1", "DB_POOL_TIMEOUT_MS", "250")) {
            CompletableFuture<Res> slow = CompletableFuture.supplyAsync(() -> {
                try {
                    return get(small, "/ads/1?sleep_ms=3000");
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            // Once the slow request sleeps on the pool's only connection, the next one waits for it, past the
            // pool timeout.
            for (int i = 0; scalar("SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'SELECT pg_sleep%'") == 0; i++) {
                assertTrue(i < 2000, "the slow request never reached pg_sleep");
                Thread.sleep(10);
            }
            assertReply(get(small, "/ads?limit=1"), 503, error("database unavailable"));
            assertReply(slow.get(), 200, seeded(1));
        }
    }

    @Test
    void poolTimeoutIs503() throws Exception {
        try (App small = TestSupport.start("DB_POOL_SIZE", "1", "DB_POOL_TIMEOUT_MS", "250")) {
            assertReply(get(small, "/ads/2"), 200, seeded(2));
            try (Connection held = small.dataSource().getConnection()) {
                assertReply(get(small, "/ads/2"), 503, error("database unavailable"));
                assertReply(get(small, "/ads?limit=1"), 503, error("database unavailable"));
                assertReply(post(small, "/ads", "{\"title\":\"a\"}"), 503, error("database unavailable"));
                // no database needed for these
                assertReply(get(small, "/ads/0"), 400, error("id must be a positive integer"));
                assertReply(get(small, "/health"), 200, "{\"status\":\"ok\"}");
                assertTrue(held.isValid(1));
            }
            assertReply(get(small, "/ads/2"), 200, seeded(2));
        }
    }
}
