package cfbench.proxy;

import cfbench.bulletin.MicroClock;
import cfbench.bulletin.Timings;
import cfbench.bulletin.TraceId;
import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Map;

/**
 * Serves one request on the thread the server's pool gave it, from start to end: /healthz and
 * the in-app timings endpoints itself, every other GET forwarded upstream (blocking).
 *
 * <p>In-app timings (apps/README.md's contract) of a forwarded request with a B3 trace id:
 * {@code pool_wait_us} is the wait for an upstream connection, {@code query_us} the upstream
 * exchange (request out, whole body in), {@code total_us} from the handler's start until it
 * hands the response to the server.
 */
final class ProxyHandler implements HttpHandler {

    static final String TIMINGS = "/_cfbench/timings";
    static final String MSG_TOKEN = "timings need the bearer token of CFBENCH_TIMINGS_TOKEN";

    private final Upstream upstream;
    private final Timings timings;
    private final byte[] token; // null: the timings endpoints are open
    private final MicroClock clock = new MicroClock();

    ProxyHandler(Upstream upstream, Timings timings, String token) {
        this.upstream = upstream;
        this.timings = timings;
        this.token = token == null ? null : ("Bearer " + token).getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public void handle(HttpExchange ex) throws IOException {
        long begin = System.nanoTime();
        try (ex) {
            String path = ex.getRequestURI().getRawPath();
            String method = ex.getRequestMethod();
            if (path.equals("/healthz")) {
                if (method.equals("GET")) {
                    reply(ex, 200, "{\"status\":\"ok\"}");
                } else {
                    notAllowed(ex, "GET");
                }
                return;
            }
            if (path.equals(TIMINGS) || path.startsWith(TIMINGS + "/")) {
                timingsEndpoint(ex, path, method);
                return;
            }
            if (!method.equals("GET")) {
                notAllowed(ex, "GET");
                return;
            }
            forward(ex, begin);
        }
    }

    private void forward(HttpExchange ex, long begin) throws IOException {
        Headers in = ex.getRequestHeaders();
        TraceId.Parsed trace = timings.recording() ? TraceId.fromHeaders(in.getFirst("X-B3-TraceId"), in.getFirst("b3")) : null;
        String raw = ex.getRequestURI().getRawPath();
        String query = ex.getRequestURI().getRawQuery();
        Upstream.Answer a;
        try {
            a = upstream.get(query == null ? raw : raw + "?" + query, in);
        } catch (Upstream.Failure f) {
            reply(ex, f.status, error(f.getMessage()));
            return;
        }
        Headers out = ex.getResponseHeaders();
        for (Map.Entry<String, String> h : a.headers()) {
            if (!h.getKey().equalsIgnoreCase("Date")) { // the server sets its own
                out.add(h.getKey(), h.getValue());
            }
        }
        long handed = System.nanoTime(); // before the write: see "total_us" in apps/README.md
        ex.sendResponseHeaders(a.status(), a.body().length == 0 ? -1 : a.body().length);
        if (a.body().length > 0) {
            try (OutputStream os = ex.getResponseBody()) {
                os.write(a.body());
            }
        }
        if (trace != null) {
            timings.record(trace.hi(), trace.lo(), clock.at(begin), begin, a.poolWaitNanos() / 1000,
                    a.upstreamNanos() / 1000, (handed - begin) / 1000);
        }
    }

    private void timingsEndpoint(HttpExchange ex, String path, String method) throws IOException {
        if (token != null) {
            String auth = ex.getRequestHeaders().getFirst("Authorization");
            if (auth == null || !MessageDigest.isEqual(token, auth.getBytes(StandardCharsets.UTF_8))) {
                reply(ex, 401, error(MSG_TOKEN));
                return;
            }
        }
        String action = path.substring(TIMINGS.length());
        boolean get = action.isEmpty();
        if (!method.equals(get ? "GET" : "POST")) {
            notAllowed(ex, get ? "GET" : "POST");
            return;
        }
        switch (action) {
            case "" -> replyBytes(ex, 200, timings.statusJson());
            case "/start" -> {
                timings.setRecording(true);
                replyBytes(ex, 200, timings.statusJson());
            }
            case "/stop" -> {
                timings.setRecording(false);
                replyBytes(ex, 200, timings.statusJson());
            }
            case "/flush" -> replyBytes(ex, 200, timings.flushJson());
            default -> reply(ex, 404, error("not found"));
        }
    }

    private static String error(String message) {
        return "{\"error\":\"" + message.replace("\\", "\\\\").replace("\"", "\\\"").replaceAll("[\\x00-\\x1f]", " ") + "\"}";
    }

    private static void notAllowed(HttpExchange ex, String allow) throws IOException {
        ex.getResponseHeaders().set("Allow", allow);
        reply(ex, 405, error("method not allowed"));
    }

    private static void reply(HttpExchange ex, int status, String json) throws IOException {
        replyBytes(ex, status, json.getBytes(StandardCharsets.UTF_8));
    }

    private static void replyBytes(HttpExchange ex, int status, byte[] json) throws IOException {
        ex.getResponseHeaders().set("Content-Type", "application/json");
        ex.sendResponseHeaders(status, json.length);
        try (OutputStream os = ex.getResponseBody()) {
            os.write(json);
        }
    }
}
