package cfbench.bulletin;

import java.time.Instant;

/**
 * Unix microseconds for System.nanoTime() readings: monotonic offsets from an anchor taken on
 * the wall clock, re-anchored when the two drift apart by more than about a millisecond (as the
 * Node twin's UnixMicroClock). So the {@code at} of rows ordered by arrival are ordered too,
 * and stay within a millisecond or two of the wall clock.
 */
public final class MicroClock {

    private record Anchor(long nanos, long micros) {
    }

    private volatile Anchor anchor = now();

    private static Anchor now() {
        Instant t = Instant.now();
        return new Anchor(System.nanoTime(), t.getEpochSecond() * 1_000_000L + t.getNano() / 1000);
    }

    /** The Unix time in microseconds of an earlier System.nanoTime() reading. */
    public long at(long nanos) {
        Anchor a = anchor;
        long nowNanos = System.nanoTime();
        long nowMicros = a.micros() + (nowNanos - a.nanos()) / 1000;
        long wallMicros = System.currentTimeMillis() * 1000; // truncated: true time is within 1 ms after
        if (nowMicros < wallMicros - 1000 || nowMicros >= wallMicros + 2000) {
            a = now();
            anchor = a;
            nowMicros = a.micros() + (nowNanos - a.nanos()) / 1000;
        }
        return nowMicros - (nowNanos - nanos) / 1000;
    }
}
