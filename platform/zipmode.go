package platform

import "io/fs"

// dirMode is the mode of every directory in an app's zip, as the cf CLI writes it.
const dirMode = fs.ModeDir | 0o755

// zipMode is the mode a file of an app directory gets in its zip when pushed from an
// OS named goos, as the cf CLI decides it (its fixMode): on Windows, whose file modes
// carry no execute bits, every file and link is made readable, writable and executable
// by its owner (mode | 0700), so an app whose start command runs a script or a binary of
// its own starts on Cloud Foundry as it does when pushed from Linux or macOS; elsewhere
// the mode is kept. Cloud Foundry unpacks what it is given: nothing later adds the bit.
func zipMode(goos string, m fs.FileMode) fs.FileMode {
	if m.IsDir() {
		return dirMode
	}
	if goos == "windows" {
		return m | 0o700
	}
	return m
}
