package staging

import (
	"archive/zip"
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// ErrMemoryTooSmall marks a Java app whose memory limit cannot hold the JVM's
// non-heap memory, as the Java buildpack's memory calculator reports it.
var ErrMemoryTooSmall = errors.New("memory limit too small for the JVM")

// Defaults of the Java buildpack (config/open_jdk_jre.yml, memory calculator v3).
const (
	defaultStackThreads = 250
	defaultDirectMemory = 10 << 20
	defaultCodeCache    = 240 << 20
	defaultStack        = 1 << 20
	// jdkClassCount is what the buildpack adds to the app's classes for Java 9 and
	// later, whose runtime classes are not in a rt.jar it could count. The local JDK
	// is 17; Java 8 is not a target of the local foundation.
	jdkClassCount = 42215
	// classLoadFactor: the buildpack assumes 35% of the classes present get loaded.
	classLoadFactor = 0.35
	defaultMemoryMB = 1024 // Cloud Controller's default app memory
)

// javaApp is what the Java lifecycle found in the app directory.
type javaApp struct {
	jar       string   // runnable jar at the top, relative to the app dir; or
	mainClass string   // the Main-Class of an exploded jar
	classPath []string // its manifest Class-Path
	classes   int      // .class and .groovy files, including those inside jars
}

// detectJava reports whether the app looks like a Java app: exactly one *.jar at the
// top, or an exploded jar (META-INF/MANIFEST.MF naming a Main-Class).
func detectJava(appDir string) bool {
	jars, _ := topLevelJars(appDir)
	if len(jars) == 1 {
		return true
	}
	m, err := readManifestFile(filepath.Join(appDir, "META-INF", "MANIFEST.MF"))
	return err == nil && m["main-class"] != ""
}

func stageJava(req Request, appDir string, log io.Writer) (Result, error) {
	fmt.Fprintln(log, "-----> Java Buildpack (local foundation)")
	app, findErr := findJavaApp(appDir)
	command := req.Command
	if command == "" {
		command = procfileWeb(appDir)
	}
	if command != "" {
		fmt.Fprintln(log, "       Using the start command from the manifest; JVM memory flags are not calculated")
		return Result{Buildpack: buildpackJava, StartCommand: command}, nil
	}
	if findErr != nil {
		return Result{}, findErr
	}

	memMB := req.MemoryMB
	if memMB <= 0 {
		memMB = defaultMemoryMB
	}
	loaded := loadedClassCount(app.classes)
	javaOpts := strings.TrimSpace(req.Env["JAVA_OPTS"])
	flags, err := jvmMemoryFlags(int64(memMB)<<20, loaded, defaultStackThreads, javaOpts)
	if err != nil {
		return Result{}, err
	}
	fmt.Fprintf(log, "       Loaded Classes: %d, Threads: %d\n", loaded, defaultStackThreads)
	fmt.Fprintf(log, "       JVM Memory Configuration: %s\n", strings.Join(flags, " "))

	parts := []string{"java"}
	if javaOpts != "" {
		parts = append(parts, "$JAVA_OPTS")
	}
	parts = append(parts, flags...)
	if app.jar != "" {
		parts = append(parts, "-jar", shellQuote(app.jar))
	} else {
		cp := append([]string{"."}, app.classPath...)
		parts = append(parts, "-cp", shellQuote(strings.Join(cp, ":")), shellQuote(app.mainClass))
	}
	return Result{Buildpack: buildpackJava, StartCommand: strings.Join(parts, " ")}, nil
}

func findJavaApp(appDir string) (javaApp, error) {
	jars, err := topLevelJars(appDir)
	if err != nil {
		return javaApp{}, err
	}
	if len(jars) > 1 {
		return javaApp{}, fmt.Errorf("java_buildpack: %d jars at the top of the app (%s), expected exactly one: %w",
			len(jars), strings.Join(jars, ", "), ErrUnsupported)
	}
	if len(jars) == 1 {
		return inspectJar(appDir, jars[0])
	}
	m, err := readManifestFile(filepath.Join(appDir, "META-INF", "MANIFEST.MF"))
	if err != nil || m["main-class"] == "" {
		return javaApp{}, fmt.Errorf("java_buildpack: no runnable jar (one *.jar at the top, or an exploded jar whose META-INF/MANIFEST.MF names a Main-Class): %w", ErrUnsupported)
	}
	classes, err := countDirClasses(appDir)
	if err != nil {
		return javaApp{}, err
	}
	return javaApp{mainClass: m["main-class"], classPath: strings.Fields(m["class-path"]), classes: classes}, nil
}

func topLevelJars(appDir string) ([]string, error) {
	entries, err := os.ReadDir(appDir)
	if err != nil {
		return nil, fmt.Errorf("read app directory: %w", err)
	}
	var jars []string
	for _, e := range entries {
		if e.Type().IsRegular() && strings.EqualFold(filepath.Ext(e.Name()), ".jar") {
			jars = append(jars, e.Name())
		}
	}
	return jars, nil
}

// inspectJar checks the jar is executable and counts its classes the way the buildpack
// counts an exploded jar: its own entries plus the entries of jars nested in it
// (Spring Boot's BOOT-INF/lib).
func inspectJar(appDir, name string) (javaApp, error) {
	zr, err := zip.OpenReader(filepath.Join(appDir, name))
	if err != nil {
		return javaApp{}, fmt.Errorf("java_buildpack: open %s: %w", name, err)
	}
	defer zr.Close()
	app := javaApp{jar: name}
	var mainClass string
	for _, f := range zr.File {
		switch {
		case isClassFile(f.Name):
			app.classes++
		case strings.EqualFold(f.Name, "META-INF/MANIFEST.MF"):
			m, err := readManifestEntry(f)
			if err != nil {
				return javaApp{}, fmt.Errorf("java_buildpack: %s: %w", name, err)
			}
			mainClass = m["main-class"]
		case strings.HasSuffix(strings.ToLower(f.Name), ".jar"):
			app.classes += nestedJarClasses(f)
		}
	}
	if mainClass == "" {
		return javaApp{}, fmt.Errorf("java_buildpack: %s has no Main-Class in META-INF/MANIFEST.MF; only executable jars are supported: %w", name, ErrUnsupported)
	}
	return app, nil
}

// maxNestedJar bounds how much of a nested jar is read into memory to count classes.
const maxNestedJar = 256 << 20

func nestedJarClasses(f *zip.File) int {
	if f.UncompressedSize64 > maxNestedJar {
		return 0
	}
	rc, err := f.Open()
	if err != nil {
		return 0
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxNestedJar))
	if err != nil {
		return 0
	}
	return jarClasses(bytes.NewReader(b), int64(len(b)))
}

