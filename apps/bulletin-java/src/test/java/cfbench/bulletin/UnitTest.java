package cfbench.bulletin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

/** Trace id parsing, JSON encoding, number parsing and the timings buffer, without HTTP or a database. */
class UnitTest {

    @Test
    void traceIds() {
        assertEquals(new TraceId.Parsed(0x0123456789abcdefL, 0xfedcba9876543210L),
                TraceId.fromHeaders("0123456789abcdeffedcba9876543210", null));
        assertEquals(new TraceId.Parsed(0, 0xffffffffffffffffL), TraceId.fromHeaders("FFFFFFFFFFFFFFFF", null));
        assertEquals(new TraceId.Parsed(0, 1), TraceId.fromHeaders(null, "0000000000000001-0000000000000002"));
        assertEquals(new TraceId.Parsed(2, 1),
                TraceId.fromHeaders(null, "00000000000000020000000000000001-0000000000000002-d-0000000000000003"));
        for (String bad : new String[] {"", "0", "abc", "0123456789abcde", "0123456789abcdef0", "0123456789abcdeg",
            "0123456789abcdef0123456789abcdef0", " 0123456789abcdef", "０123456789abcdef"}) {
            assertNull(TraceId.fromHeaders(bad, null), bad);
        }
        for (String bad : new String[] {"1", "0", "d", "0123456789abcdef", "0123456789abcdef-", "0123456789abcdef-0123",
            "0123456789abcdef-0123456789abcdefg", "x-0123456789abcdef", "-0123456789abcdef"}) {
            assertNull(TraceId.fromHeaders(null, bad), bad);
        }
        assertEquals(new TraceId.Parsed(0, 1), TraceId.fromHeaders(null, "0000000000000001-000000000000000A-0"));
        assertEquals(new TraceId.Parsed(0, 1), TraceId.fromHeaders(null, "0000000000000001-0000000000000002-1"));
        for (String bad : new String[] {"0000000000000001-0000000000000002-2", "0000000000000001-0000000000000002-1-x",
            "0000000000000001-0000000000000002-d-00000000000000031", "0000000000000001-0000000000000002-1-3-4",
            "0000000000000001-0000000000000002-", "0000000000000001--0000000000000002"}) {
            assertNull(TraceId.fromHeaders(null, bad), bad);
        }
        // X-B3-TraceId first; when it is malformed, b3
        assertEquals(new TraceId.Parsed(0, 5), TraceId.fromHeaders("0000000000000005", "0000000000000001-0000000000000002"));
        assertEquals(new TraceId.Parsed(0, 1), TraceId.fromHeaders("zz", "0000000000000001-0000000000000002"));
        assertNull(TraceId.fromHeaders("zz", "zz"));
        assertEquals("00000000000000020000000000000001", TraceId.format(2, 1));
    }

    @Test
    void jsonStringsAsJsonStringify() {
        String s = "a\"b\\c/d\b\f\n\r\t\u0000\u001f\u007fé€😀\u2028\ud800x\udc00";
        byte[] out = new JsonOut(8).str(s).toBytes();
        String expected = "\"a\\\"b\\\\c/d\\b\\f\\n\\r\\t\\u0000\\u001f\u007fé€😀\u2028\\ud800x\\udc00\"";
        assertEquals(expected, new String(out, StandardCharsets.UTF_8));
        assertEquals("{\"error\":\"ad 5 not found\"}", new String(JsonOut.error("ad 5 not found"), StandardCharsets.UTF_8));
        assertEquals("-9223372036854775808,0,42,-7",
                new String(new JsonOut(1).num(Long.MIN_VALUE).raw(',').num(0).raw(',').num(42).raw(',').num(-7).toBytes(),
                        StandardCharsets.US_ASCII));
    }

