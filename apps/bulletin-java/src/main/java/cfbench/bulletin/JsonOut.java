package cfbench.bulletin;

import java.util.Arrays;

/**
 * A small, allocation-light JSON writer producing UTF-8 bytes that match Node's
 * {@code JSON.stringify} exactly: compact, strings escaped as {@code \"}, {@code \\},
 * {@code \b \f \n \r \t}, other control characters and lone surrogates as backslash-u00xx
 * with lowercase hex digits; everything else (including '/', U+2028, non-ASCII) written raw.
 */
final class JsonOut {
    private static final byte[] HEX = "0123456789abcdef".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

    private byte[] buf;
    private int len;

    JsonOut(int capacity) {
        buf = new byte[Math.max(16, capacity)];
    }

    private void ensure(int extra) {
        int need = len + extra;
        if (need > buf.length) {
            buf = Arrays.copyOf(buf, Math.max(need, buf.length * 2));
        }
    }

    /** Appends ASCII text verbatim (structural characters, keys already known to be safe). */
    JsonOut raw(String ascii) {
        int n = ascii.length();
        ensure(n);
        for (int i = 0; i < n; i++) {
            buf[len++] = (byte) ascii.charAt(i);
        }
        return this;
    }

    JsonOut raw(char c) {
        ensure(1);
        buf[len++] = (byte) c;
        return this;
    }

    /** Appends a decimal integer. */
    JsonOut num(long v) {
        if (v == Long.MIN_VALUE) {
            return raw("-9223372036854775808");
        }
        ensure(20);
        if (v < 0) {
            buf[len++] = '-';
            v = -v;
        }
        int start = len;
        do {
            buf[len++] = (byte) ('0' + (v % 10));
            v /= 10;
        } while (v != 0);
        for (int i = start, j = len - 1; i < j; i++, j--) {
            byte t = buf[i];
            buf[i] = buf[j];
            buf[j] = t;
        }
        return this;
    }

    /** Appends v as exactly {@code width} digits, zero-padded (v must be non-negative and fit). */
    JsonOut digits(long v, int width) {
        ensure(width);
        for (int i = len + width - 1; i >= len; i--) {
            buf[i] = (byte) ('0' + (v % 10));
            v /= 10;
        }
        len += width;
        return this;
    }

    /** Appends v as 16 lowercase hex digits. */
    JsonOut hex16(long v) {
        ensure(16);
        for (int i = 15; i >= 0; i--) {
            buf[len + i] = HEX[(int) (v & 0xf)];
            v >>>= 4;
        }
        len += 16;
        return this;
    }

    JsonOut bool(boolean b) {
        return raw(b ? "true" : "false");
    }

    /** Appends a JSON string literal (with quotes). */
    JsonOut str(String s) {
        int n = s.length();
        ensure(n + 2);
        buf[len++] = '"';
        for (int i = 0; i < n; i++) {
            char c = s.charAt(i);
            if (c >= 0x20 && c < 0x80) {
                if (c == '"' || c == '\\') {
                    ensure(2);
                    buf[len++] = '\\';
                    buf[len++] = (byte) c;
                } else {
                    ensure(1);
                    buf[len++] = (byte) c;
                }
            } else if (c < 0x20) {
                ensure(6);
                buf[len++] = '\\';
                switch (c) {
                    case '\b' -> buf[len++] = 'b';
                    case '\f' -> buf[len++] = 'f';
                    case '\n' -> buf[len++] = 'n';
                    case '\r' -> buf[len++] = 'r';
                    case '\t' -> buf[len++] = 't';
                    default -> unicodeEscape(c);
                }
            } else if (c < 0x800) {
                ensure(2);
                buf[len++] = (byte) (0xc0 | (c >> 6));
                buf[len++] = (byte) (0x80 | (c & 0x3f));
            } else if (Character.isHighSurrogate(c) && i + 1 < n && Character.isLowSurrogate(s.charAt(i + 1))) {
                int cp = Character.toCodePoint(c, s.charAt(++i));
                ensure(4);
                buf[len++] = (byte) (0xf0 | (cp >> 18));
                buf[len++] = (byte) (0x80 | ((cp >> 12) & 0x3f));
                buf[len++] = (byte) (0x80 | ((cp >> 6) & 0x3f));
                buf[len++] = (byte) (0x80 | (cp & 0x3f));
            } else if (Character.isSurrogate(c)) {
                ensure(6);
                buf[len++] = '\\';
                unicodeEscape(c);
            } else {
                ensure(3);
                buf[len++] = (byte) (0xe0 | (c >> 12));
                buf[len++] = (byte) (0x80 | ((c >> 6) & 0x3f));
                buf[len++] = (byte) (0x80 | (c & 0x3f));
            }
        }
        ensure(1);
        buf[len++] = '"';
        return this;
    }

    /** Writes "u" and four hex digits (after the backslash), lowercase hex. */
    private void unicodeEscape(char c) {
        buf[len++] = 'u';
        buf[len++] = HEX[(c >> 12) & 0xf];
        buf[len++] = HEX[(c >> 8) & 0xf];
        buf[len++] = HEX[(c >> 4) & 0xf];
        buf[len++] = HEX[c & 0xf];
    }

    int length() {
        return len;
    }

    byte[] toBytes() {
        return Arrays.copyOf(buf, len);
    }

    /** {@code {"error":"message"}} */
    static byte[] error(String message) {
        return new JsonOut(message.length() + 16).raw("{\"error\":").str(message).raw('}').toBytes();
    }
}