func jarClasses(r io.ReaderAt, size int64) int {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return 0
	}
	n := 0
	for _, f := range zr.File {
		if isClassFile(f.Name) {
			n++
		}
	}
	return n
}

func countDirClasses(appDir string) (int, error) {
	n := 0
	err := filepath.WalkDir(appDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		switch {
		case isClassFile(d.Name()):
			n++
		case strings.EqualFold(filepath.Ext(d.Name()), ".jar"):
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			if fi, err := f.Stat(); err == nil {
				n += jarClasses(f, fi.Size())
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("java_buildpack: count classes: %w", err)
	}
	return n, nil
}

func isClassFile(name string) bool {
	return strings.HasSuffix(name, ".class") || strings.HasSuffix(name, ".groovy")
}

// loadedClassCount estimates the classes the JVM will load, as the buildpack does:
// 35% of the app's classes plus the JDK's.
func loadedClassCount(appClasses int) int {
	return int(math.Ceil(classLoadFactor * float64(appClasses+jdkClassCount)))
}

func readManifestFile(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseManifest(b), nil
}

func readManifestEntry(f *zip.File) (map[string]string, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, 1<<20))
	if err != nil {
		return nil, err
	}
	return parseManifest(b), nil
}

// parseManifest reads the main section of a jar manifest into lower-cased attribute
// names. Lines starting with a space continue the previous value (72-byte wrapping).
func parseManifest(b []byte) map[string]string {
	attrs := map[string]string{}
	var last string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if line == "" {
			break // end of the main section
		}
		if strings.HasPrefix(line, " ") {
			if last != "" {
				attrs[last] += line[1:]
			}
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			last = ""
			continue
		}
		last = strings.ToLower(strings.TrimSpace(k))
		attrs[last] = strings.TrimPrefix(v, " ")
	}
	for k, v := range attrs {
		attrs[k] = strings.TrimSpace(v)
	}
	return attrs
}

