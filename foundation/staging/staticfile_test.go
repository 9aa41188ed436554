//go:build linux

package staging

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/freeport"
	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
	"github.com/cf-benchmark/cf-benchmark/internal/testtier"
)

func TestParseStaticfile(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in      string
		want    staticfileOptions
		wantErr string
	}{
		{in: "", want: staticfileOptions{}},
		{in: "root: dist/\n", want: staticfileOptions{root: "dist"}},
		{in: "root: .\n", want: staticfileOptions{}},
		{in: "root: public/site\ndirectory: visible\nssi: enabled\npushstate: enabled\ngzip: off\nhost_dot_files: true\n" +
			"force_https: true\nhttp_strict_transport_security: true\nhttp_strict_transport_security_preload: true\n",
			want: staticfileOptions{root: "public/site", dirListing: true, ssi: true, pushstate: true, gzipOff: true, dotFiles: true,
				forceHTTPS: true, hsts: true, hstsPreload: true}},
		{in: "gzip: on\ndirectory: hidden\nstatus_codes: {404: /404.html}\nlocation_include: a.conf\n",
			want: staticfileOptions{ignoredNames: []string{"location_include", "status_codes"}}},
		{in: "root: ../etc\n", wantErr: `root "../etc": want a directory inside the app`},
		{in: "root: \"dist; } server {\"\n", wantErr: "want a directory inside the app"},
		{in: "root: [a]\n", wantErr: "root: want a directory name"},
		{in: "root: a\n b: [\n", wantErr: "Staticfile: yaml: line"},
	} {
		got, err := parseStaticfile([]byte(c.in))
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%q: err = %v, want %q", c.in, err, c.wantErr)
			}
			continue
		}
		if err != nil || fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", c.want) {
			t.Errorf("%q: got %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
}

// A Staticfile app is detected, staged into public/ beside boot.sh and served by nginx
// from its root: index.html at /, content types, 404 for what is missing, for dot
// files and for anything outside the root, and no way up out of it.
func TestStaticfileAppIsServed(t *testing.T) {
	testtier.External(t, "nginx")
	t.Parallel()
	zip := writeZip(t, false,
		entry{name: "Staticfile", body: "root: dist\nstatus_codes: {}\n", mode: 0o644},
		entry{name: "secret.txt", body: "outside the root", mode: 0o644},
		entry{name: "dist/index.html", body: "<h1>hello</h1>", mode: 0o644},
		entry{name: "dist/app.js", body: "console.log(1)", mode: 0o644},
		entry{name: "dist/style.css", body: "h1{}", mode: 0o644},
		entry{name: "dist/sub/index.html", body: "sub", mode: 0o644},
		entry{name: "dist/.env", body: "TOKEN=x", mode: 0o644},
	)
	_, droplet := dropletDir(t)
	var log bytes.Buffer
	res, err := Stage(context.Background(), Request{PackageZip: zip, DropletDir: droplet, Log: &log})
	if err != nil {
		t.Fatalf("stage: %v\n%s", err, log.String())
	}
	if res.Buildpack != "staticfile_buildpack" || res.StartCommand != "$HOME/boot.sh" {
		t.Errorf("result %+v", res)
	}
	for _, want := range []string{"Staticfile Buildpack", "Root folder dist", "Ignoring Staticfile options the local foundation does not implement: status_codes"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("staging log lacks %q:\n%s", want, log.String())
		}
	}
	app := filepath.Join(droplet, "app")
	base := startBoot(t, app)
	for _, c := range []struct {
		path, ctype string
		status      int
		body        string
	}{
		{"/", "text/html; charset=utf-8", 200, "<h1>hello</h1>"},
		{"/index.html", "text/html; charset=utf-8", 200, "<h1>hello</h1>"},
		{"/app.js", "text/javascript; charset=utf-8", 200, "console.log(1)"},
		{"/style.css", "text/css; charset=utf-8", 200, "h1{}"},
		{"/sub/", "text/html; charset=utf-8", 200, "sub"},
		{"/missing.html", "", 404, ""},
		{"/.env", "", 404, ""},
		{"/secret.txt", "", 404, ""},
		{"/../secret.txt", "", 400, ""},
		{"/%2e%2e/secret.txt", "", 400, ""},
		{"/../../boot.sh", "", 400, ""},
	} {
		status, ctype, body := rawGet(t, base, c.path)
		if status != c.status || (c.ctype != "" && ctype != c.ctype) || (c.body != "" && body != c.body) {
			t.Errorf("GET %s = %d %q %q, want %d %q %q", c.path, status, ctype, body, c.status, c.ctype, c.body)
		}
		if strings.Contains(body, "outside the root") || strings.Contains(body, "TOKEN") {
			t.Errorf("GET %s leaks a file it must not serve: %q", c.path, body)
		}
	}
}

