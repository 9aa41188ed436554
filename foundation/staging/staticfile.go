package staging

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// The staticfile lifecycle serves an app's files with nginx, as Cloud Foundry's
// staticfile buildpack does: the droplet's app dir holds the uploaded app under
// public/, an nginx configuration template under nginx/conf/ and boot.sh, the start
// command ($HOME/boot.sh, the buildpack's own). boot.sh fills in the instance's port,
// address, HOME and TMPDIR and runs nginx in the foreground as the instance's user:
// one worker, an access line per request on stdout and errors on stderr (as the
// buildpack logs them), pid and temp files in TMPDIR.

// staticfileOptions are the Staticfile settings this lifecycle honours.
type staticfileOptions struct {
	root         string // served dir, relative to the app; "" = the app itself
	dirListing   bool   // directory: visible
	ssi          bool   // ssi: enabled
	pushstate    bool   // pushstate: enabled: unknown paths get /index.html
	gzipOff      bool   // gzip: off
	dotFiles     bool   // host_dot_files: true
	forceHTTPS   bool   // force_https: true
	hsts         bool   // http_strict_transport_security: true
	hstsSubdoms  bool   // http_strict_transport_security_include_subdomains: true
	hstsPreload  bool   // http_strict_transport_security_preload: true
	basicAuth    bool   // a Staticfile.auth file (htpasswd lines) next to the Staticfile
	ignoredNames []string
}

// staticfileRootRE is what a root may hold: it goes into nginx's configuration.
var staticfileRootRE = regexp.MustCompile(`^[A-Za-z0-9._/+@~,-]+$`)

// parseStaticfile reads the Staticfile (YAML: key: value; empty is fine). Options the
// local foundation does not implement are listed in ignoredNames.
func parseStaticfile(b []byte) (staticfileOptions, error) {
	var o staticfileOptions
	var raw map[string]any
	if err := yaml.Unmarshal(b, &raw); err != nil {
		return o, fmt.Errorf("staticfile_buildpack: Staticfile: %w", err)
	}
	on := func(v any, words ...string) bool {
		switch x := v.(type) {
		case bool:
			return x
		case string:
			return slices.Contains(words, strings.ToLower(strings.TrimSpace(x)))
		}
		return false
	}
	for k, v := range raw {
		switch k {
		case "root":
			s, ok := v.(string)
			if !ok {
				return o, fmt.Errorf("staticfile_buildpack: Staticfile: root: want a directory name, got %v", v)
			}
			o.root = strings.Trim(filepath.Clean(strings.TrimSpace(s)), "/")
			if o.root == "." {
				o.root = ""
			}
		case "directory":
			o.dirListing = on(v, "visible")
		case "ssi":
			o.ssi = on(v, "enabled", "on", "true")
		case "pushstate":
			o.pushstate = on(v, "enabled", "on", "true")
		case "gzip":
			o.gzipOff = !on(v, "on", "enabled", "true") && v != nil
		case "host_dot_files":
			o.dotFiles = on(v, "true", "enabled")
		case "force_https":
			o.forceHTTPS = on(v, "true", "enabled")
		case "http_strict_transport_security":
			o.hsts = on(v, "true", "enabled")
		case "http_strict_transport_security_include_subdomains":
			o.hstsSubdoms = on(v, "true", "enabled")
		case "http_strict_transport_security_preload":
			o.hstsPreload = on(v, "true", "enabled")
		default:
			o.ignoredNames = append(o.ignoredNames, k)
		}
	}
	slices.Sort(o.ignoredNames)
	if o.root != "" && (!filepath.IsLocal(o.root) || !staticfileRootRE.MatchString(o.root)) {
		return o, fmt.Errorf("staticfile_buildpack: Staticfile: root %q: want a directory inside the app, named with letters, digits and ._/+@~,-", o.root)
	}
	return o, nil
}

// nginxPath finds nginx on PATH (or in /usr/sbin, which a non-root PATH may lack).
func nginxPath() (string, error) {
	if p, err := exec.LookPath("nginx"); err == nil {
		return filepath.Abs(p)
	}
	for _, p := range []string{"/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o001 != 0 {
			return p, nil
		}
	}
	return "", errors.New("staticfile_buildpack: nginx not found on PATH or in /usr/sbin: the local foundation serves static files with nginx, " +
		"as the staticfile buildpack does (scripts/install-deps.sh installs it)")
}

