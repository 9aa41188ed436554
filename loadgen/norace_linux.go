//go:build linux && !race

package loadgen

// raceAcquireIO: see race_linux.go.
func raceAcquireIO(int) {}
