package cfbench.bulletin;

/** A configuration problem, reported as one line on stderr before exiting with status 1. */
final class ConfigException extends Exception {
    private static final long serialVersionUID = 1L;

    ConfigException(String message) {
        super(message, null, false, false);
    }
}
