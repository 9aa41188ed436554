package cfbench.bulletin;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Where the database is: a JDBC URL plus user and password (kept out of the URL), and a
 * short description of where they came from.
 *
 * <p>Found in VCAP_SERVICES: the service named by DB_SERVICE if set, else the first service
 * whose label, tags or plan mention "postgres". Without VCAP_SERVICES (or without a postgres
 * service in it, and DB_SERVICE unset), DATABASE_URL, a postgres:// URI. Choices and messages
 * are those of the Node twin (apps/bulletin-node/lib/config.js).
 */
record DbConfig(String jdbcUrl, String user, String password, String source) {

    static DbConfig fromEnv(Map<String, String> env) throws ConfigException {
        String vcap = env.get("VCAP_SERVICES");
        if (vcap != null && vcap.isBlank()) {
            vcap = null;
        }
        String wanted = nonEmpty(env.get("DB_SERVICE"));
        if (vcap != null) {
            JsonNode root;
            try {
                root = new ObjectMapper().readTree(vcap);
            } catch (Exception e) {
                throw new ConfigException("VCAP_SERVICES is not valid JSON");
            }
            List<JsonNode> services = services(root);
            if (wanted != null) {
                for (JsonNode s : services) {
                    if (wanted.equals(text(s.get("name")))) {
                        return fromService(s);
                    }
                }
                throw new ConfigException("VCAP_SERVICES has no service named \"" + wanted + "\" (DB_SERVICE)");
            }
            for (JsonNode s : services) {
                if (mentionsPostgres(s)) {
                    return fromService(s);
                }
            }
        } else if (wanted != null) {
            throw new ConfigException("DB_SERVICE is \"" + wanted + "\" but VCAP_SERVICES is not set");
        }
        String url = nonEmpty(env.get("DATABASE_URL"));
        if (url != null) {
            return fromUri(url, "DATABASE_URL");
        }
        if (vcap != null) {
            throw new ConfigException("no database: VCAP_SERVICES has no postgres service and DATABASE_URL is not set");
        }
        throw new ConfigException("no database: neither VCAP_SERVICES nor DATABASE_URL is set");
    }

    /** Every service instance object, in VCAP_SERVICES order (a non-object root has none). */
    private static List<JsonNode> services(JsonNode root) {
        List<JsonNode> all = new ArrayList<>();
        if (root != null && root.isObject()) {
            for (Iterator<JsonNode> it = root.elements(); it.hasNext(); ) {
                JsonNode list = it.next();
                if (list.isArray()) {
                    for (JsonNode s : list) {
                        if (s.isObject()) {
                            all.add(s);
                        }
                    }
                }
            }
        }
        return all;
    }

    /** Whether the service's label, plan or one of its tags mentions postgres (any case). */
    private static boolean mentionsPostgres(JsonNode s) {
        if (mentionsPostgres(text(s.get("label"))) || mentionsPostgres(text(s.get("plan")))) {
            return true;
        }
        JsonNode tags = s.get("tags");
        if (tags != null && tags.isArray()) {
            for (JsonNode t : tags) {
                if (mentionsPostgres(text(t))) {
                    return true;
                }
            }
        }
        return false;
    }

    private static boolean mentionsPostgres(String s) {
        return s != null && s.toLowerCase(Locale.ROOT).contains("postgres");
    }

    static DbConfig fromService(JsonNode service) throws ConfigException {
        String where = "VCAP_SERVICES service \"" + text(service.get("name")) + "\"";
        JsonNode c = service.get("credentials");
        if (c == null || !c.isObject()) {
            c = new ObjectMapper().createObjectNode();
        }
        String uri = text(c.get("uri"));
        if (uri != null && isPostgresUri(uri)) {
            return fromUri(uri, where);
        }
        String host = first(c, "hostname", "host");
        if (host == null) {
            throw new ConfigException(where + " has neither a postgres uri nor a hostname/host in its credentials");
        }
        int port = 5432;
        String ps = first(c, "port");
        if (ps != null) {
            port = parsePort(ps, where);
        }
        String db = first(c, "name", "db_name", "database");
        String user = first(c, "username", "user");
        String password = first(c, "password");
        return new DbConfig(jdbcUrl(host, port, db, null), user, password, where);
    }

    static boolean isPostgresUri(String uri) {
        String l = uri.toLowerCase(Locale.ROOT);
        return l.startsWith("postgres://") || l.startsWith("postgresql://");
    }

