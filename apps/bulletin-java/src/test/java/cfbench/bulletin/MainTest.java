package cfbench.bulletin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Start-up: one line on stdout when it works, one line on stderr (and exit 1) when it does not. */
class MainTest {

    record Outcome(App app, String out, String err) {
    }

    static Outcome start(Map<String, String> env) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        App app = Main.start(env, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Outcome(app, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    static void assertOneErrorLine(Outcome o, String prefix) {
        assertNull(o.app());
        assertEquals("", o.out());
        assertTrue(o.err().startsWith(prefix), o.err());
        assertTrue(o.err().endsWith("\n"), o.err());
        assertEquals(1, o.err().split("\n").length, o.err());
    }

    @Test
    void missingDatabaseIsOneLine() {
        assertOneErrorLine(start(Map.of()), "bulletin-java: no database: neither VCAP_SERVICES nor DATABASE_URL is set");
        assertOneErrorLine(start(Map.of("DATABASE_URL", "postgres://u@h/d", "PORT", "x")),
                "bulletin-java: PORT must be an integer");
    }

    @Test
    void unreachableDatabaseIsOneLine() {
        assertOneErrorLine(start(Map.of("DATABASE_URL", "postgres://u:p@127.0.0.1:1/d", "DB_POOL_TIMEOUT_MS", "250")),
                "bulletin-java: cannot start: ");
    }

    @Test
    void startLine() throws Exception {
        Outcome o = start(TestSupport.env("DB_POOL_SIZE", "3", "CFBENCH_TIMINGS", "on"));
        assertNotNull(o.app(), o.err());
        try (App app = o.app()) {
            assertEquals("bulletin-java listening on port " + app.port() + " (db pool 3, timings on, capacity 100000)\n",
                    o.out());
            assertEquals("", o.err());
        }
    }
}
