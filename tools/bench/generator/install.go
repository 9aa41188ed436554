package generator

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// The peers' versions: the Go tools from the Go module proxy, oha from the Rust crate registry, wrk
// from Debian.
const (
	heyModule, heyVersion       = "github.com/rakyll/hey", "v0.1.4"
	vegetaModule, vegetaVersion = "github.com/tsenart/vegeta/v12", "v12.12.0"
	k6Module, k6Version         = "go.k6.io/k6", "v0.54.0"
	ohaVersion                  = "1.16.0"
)

// Installer finds each generator, installing what is missing into Cache/bin (Go tools
// with go install, oha with cargo install) or with apt-get (wrk), and logs each
// installation to Cache/logs.
type Installer struct {
	Cache string // e.g. ~/.cache/cf-benchmark/bench
	Ours  string // the cf-benchmark binary (bin/cf-benchmark)
	// Baseline, when set, is another cf-benchmark binary measured as the generator
	// Baseline (cf-benchmark-baseline), to compare two builds in one run, paired.
	Baseline string
	Log      func(string, ...any) // progress for the user
}

// Locate returns the tools named in names that can run, and for the others why not.
// AptGet installs Debian packages (nginx, wrk) when they are missing.
func (in *Installer) Locate(ctx context.Context, names []string) (tools []*Tool, skipped map[string]string) {
	skipped = map[string]string{}
	for _, d := range []string{"bin", "logs", "stamps"} {
		os.MkdirAll(filepath.Join(in.Cache, d), 0o755)
	}
	for _, name := range names {
		var t *Tool
		var err error
		switch name {
		case "wrk":
			t, err = in.wrk(ctx)
		case "oha":
			t, err = in.oha(ctx, oha())
		case "oha-db":
			t, err = in.oha(ctx, ohaDB())
		case "hey":
			t, err = in.goTool(ctx, hey(), heyModule, heyVersion)
		case "vegeta":
			t, err = in.goTool(ctx, vegeta(), vegetaModule, vegetaVersion)
		case "k6":
			t, err = in.goTool(ctx, k6(), k6Module, k6Version)
		case Ours, OursTick1ms:
			t, err = in.ours(name, in.Ours)
		case Baseline:
			t, err = in.ours(Baseline, in.Baseline)
		default:
			err = fmt.Errorf("unknown generator %q (known: %s)", name, strings.Join(Names, ", "))
		}
		if err != nil {
			skipped[name] = err.Error()
			in.Log("skipping %s: %v", name, err)
			continue
		}
		tools = append(tools, t)
	}
	return tools, skipped
}

func (in *Installer) ours(name, bin string) (*Tool, error) {
	if bin == "" {
		return nil, fmt.Errorf("no -baseline binary given")
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%s is missing: run make bench, which builds it", bin)
	}
	if _, err := exec.LookPath("psql"); err != nil {
		// Not used by the harness, but its absence means PostgreSQL is not installed.
		return nil, fmt.Errorf("PostgreSQL is not installed (scripts/install-deps.sh installs it)")
	}
	t := ours(name, bin)
	out, _ := exec.Command(bin, "--version").Output()
	t.Version = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "cf-benchmark"))
	return t, nil
}

func (in *Installer) wrk(ctx context.Context) (*Tool, error) {
	if err := AptGet(ctx, in.Cache, "wrk"); err != nil {
		return nil, err
	}
	t := wrk()
	t.Path, _ = exec.LookPath("wrk")
	out, _ := exec.Command("dpkg-query", "-W", "-f", "${Version}", "wrk").Output()
	t.Version = strings.TrimSpace(string(out))
	if t.Version == "" {
		t.Version = "unknown"
	}
	return t, nil
}

// goTool installs module@version into Cache/bin unless the binary there was built from
// that module version (its build info says).
func (in *Installer) goTool(ctx context.Context, t *Tool, module, version string) (*Tool, error) {
	bin := filepath.Join(in.Cache, "bin", t.Name)
	t.Path, t.Version = bin, version
	built := regexp.MustCompile(`(?m)^\s+mod\s+` + regexp.QuoteMeta(module) + `\s+` + regexp.QuoteMeta(version) + `(\s|$)`)
	if out, err := exec.Command("go", "version", "-m", bin).Output(); err == nil && built.Match(out) {
		return t, nil
	}
	in.Log("installing %s: go install %s@%s", t.Name, module, version)
	// Outside the repo, so its go.mod plays no part.
	cmd := exec.CommandContext(ctx, "go", "install", module+"@"+version)
	cmd.Dir, cmd.Env = in.Cache, append(os.Environ(), "GOFLAGS=", "GOBIN="+filepath.Join(in.Cache, "bin"))
	if err := in.logged(cmd, t.Name, 30*time.Minute); err != nil {
		return nil, fmt.Errorf("go install %s@%s failed: %w", module, version, err)
	}
	return t, nil
}

