// Package sample holds the data types every part of the toolkit shares about one measured
// request: the compact in-memory sample, its error classes and the trace id that joins a
// client sample to router log lines and in-app timings.
package sample

// Sample is one request as the load generator saw it. It is 32 bytes so that a worker
// can buffer millions of them when the results DB is slow; times are microseconds
// relative to the run's epoch so they fit without a time.Time per row.
type Sample struct {
	// IntendedUS is when the request was due to be sent, in µs since the run's epoch.
	// In a closed loop it is when the user became ready; in an open loop it is the
	// schedule slot, so queueing inside the generator counts as latency.
	IntendedUS int64
	// Seq is the worker-local sequence number (1, 2, …); with the worker id it is the key.
	Seq uint32
	// StartDelayUS is how late the request actually started after IntendedUS.
	StartDelayUS int32
	// LatencyUS is from IntendedUS to the end of the response body (or the error).
	LatencyUS int32
	// Bytes is the number of response body bytes read.
	Bytes int32
	// Status is the HTTP status code, 0 when no response arrived.
	Status int16
	// Step is the ramp step index (0-based) the request belongs to.
	Step uint8
	// Request is the index of the request in the workload's mix.
	Request uint8
	// Err classifies a failed request; ErrNone when a response arrived.
	Err ErrClass
	// Flags carries FlagWarmup and future markers.
	Flags uint8
}

// FlagWarmup marks a sample taken during a step's warm-up; reports exclude it.
const FlagWarmup uint8 = 1 << 0

// Warmup reports whether the sample was taken during warm-up.
func (s *Sample) Warmup() bool { return s.Flags&FlagWarmup != 0 }

// Failed reports whether the request counts as an error in reports: no response, or an
// HTTP status of 400 or more.
func (s *Sample) Failed() bool { return s.Err != ErrNone || s.Status >= 400 }
