package cfbench.bulletin;

import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.sql.SQLException;
import java.util.Arrays;
import java.util.List;
import org.eclipse.jetty.http.HttpFields;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

/** Routes the bulletin board's requests (apps/README.md, "Endpoints" and "In-app timings"). */
final class BulletinHandler extends Handler.Abstract {

    static final int MAX_BODY = 64 * 1024;
    /** After a 413, up to this much more of the body is read and discarded so the connection ends cleanly. */
    private static final int MAX_DRAIN = 1024 * 1024;

    static final String MSG_NOT_FOUND = "not found";
    static final String MSG_METHOD = "method not allowed";
    static final String MSG_TOO_LARGE = "body too large";
    static final String MSG_BODY = "body must be a JSON object";
    static final String MSG_TITLE = "title must be a string of 1 to 200 characters";
    static final String MSG_TEXT = "text must be a string of at most 4000 characters";
    static final String MSG_PRICE = "price must be an integer from 0 to 1000000000";
    static final String MSG_LIMIT = "limit must be an integer from 1 to 100";
    static final String MSG_BEFORE = "before must be a positive integer";
    static final String MSG_ID = "id must be a positive integer";
    static final String MSG_SLEEP = "sleep_ms must be an integer from 0 to " + Ads.MAX_SLEEP_MS;
    static final String MSG_UNAVAILABLE = "database unavailable";
    static final String MSG_INTERNAL = "internal error";
    static final String MSG_TOKEN = "timings need the bearer token of CFBENCH_TIMINGS_TOKEN";

    private static final String TIMINGS = "/_cfbench/timings";
    private static final byte[] HEALTH = "{\"status\":\"ok\"}".getBytes(StandardCharsets.US_ASCII);

    private static final ObjectMapper MAPPER = new ObjectMapper()
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

    static {
        // A 64 KiB body cannot nest deeper or hold longer numbers than this; JSON.parse has no such limits.
        MAPPER.getFactory().setStreamReadConstraints(StreamReadConstraints.builder()
                .maxNestingDepth(MAX_BODY + 1)
                .maxNumberLength(MAX_BODY + 1)
                .build());
    }

    /** A response: status, JSON body, and at most one extra header (Allow or Location). */
    private record Reply(int status, byte[] body, String header, String headerValue) {
        Reply(int status, byte[] body) {
            this(status, body, null, null);
        }
    }

    private static final Reply NOT_FOUND = new Reply(404, JsonOut.error(MSG_NOT_FOUND));

    private final Ads ads;
    private final Timings timings;
    private final byte[] bearer; // "Bearer TOKEN", or null
    private final MicroClock clock = new MicroClock();

