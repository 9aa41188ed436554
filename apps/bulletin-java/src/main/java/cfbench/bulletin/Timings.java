package cfbench.bulletin;

import java.util.Arrays;

/**
 * The in-app timings buffer: a fixed number of rows in preallocated primitive arrays.
 *
 * <p>Two row sets of {@code capacity} rows each are allocated once, at start. Request threads
 * append to the active set under this object's monitor (a few array stores); a flush swaps the
 * active set for the idle one under the same monitor, so every row lands in exactly one flush,
 * and then serializes the swapped-out set without holding the monitor. Flushes are serialized
 * by their own lock, so the idle set is never swapped in while it is still being written out.
 *
 * <p>Public, with TraceId and MicroClock, because apps/proxy-java compiles them in too.
 */
public final class Timings {

    /** One set of rows: parallel arrays, {@code n} of them in use. */
    private static final class Rows {
        final long[] traceHi;
        final long[] traceLo;
        final long[] at;
        final long[] arrival;
        final long[] poolWait;
        final long[] query;
        final long[] total;
        int n;

        Rows(int capacity) {
            traceHi = new long[capacity];
            traceLo = new long[capacity];
            at = new long[capacity];
            arrival = new long[capacity];
            poolWait = new long[capacity];
            query = new long[capacity];
            total = new long[capacity];
        }
    }

    private final int capacity;
    private final int instanceIndex;
    private final Object flushLock = new Object();
    private volatile boolean recording;

    // guarded by this
    private Rows active;
    private Rows idle;
    private long dropped;

    public Timings(int capacity, boolean recording, int instanceIndex) {
        this.capacity = capacity;
        this.recording = recording;
        this.instanceIndex = instanceIndex;
        this.active = new Rows(capacity);
        this.idle = new Rows(capacity);
    }

    public boolean recording() {
        return recording;
    }

    public void setRecording(boolean on) {
        recording = on;
    }

    public int capacity() {
        return capacity;
    }

    /**
     * Keeps one row, or counts it as dropped when the buffer is full. Times in microseconds;
     * arrivalNanos (System.nanoTime() at arrival) orders the rows of a flush.
     */
    public void record(long traceHi, long traceLo, long atMicros, long arrivalNanos, long poolWaitUs, long queryUs,
                long totalUs) {
        synchronized (this) {
            Rows r = active;
            int i = r.n;
            if (i >= capacity) {
                dropped++;
                return;
            }
            r.traceHi[i] = traceHi;
            r.traceLo[i] = traceLo;
            r.at[i] = atMicros;
            r.arrival[i] = arrivalNanos;
            r.poolWait[i] = poolWaitUs;
            r.query[i] = queryUs;
            r.total[i] = totalUs;
            r.n = i + 1;
        }
    }

    /** {"recording":true,"capacity":100000,"buffered":12,"dropped":0} */
    public byte[] statusJson() {
        int buffered;
        long d;
        synchronized (this) {
            buffered = active.n;
            d = dropped;
        }
        return new JsonOut(96)
                .raw("{\"recording\":").bool(recording)
                .raw(",\"capacity\":").num(capacity)
                .raw(",\"buffered\":").num(buffered)
                .raw(",\"dropped\":").num(d)
                .raw('}')
                .toBytes();
    }

    /**
     * Takes every buffered row and clears the buffer and the dropped count, atomically with
     * respect to {@link #record}; returns
     * {"instance_index":0,"capacity":100000,"dropped":0,"rows":[["trace",at,pool_wait_us,query_us,total_us],...]}
     * with the rows in arrival order.
     */
    public byte[] flushJson() {
        synchronized (flushLock) {
            Rows r;
            long d;
            synchronized (this) {
                r = active;
                active = idle;
                idle = r;
                d = dropped;
                dropped = 0;
            }
            // r is no longer reachable by record(); only flushes (serialized by flushLock) touch it.
            int n = r.n;
            JsonOut out = new JsonOut(96 + n * 88);
            out.raw("{\"instance_index\":").num(instanceIndex)
                    .raw(",\"capacity\":").num(capacity)
                    .raw(",\"dropped\":").num(d)
                    .raw(",\"rows\":[");
            int[] order = arrivalOrder(r.arrival, n);
            for (int k = 0; k < n; k++) {
                int i = order == null ? k : order[k];
                if (k > 0) {
                    out.raw(',');
                }
                out.raw("[\"").hex16(r.traceHi[i]).hex16(r.traceLo[i]).raw("\",")
                        .num(r.at[i]).raw(',')
                        .num(r.poolWait[i]).raw(',')
                        .num(r.query[i]).raw(',')
                        .num(r.total[i]).raw(']');
            }
            out.raw("]}");
            r.n = 0;
            return out.toBytes();
        }
    }

    /**
     * Rows are appended when their response completes, so a slow request lands after faster
     * ones that arrived later. Returns null when they already are in arrival order (the common
     * case), else the indices sorted by arrival (stable, so ties keep completion order).
     */
    private static int[] arrivalOrder(long[] arrival, int n) {
        boolean sorted = true;
        for (int i = 1; i < n; i++) {
            if (arrival[i] - arrival[i - 1] < 0) {
                sorted = false;
                break;
            }
        }
        if (sorted) {
            return null;
        }
        Integer[] idx = new Integer[n];
        for (int i = 0; i < n; i++) {
            idx[i] = i;
        }
        Arrays.sort(idx, (a, b) -> Long.signum(arrival[a] - arrival[b]));
        int[] order = new int[n];
        for (int i = 0; i < n; i++) {
            order[i] = idx[i];
        }
        return order;
    }
}