// oha is built with cargo; when the newest versions of its dependencies need a newer
// Rust than this machine's, it is built again with --locked (oha's own lock file).
// t is oha or oha-db, the same program.
func (in *Installer) oha(ctx context.Context, t *Tool) (*Tool, error) {
	t.Path, t.Version = filepath.Join(in.Cache, "bin", "oha"), ohaVersion
	stamp := filepath.Join(in.Cache, "stamps", "oha")
	if out, err := exec.Command(t.Path, "--version").Output(); err == nil && strings.TrimSpace(string(out)) == "oha "+ohaVersion {
		b, _ := os.ReadFile(stamp)
		t.Built = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(b)), "oha "+ohaVersion))
		return t, nil
	}
	cargo, err := exec.LookPath("cargo")
	if err != nil { // rustup's default place, often not on PATH
		home, _ := os.UserHomeDir()
		cargo, err = exec.LookPath(filepath.Join(home, ".cargo", "bin", "cargo"))
	}
	if err != nil {
		return nil, fmt.Errorf("cargo is not installed, so oha %s cannot be built", ohaVersion)
	}
	args := []string{"install", "oha", "--version", ohaVersion, "--features", "native-tls", "--root", in.Cache}
	in.Log("installing oha: cargo %s (compiles for several minutes)", strings.Join(args, " "))
	for _, extra := range [][]string{nil, {"--locked"}} {
		cmd := exec.CommandContext(ctx, cargo, append(args, extra...)...)
		cmd.Dir = in.Cache
		if err = in.logged(cmd, "oha", time.Hour); err == nil {
			if extra != nil {
				t.Built = "built with --locked"
			}
			os.WriteFile(stamp, []byte("oha "+ohaVersion+" "+t.Built+"\n"), 0o644)
			return t, nil
		}
		in.Log("cargo install oha failed (%v)", err)
	}
	return nil, fmt.Errorf("cargo install oha --version %s failed: %w", ohaVersion, err)
}

// logged runs cmd with its output appended to Cache/logs/NAME.log, at most limit.
func (in *Installer) logged(cmd *exec.Cmd, name string, limit time.Duration) error {
	path := filepath.Join(in.Cache, "logs", name+".log")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	cmd.WaitDelay = 5 * time.Second
	timer := time.AfterFunc(limit, func() {
		if cmd.Process != nil {
			cmd.Process.Kill()
		}
	})
	defer timer.Stop()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w (log: %s)", err, path)
	}
	return nil
}

// AptGet installs the Debian packages whose program (the package's name, or nginx in
// /usr/sbin) is missing, as root or through sudo, logging to Cache/logs/apt.log.
func AptGet(ctx context.Context, cache string, pkgs ...string) error {
	var missing []string
	for _, p := range pkgs {
		if _, err := exec.LookPath(p); err != nil {
			if _, err := os.Stat("/usr/sbin/" + p); err != nil {
				missing = append(missing, p)
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	var prefix []string
	if os.Geteuid() != 0 {
		if _, err := exec.LookPath("sudo"); err != nil {
			return fmt.Errorf("the Debian packages %s are missing, and installing them needs root", strings.Join(missing, " "))
		}
		prefix = []string{"sudo"}
	}
	in := &Installer{Cache: cache}
	for _, args := range [][]string{{"apt-get", "update", "-q"}, append([]string{"apt-get", "install", "-y", "-q", "--no-install-recommends"}, missing...)} {
		args = append(append(prefix, "env", "DEBIAN_FRONTEND=noninteractive"), args...)
		if err := in.logged(exec.CommandContext(ctx, args[0], args[1:]...), "apt", 15*time.Minute); err != nil {
			return fmt.Errorf("could not install the Debian packages %s: %w", strings.Join(missing, " "), err)
		}
	}
	return nil
}
