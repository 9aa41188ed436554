package cfbench.bulletin;

/**
 * B3 trace id parsing, as the Node twin does it (apps/bulletin-node/lib/timings.js):
 * {@code X-B3-TraceId} of 16 or 32 hex digits (a 16-digit id is left-padded with zeros);
 * when it is absent or malformed, the single {@code b3} header
 * {@code traceid-spanid[-sampled[-parentspanid]]} with a 16/32-hex trace id, a 16-hex span id,
 * sampled one of 0, 1, d and a 16-hex parent span id. Hex digits may be upper or lower case;
 * ids are reported in lowercase.
 */
public final class TraceId {
    private TraceId() {
    }

    /** The two 64-bit halves of a parsed id; {@code hi} is 0 for a 16-digit id. */
    public record Parsed(long hi, long lo) {
    }

    /** From the two headers' values (either may be null); null when there is no valid trace id. */
    public static Parsed fromHeaders(String xB3TraceId, String b3) {
        if (xB3TraceId != null) {
            Parsed p = parseId(xB3TraceId, 0, xB3TraceId.length());
            if (p != null) {
                return p;
            }
        }
        return b3 == null ? null : parseSingle(b3);
    }

    /** The single b3 header: traceid-spanid[-sampled[-parentspanid]]. */
    static Parsed parseSingle(String b3) {
        String[] parts = b3.split("-", -1);
        if (parts.length < 2 || parts.length > 4) {
            return null;
        }
        if (parts[1].length() != 16 || !isHex(parts[1], 0, 16)) {
            return null;
        }
        if (parts.length >= 3 && !(parts[2].equals("0") || parts[2].equals("1") || parts[2].equals("d"))) {
            return null;
        }
        if (parts.length == 4 && (parts[3].length() != 16 || !isHex(parts[3], 0, 16))) {
            return null;
        }
        return parseId(parts[0], 0, parts[0].length());
    }

    /** 16 or 32 hex digits in s[from, to). */
    static Parsed parseId(String s, int from, int to) {
        int len = to - from;
        if ((len != 16 && len != 32) || !isHex(s, from, to)) {
            return null;
        }
        if (len == 16) {
            return new Parsed(0L, hex(s, from, to));
        }
        return new Parsed(hex(s, from, from + 16), hex(s, from + 16, to));
    }

    private static boolean isHex(String s, int from, int to) {
        for (int i = from; i < to; i++) {
            if (Utf8.hexDigit(s.charAt(i)) < 0) {
                return false;
            }
        }
        return true;
    }

    private static long hex(String s, int from, int to) {
        long v = 0;
        for (int i = from; i < to; i++) {
            v = (v << 4) | Utf8.hexDigit(s.charAt(i));
        }
        return v;
    }

    static String format(long hi, long lo) {
        return String.format("%016x%016x", hi, lo);
    }
}
