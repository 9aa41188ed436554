//go:build !unix

package procstat

// ownPGRP is never compared off Unix: there is no /proc/self/stat to parse.
func ownPGRP() int { return -1 }
