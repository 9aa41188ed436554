package command

// The local foundation runs on Linux only: foundation_linux.go is the command, and
// foundation_other.go says elsewhere what to do instead. What both say is here, so a
// test on any platform checks it.

const (
	foundationSummary  = "Run a local Cloud Foundry on this machine: CC v3 API, router, cells, a postgres service"
	foundationSynopsis = "start|stop|status [--state-dir DIR] [--detach] [--cells apps=0,loadgen=1] [--platform-cpus 1|any] [--es-url URL] [--log-quota N/1h]\n" +
		"       cf-benchmark foundation chaos crash APP [INDEX] | oom APP INDEX | evacuate CELL | restart-router | expire-tokens [--state-dir DIR]"
	foundationExample = "foundation start --detach --state-dir .cfbench/foundation"
)

// foundationUnavailable is why the local foundation cannot run on goos (a GOOS value)
// and what to do instead, in one line; "" on Linux, where it runs.
func foundationUnavailable(goos string) string {
	if goos == "linux" {
		return ""
	}
	name := goos
	switch goos {
	case "darwin":
		name = "macOS"
	case "windows":
		name = "Windows"
	}
	return "the local foundation runs on Linux only (it runs apps in cgroups): on " + name +
		" run it in a Linux VM or container, or target a Cloud Foundry with cf login"
}