    /** Parses postgres://user:password@host:port/db?sslmode=... (sslmode is passed through). */
    static DbConfig fromUri(String uri, String where) throws ConfigException {
        if (!isPostgresUri(uri)) {
            throw new ConfigException(where + " is not a postgres:// or postgresql:// URI");
        }
        String rest = uri.substring(uri.indexOf("://") + 3);
        int hash = rest.indexOf('#');
        if (hash >= 0) {
            rest = rest.substring(0, hash);
        }
        String user = null;
        String password = null;
        int at = rest.lastIndexOf('@');
        if (at >= 0) {
            String userInfo = rest.substring(0, at);
            rest = rest.substring(at + 1);
            int colon = userInfo.indexOf(':');
            if (colon >= 0) {
                user = Utf8.percentDecode(userInfo.substring(0, colon), false);
                password = Utf8.percentDecode(userInfo.substring(colon + 1), false);
            } else {
                user = Utf8.percentDecode(userInfo, false);
            }
            if (user.isEmpty()) {
                user = null;
            }
        }
        String query = null;
        int q = rest.indexOf('?');
        if (q >= 0) {
            query = rest.substring(q + 1);
            rest = rest.substring(0, q);
        }
        String path = "";
        int slash = rest.indexOf('/');
        if (slash >= 0) {
            path = rest.substring(slash + 1);
            rest = rest.substring(0, slash);
        }
        String host;
        int port = 5432;
        if (rest.startsWith("[")) {
            int close = rest.indexOf(']');
            if (close < 0) {
                throw new ConfigException(where + " has a malformed host");
            }
            host = rest.substring(0, close + 1);
            String after = rest.substring(close + 1);
            if (after.startsWith(":") && after.length() > 1) {
                port = parsePort(after.substring(1), where);
            } else if (!after.isEmpty() && !after.equals(":")) {
                throw new ConfigException(where + " has a malformed host");
            }
        } else {
            int colon = rest.lastIndexOf(':');
            if (colon >= 0) {
                host = rest.substring(0, colon);
                if (colon + 1 < rest.length()) {
                    port = parsePort(rest.substring(colon + 1), where);
                }
            } else {
                host = rest;
            }
            host = Utf8.percentDecode(host, false);
        }
        if (host.isEmpty()) {
            host = "localhost";
        }
        String db = Utf8.percentDecode(path, false);
        String sslmode = null;
        if (query != null) {
            for (String kv : query.split("&")) {
                int eq = kv.indexOf('=');
                String k = Utf8.percentDecode(eq >= 0 ? kv.substring(0, eq) : kv, false);
                if (k.equals("sslmode") && sslmode == null) {
                    sslmode = Utf8.percentDecode(eq >= 0 ? kv.substring(eq + 1) : "", false);
                }
            }
        }
        return new DbConfig(jdbcUrl(host, port, db, sslmode(sslmode, where)), user, password, where);
    }

    /**
     * The JDBC URL parameters for a libpq sslmode, with the meaning the Node twin gives it:
     * absent, disable, allow, prefer: plain TCP (pgjdbc's own default, prefer, would try TLS);
     * require: TLS without verifying the server; verify-ca, verify-full: TLS verified against
     * the JVM's trust store (where the Java buildpack puts the platform's CAs), verify-full
     * also checking the host name.
     */
    static String sslmode(String mode, String where) throws ConfigException {
        if (mode == null) {
            mode = "";
        }
        return switch (mode) {
            case "", "disable", "allow", "prefer" -> "sslmode=disable";
            case "require" -> "sslmode=require";
            case "verify-ca", "verify-full" -> "sslmode=" + mode + "&sslfactory=org.postgresql.ssl.DefaultJavaSSLFactory";
            default -> throw new ConfigException("unknown sslmode \"" + mode + "\"");
        };
    }

    /** jdbc:postgresql://host:port/db?params (an empty db: Postgres takes the user name). */
    static String jdbcUrl(String host, int port, String db, String params) {
        StringBuilder sb = new StringBuilder("jdbc:postgresql://");
        sb.append(host).append(':').append(port).append('/');
        if (db != null) {
            sb.append(URLEncoder.encode(db, StandardCharsets.UTF_8));
        }
        sb.append('?').append(params == null ? "sslmode=disable" : params);
        return sb.toString();
    }

    private static int parsePort(String s, String where) throws ConfigException {
        try {
            int p = Integer.parseInt(s.trim());
            if (p >= 1 && p <= 65535) {
                return p;
            }
        } catch (NumberFormatException e) {
            // fall through
        }
        throw new ConfigException(where + " has an invalid port \"" + s + "\"");
    }

    /** The first of these credentials that is set and not "", as text (numbers too). */
    private static String first(JsonNode c, String... keys) {
        for (String k : keys) {
            JsonNode n = c.get(k);
            if (n != null && !n.isNull() && !n.isContainerNode()) {
                String v = n.asText();
                if (!v.isEmpty()) {
                    return v;
                }
            }
        }
        return null;
    }

    private static String text(JsonNode n) {
        return n != null && n.isTextual() ? n.textValue() : null;
    }

    private static String nonEmpty(String s) {
        return s == null || s.isEmpty() ? null : s;
    }

    @Override
    public String toString() {
        return "DbConfig[" + jdbcUrl + ", user=" + user + ", from " + source + "]";
    }
}
