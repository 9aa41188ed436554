package cfbench.bulletin;

import java.io.PrintStream;
import java.util.Map;

/** Entry point: configuration from the environment, then the app; one line on start. */
public final class Main {
    private Main() {
    }

    public static void main(String[] args) {
        App app = start(System.getenv(), System.out, System.err);
        if (app == null) {
            System.exit(1);
        }
        Runtime.getRuntime().addShutdownHook(new Thread(app::close, "bulletin-shutdown"));
    }

    /** Starts the app and prints the start line; on failure prints one line to err and returns null. */
    static App start(Map<String, String> env, PrintStream out, PrintStream err) {
        Config config;
        try {
            config = Config.fromEnv(env);
        } catch (ConfigException e) {
            err.println("bulletin-java: " + e.getMessage());
            return null;
        }
        App app = new App(config);
        try {
            app.start();
        } catch (Exception e) {
            err.println("bulletin-java: cannot start: " + BulletinHandler.oneLine(e));
            app.close();
            return null;
        }
        out.println("bulletin-java listening on port " + app.port()
                + " (db pool " + config.poolSize()
                + ", timings " + (config.timingsOn() ? "on" : "off")
                + ", capacity " + config.timingsCapacity() + ")");
        return app;
    }
}
