//go:build !race

// Package testrace says whether the race detector is on, so that tests whose cost
// grows with their data run on less of it under the detector: it makes parsing,
// decoding and copying many times slower, and what it looks for (unsynchronised
// access) does not grow with the data.
package testrace

// Enabled says whether the race detector is on.
const Enabled = false
