package cfbench.bulletin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayInputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

/** Shared helpers: the test database (DATABASE_URL, required), in-process apps, HTTP. */
final class TestSupport {
    private TestSupport() {
    }

    static final ObjectMapper JSON = new ObjectMapper();

    static final HttpClient HTTP = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10))
            .build();

    /** The Postgres the integration tests run against; they fail (not skip) without it. */
    static String databaseUrl() {
        String url = System.getenv("DATABASE_URL");
        if (url == null || url.isBlank()) {
            fail("DATABASE_URL is not set: the integration tests need a real Postgres, e.g. "
                    + "DATABASE_URL=postgres://user:pass@127.0.0.1:5432/db mvn -B -q test "
                    + "(scripts/pg-local.sh start prints one)");
        }
        return url;
    }

    /** The app's environment for tests: DATABASE_URL, PORT=0, plus the given NAME, VALUE pairs. */
    static Map<String, String> env(String... nameValues) {
        Map<String, String> env = new HashMap<>();
        env.put("DATABASE_URL", databaseUrl());
        env.put("PORT", "0");
        for (int i = 0; i + 1 < nameValues.length; i += 2) {
            env.put(nameValues[i], nameValues[i + 1]);
        }
        return env;
    }

    /** Starts an app in-process on a free port. */
    static App start(String... nameValues) throws Exception {
        return new App(Config.fromEnv(env(nameValues))).start();
    }

    static Connection jdbc() throws Exception {
        DbConfig db = DbConfig.fromUri(databaseUrl(), "DATABASE_URL");
        return DriverManager.getConnection(db.jdbcUrl(), db.user(), db.password());
    }

    record Res(int status, String body, HttpHeaders headers) {
        String header(String name) {
            return headers.firstValue(name).orElse(null);
        }

        JsonNode json() throws Exception {
            return JSON.readTree(body);
        }
    }

    static Res get(App app, String path, String... headers) throws Exception {
        return send(app, "GET", path, (byte[]) null, headers);
    }

    static Res post(App app, String path, String body, String... headers) throws Exception {
        return send(app, "POST", path, body == null ? null : body.getBytes(StandardCharsets.UTF_8), headers);
    }

    static Res send(App app, String method, String path, byte[] body, String... headers) throws Exception {
        return send(app, method, path, body == null ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofByteArray(body), headers);
    }

    /** A body of unknown length, sent chunked. */
    static Res sendChunked(App app, String method, String path, byte[] body) throws Exception {
        return send(app, method, path, HttpRequest.BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(body)));
    }

    static Res send(App app, String method, String path, HttpRequest.BodyPublisher body, String... headers)
            throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + app.port() + path))
                .timeout(Duration.ofSeconds(60))
                .method(method, body);
        for (int i = 0; i + 1 < headers.length; i += 2) {
            b.header(headers[i], headers[i + 1]);
        }
        HttpResponse<byte[]> r = HTTP.send(b.build(), HttpResponse.BodyHandlers.ofByteArray());
        return new Res(r.statusCode(), new String(r.body(), StandardCharsets.UTF_8), r.headers());
    }

    /**
     * Sends raw request bytes on a new connection and returns everything the app answers until it
     * closes the connection (the request should say "Connection: close" or make the app close it).
     * For what java.net.http cannot do (its Expect: 100-continue waits forever on Java 17 when the
     * answer is not 100).
     */
    static String raw(App app, String request) throws Exception {
        try (Socket s = new Socket("127.0.0.1", app.port())) {
            s.setSoTimeout(30_000);
            s.getOutputStream().write(request.getBytes(StandardCharsets.UTF_8));
            s.getOutputStream().flush();
            return new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    /** Asserts status, exact body and Content-Type: application/json. */
    static void assertReply(Res r, int status, String body) {
        assertEquals(status, r.status(), () -> "status; body " + r.body());
        assertEquals(body, r.body());
        assertEquals("application/json", r.header("Content-Type"));
    }

    static String error(String message) {
        return "{\"error\":\"" + message + "\"}";
    }
}