func stageStaticfile(ctx context.Context, req Request, appDir string, log io.Writer) (Result, error) {
	fmt.Fprintln(log, "-----> Staticfile Buildpack (local foundation)")
	nginx, err := nginxPath()
	if err != nil {
		return Result{}, err
	}
	var opts staticfileOptions
	if b, err := os.ReadFile(filepath.Join(appDir, "Staticfile")); err == nil {
		if opts, err = parseStaticfile(b); err != nil {
			return Result{}, err
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return Result{}, fmt.Errorf("staticfile_buildpack: %w", err)
	}
	if len(opts.ignoredNames) > 0 {
		fmt.Fprintf(log, "       Ignoring Staticfile options the local foundation does not implement: %s\n", strings.Join(opts.ignoredNames, ", "))
	}

	// The app moves to public/, as the buildpack moves it, so that the buildpack's
	// own files (boot.sh, nginx/) sit beside it and are never served.
	tmp := filepath.Join(req.DropletDir, ".public")
	if err := os.Rename(appDir, tmp); err != nil {
		return Result{}, fmt.Errorf("staticfile_buildpack: %w", err)
	}
	if err := os.Mkdir(appDir, 0o755); err != nil {
		return Result{}, fmt.Errorf("staticfile_buildpack: %w", err)
	}
	public := filepath.Join(appDir, "public")
	if err := os.Rename(tmp, public); err != nil {
		return Result{}, fmt.Errorf("staticfile_buildpack: %w", err)
	}
	served := filepath.Join(public, opts.root)
	if real, err := filepath.EvalSymlinks(served); err != nil || !isDir(real) || !within(public, real) {
		return Result{}, fmt.Errorf("staticfile_buildpack: the Staticfile's root %q is not a directory of the app", opts.root)
	}
	if opts.root != "" {
		fmt.Fprintf(log, "       Root folder %s\n", opts.root)
	}
	conf := filepath.Join(appDir, "nginx", "conf")
	if err := os.MkdirAll(conf, 0o755); err != nil {
		return Result{}, fmt.Errorf("staticfile_buildpack: %w", err)
	}
	// Staticfile.auth holds htpasswd lines; it leaves the served tree.
	if b, err := os.ReadFile(filepath.Join(public, "Staticfile.auth")); err == nil {
		opts.basicAuth = true
		if err := os.WriteFile(filepath.Join(conf, ".htpasswd"), b, 0o644); err != nil {
			return Result{}, fmt.Errorf("staticfile_buildpack: %w", err)
		}
		os.Remove(filepath.Join(public, "Staticfile.auth"))
		fmt.Fprintln(log, "       Enabling basic authentication using Staticfile.auth")
	}
	for _, f := range []struct {
		on   bool
		what string
	}{{opts.dirListing, "directory index"}, {opts.ssi, "server side includes"}, {opts.pushstate, "pushstate"},
		{opts.dotFiles, "hosting of dot files"}, {opts.forceHTTPS, "HTTPS redirect"}, {opts.hsts, "HTTP Strict Transport Security"}} {
		if f.on {
			fmt.Fprintf(log, "       Enabling %s\n", f.what)
		}
	}
	if opts.gzipOff {
		fmt.Fprintln(log, "       Disabling gzip")
	}
	for name, body := range map[string]string{"nginx.conf": nginxConf(opts), "mime.types": mimeTypes} {
		if err := os.WriteFile(filepath.Join(conf, name), []byte(body), 0o644); err != nil {
			return Result{}, fmt.Errorf("staticfile_buildpack: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(appDir, "boot.sh"), []byte(bootScript(nginx)), 0o755); err != nil {
		return Result{}, fmt.Errorf("staticfile_buildpack: %w", err)
	}
	if err := checkNginxConf(ctx, nginx, req.DropletDir, appDir); err != nil {
		return Result{}, err
	}
	fmt.Fprintf(log, "       Serving %s with %s\n", filepath.Join("public", opts.root), nginx)
	return Result{Buildpack: buildpackStatic, StartCommand: "$HOME/boot.sh"}, nil
}

// bootScript fills in the instance's values and runs nginx in the foreground. Every
// value it substitutes comes from the cell (digits and paths it made).
func bootScript(nginx string) string {
	return `#!/bin/sh
# Written by the local foundation's staticfile_buildpack: serves $HOME/public with nginx.
set -e
case "$PORT" in ''|*[!0-9]*) echo "boot.sh: PORT is not a port number: '$PORT'" >&2; exit 1;; esac
tmp=${TMPDIR:-/tmp}
sed -e "s|@PORT@|$PORT|g" -e "s|@HOST@|${CF_INSTANCE_INTERNAL_IP:-127.0.0.1}|g" -e "s|@TMPDIR@|$tmp|g" -e "s|@HOME@|$HOME|g" \
	"$HOME/nginx/conf/nginx.conf" > "$tmp/nginx.conf"
# Workers run as this script's user; as root nginx would otherwise switch to nobody.
if [ "$(id -u)" = 0 ]; then set -- -g "user root;"; fi
exec ` + shellQuote(nginx) + ` -p "$tmp/" -c "$tmp/nginx.conf" -e stderr "$@"
`
}

// checkNginxConf has nginx check the configuration as boot.sh would fill it in, so
// that a bad one fails staging rather than every start.
func checkNginxConf(ctx context.Context, nginx, dropletDir, appDir string) error {
	tmp := filepath.Join(dropletDir, ".nginx-check")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return fmt.Errorf("staticfile_buildpack: %w", err)
	}
	defer os.RemoveAll(tmp)
	b, err := os.ReadFile(filepath.Join(appDir, "boot.sh"))
	if err != nil {
		return fmt.Errorf("staticfile_buildpack: %w", err)
	}
	// boot.sh as written but for -t (check and exit), so what is checked is what starts.
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", strings.Replace(string(b), ` -e stderr "$@"`+"\n", ` -e stderr -t -q "$@"`+"\n", 1))
	cmd.Dir = appDir
	cmd.Env = []string{"PATH=" + hostPath(), "HOME=" + appDir, "TMPDIR=" + tmp, "PORT=8080", "CF_INSTANCE_INTERNAL_IP=127.0.0.1"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("staticfile_buildpack: nginx rejects the configuration: %v: %s", err, strings.TrimSpace(out.String()))
	}
	return nil
}

// nginxConf is the configuration template boot.sh fills in (@PORT@, @HOST@, @HOME@,
// @TMPDIR@).
func nginxConf(o staticfileOptions) string {
	var loc strings.Builder
	add := func(on bool, lines ...string) {
		if on {
			for _, l := range lines {
				loc.WriteString("      " + l + "\n")
			}
		}
	}
	add(o.forceHTTPS, `if ($http_x_forwarded_proto != "https") { return 301 https://$host$request_uri; }`)
	if o.hsts {
		v := "max-age=31536000"
		if o.hstsSubdoms {
			v += "; includeSubDomains"
		}
		if o.hstsPreload {
			v += "; preload"
		}
		add(true, `add_header Strict-Transport-Security "`+v+`";`)
	}
	add(o.dirListing, "autoindex on;")
	add(o.ssi, "ssi on;")
	add(o.pushstate, "try_files $uri $uri/ /index.html;")
	add(o.basicAuth, `auth_basic "Restricted";`, "auth_basic_user_file @HOME@/nginx/conf/.htpasswd;")
	dot := "    location ~ /\\. {\n      deny all;\n      return 404;\n    }\n"
	if o.dotFiles {
		dot = ""
	}
	gzip := "on"
	if o.gzipOff {
		gzip = "off"
	}
	root := "@HOME@/public"
	if o.root != "" {
		root += "/" + o.root
	}
	return `# Written by the local foundation's staticfile_buildpack; boot.sh fills in the @…@ values.
worker_processes 1;
daemon off;
error_log stderr;
pid @TMPDIR@/nginx.pid;

events {
  worker_connections 1024;
}

http {
  charset utf-8;
  charset_types text/html text/xml text/plain text/css text/javascript text/markdown text/csv application/javascript application/json application/xml image/svg+xml;
  include @HOME@/nginx/conf/mime.types;
  default_type application/octet-stream;
  log_format cloudfoundry '$http_x_forwarded_for - $http_referer - [$time_local] "$request" $status $body_bytes_sent';
  access_log /dev/stdout cloudfoundry;
  server_tokens off;
  sendfile on;
  tcp_nopush on;
  keepalive_timeout 30;
  client_body_temp_path @TMPDIR@/nginx_client_body;
  proxy_temp_path @TMPDIR@/nginx_proxy;
  fastcgi_temp_path @TMPDIR@/nginx_fastcgi;
  uwsgi_temp_path @TMPDIR@/nginx_uwsgi;
  scgi_temp_path @TMPDIR@/nginx_scgi;
  gzip ` + gzip + `;
  gzip_proxied any;
  gzip_vary on;
  gzip_types text/plain text/css text/xml text/javascript application/javascript application/json application/xml image/svg+xml;

  server {
    listen @HOST@:@PORT@;
    server_name localhost;
    root ` + root + `;
    index index.html index.htm Default.htm;

    location / {
` + loc.String() + `    }
` + dot + `  }
}
`
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// within reports whether p is dir or below it (both cleaned, absolute).
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && (filepath.IsLocal(rel) || rel == ".")
}

// mimeTypes maps file extensions to content types, as the buildpack's mime.types does.
const mimeTypes = `types {
  text/html                             html htm shtml;
  text/css                              css;
  text/xml                              xml;
  text/plain                            txt;
  text/markdown                         md;
  text/csv                              csv;
  text/javascript                       js mjs;
  application/json                      json map;
  application/manifest+json             webmanifest;
  application/wasm                      wasm;
  application/pdf                       pdf;
  application/zip                       zip;
  application/gzip                      gz;
  application/rss+xml                   rss;
  application/atom+xml                  atom;
  image/gif                             gif;
  image/jpeg                            jpeg jpg;
  image/png                             png;
  image/svg+xml                         svg svgz;
  image/webp                            webp;
  image/avif                            avif;
  image/x-icon                          ico;
  font/woff                             woff;
  font/woff2                            woff2;
  font/ttf                              ttf;
  font/otf                              otf;
  application/vnd.ms-fontobject         eot;
  audio/mpeg                            mp3;
  audio/ogg                             ogg;
  video/mp4                             mp4;
  video/webm                            webm;
}
`