    BulletinHandler(Ads ads, Timings timings, String token) {
        this.ads = ads;
        this.timings = timings;
        this.bearer = token == null ? null : ("Bearer " + token).getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public boolean handle(Request request, Response response, Callback callback) {
        // Not request.getBeginNanoTime(): on a kept-alive connection Jetty may start
        // that clock before the request's bytes arrive, counting the idle gap as app time.
        long begin = System.nanoTime();
        String method = request.getMethod();
        String path = request.getHttpURI().getPath();
        if (path == null) {
            path = "";
        }

        TraceId.Parsed trace = null;
        long atMicros = 0;
        if (timings.recording() && (path.equals("/ads") || path.startsWith("/ads/"))) {
            HttpFields h = request.getHeaders();
            trace = TraceId.fromHeaders(header(h, "X-B3-TraceId"), header(h, "b3"));
            if (trace != null) {
                atMicros = clock.at(begin);
            }
        }

        Ads.Meter meter = new Ads.Meter();
        Reply reply;
        try {
            reply = route(method, path, request, meter);
        } catch (IOException e) {
            // reading the body failed: the client went away
            callback.failed(e);
            return true;
        } catch (Throwable t) {
            // Any failure of the database (connecting, pool timeout, a statement) is a 503.
            if (t instanceof SQLException) {
                reply = new Reply(503, JsonOut.error(MSG_UNAVAILABLE));
            } else {
                System.err.println("bulletin-java: " + method + " " + path + ": " + oneLine(t));
                reply = new Reply(500, JsonOut.error(MSG_INTERNAL));
            }
        }

        response.setStatus(reply.status());
        HttpFields.Mutable h = response.getHeaders();
        h.put(HttpHeader.CONTENT_TYPE, "application/json");
        h.put(HttpHeader.CONTENT_LENGTH, reply.body().length);
        if (reply.header() != null) {
            h.put(reply.header(), reply.headerValue());
        }
        Callback done = callback;
        if (trace != null) {
            // total ends here, as the response is handed to Jetty, not when Jetty reports it
            // written: the write puts the bytes where the router reads them, so the router may
            // take its own end mark before this thread gets to run the write's callback, and
            // the app's time would exceed the router's (5% of requests on one machine).
            long handedNanos = System.nanoTime();
            done = new Recorder(callback, trace, atMicros, begin, handedNanos, meter);
        }
        response.write(true, ByteBuffer.wrap(reply.body()), done);
        return true;
    }

    /** Records the row once the response has been written completely, then completes the request. */
    private final class Recorder implements Callback {
        private final Callback next;
        private final TraceId.Parsed trace;
        private final long atMicros;
        private final long beginNanos;
        private final long handedNanos;
        private final Ads.Meter meter;

        Recorder(Callback next, TraceId.Parsed trace, long atMicros, long beginNanos, long handedNanos,
                 Ads.Meter meter) {
            this.next = next;
            this.trace = trace;
            this.atMicros = atMicros;
            this.beginNanos = beginNanos;
            this.handedNanos = handedNanos;
            this.meter = meter;
        }

        @Override
        public void succeeded() {
            long totalUs = (handedNanos - beginNanos) / 1000;
            timings.record(trace.hi(), trace.lo(), atMicros, beginNanos, meter.poolWaitNanos / 1000,
                    meter.queryNanos / 1000, totalUs);
            next.succeeded();
        }

        @Override
        public void failed(Throwable x) {
            next.failed(x);
        }

        @Override
        public InvocationType getInvocationType() {
            return next.getInvocationType();
        }
    }

    /** A header's value; a repeated header's values joined with ", " (as Node's http module does). */
    private static String header(HttpFields h, String name) {
        String first = h.get(name);
        if (first == null) {
            return null;
        }
        List<String> all = h.getValuesList(name);
        return all.size() <= 1 ? first : String.join(", ", all);
    }

    private Reply route(String method, String path, Request request, Ads.Meter meter) throws Exception {
        boolean get = "GET".equals(method);
        boolean post = "POST".equals(method);
        if (path.equals("/ads")) {
            if (get) {
                return list(request.getHttpURI().getQuery(), meter);
            }
            if (post) {
                return create(request, meter);
            }
            return methodNotAllowed("GET, POST");
        }
        if (path.startsWith("/ads/")) {
            String id = path.substring(5);
            if (id.indexOf('/') >= 0) {
                return NOT_FOUND;
            }
            if (!get) {
                return methodNotAllowed("GET");
            }
            return getAd(id, request.getHttpURI().getQuery(), meter);
        }
        if (path.equals("/health")) {
            return get ? new Reply(200, HEALTH) : methodNotAllowed("GET");
        }
        if (path.equals(TIMINGS)) {
            if (!get) {
                return methodNotAllowed("GET");
            }
            if (!authorized(request)) {
                return new Reply(401, JsonOut.error(MSG_TOKEN));
            }
            return new Reply(200, timings.statusJson());
        }
        if (path.startsWith(TIMINGS + "/")) {
            String action = path.substring(TIMINGS.length() + 1);
            if (!action.equals("start") && !action.equals("stop") && !action.equals("flush")) {
                return NOT_FOUND;
            }
            if (!post) {
                return methodNotAllowed("POST");
            }
            if (!authorized(request)) {
                return new Reply(401, JsonOut.error(MSG_TOKEN));
            }
            switch (action) {
                case "start" -> {
                    timings.setRecording(true);
                    return new Reply(200, timings.statusJson());
                }
                case "stop" -> {
                    timings.setRecording(false);
                    return new Reply(200, timings.statusJson());
                }
                default -> {
                    return new Reply(200, timings.flushJson());
                }
            }
        }
        return NOT_FOUND;
    }

    private static Reply methodNotAllowed(String allow) {
        return new Reply(405, JsonOut.error(MSG_METHOD), "Allow", allow);
    }

    private boolean authorized(Request request) {
        if (bearer == null) {
            return true;
        }
        String auth = request.getHeaders().get(HttpHeader.AUTHORIZATION);
        return auth != null && MessageDigest.isEqual(bearer, auth.getBytes(StandardCharsets.UTF_8));
    }

    // GET /ads?limit=L&before=B

    private Reply list(String query, Ads.Meter meter) throws Exception {
        String limitParam = queryParam(query, "limit");
        String beforeParam = queryParam(query, "before");
        int limit = 20;
        if (limitParam != null) {
            long l = parsePositive(limitParam);
            if (l < 1 || l > 100) {
                return new Reply(400, JsonOut.error(MSG_LIMIT));
            }
            limit = (int) l;
        }
        long before = 0;
        if (beforeParam != null) {
            before = parsePositive(beforeParam);
            if (before < 1) {
                return new Reply(400, JsonOut.error(MSG_BEFORE));
            }
        }
        int sleepMs = sleepMs(query);
        if (sleepMs < 0) {
            return new Reply(400, JsonOut.error(MSG_SLEEP));
        }
        List<Ads.Ad> page = ads.list(before, limit, sleepMs, meter);
        JsonOut out = new JsonOut(64 + page.size() * 128);
        out.raw("{\"ads\":[");
        for (int i = 0; i < page.size(); i++) {
            if (i > 0) {
                out.raw(',');
            }
            Ads.write(out, page.get(i));
        }
        out.raw("],\"next\":");
        if (page.size() == limit) {
            out.num(page.get(page.size() - 1).id());
        } else {
            out.raw("null");
        }
        out.raw('}');
        return new Reply(200, out.toBytes());
    }

    // GET /ads/{id}

    private Reply getAd(String idText, String query, Ads.Meter meter) throws Exception {
        long id = parsePositive(idText);
        if (id < 1) {
            return new Reply(400, JsonOut.error(MSG_ID));
        }
        int sleepMs = sleepMs(query);
        if (sleepMs < 0) {
            return new Reply(400, JsonOut.error(MSG_SLEEP));
        }
        Ads.Ad ad = ads.get(id, sleepMs, meter);
        if (ad == null) {
            return new Reply(404, JsonOut.error("ad " + id + " not found"));
        }
        JsonOut out = new JsonOut(160);
        Ads.write(out, ad);
        return new Reply(200, out.toBytes());
    }

    // POST /ads

    private Reply create(Request request, Ads.Meter meter) throws Exception {
        byte[] body = readBody(request);
        if (body == null) {
            return new Reply(413, JsonOut.error(MSG_TOO_LARGE));
        }
        JsonNode doc;
        try {
            doc = MAPPER.readTree(Utf8.decode(body, 0, body.length));
        } catch (Exception e) {
            return new Reply(400, JsonOut.error(MSG_BODY));
        }
        if (doc == null || !doc.isObject()) {
            return new Reply(400, JsonOut.error(MSG_BODY));
        }
        JsonNode t = doc.get("title");
        if (t == null || !t.isTextual() || t.textValue().isEmpty() || t.textValue().length() > 200) {
            return new Reply(400, JsonOut.error(MSG_TITLE));
        }
        String text = "";
        JsonNode x = doc.get("text");
        if (x != null) {
            if (!x.isTextual() || x.textValue().length() > 4000) {
                return new Reply(400, JsonOut.error(MSG_TEXT));
            }
            text = x.textValue();
        }
        int price = 0;
        JsonNode p = doc.get("price");
        if (p != null) {
            long v = integerValue(p);
            if (v < 0 || v > 1_000_000_000L) {
                return new Reply(400, JsonOut.error(MSG_PRICE));
            }
            price = (int) v;
        }
        Ads.Ad ad = ads.create(wellFormed(t.textValue()), wellFormed(text), price, meter);
        JsonOut out = new JsonOut(160 + ad.title().length() + ad.text().length());
        Ads.write(out, ad);
        return new Reply(201, out.toBytes(), "Location", "/ads/" + ad.id());
    }

    /**
     * The string with each lone surrogate (from a JSON escape of one half of a surrogate pair) replaced by
     * U+FFFD, as Node does when it encodes the string for Postgres (Java would send '?').
     */
    static String wellFormed(String s) {
        int n = s.length();
        for (int i = 0; i < n; i++) {
            if (Character.isSurrogate(s.charAt(i))) {
                StringBuilder sb = new StringBuilder(n);
                for (int j = 0; j < n; j++) {
                    char c = s.charAt(j);
                    if (Character.isHighSurrogate(c) && j + 1 < n && Character.isLowSurrogate(s.charAt(j + 1))) {
                        sb.append(c).append(s.charAt(++j));
                    } else if (Character.isSurrogate(c)) {
                        sb.append('\uFFFD');
                    } else {
                        sb.append(c);
                    }
                }
                return sb.toString();
            }
        }
        return s;
    }

    /** A JSON number with an integral value (5, 5.0, 5e0 alike, as JavaScript sees them), else -1. */
    private static long integerValue(JsonNode p) {
        if (!p.isNumber()) {
            return -1;
        }
        if (p.isIntegralNumber()) {
            return p.canConvertToLong() ? p.longValue() : -1;
        }
        double d = p.doubleValue();
        if (Double.isNaN(d) || Double.isInfinite(d) || d != Math.rint(d) || Math.abs(d) > 1e15) {
            return -1;
        }
        return (long) d;
    }

    /** The body, or null when it is larger than 64 KiB. */
    private static byte[] readBody(Request request) throws IOException {
        long declared = request.getLength();
        InputStream in = Request.asInputStream(request);
        if (declared > MAX_BODY) {
            // A client waiting for "100 Continue" has sent nothing yet: answer without reading.
            if (declared <= MAX_BODY + MAX_DRAIN && !request.getHeaders().contains(HttpHeader.EXPECT, "100-continue")) {
                drain(in, MAX_DRAIN + MAX_BODY);
            }
            return null;
        }
        byte[] buf = new byte[declared >= 0 ? (int) declared + 1 : 4096];
        int n = 0;
        while (true) {
            if (n == buf.length) {
                if (n > MAX_BODY) {
                    drain(in, MAX_DRAIN);
                    return null;
                }
                buf = Arrays.copyOf(buf, Math.min(MAX_BODY + 1, n * 2));
            }
            int r = in.read(buf, n, buf.length - n);
            if (r < 0) {
                break;
            }
            n += r;
        }
        if (n > MAX_BODY) {
            return null;
        }
        return n == buf.length ? buf : Arrays.copyOf(buf, n);
    }

    private static void drain(InputStream in, long max) {
        byte[] scratch = new byte[8192];
        long seen = 0;
        try {
            int r;
            while (seen < max && (r = in.read(scratch)) >= 0) {
                seen += r;
            }
        } catch (IOException ignored) {
            // the client went away; the 413 is still the answer
        }
    }

    /** The sleep_ms parameter: 0 when absent, -1 when not an integer from 0 to Ads.MAX_SLEEP_MS. */
    static int sleepMs(String query) {
        String s = queryParam(query, "sleep_ms");
        if (s == null) {
            return 0;
        }
        if (s.isEmpty()) {
            return -1;
        }
        long v = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < '0' || c > '9') {
                return -1;
            }
            v = Math.min(v * 10 + (c - '0'), Ads.MAX_SLEEP_MS + 1L);
        }
        return v > Ads.MAX_SLEEP_MS ? -1 : (int) v;
    }

    /**
     * A positive decimal integer of ASCII digits (leading zeros allowed) up to 2^63-1;
     * -1 for anything else (empty, signs, spaces, too large).
     */
    static long parsePositive(String s) {
        int n = s.length();
        if (n == 0) {
            return -1;
        }
        int i = 0;
        while (i < n - 1 && s.charAt(i) == '0') {
            i++;
        }
        if (n - i > 19) {
            for (int k = i; k < n; k++) {
                if (s.charAt(k) < '0' || s.charAt(k) > '9') {
                    return -1;
                }
            }
            return -1;
        }
        long v = 0;
        for (; i < n; i++) {
            char c = s.charAt(i);
            if (c < '0' || c > '9') {
                return -1;
            }
            int d = c - '0';
            if (v > (Long.MAX_VALUE - d) / 10) {
                return -1;
            }
            v = v * 10 + d;
        }
        return v >= 1 ? v : -1;
    }

    /**
     * The first value of a query parameter, decoded as URLSearchParams does ('+' is a space,
     * malformed %-escapes are kept); "" for a bare name; null when absent.
     */
    static String queryParam(String query, String name) {
        if (query == null || query.isEmpty()) {
            return null;
        }
        int start = 0;
        int len = query.length();
        while (start <= len) {
            int amp = query.indexOf('&', start);
            int end = amp < 0 ? len : amp;
            if (end > start) {
                int eq = query.indexOf('=', start);
                int nameEnd = eq >= 0 && eq < end ? eq : end;
                if (Utf8.percentDecode(query.substring(start, nameEnd), true).equals(name)) {
                    return nameEnd < end ? Utf8.percentDecode(query.substring(nameEnd + 1, end), true) : "";
                }
            }
            if (amp < 0) {
                break;
            }
            start = amp + 1;
        }
        return null;
    }

    static String oneLine(Throwable t) {
        StringBuilder sb = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (sb.length() > 0) {
                sb.append(": ");
            }
            String m = c.getMessage();
            sb.append(m == null || m.isBlank() ? c.getClass().getSimpleName() : m);
        }
        return sb.toString().replaceAll("\\s*[\\r\\n]+\\s*", " ");
    }
}
