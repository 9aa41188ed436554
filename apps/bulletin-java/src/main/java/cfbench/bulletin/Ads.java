package cfbench.bulletin;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/** The ads table: schema, seeding, and the three queries, timed into a {@link Meter}. */
final class Ads {

    /** One ad; created_at as Unix milliseconds (truncated from Postgres' microseconds). */
    record Ad(long id, String title, String text, int price, long createdAtMillis) {
    }

    /** Time one request spent waiting for a pooled connection and running statements. */
    static final class Meter {
        long poolWaitNanos;
        long queryNanos;
    }

    static final String CREATE_TABLE = """
            CREATE TABLE IF NOT EXISTS ads (
                id         bigserial PRIMARY KEY,
                title      text        NOT NULL,
                text       text        NOT NULL DEFAULT '',
                price      integer     NOT NULL DEFAULT 0,
                created_at timestamptz NOT NULL DEFAULT now()
            )""";

    static final long ADVISORY_LOCK = 727272L;

    private static final String COLUMNS = "id, title, text, price, created_at";
    private static final String SQL_GET = "SELECT " + COLUMNS + " FROM ads WHERE id = ?";
    private static final String SQL_LIST = "SELECT " + COLUMNS + " FROM ads ORDER BY id DESC LIMIT ?";
    private static final String SQL_LIST_BEFORE = "SELECT " + COLUMNS + " FROM ads WHERE id < ? ORDER BY id DESC LIMIT ?";
    private static final String SQL_INSERT = "INSERT INTO ads (title, text, price) VALUES (?, ?, ?) RETURNING " + COLUMNS;
    private static final String SQL_SLEEP = "SELECT pg_sleep(?)";

    /** The most a request may hold its connection in pg_sleep (the sleep_ms parameter). */
    static final int MAX_SLEEP_MS = 10_000;

    private final DataSource ds;

    Ads(DataSource ds) {
        this.ds = ds;
    }

    /**
     * Under pg_advisory_xact_lock(727272): creates the table if missing and, when it is empty,
     * inserts ads 1..seedAds in order (title "Ad n", text "Seed advertisement n", price n*10).
     * Returns how many ads were seeded.
     */
    static int createAndSeed(DataSource ds, int seedAds) throws SQLException {
        try (Connection c = ds.getConnection()) {
            c.setAutoCommit(false);
            try {
                int seeded = 0;
                try (Statement st = c.createStatement()) {
                    st.execute("SELECT pg_advisory_xact_lock(" + ADVISORY_LOCK + ")");
                    st.execute(CREATE_TABLE);
                    boolean empty;
                    try (ResultSet rs = st.executeQuery("SELECT NOT EXISTS (SELECT 1 FROM ads)")) {
                        rs.next();
                        empty = rs.getBoolean(1);
                    }
                    if (empty && seedAds > 0) {
                        try (PreparedStatement ps = c.prepareStatement("INSERT INTO ads (title, text, price) VALUES (?, ?, ?)")) {
                            for (int n = 1; n <= seedAds; n++) {
                                ps.setString(1, "Ad " + n);
                                ps.setString(2, "Seed advertisement " + n);
                                ps.setInt(3, n * 10);
                                ps.addBatch();
                                if (n % 1000 == 0) {
                                    ps.executeBatch();
                                }
                            }
                            ps.executeBatch();
                        }
                        seeded = seedAds;
                    }
                }
                c.commit();
                return seeded;
            } catch (SQLException | RuntimeException e) {
                try {
                    c.rollback();
                } catch (SQLException ignored) {
                    // the original error matters
                }
                throw e;
            } finally {
                c.setAutoCommit(true);
            }
        }
    }

