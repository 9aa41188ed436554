//go:build !race

package routerlogstest

// Race says whether the race detector is on (see race.go).
const Race = false
