package cfbench.bulletin;

import java.util.Map;

/** Everything the app reads from its environment (see apps/README.md, "Environment"). */
record Config(
        int port,
        int poolSize,
        int poolTimeoutMs,
        int serverThreads,
        int seedAds,
        boolean timingsOn,
        int timingsCapacity,
        String timingsToken,
        int instanceIndex,
        DbConfig db) {

    /** Jetty's acceptor and selector threads come out of the pool: fewer leave none for requests. */
    static final int MIN_SERVER_THREADS = 8;

    static Config fromEnv(Map<String, String> env) throws ConfigException {
        int port = intVar(env, "PORT", 8080, 0, 65535);
        int poolSize = intVar(env, "DB_POOL_SIZE", 10, 1, 10_000);
        int poolTimeoutMs = intVar(env, "DB_POOL_TIMEOUT_MS", 5000, 1, Integer.MAX_VALUE);
        int serverThreads = intVar(env, "SERVER_THREADS", 200, MIN_SERVER_THREADS, 100_000);
        int seedAds = intVar(env, "SEED_ADS", 100, 0, 100_000_000);
        String timings = env.get("CFBENCH_TIMINGS");
        boolean timingsOn = timings != null && timings.trim().equalsIgnoreCase("on");
        int capacity = intVar(env, "CFBENCH_TIMINGS_CAPACITY", 100_000, 0, 10_000_000);
        String token = env.get("CFBENCH_TIMINGS_TOKEN");
        if (token != null && token.isEmpty()) {
            token = null;
        }
        int instanceIndex = intVar(env, "CF_INSTANCE_INDEX", 0, 0, Integer.MAX_VALUE);
        DbConfig db = DbConfig.fromEnv(env);
        return new Config(port, poolSize, poolTimeoutMs, serverThreads, seedAds, timingsOn, capacity, token, instanceIndex, db);
    }

    /** A decimal integer of digits only (surrounding spaces ignored); unset or blank: the default. */
    private static int intVar(Map<String, String> env, String name, int dflt, int min, int max) throws ConfigException {
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
        throw new ConfigException(name + " must be an integer from " + min + " to " + max + ", not \"" + raw + "\"");
    }

    @Override
    public String toString() {
        return "Config[port=" + port + ", poolSize=" + poolSize + ", poolTimeoutMs=" + poolTimeoutMs
                + ", serverThreads=" + serverThreads + ", seedAds=" + seedAds + ", timingsOn=" + timingsOn + ", timingsCapacity=" + timingsCapacity
                + ", timingsToken=" + (timingsToken == null ? "none" : "set") + ", instanceIndex=" + instanceIndex
                + ", db=" + db + "]";
    }
}