    /** Expected values are what Node's Buffer#toString('utf8') gives (WHATWG decoding). */
    @Test
    void utf8DecodingAsNode() {
        String[][] cases = {
            {"", ""},
            {"41", "0041"},
            {"c3a9", "00e9"},
            {"e282ac", "20ac"},
            {"f09f9880", "d83d de00"},
            {"eda080", "fffd fffd fffd"},
            {"c328", "fffd 0028"},
            {"fffe", "fffd fffd"},
            {"f09f98", "fffd"},
            {"e041", "fffd 0041"},
            {"c0af", "fffd fffd"},
            {"e080af", "fffd fffd fffd"},
            {"f4908080", "fffd fffd fffd fffd"},
            {"f8888080", "fffd fffd fffd fffd"},
            {"80", "fffd"},
            {"bfbf41", "fffd fffd 0041"},
            {"e2", "fffd"},
            {"e282", "fffd"},
            {"ed9fbf", "d7ff"},
            {"eeb080", "ec00"},
            {"f48fbfbf", "dbff dfff"},
            {"f0808080", "fffd fffd fffd fffd"},
            {"c2", "fffd"},
            {"41c2c3a9", "0041 fffd 00e9"},
            {"e0a080", "0800"},
            {"f0908080", "d800 dc00"},
        };
        for (String[] c : cases) {
            byte[] in = java.util.HexFormat.of().parseHex(c[0]);
            String s = Utf8.decode(in, 0, in.length);
            StringBuilder units = new StringBuilder();
            for (int i = 0; i < s.length(); i++) {
                units.append(i == 0 ? "" : " ").append(String.format("%04x", (int) s.charAt(i)));
            }
            assertEquals(c[1], units.toString(), c[0]);
        }
    }

    @Test
    void timestamps() {
        JsonOut out = new JsonOut(4);
        Ads.writeTimestamp(out, 0);
        out.raw(' ');
        Ads.writeTimestamp(out, 1_795_393_749_203L);
        out.raw(' ');
        Ads.writeTimestamp(out, -1);
        assertEquals("1970-01-01T00:00:00.000Z 2026-11-23T00:29:09.203Z 1969-12-31T23:59:59.999Z",
                new String(out.toBytes(), StandardCharsets.US_ASCII));
    }

    @Test
    void positiveIntegers() {
        assertEquals(1, BulletinHandler.parsePositive("1"));
        assertEquals(7, BulletinHandler.parsePositive("0007"));
        assertEquals(Long.MAX_VALUE, BulletinHandler.parsePositive("9223372036854775807"));
        assertEquals(Long.MAX_VALUE, BulletinHandler.parsePositive("000000009223372036854775807"));
        for (String bad : new String[] {"", "0", "000", "-1", "+1", " 1", "1 ", "1.0", "1e3", "9223372036854775808",
            "18446744073709551616", "١"}) {
            assertEquals(-1, BulletinHandler.parsePositive(bad), bad);
        }
    }

    @Test
    void queryParameters() {
        assertEquals("5", BulletinHandler.queryParam("limit=5", "limit"));
        assertEquals("5", BulletinHandler.queryParam("a=1&&limit=5&limit=6", "limit"));
        assertEquals("", BulletinHandler.queryParam("limit", "limit"));
        assertEquals("", BulletinHandler.queryParam("limit=&limit=3", "limit"));
        assertEquals(" 5", BulletinHandler.queryParam("limit=+5", "limit"));
        assertEquals("5", BulletinHandler.queryParam("%6cimit=%35", "limit"));
        assertEquals("%zz", BulletinHandler.queryParam("limit=%zz", "limit"));
        assertEquals("a=b", BulletinHandler.queryParam("limit=a=b", "limit"));
        assertNull(BulletinHandler.queryParam("limits=5", "limit"));
        assertNull(BulletinHandler.queryParam(null, "limit"));
        assertNull(BulletinHandler.queryParam("", "limit"));
    }

