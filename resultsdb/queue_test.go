package resultsdb

import (
	"runtime"
	"testing"

	"github.com/cf-benchmark/cf-benchmark/internal/sample"
)

// TestQueueIsFIFOAcrossChunks pushes, moves and drops across chunk boundaries and checks
// the order and the count at every step against a plain slice.
func TestQueueIsFIFOAcrossChunks(t *testing.T) {
	var a, b queue
	var want []uint32
	seq := uint32(0)
	push := func(q *queue, n int, toWant bool) {
		for range n {
			seq++
			q.Push(sample.Sample{Seq: seq})
			if toWant {
				want = append(want, seq)
			}
		}
	}
	check := func(step string) {
		t.Helper()
		var got []uint32
		for _, seg := range a.Front(a.Len()) {
			for _, s := range seg {
				got = append(got, s.Seq)
			}
		}
		if a.Len() != len(want) || len(got) != len(want) {
			t.Fatalf("%s: len %d, front %d, want %d", step, a.Len(), len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s: sample %d is seq %d, want %d", step, i, got[i], want[i])
			}
		}
	}
	push(&a, chunkSize+10, true)
	check("push")
	a.Drop(5)
	want = want[5:]
	check("drop inside the first chunk")
	a.Drop(chunkSize)
	want = want[chunkSize:]
	check("drop across a chunk boundary")
	push(&b, 2*chunkSize+1, true)
	a.MoveFrom(&b)
	if b.Len() != 0 {
		t.Fatalf("the moved-from queue still holds %d", b.Len())
	}
	check("move into a non-empty queue")
	a.Drop(a.Len())
	want = nil
	check("drop all")
	push(&b, 3, true)
	a.MoveFrom(&b)
	check("move into an empty queue")
	if n := len(a.Front(2)); n != 1 {
		t.Fatalf("Front(2) of 3 in one chunk gave %d segments", n)
	}
}

// TestQueueCostsAtMost32BytesPerSample measures the heap a full writer buffer takes:
// 32 bytes per sample plus at most one chunk, the worker's memory budget.
func TestQueueCostsAtMost32BytesPerSample(t *testing.T) {
	const n = 1 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var q queue
	for i := range n {
		q.Push(sample.Sample{Seq: uint32(i)})
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perSample := float64(after.HeapAlloc-before.HeapAlloc) / n
	if budget := 32 + 32.0*chunkSize/n + 1; perSample > budget {
		t.Fatalf("%.2f bytes per buffered sample, budget %.2f", perSample, budget)
	}
	t.Logf("%.2f bytes per buffered sample", perSample)
	runtime.KeepAlive(&q)
}
