package testnode

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteConfigPointsTheNodeAtItsDir(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "config", "jvm.options.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	jvm := "-XX:HeapDumpPath=data\n-XX:ErrorFile=logs/hs_err_pid%p.log\n9-:-Xlog:gc*:file=logs/gc.log\n"
	if err := os.WriteFile(filepath.Join(home, "config", "jvm.options"), []byte(jvm), 0o644); err != nil {
		t.Fatal(err)
	}
	f := Flavor{Name: "OpenSearch", Command: "opensearch", Settings: func(h string) string {
		if h != home {
			t.Errorf("Settings got home %q, want %q", h, home)
		}
		return "extra.setting: true\n"
	}}
	conf, data, logs := filepath.Join(dir, "config"), filepath.Join(dir, "data"), filepath.Join(dir, "logs")
	if err := writeConfig(f, home, conf, data, logs, 9201, 9301); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(conf, "jvm.options"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"HeapDumpPath=" + data + "\n", "ErrorFile=" + logs + "/hs_err", "file=" + logs + "/gc.log"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("jvm.options lacks %q:\n%s", want, b)
		}
	}
	if _, err := os.Stat(filepath.Join(conf, "jvm.options.d")); err != nil {
		t.Errorf("config subdir not copied: %v", err)
	}
	yml, err := os.ReadFile(filepath.Join(conf, "opensearch.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"path.data: " + data + "\n", "http.port: 9201\n", "transport.port: 9301\n", "network.host: 127.0.0.1\n", "discovery.type: single-node\n", "extra.setting: true\n"} {
		if !strings.Contains(string(yml), want) {
			t.Errorf("opensearch.yml lacks %q:\n%s", want, yml)
		}
	}
}

func TestIndexNamesAreUnique(t *testing.T) {
	a, b := Index("x"), Index("x")
	if a == b || !strings.HasPrefix(a, "x-") {
		t.Errorf("Index gave %q and %q", a, b)
	}
}