var sizeFlagRE = regexp.MustCompile(`^(-Xmx|-Xss|-XX:MaxMetaspaceSize=|-XX:ReservedCodeCacheSize=|-XX:MaxDirectMemorySize=)([0-9]+)([bkmgtBKMGT]?)$`)

// jvmMemoryFlags computes JVM memory flags the way the Java buildpack's memory
// calculator (v3) does: heap = total - (direct memory + metaspace + reserved code
// cache + stack × threads); metaspace = 5800 B per loaded class + 14,000,000 B. Sizes
// set in javaOpts are taken as fixed and left out of the result. It fails, wrapping
// ErrMemoryTooSmall, when the fixed parts do not fit in total. The calculator itself
// has no headroom by default and no minimum heap, and neither has this.
func jvmMemoryFlags(total int64, loadedClasses, threads int, javaOpts string) ([]string, error) {
	fixed := map[string]int64{}
	for _, opt := range strings.Fields(javaOpts) {
		m := sizeFlagRE.FindStringSubmatch(opt)
		if m == nil {
			continue
		}
		n, err := parseSize(m[2], m[3])
		if err != nil {
			return nil, fmt.Errorf("java_buildpack: JAVA_OPTS %s: %w", opt, err)
		}
		fixed[m[1]] = n
	}

	var flags []string
	value := func(flag string, def int64) int64 {
		if v, ok := fixed[flag]; ok {
			return v
		}
		flags = append(flags, flag+formatSize(def))
		return def
	}
	direct := value("-XX:MaxDirectMemorySize=", defaultDirectMemory)
	metaspace := value("-XX:MaxMetaspaceSize=", int64(loadedClasses)*5800+14_000_000)
	codeCache := value("-XX:ReservedCodeCacheSize=", defaultCodeCache)
	stack := value("-Xss", defaultStack)

	overhead := direct + metaspace + codeCache + stack*int64(threads)
	if overhead > total {
		return nil, fmt.Errorf("%w: the memory limit %s is smaller than the %s the JVM needs besides the heap "+
			"(direct memory %s, metaspace %s, reserved code cache %s, thread stacks %d x %s); "+
			"give the app more memory (e.g. memory: 1G in the manifest) or set smaller sizes in JAVA_OPTS",
			ErrMemoryTooSmall, formatSize(total), formatSize(overhead), formatSize(direct), formatSize(metaspace),
			formatSize(codeCache), threads, formatSize(stack))
	}
	heap := value("-Xmx", total-overhead)
	if overhead+heap > total {
		return nil, fmt.Errorf("%w: the memory limit %s is smaller than the heap %s from JAVA_OPTS plus %s besides the heap",
			ErrMemoryTooSmall, formatSize(total), formatSize(heap), formatSize(overhead))
	}
	return flags, nil
}

func parseSize(digits, unit string) (int64, error) {
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bad size %q", digits+unit)
	}
	shift := map[string]uint{"": 0, "b": 0, "k": 10, "m": 20, "g": 30, "t": 40}[strings.ToLower(unit)]
	if n > math.MaxInt64>>shift {
		return 0, fmt.Errorf("size %q too large", digits+unit)
	}
	return n << shift, nil
}

// formatSize writes bytes like the calculator: whole KiB, in the largest unit that
// divides them exactly (so 240M, 10M, 97363K).
func formatSize(b int64) string {
	k := b >> 10
	switch {
	case k == 0:
		return "0"
	case k%(1<<30) == 0:
		return strconv.FormatInt(k>>30, 10) + "T"
	case k%(1<<20) == 0:
		return strconv.FormatInt(k>>20, 10) + "G"
	case k%(1<<10) == 0:
		return strconv.FormatInt(k>>10, 10) + "M"
	}
	return strconv.FormatInt(k, 10) + "K"
}
