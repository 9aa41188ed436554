//go:build race

package routerlogstest

// Race says whether the race detector is on: the suites then run on smaller data sets.
// It makes parsing and decoding many times slower, and what it looks for does not
// grow with the data.
const Race = true
