//go:build !race

package elastic

const raceEnabled = false