// The options that change what is served do: directory listings, pushstate, dot files,
// HSTS, the HTTPS redirect and basic authentication from Staticfile.auth.
func TestStaticfileOptions(t *testing.T) {
	testtier.External(t, "nginx")
	t.Parallel()
	zip := writeZip(t, false,
		entry{name: "Staticfile", body: "directory: visible\npushstate: enabled\nhost_dot_files: true\nhttp_strict_transport_security: true\n", mode: 0o644},
		entry{name: "index.html", body: "spa", mode: 0o644},
		entry{name: ".well-known/x.txt", body: "dot", mode: 0o644},
		entry{name: "assets/a.txt", body: "a", mode: 0o644},
	)
	_, droplet := dropletDir(t)
	if _, err := Stage(context.Background(), Request{PackageZip: zip, DropletDir: droplet}); err != nil {
		t.Fatal(err)
	}
	base := startBoot(t, filepath.Join(droplet, "app"))
	if s, _, b := rawGet(t, base, "/some/client/route"); s != 200 || b != "spa" {
		t.Errorf("pushstate: GET an unknown path = %d %q, want index.html", s, b)
	}
	if s, _, b := rawGet(t, base, "/.well-known/x.txt"); s != 200 || b != "dot" {
		t.Errorf("host_dot_files: %d %q", s, b)
	}
	if s, _, b := rawGet(t, base, "/assets/"); s != 200 || !strings.Contains(b, `href="a.txt"`) {
		t.Errorf("directory: visible: %d %q", s, b)
	}
	resp, err := testhttp.Client.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if h := resp.Header.Get("Strict-Transport-Security"); h != "max-age=31536000" {
		t.Errorf("Strict-Transport-Security = %q", h)
	}

	zip = writeZip(t, false,
		entry{name: "Staticfile", body: "force_https: true\n", mode: 0o644},
		// bob:bob, in the apr1 form the buildpack's docs use.
		entry{name: "Staticfile.auth", body: "bob:$apr1$DuUQEQp8$ZccZCHQElNSjrg.erwSFC0\n", mode: 0o644},
		entry{name: "index.html", body: "private", mode: 0o644},
	)
	_, droplet = dropletDir(t)
	if _, err := Stage(context.Background(), Request{PackageZip: zip, DropletDir: droplet}); err != nil {
		t.Fatal(err)
	}
	base = startBoot(t, filepath.Join(droplet, "app"))
	get := func(path, proto, user string) *http.Response {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("X-Forwarded-Proto", proto)
		if user != "" {
			req.SetBasicAuth(user, user)
		}
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if r := get("/", "http", "bob"); r.StatusCode != 301 || !strings.HasPrefix(r.Header.Get("Location"), "https://") {
		t.Errorf("force_https over http: %d %q", r.StatusCode, r.Header.Get("Location"))
	}
	if r := get("/", "https", ""); r.StatusCode != 401 {
		t.Errorf("without credentials: %d, want 401", r.StatusCode)
	}
	if r := get("/", "https", "bob"); r.StatusCode != 200 {
		t.Errorf("with bob's credentials: %d, want 200", r.StatusCode)
	}
	if r := get("/Staticfile.auth", "https", "bob"); r.StatusCode != 404 {
		t.Errorf("Staticfile.auth is served: %d", r.StatusCode)
	}
}

func TestStaticfileBadRoot(t *testing.T) {
	testtier.External(t, "nginx")
	t.Parallel()
	for _, root := range []string{"missing", "index.html"} {
		zip := writeZip(t, false, entry{name: "Staticfile", body: "root: " + root + "\n", mode: 0o644},
			entry{name: "index.html", body: "x", mode: 0o644})
		_, droplet := dropletDir(t)
		_, err := Stage(context.Background(), Request{PackageZip: zip, DropletDir: droplet})
		if err == nil || !strings.Contains(err.Error(), `the Staticfile's root "`+root+`" is not a directory of the app`) {
			t.Errorf("root %s: err = %v", root, err)
		}
	}
}

// startBoot runs the droplet's boot.sh as a cell would (HOME the app dir, its own
// TMPDIR, PORT) and returns the base URL once nginx answers; nginx is stopped with
// the test.
func startBoot(t *testing.T, app string) string {
	t.Helper()
	port, err := freeport.Loopback()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := exec.Command("/bin/sh", "-c", "$HOME/boot.sh")
	cmd.Dir = app
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + app, "TMPDIR=" + t.TempDir(), fmt.Sprintf("PORT=%d", port),
		"CF_INSTANCE_INTERNAL_IP=127.0.0.1"}
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-exited:
			t.Fatalf("boot.sh exited: %v\n%s", err, out.String())
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return "http://" + addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("nginx does not listen on %s:\n%s", addr, out.String())
		}
	}
}

// rawGet sends path as written (no client-side cleaning of ..) and returns status,
// Content-Type and body.
func rawGet(t *testing.T, base, path string) (int, string, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(base, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", path)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return 0, "", ""
		}
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}
