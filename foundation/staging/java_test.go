package staging

import (
	"errors"
	"strings"
	"testing"
)

// The expected values are worked by hand from the Java buildpack memory calculator's
// rules: metaspace = 5800 B × classes + 14,000,000 B; code cache 240M; direct memory
// 10M; 250 threads × 1M stack; heap = the rest, printed in whole KiB.
func TestJVMMemoryFlags(t *testing.T) {
	t.Parallel()
	const classes = 14776 // ceil(0.35 × (1 app class + 42215 JDK classes))
	for _, tc := range []struct {
		name     string
		total    int64
		classes  int
		javaOpts string
		want     string
		wantErr  error
	}{
		{"1G", 1 << 30, classes, "",
			"-XX:MaxDirectMemorySize=10M -XX:MaxMetaspaceSize=97364K -XX:ReservedCodeCacheSize=240M -Xss1M -Xmx439211K", nil},
		{"800M", 800 << 20, classes, "",
			"-XX:MaxDirectMemorySize=10M -XX:MaxMetaspaceSize=97364K -XX:ReservedCodeCacheSize=240M -Xss1M -Xmx209835K", nil},
		{"2G", 2 << 30, classes, "",
			"-XX:MaxDirectMemorySize=10M -XX:MaxMetaspaceSize=97364K -XX:ReservedCodeCacheSize=240M -Xss1M -Xmx1487787K", nil},
		{"1G, 1000 classes", 1 << 30, 1000, "",
			"-XX:MaxDirectMemorySize=10M -XX:MaxMetaspaceSize=19335K -XX:ReservedCodeCacheSize=240M -Xss1M -Xmx517240K", nil},
		{"256M is too small", 256 << 20, classes, "", "", ErrMemoryTooSmall},
		{"595M is too small", 595 << 20, classes, "", "", ErrMemoryTooSmall},
		{"596M leaves a tiny heap", 596 << 20, classes, "",
			"-XX:MaxDirectMemorySize=10M -XX:MaxMetaspaceSize=97364K -XX:ReservedCodeCacheSize=240M -Xss1M -Xmx939K", nil},
		{"JAVA_OPTS fix sizes", 1 << 30, classes, "-Xss256K -XX:MaxDirectMemorySize=20M -verbose:gc",
			"-XX:MaxMetaspaceSize=97364K -XX:ReservedCodeCacheSize=240M -Xmx620971K", nil},
		{"JAVA_OPTS heap", 1 << 30, classes, "-Xmx300m",
			"-XX:MaxDirectMemorySize=10M -XX:MaxMetaspaceSize=97364K -XX:ReservedCodeCacheSize=240M -Xss1M", nil},
		{"JAVA_OPTS heap too big", 1 << 30, classes, "-Xmx900M", "", ErrMemoryTooSmall},
		{"JAVA_OPTS smaller stacks make 256M fit", 256 << 20, 1000, "-Xss228K -XX:ReservedCodeCacheSize=32M -XX:MaxMetaspaceSize=64M",
			"-XX:MaxDirectMemorySize=10M -Xmx96600K", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			flags, err := jvmMemoryFlags(tc.total, tc.classes, defaultStackThreads, tc.javaOpts)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if got := strings.Join(flags, " "); got != tc.want {
				t.Errorf("flags = %q\n          want %q", got, tc.want)
			}
			if err != nil && !strings.Contains(err.Error(), "JAVA_OPTS") {
				t.Errorf("error gives no way out: %v", err)
			}
		})
	}
}

func TestLoadedClassCount(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ app, want int }{{0, 14776}, {1, 14776}, {2, 14776}, {10000, 18276}} {
		if got := loadedClassCount(tc.app); got != tc.want {
			t.Errorf("loadedClassCount(%d) = %d, want %d", tc.app, got, tc.want)
		}
	}
}

func TestFormatSize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		b    int64
		want string
	}{{0, "0"}, {1023, "0"}, {1024, "1K"}, {10 << 20, "10M"}, {3 << 30, "3G"}, {1 << 40, "1T"}, {99700800, "97364K"}, {1<<20 + 1024, "1025K"}} {
		if got := formatSize(tc.b); got != tc.want {
			t.Errorf("formatSize(%d) = %q, want %q", tc.b, got, tc.want)
		}
	}
}

func TestParseManifest(t *testing.T) {
	t.Parallel()
	m := parseManifest([]byte("Manifest-Version: 1.0\r\nmain-class: com.example.VeryLongNameThatWraps\r\n AtSeventyTwo\r\nClass-Path: lib/a.jar lib/b.jar\r\n\r\nName: other\r\nMain-Class: Wrong\r\n"))
	if m["main-class"] != "com.example.VeryLongNameThatWrapsAtSeventyTwo" || m["class-path"] != "lib/a.jar lib/b.jar" {
		t.Errorf("manifest = %v", m)
	}
}

func FuzzParseManifest(f *testing.F) {
	f.Add([]byte("Manifest-Version: 1.0\nMain-Class: A\n B\n"))
	f.Add([]byte(" continuation first\n:\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = parseManifest(b)
	})
}

func FuzzJVMMemoryFlags(f *testing.F) {
	f.Add(int64(1<<30), "-Xss256K -Xmx300m")
	f.Add(int64(0), "-XX:MaxMetaspaceSize=99999999999999999999T")
	f.Fuzz(func(t *testing.T, total int64, opts string) {
		flags, err := jvmMemoryFlags(total, 14776, defaultStackThreads, opts)
		if err == nil && total < 0 {
			t.Errorf("negative total accepted: %v", flags)
		}
	})
}
