package cfbench.proxy;

import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Everything the proxy reads from its environment (apps/proxy-java/README.md). */
record Config(
        int port,
        URI upstream,
        String connectTo,
        int poolSize,
        int poolTimeoutMs,
        int upstreamTimeoutMs,
        int threads,
        boolean timingsOn,
        int timingsCapacity,
        String timingsToken,
        int instanceIndex,
        String appName) {

    /** A configuration problem: one line on stderr, then exit 1. */
    static final class Invalid extends Exception {
        private static final long serialVersionUID = 1L;

        Invalid(String message) {
            super(message, null, false, false);
        }
    }

    static Config fromEnv(Map<String, String> env) throws Invalid {
        int port = intVar(env, "PORT", 8080, 0, 65535);
        URI upstream = upstream(env.get("UPSTREAM_URL"));
        String connectTo = blankToNull(env.get("CONNECT_TO"));
        if (connectTo != null) {
            if (!connectTo.matches("[A-Za-z0-9.\\-]+:[0-9]{1,5}")) {
                throw new Invalid("CONNECT_TO must be host:port, not \"" + connectTo + "\"");
            }
            if (!upstream.getScheme().equals("http")) {
                throw new Invalid("CONNECT_TO needs an http:// UPSTREAM_URL (TLS would check the certificate against CONNECT_TO's host)");
            }
        }
        int poolSize = intVar(env, "UPSTREAM_POOL_SIZE", 50, 1, 10_000);
        int poolTimeoutMs = intVar(env, "UPSTREAM_POOL_TIMEOUT_MS", 5000, 1, Integer.MAX_VALUE);
        int upstreamTimeoutMs = intVar(env, "UPSTREAM_TIMEOUT_MS", 10_000, 1, Integer.MAX_VALUE);
        int threads = intVar(env, "PROXY_THREADS", 200, 1, 10_000);
        String timings = env.get("CFBENCH_TIMINGS");
        boolean timingsOn = timings != null && timings.trim().equalsIgnoreCase("on");
        int capacity = intVar(env, "CFBENCH_TIMINGS_CAPACITY", 100_000, 0, 10_000_000);
        String token = blankToNull(env.get("CFBENCH_TIMINGS_TOKEN"));
        int instanceIndex = intVar(env, "CF_INSTANCE_INDEX", 0, 0, Integer.MAX_VALUE);
        String appName = "proxy-java";
        String vcap = env.get("VCAP_APPLICATION");
        if (vcap != null && !vcap.isBlank()) {
            String name = jsonString(vcap, "application_name");
            if (name != null) {
                appName = name;
            }
            for (String uri : jsonStrings(vcap, "uris")) {
                if (uri.toLowerCase(Locale.ROOT).equals(upstream.getAuthority().toLowerCase(Locale.ROOT))) {
                    throw new Invalid("UPSTREAM_URL " + upstream + " is this app's own route (VCAP_APPLICATION uris): it would forward to itself");
                }
            }
        }
        return new Config(port, upstream, connectTo, poolSize, poolTimeoutMs, upstreamTimeoutMs, threads, timingsOn,
                capacity, token, instanceIndex, appName);
    }

    private static URI upstream(String raw) throws Invalid {
        if (raw == null || raw.isBlank()) {
            throw new Invalid("no upstream: set UPSTREAM_URL (e.g. http://stub.apps.example.com)");
        }
        URI u;
        try {
            u = new URI(raw.trim());
        } catch (Exception e) {
            throw new Invalid("UPSTREAM_URL is not a URL: \"" + raw + "\"");
        }
        if (!("http".equals(u.getScheme()) || "https".equals(u.getScheme())) || u.getHost() == null
                || u.getRawQuery() != null || u.getRawFragment() != null) {
            throw new Invalid("UPSTREAM_URL must be http(s)://host[:port][/base-path], not \"" + raw + "\"");
        }
        return u;
    }

    private static String blankToNull(String s) {
        return s == null || s.isBlank() ? null : s.trim();
    }

    /** A decimal integer of digits only (surrounding spaces ignored); unset or blank: the default. */
    private static int intVar(Map<String, String> env, String name, int dflt, int min, int max) throws Invalid {
        String raw = env.get(name);
        if (raw == null || raw.isBlank()) {
            return dflt;
        }
        String s = raw.trim();
        if (s.chars().allMatch(c -> c >= '0' && c <= '9') && s.length() <= 18) {
            long v = Long.parseLong(s);
            if (v >= min && v <= max) {
                return (int) v;
            }
        }
        throw new Invalid(name + " must be an integer from " + min + " to " + max + ", not \"" + raw + "\"");
    }

    // VCAP_APPLICATION is flat JSON whose names and routes hold no quotes or brackets; the
    // two fields the proxy reads are found without a JSON library (the app is JDK only).
    private static final Pattern STRING = Pattern.compile("\"((?:[^\"\\\\]|\\\\.)*)\"");

    private static String jsonString(String json, String field) throws Invalid {
        requireObject(json);
        Matcher m = Pattern.compile("\"" + field + "\"\\s*:\\s*\"((?:[^\"\\\\]|\\\\.)*)\"").matcher(json);
        return m.find() ? m.group(1) : null;
    }

    private static List<String> jsonStrings(String json, String field) throws Invalid {
        requireObject(json);
        List<String> out = new ArrayList<>();
        Matcher m = Pattern.compile("\"" + field + "\"\\s*:\\s*\\[([^\\]]*)\\]").matcher(json);
        if (m.find()) {
            Matcher s = STRING.matcher(m.group(1));
            while (s.find()) {
                out.add(s.group(1));
            }
        }
        return out;
    }

    private static void requireObject(String json) throws Invalid {
        String s = json.trim();
        if (!s.startsWith("{") || !s.endsWith("}")) {
            throw new Invalid("VCAP_APPLICATION is not a JSON object: \"" + (s.length() > 40 ? s.substring(0, 40) + "…" : s) + "\"");
        }
    }
}
