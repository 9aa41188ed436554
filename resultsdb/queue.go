package resultsdb

import (
	"sync"

	"github.com/cf-benchmark/cf-benchmark/internal/sample"
)

// chunkSize is the number of samples per queue chunk (128 KiB).
const chunkSize = 4096

// chunks recycles emptied chunks between queues (a writer's Add side fills them, its
// flush side empties them).
var chunks = sync.Pool{New: func() any { c := make([]sample.Sample, 0, chunkSize); return &c }}

// queue is a FIFO of samples held in fixed-size chunks, so that it costs 32 bytes per
// sample plus at most one partly filled chunk, however many it holds; a growing slice
// would need up to twice that while it grows, and copy everything each time. It is not
// safe for concurrent use.
type queue struct {
	chunks [][]sample.Sample // every chunk full except the last; cap chunkSize
	head   int               // samples already consumed from chunks[0]
	n      int
}

// Len is the number of samples queued.
func (q *queue) Len() int { return q.n }

func newChunk() []sample.Sample { return (*chunks.Get().(*[]sample.Sample))[:0] }

func recycle(c []sample.Sample) { chunks.Put(&c) }

// Push appends one sample.
func (q *queue) Push(s sample.Sample) {
	last := len(q.chunks) - 1
	if last < 0 || len(q.chunks[last]) == chunkSize {
		q.chunks = append(q.chunks, newChunk())
		last++
	}
	q.chunks[last] = append(q.chunks[last], s)
	q.n++
}

// MoveFrom appends every sample of o and empties o. An empty q takes o's chunks as
// they are; otherwise the samples are copied, so q stays dense.
func (q *queue) MoveFrom(o *queue) {
	if q.n == 0 {
		for _, c := range q.chunks {
			recycle(c)
		}
		q.chunks, q.head, q.n = o.chunks, o.head, o.n
		o.chunks, o.head, o.n = nil, 0, 0
		return
	}
	for _, seg := range o.Front(o.n) {
		for i := range seg {
			q.Push(seg[i])
		}
	}
	o.Drop(o.n)
}

// Front returns the first n samples (at most Len) as consecutive segments that alias
// the queue: valid until the queue changes.
func (q *queue) Front(n int) [][]sample.Sample {
	var segs [][]sample.Sample
	for i, c := range q.chunks {
		if n <= 0 {
			break
		}
		if i == 0 {
			c = c[q.head:]
		}
		k := min(n, len(c))
		segs = append(segs, c[:k])
		n -= k
	}
	return segs
}

// Drop removes the first n samples (at most Len).
func (q *queue) Drop(n int) {
	n = min(n, q.n)
	q.n -= n
	for n > 0 {
		left := len(q.chunks[0]) - q.head
		if n < left {
			q.head += n
			return
		}
		n -= left
		recycle(q.chunks[0])
		q.chunks[0] = nil
		q.chunks = q.chunks[1:]
		q.head = 0
	}
}