    /** The ad, or null; sleepMs &gt; 0 first holds the connection that long in pg_sleep (a slow query). */
    Ad get(long id, int sleepMs, Meter m) throws SQLException {
        try (Connection c = connect(m)) {
            long t0 = System.nanoTime();
            try (PreparedStatement ps = c.prepareStatement(SQL_GET)) {
                sleep(c, sleepMs);
                ps.setLong(1, id);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? read(rs) : null;
                }
            } finally {
                m.queryNanos += System.nanoTime() - t0;
            }
        }
    }

    /**
     * Up to limit ads, newest id first, with id &lt; before (before &lt;= 0: no bound); sleepMs &gt; 0 first
     * holds the connection that long in pg_sleep (a slow query).
     */
    List<Ad> list(long before, int limit, int sleepMs, Meter m) throws SQLException {
        try (Connection c = connect(m)) {
            long t0 = System.nanoTime();
            try (PreparedStatement ps = c.prepareStatement(before > 0 ? SQL_LIST_BEFORE : SQL_LIST)) {
                sleep(c, sleepMs);
                if (before > 0) {
                    ps.setLong(1, before);
                    ps.setInt(2, limit);
                } else {
                    ps.setInt(1, limit);
                }
                List<Ad> ads = new ArrayList<>(limit);
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        ads.add(read(rs));
                    }
                }
                return ads;
            } finally {
                m.queryNanos += System.nanoTime() - t0;
            }
        }
    }

    Ad create(String title, String text, int price, Meter m) throws SQLException {
        try (Connection c = connect(m)) {
            long t0 = System.nanoTime();
            try (PreparedStatement ps = c.prepareStatement(SQL_INSERT)) {
                ps.setString(1, title);
                ps.setString(2, text);
                ps.setInt(3, price);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    return read(rs);
                }
            } finally {
                m.queryNanos += System.nanoTime() - t0;
            }
        }
    }

    /** Runs SELECT pg_sleep(ms / 1000) on c; nothing for ms &lt;= 0. */
    private static void sleep(Connection c, int ms) throws SQLException {
        if (ms <= 0) {
            return;
        }
        try (PreparedStatement ps = c.prepareStatement(SQL_SLEEP)) {
            ps.setDouble(1, ms / 1000.0);
            ps.execute();
        }
    }

    private Connection connect(Meter m) throws SQLException {
        long t0 = System.nanoTime();
        try {
            return ds.getConnection();
        } finally {
            m.poolWaitNanos += System.nanoTime() - t0;
        }
    }

    private static Ad read(ResultSet rs) throws SQLException {
        OffsetDateTime t = rs.getObject(5, OffsetDateTime.class);
        long millis = t.toEpochSecond() * 1000L + t.getNano() / 1_000_000;
        return new Ad(rs.getLong(1), rs.getString(2), rs.getString(3), rs.getInt(4), millis);
    }

    /** {"id":7,"title":"Ad 7","text":"Seed advertisement 7","price":70,"created_at":"2026-11-23T10:00:00.123Z"} */
    static void write(JsonOut out, Ad a) {
        out.raw("{\"id\":").num(a.id())
                .raw(",\"title\":").str(a.title())
                .raw(",\"text\":").str(a.text())
                .raw(",\"price\":").num(a.price())
                .raw(",\"created_at\":\"");
        writeTimestamp(out, a.createdAtMillis());
        out.raw("\"}");
    }

    /** ISO 8601 in UTC with exactly three millisecond digits, as JavaScript's Date#toISOString. */
    static void writeTimestamp(JsonOut out, long epochMillis) {
        long secs = Math.floorDiv(epochMillis, 1000L);
        int ms = (int) Math.floorMod(epochMillis, 1000L);
        LocalDateTime t = LocalDateTime.ofEpochSecond(secs, 0, ZoneOffset.UTC);
        int year = t.getYear();
        if (year >= 0 && year <= 9999) {
            out.digits(year, 4);
        } else {
            out.raw(year < 0 ? '-' : '+').digits(Math.abs((long) year), 6);
        }
        out.raw('-').digits(t.getMonthValue(), 2)
                .raw('-').digits(t.getDayOfMonth(), 2)
                .raw('T').digits(t.getHour(), 2)
                .raw(':').digits(t.getMinute(), 2)
                .raw(':').digits(t.getSecond(), 2)
                .raw('.').digits(ms, 3)
                .raw('Z');
    }
}