    static List<String> ids(String flush) {
        List<String> ids = new ArrayList<>();
        int i = 0;
        while ((i = flush.indexOf("[\"", i)) >= 0) {
            ids.add(flush.substring(i + 2, i + 34));
            i += 34;
        }
        return ids;
    }

    @Test
    void timingsBuffer() {
        Timings t = new Timings(3, false, 4);
        assertEquals("{\"recording\":false,\"capacity\":3,\"buffered\":0,\"dropped\":0}",
                new String(t.statusJson(), StandardCharsets.US_ASCII));
        t.record(0, 1, 300, 30, 1, 2, 4);
        t.record(0xabcdefL, 2, 100, 10, 0, 0, 9);
        t.record(0, 3, 200, 20, 5, 6, 12);
        t.record(0, 4, 50, 5, 0, 0, 0);
        t.record(0, 5, 60, 6, 0, 0, 0);
        assertEquals("{\"recording\":false,\"capacity\":3,\"buffered\":3,\"dropped\":2}",
                new String(t.statusJson(), StandardCharsets.US_ASCII));
        // arrival order, whatever order the responses completed in
        assertEquals("{\"instance_index\":4,\"capacity\":3,\"dropped\":2,\"rows\":["
                        + "[\"0000000000abcdef0000000000000002\",100,0,0,9],"
                        + "[\"00000000000000000000000000000003\",200,5,6,12],"
                        + "[\"00000000000000000000000000000001\",300,1,2,4]]}",
                new String(t.flushJson(), StandardCharsets.US_ASCII));
        assertEquals("{\"instance_index\":4,\"capacity\":3,\"dropped\":0,\"rows\":[]}",
                new String(t.flushJson(), StandardCharsets.US_ASCII));
        for (int round = 0; round < 3; round++) {
            t.record(0, 10 + round, 1, 1, 0, 0, 0);
            assertEquals(List.of(String.format("%032x", 10 + round)),
                    ids(new String(t.flushJson(), StandardCharsets.US_ASCII)));
        }
        // arrival times are System.nanoTime() values, compared as differences
        t.record(0, 7, 2, Long.MIN_VALUE + 5, 0, 0, 0);
        t.record(0, 6, 1, Long.MAX_VALUE - 5, 0, 0, 0);
        assertEquals(List.of(String.format("%032x", 6), String.format("%032x", 7)),
                ids(new String(t.flushJson(), StandardCharsets.US_ASCII)));
        Timings zero = new Timings(0, true, 0);
        zero.record(0, 1, 1, 1, 1, 1, 1);
        assertEquals("{\"instance_index\":0,\"capacity\":0,\"dropped\":1,\"rows\":[]}",
                new String(zero.flushJson(), StandardCharsets.US_ASCII));
    }

    @Test
    void timingsBufferUnderConcurrentFlushes() throws Exception {
        int threads = 8;
        int perThread = 20_000;
        Timings t = new Timings(threads * perThread, true, 0);
        CountDownLatch go = new CountDownLatch(1);
        List<Thread> writers = new ArrayList<>();
        for (int w = 0; w < threads; w++) {
            int writer = w;
            Thread th = new Thread(() -> {
                try {
                    go.await();
                } catch (InterruptedException e) {
                    return;
                }
                for (int i = 0; i < perThread; i++) {
                    t.record(writer, i, i, i, 0, 0, 0);
                }
            });
            th.start();
            writers.add(th);
        }
        Set<String> seen = new HashSet<>();
        int rows = 0;
        go.countDown();
        boolean running = true;
        while (running) {
            running = writers.stream().anyMatch(Thread::isAlive);
            for (String id : ids(new String(t.flushJson(), StandardCharsets.US_ASCII))) {
                rows++;
                seen.add(id);
            }
        }
        for (String id : ids(new String(t.flushJson(), StandardCharsets.US_ASCII))) {
            rows++;
            seen.add(id);
        }
        assertEquals(threads * perThread, rows);
        assertEquals(threads * perThread, seen.size());
    }
}
