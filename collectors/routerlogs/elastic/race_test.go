//go:build race

package elastic

// raceEnabled shrinks the shared data set: the race detector makes decoding answers
// about fifteen times slower, and what it looks for does not grow with the data.
const raceEnabled = true
