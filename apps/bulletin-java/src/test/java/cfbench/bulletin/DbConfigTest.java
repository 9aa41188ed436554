package cfbench.bulletin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** VCAP_SERVICES and DATABASE_URL parsing: pure unit tests, no database. */
class DbConfigTest {

    static Map<String, String> env(String... nameValues) {
        Map<String, String> env = new HashMap<>();
        for (int i = 0; i + 1 < nameValues.length; i += 2) {
            env.put(nameValues[i], nameValues[i + 1]);
        }
        return env;
    }

    static DbConfig db(String... nameValues) throws ConfigException {
        return DbConfig.fromEnv(env(nameValues));
    }

    @Test
    void databaseUrl() throws Exception {
        DbConfig d = db("DATABASE_URL", "postgres://alice:s3cret@db.example.com:6543/board?sslmode=require");
        assertEquals("jdbc:postgresql://db.example.com:6543/board?sslmode=require", d.jdbcUrl());
        assertEquals("alice", d.user());
        assertEquals("s3cret", d.password());
        assertEquals("DATABASE_URL", d.source());
    }

    @Test
    void uriDefaultsAndEncodings() throws Exception {
        DbConfig d = DbConfig.fromUri("postgresql://bob@localhost/my%20db", "x");
        assertEquals("jdbc:postgresql://localhost:5432/my+db?sslmode=disable", d.jdbcUrl());
        assertEquals("bob", d.user());
        assertNull(d.password());

        d = DbConfig.fromUri("postgres://u%40x:p%3Aw%2F%40d@127.0.0.1:5433/db?application_name=a&sslmode=disable", "x");
        assertEquals("jdbc:postgresql://127.0.0.1:5433/db?sslmode=disable", d.jdbcUrl());
        assertEquals("u@x", d.user());
        assertEquals("p:w/@d", d.password());

        d = DbConfig.fromUri("postgres://u:p@[::1]:5999/db", "x");
        assertEquals("jdbc:postgresql://[::1]:5999/db?sslmode=disable", d.jdbcUrl());

        d = DbConfig.fromUri("POSTGRES://h/db?sslmode=verify-full", "x");
        assertEquals("jdbc:postgresql://h:5432/db?sslmode=verify-full&sslfactory=org.postgresql.ssl.DefaultJavaSSLFactory",
                d.jdbcUrl());
        assertNull(d.user());

        // no host: localhost; no database: Postgres takes the user name
        assertEquals("jdbc:postgresql://localhost:5432/db?sslmode=disable", DbConfig.fromUri("postgres://u:p@/db", "x").jdbcUrl());
        assertEquals("jdbc:postgresql://h:5432/?sslmode=disable", DbConfig.fromUri("postgres://u:p@h:5432", "x").jdbcUrl());
    }

    @Test
    void sslModesAsTheNodeTwin() throws Exception {
        String[][] cases = {
            {"", "sslmode=disable"}, {"?sslmode=", "sslmode=disable"}, {"?sslmode=disable", "sslmode=disable"},
            {"?sslmode=allow", "sslmode=disable"}, {"?sslmode=prefer", "sslmode=disable"},
            {"?sslmode=require", "sslmode=require"},
            {"?sslmode=verify-ca", "sslmode=verify-ca&sslfactory=org.postgresql.ssl.DefaultJavaSSLFactory"},
            {"?a=b&sslmode=require&sslmode=disable", "sslmode=require"},
        };
        for (String[] c : cases) {
            assertEquals("jdbc:postgresql://h:5432/d?" + c[1], DbConfig.fromUri("postgres://h/d" + c[0], "x").jdbcUrl(), c[0]);
        }
        ConfigException e = assertThrows(ConfigException.class, () -> DbConfig.fromUri("postgres://h/d?sslmode=maybe", "x"));
        assertEquals("unknown sslmode \"maybe\"", e.getMessage());
    }

    @Test
    void badUris() {
        for (String u : new String[] {"mysql://u:p@h/db", "postgres://u:p@h:notaport/db", "postgres://u:p@h:70000/db",
            "postgres://u:p@h:0/db", "postgres://h/d?sslmode=on"}) {
            assertThrows(ConfigException.class, () -> DbConfig.fromUri(u, "DATABASE_URL"), u);
        }
    }

    @Test
    void vcapUri() throws Exception {
        String vcap = """
                {"elephantsql":[{"name":"board-db","label":"elephantsql","tags":["postgres"],"plan":"turtle",
                  "credentials":{"uri":"postgres://vu:vp@pg.internal:5432/vdb?sslmode=require"}}]}""";
        DbConfig d = db("VCAP_SERVICES", vcap, "DATABASE_URL", "postgres://ignored@x/y");
        assertEquals("jdbc:postgresql://pg.internal:5432/vdb?sslmode=require", d.jdbcUrl());
        assertEquals("vu", d.user());
        assertEquals("vp", d.password());
        assertEquals("VCAP_SERVICES service \"board-db\"", d.source());
    }

