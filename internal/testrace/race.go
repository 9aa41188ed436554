//go:build race

package testrace

// Enabled says whether the race detector is on.
const Enabled = true
