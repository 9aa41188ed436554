package harness

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/freeport"
	"github.com/cf-benchmark/cf-benchmark/internal/wait"
)

// nginx is the target: Debian's nginx from tools/bench/nginx.conf.tmpl, one worker, pinned
// to a core, everything it writes under dir.
type nginx struct {
	cmd     *exec.Cmd
	port    int
	version string
	done    chan struct{}
}

// startNginx starts nginx on a free port (five tries) and checks its answer.
func startNginx(ctx context.Context, bin, assets, dir string, core int) (*nginx, error) {
	tmpl, err := os.ReadFile(filepath.Join(assets, "nginx.conf.tmpl"))
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o755); err != nil {
		return nil, err
	}
	var last error
	for range 5 {
		port, err := freeport.Loopback()
		if err != nil {
			return nil, err
		}
		conf := strings.NewReplacer("@DIR@", dir, "@PORT@", strconv.Itoa(port), "@BODY@", strings.Repeat("x", 100)).Replace(string(tmpl))
		if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o644); err != nil {
			return nil, err
		}
		errLog := filepath.Join(dir, "error.log")
		n := &nginx{port: port, done: make(chan struct{})}
		n.cmd = exec.Command("taskset", "-c", strconv.Itoa(core), bin, "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-e", errLog)
		if err := n.cmd.Start(); err != nil {
			return nil, fmt.Errorf("start nginx: %w", err)
		}
		go func() { n.cmd.Wait(); close(n.done) }()
		if last = n.ready(ctx); last == nil {
			out, _ := exec.Command(bin, "-v").CombinedOutput()
			_, n.version, _ = strings.Cut(strings.TrimSpace(string(out)), "nginx/")
			return n, nil
		}
		n.stop()
		b, _ := os.ReadFile(errLog)
		last = fmt.Errorf("nginx on port %d: %w (error.log: %s)", port, last, tailOf(b, 200))
	}
	return nil, last
}

// ready waits (5 s at most) for the 100-byte answer.
func (n *nginx) ready(ctx context.Context) error {
	client := &http.Client{Timeout: time.Second}
	err := fmt.Errorf("not up")
	for range 50 {
		select {
		case <-n.done:
			return fmt.Errorf("exited: %v", n.cmd.ProcessState)
		default:
		}
		resp, rerr := client.Get(n.url())
		if rerr == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 && len(body) == 100 {
				return nil
			}
			return fmt.Errorf("unexpected answer: %s, %d bytes", resp.Status, len(body))
		}
		err = rerr
		if !wait.For(ctx, 100*time.Millisecond) {
			return ctx.Err()
		}
	}
	return err
}

func (n *nginx) url() string { return fmt.Sprintf("http://127.0.0.1:%d/", n.port) }

// stop ends nginx: SIGTERM, SIGKILL after 5 s.
func (n *nginx) stop() {
	n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.done:
	case <-time.After(5 * time.Second):
		n.cmd.Process.Kill()
		<-n.done
	}
}

func tailOf(b []byte, n int) string {
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		s = s[len(s)-n:]
	}
	return s
}