    @Test
    void vcapHostForms() throws Exception {
        String vcap = """
                {"postgresql-db":[{"name":"a","label":"postgresql-db","plan":"small",
                  "credentials":{"hostname":"h1","port":"6000","name":"db1","username":"u1","password":"p1"}}]}""";
        DbConfig d = db("VCAP_SERVICES", vcap);
        assertEquals("jdbc:postgresql://h1:6000/db1?sslmode=disable", d.jdbcUrl());
        assertEquals("u1", d.user());
        assertEquals("p1", d.password());

        vcap = """
                {"csb-aws-postgresql":[{"name":"b","label":"csb-aws-postgresql","plan":"small",
                  "credentials":{"host":"h2","port":6001,"db_name":"db2","user":"u2","password":"p2"}}]}""";
        d = db("VCAP_SERVICES", vcap);
        assertEquals("jdbc:postgresql://h2:6001/db2?sslmode=disable", d.jdbcUrl());
        assertEquals("u2", d.user());

        vcap = """
                {"user-provided":[{"name":"c","label":"user-provided","tags":["PostgreSQL"],
                  "credentials":{"host":"h3","database":"db3","username":"u3","password":"p3"}}]}""";
        d = db("VCAP_SERVICES", vcap);
        assertEquals("jdbc:postgresql://h3:5432/db3?sslmode=disable", d.jdbcUrl());
        assertEquals("u3", d.user());

        // a uri that is not postgres falls back to the host form
        vcap = """
                {"x":[{"name":"d","label":"x","plan":"postgres-small",
                  "credentials":{"uri":"https://console","hostname":"h4","name":"db4"}}]}""";
        d = db("VCAP_SERVICES", vcap);
        assertEquals("jdbc:postgresql://h4:5432/db4?sslmode=disable", d.jdbcUrl());
        assertNull(d.user());

        // no database name: Postgres takes the user name
        vcap = """
                {"postgres":[{"name":"e","label":"postgres","credentials":{"host":"h5","username":"u5","name":""}}]}""";
        assertEquals("jdbc:postgresql://h5:5432/?sslmode=disable", db("VCAP_SERVICES", vcap).jdbcUrl());
    }

    @Test
    void firstPostgresServiceByLabelTagsOrPlan() throws Exception {
        String vcap = """
                {"p-redis":[{"name":"cache","label":"p-redis","tags":["redis"],"plan":"small","credentials":{"uri":"redis://r"}}],
                 "p-mysql":[{"name":"mysql","label":"p-mysql","tags":["mysql"],"plan":"db","credentials":{"uri":"mysql://m"}}],
                 "databases":[{"name":"other","label":"databases","tags":["sql"],"plan":"x","credentials":{"uri":"postgres://o@o/o"}},
                              {"name":"pg","label":"databases","tags":["relational","postgres"],"plan":"x",
                               "credentials":{"uri":"postgres://first@f/f"}}],
                 "postgres":[{"name":"second","label":"postgres","plan":"x","credentials":{"uri":"postgres://second@s/s"}}]}""";
        assertEquals("first", db("VCAP_SERVICES", vcap).user());
    }

    @Test
    void dbServiceSelectsByName() throws Exception {
        String vcap = """
                {"postgres":[{"name":"one","label":"postgres","credentials":{"uri":"postgres://one@h/one"}},
                             {"name":"two","label":"postgres","credentials":{"uri":"postgres://two@h/two"}}],
                 "user-provided":[{"name":"ups","label":"user-provided","tags":[],"credentials":{"uri":"postgres://ups@h/ups"}}]}""";
        assertEquals("one", db("VCAP_SERVICES", vcap).user());
        assertEquals("two", db("VCAP_SERVICES", vcap, "DB_SERVICE", "two").user());
        assertEquals("ups", db("VCAP_SERVICES", vcap, "DB_SERVICE", "ups").user());
        ConfigException e = assertThrows(ConfigException.class,
                () -> db("VCAP_SERVICES", vcap, "DB_SERVICE", "three", "DATABASE_URL", "postgres://u@h/d"));
        assertEquals("VCAP_SERVICES has no service named \"three\" (DB_SERVICE)", e.getMessage());
        e = assertThrows(ConfigException.class, () -> db("DB_SERVICE", "two", "DATABASE_URL", "postgres://u@h/d"));
        assertEquals("DB_SERVICE is \"two\" but VCAP_SERVICES is not set", e.getMessage());
    }

    @Test
    void vcapWithoutPostgresFallsBackToDatabaseUrl() throws Exception {
        String vcap = "{\"p-redis\":[{\"name\":\"cache\",\"label\":\"p-redis\",\"credentials\":{}}]}";
        assertEquals("url", db("VCAP_SERVICES", vcap, "DATABASE_URL", "postgres://url@h/d").user());
        assertEquals("url", db("VCAP_SERVICES", "{}", "DATABASE_URL", "postgres://url@h/d").user());
        assertEquals("url", db("VCAP_SERVICES", "[]", "DATABASE_URL", "postgres://url@h/d").user());
        assertEquals("url", db("VCAP_SERVICES", " ", "DATABASE_URL", "postgres://url@h/d").user());
        ConfigException e = assertThrows(ConfigException.class, () -> db("VCAP_SERVICES", vcap));
        assertEquals("no database: VCAP_SERVICES has no postgres service and DATABASE_URL is not set", e.getMessage());
    }

