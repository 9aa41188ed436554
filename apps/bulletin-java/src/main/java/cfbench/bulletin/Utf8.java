package cfbench.bulletin;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/**
 * UTF-8 decoding as the WHATWG Encoding Standard (and so Node's {@code buf.toString('utf8')})
 * does it: each maximal ill-formed subsequence becomes one U+FFFD. Java's own decoder agrees
 * on well-formed input but counts replacements differently for some ill-formed input (an
 * encoded surrogate such as ED A0 80 gives one U+FFFD in Java, three in Node).
 */
final class Utf8 {
    private Utf8() {
    }

    static String decode(byte[] b, int off, int len) {
        char[] out = new char[len]; // never more UTF-16 units than bytes
        int n = 0;
        int needed = 0;
        int seen = 0;
        int cp = 0;
        int lower = 0x80;
        int upper = 0xBF;
        int end = off + len;
        int i = off;
        while (i < end) {
            int c = b[i] & 0xff;
            if (needed == 0) {
                i++;
                if (c <= 0x7F) {
                    out[n++] = (char) c;
                } else if (c >= 0xC2 && c <= 0xDF) {
                    needed = 1;
                    cp = c & 0x1F;
                } else if (c >= 0xE0 && c <= 0xEF) {
                    if (c == 0xE0) {
                        lower = 0xA0;
                    } else if (c == 0xED) {
                        upper = 0x9F;
                    }
                    needed = 2;
                    cp = c & 0x0F;
                } else if (c >= 0xF0 && c <= 0xF4) {
                    if (c == 0xF0) {
                        lower = 0x90;
                    } else if (c == 0xF4) {
                        upper = 0x8F;
                    }
                    needed = 3;
                    cp = c & 0x07;
                } else {
                    out[n++] = '\uFFFD';
                }
                continue;
            }
            if (c < lower || c > upper) {
                // the sequence so far is ill-formed: one U+FFFD, and this byte starts afresh
                needed = 0;
                seen = 0;
                cp = 0;
                lower = 0x80;
                upper = 0xBF;
                out[n++] = '\uFFFD';
                continue;
            }
            i++;
            lower = 0x80;
            upper = 0xBF;
            cp = (cp << 6) | (c & 0x3F);
            if (++seen == needed) {
                if (cp >= 0x10000) {
                    out[n++] = Character.highSurrogate(cp);
                    out[n++] = Character.lowSurrogate(cp);
                } else {
                    out[n++] = (char) cp;
                }
                needed = 0;
                seen = 0;
                cp = 0;
            }
        }
        if (needed != 0) {
            out[n++] = '\uFFFD';
        }
        return new String(out, 0, n);
    }

    /**
     * Percent-decoding of a URI component, the bytes read as UTF-8; with plusIsSpace a '+'
     * is a space (query strings), else it stays a '+'. Malformed escapes are kept as they are.
     */
    static String percentDecode(String s, boolean plusIsSpace) {
        if (s.indexOf('%') < 0 && (!plusIsSpace || s.indexOf('+') < 0)) {
            return s;
        }
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        ByteArrayOutputStream out = new ByteArrayOutputStream(b.length);
        for (int i = 0; i < b.length; i++) {
            byte c = b[i];
            if (c == '+' && plusIsSpace) {
                out.write(' ');
            } else if (c == '%' && i + 2 < b.length && hexDigit(b[i + 1]) >= 0 && hexDigit(b[i + 2]) >= 0) {
                out.write(hexDigit(b[i + 1]) * 16 + hexDigit(b[i + 2]));
                i += 2;
            } else {
                out.write(c);
            }
        }
        return out.toString(StandardCharsets.UTF_8);
    }

    /** The value of hex digit c, or -1. */
    static int hexDigit(int c) {
        if (c >= '0' && c <= '9') {
            return c - '0';
        }
        if (c >= 'a' && c <= 'f') {
            return c - 'a' + 10;
        }
        if (c >= 'A' && c <= 'F') {
            return c - 'A' + 10;
        }
        return -1;
    }
}