    @Test
    void missingDatabaseIsAnError() {
        ConfigException e = assertThrows(ConfigException.class, () -> db());
        assertEquals("no database: neither VCAP_SERVICES nor DATABASE_URL is set", e.getMessage());
        e = assertThrows(ConfigException.class, () -> db("DATABASE_URL", "", "VCAP_SERVICES", ""));
        assertEquals("no database: neither VCAP_SERVICES nor DATABASE_URL is set", e.getMessage());
    }

    @Test
    void badVcapIsAnError() {
        assertEquals("VCAP_SERVICES is not valid JSON",
                assertThrows(ConfigException.class, () -> db("VCAP_SERVICES", "{nope")).getMessage());
        // a postgres service without usable credentials
        assertThrows(ConfigException.class, () -> db("VCAP_SERVICES",
                "{\"postgres\":[{\"name\":\"p\",\"label\":\"postgres\",\"credentials\":{\"username\":\"u\"}}]}"));
        assertEquals("VCAP_SERVICES service \"p\" has neither a postgres uri nor a hostname/host in its credentials",
                assertThrows(ConfigException.class, () -> db("VCAP_SERVICES",
                        "{\"postgres\":[{\"name\":\"p\",\"label\":\"postgres\"}]}")).getMessage());
        assertThrows(ConfigException.class, () -> db("VCAP_SERVICES",
                "{\"postgres\":[{\"name\":\"p\",\"label\":\"postgres\",\"credentials\":{\"host\":\"h\",\"port\":\"x\"}}]}"));
    }

    @Test
    void environmentDefaultsAndErrors() throws Exception {
        Config c = Config.fromEnv(env("DATABASE_URL", "postgres://u@h/d"));
        assertEquals(8080, c.port());
        assertEquals(10, c.poolSize());
        assertEquals(5000, c.poolTimeoutMs());
        assertEquals(200, c.serverThreads());
        assertEquals(100, c.seedAds());
        assertEquals(false, c.timingsOn());
        assertEquals(100000, c.timingsCapacity());
        assertNull(c.timingsToken());
        assertEquals(0, c.instanceIndex());

        c = Config.fromEnv(env("DATABASE_URL", "postgres://u@h/d", "PORT", "9000", "DB_POOL_SIZE", "4",
                "DB_POOL_TIMEOUT_MS", "100", "SERVER_THREADS", "16", "SEED_ADS", "0", "CFBENCH_TIMINGS", "on", "CFBENCH_TIMINGS_CAPACITY", "3",
                "CFBENCH_TIMINGS_TOKEN", "t", "CF_INSTANCE_INDEX", "2"));
        assertEquals(9000, c.port());
        assertEquals(4, c.poolSize());
        assertEquals(100, c.poolTimeoutMs());
        assertEquals(16, c.serverThreads());
        assertEquals(250L, App.poolConfig(c).getConnectionTimeout(), "Hikari's minimum");
        assertEquals(4, App.poolConfig(c).getMaximumPoolSize());
        assertEquals(1, App.poolConfig(c).getMinimumIdle());
        assertEquals(0, c.seedAds());
        assertEquals(true, c.timingsOn());
        assertEquals(3, c.timingsCapacity());
        assertEquals("t", c.timingsToken());
        assertEquals(2, c.instanceIndex());
        assertEquals(false, Config.fromEnv(env("DATABASE_URL", "postgres://u@h/d", "CFBENCH_TIMINGS", "off")).timingsOn());
        assertEquals(false, Config.fromEnv(env("DATABASE_URL", "postgres://u@h/d", "CFBENCH_TIMINGS", "true")).timingsOn());
        assertEquals(true, Config.fromEnv(env("DATABASE_URL", "postgres://u@h/d", "CFBENCH_TIMINGS", " ON ")).timingsOn());
        assertEquals(42, Config.fromEnv(env("DATABASE_URL", "postgres://u@h/d", "PORT", " 42 ")).port());
        assertEquals(8080, Config.fromEnv(env("DATABASE_URL", "postgres://u@h/d", "PORT", " ")).port());

        for (String[] bad : new String[][] {{"PORT", "x"}, {"PORT", "70000"}, {"PORT", "+80"}, {"DB_POOL_SIZE", "0"},
            {"DB_POOL_TIMEOUT_MS", "0"}, {"SERVER_THREADS", "7"}, {"SEED_ADS", "-1"}, {"CFBENCH_TIMINGS_CAPACITY", "many"},
            {"CF_INSTANCE_INDEX", "-1"}, {"CF_INSTANCE_INDEX", "99999999999999999999"}}) {
            ConfigException e = assertThrows(ConfigException.class,
                    () -> Config.fromEnv(env("DATABASE_URL", "postgres://u@h/d", bad[0], bad[1])));
            assertTrue(e.getMessage().startsWith(bad[0] + " must be an integer"), e.getMessage());
        }
    }
}
