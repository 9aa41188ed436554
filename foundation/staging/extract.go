package staging

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/cf-benchmark/cf-benchmark/internal/osproc"
)

// ErrUnsafePackage marks an app package that would write outside the droplet, holds a
// symlink that leaves the app, or exceeds the extraction limits.
var ErrUnsafePackage = errors.New("unsafe app package")

// limits bound what one package may unpack to. Cloud Controller caps packages at 1 GiB
// compressed by default; the uncompressed cap is looser so ordinary jars and
// node_modules fit, but a zip bomb does not fill the disk.
type limits struct {
	entries int
	bytes   int64
}

var defaultLimits = limits{entries: 200_000, bytes: 4 << 30}

// maxLinkTarget bounds a symlink entry's body, which is its target path.
const maxLinkTarget = 4096

// extractStats describes what extract wrote, for the staging log.
type extractStats struct {
	files int
	bytes int64
}

// extract unpacks the zip at src into dest (which must exist). Entry names must be
// local (no absolute paths, no "..", no backslashes); file modes keep their permission
// bits (never setuid/setgid) and always include owner read/write. Symlinks are created
// after every file, refuse to sit below another symlink and must point inside dest, so
// no write during extraction can follow a link out of dest. Dangling links are
// dropped with a note on log.
func extract(src, dest string, lim limits, log io.Writer) (extractStats, error) {
	var st extractStats
	zr, err := zip.OpenReader(src)
	if errors.Is(err, zip.ErrInsecurePath) {
		if zr != nil {
			zr.Close()
		}
		return st, fmt.Errorf("%w: %v", ErrUnsafePackage, err)
	}
	if err != nil {
		return st, fmt.Errorf("open app package: %w", err)
	}
	defer zr.Close()
	if len(zr.File) > lim.entries {
		return st, fmt.Errorf("%w: %d entries, more than the %d allowed", ErrUnsafePackage, len(zr.File), lim.entries)
	}

	var links []*zip.File
	for _, f := range zr.File {
		name, err := localName(f.Name)
		if err != nil {
			return st, err
		}
		if name == "." {
			continue
		}
		target := filepath.Join(dest, filepath.FromSlash(name))
		mode := f.Mode()
		switch {
		case mode&fs.ModeSymlink != 0:
			links = append(links, f)
		case mode.IsDir() || strings.HasSuffix(f.Name, "/"):
			if err := os.MkdirAll(target, 0o755); err != nil {
				return st, fmt.Errorf("extract %s: %w", name, err)
			}
		case mode.IsRegular():
			n, err := writeFile(f, target, mode.Perm()|0o600, lim.bytes-st.bytes)
			st.bytes += n
			if errors.Is(err, errTooBig) {
				return st, fmt.Errorf("%w: more than %d bytes uncompressed", ErrUnsafePackage, lim.bytes)
			}
			if err != nil {
				return st, fmt.Errorf("extract %s: %w", name, err)
			}
			st.files++
		default:
			fmt.Fprintf(log, "       Skipping %s: not a regular file (%s)\n", name, mode.Type())
		}
	}

	for _, f := range links {
		if err := writeLink(f, dest); err != nil {
			return st, err
		}
	}
	return st, checkLinks(dest, links, log)
}

// localName validates a zip entry name and returns it cleaned, slash-separated.
func localName(name string) (string, error) {
	trimmed := strings.TrimSuffix(name, "/")
	if trimmed == "" && name != "" {
		return ".", nil
	}
	if strings.ContainsAny(name, "\\\x00") || !filepath.IsLocal(filepath.FromSlash(trimmed)) {
		return "", fmt.Errorf("%w: entry %q leaves the app directory", ErrUnsafePackage, name)
	}
	return filepath.ToSlash(filepath.Clean(filepath.FromSlash(trimmed))), nil
}

var errTooBig = errors.New("package too big")

// writeFile copies one entry, counting the bytes actually inflated (headers may lie)
// and failing once more than budget would be written.
func writeFile(f *zip.File, target string, perm fs.FileMode, budget int64) (int64, error) {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return 0, err
	}
	rc, err := f.Open()
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|osproc.NoFollow, perm)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, io.LimitReader(rc, budget+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, err
	}
	if n > budget {
		return n, errTooBig
	}
	// OpenFile's perm passes through the umask; the package's modes are what count.
	return n, os.Chmod(target, perm)
}

func writeLink(f *zip.File, dest string) error {
	name, _ := localName(f.Name) // validated in the first pass
	rc, err := f.Open()
	if err != nil {
		return fmt.Errorf("extract %s: %w", name, err)
	}
	body, err := io.ReadAll(io.LimitReader(rc, maxLinkTarget+1))
	rc.Close()
	if err != nil {
		return fmt.Errorf("extract %s: %w", name, err)
	}
	linkTarget := string(body)
	if len(body) > maxLinkTarget || linkTarget == "" || strings.ContainsRune(linkTarget, 0) || filepath.IsAbs(linkTarget) {
		return fmt.Errorf("%w: symlink %s points to %q, outside the app", ErrUnsafePackage, name, linkTarget)
	}
	if !filepath.IsLocal(filepath.Join(filepath.Dir(filepath.FromSlash(name)), linkTarget)) {
		return fmt.Errorf("%w: symlink %s points to %q, outside the app", ErrUnsafePackage, name, linkTarget)
	}
	// A link below another link could land anywhere; refuse rather than resolve.
	rel := filepath.Dir(filepath.FromSlash(name))
	for p := rel; p != "."; p = filepath.Dir(p) {
		fi, err := os.Lstat(filepath.Join(dest, p))
		if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%w: symlink %s sits below symlink %s", ErrUnsafePackage, name, filepath.ToSlash(p))
		}
	}
	path := filepath.Join(dest, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("extract %s: %w", name, err)
	}
	if err := os.Symlink(linkTarget, path); err != nil {
		return fmt.Errorf("extract %s: %w", name, err)
	}
	return nil
}

// checkLinks resolves every link now that all exist: chains of individually harmless
// links (a -> ".", b -> "a/..") can still leave dest, which only a real resolution sees.
func checkLinks(dest string, links []*zip.File, log io.Writer) error {
	if len(links) == 0 {
		return nil
	}
	root, err := filepath.EvalSymlinks(dest)
	if err != nil {
		return fmt.Errorf("resolve app directory: %w", err)
	}
	for _, f := range links {
		name, _ := localName(f.Name)
		path := filepath.Join(dest, filepath.FromSlash(name))
		resolved, err := filepath.EvalSymlinks(path)
		if errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(log, "       Dropping dangling symlink %s\n", name)
			if err := os.Remove(path); err != nil {
				return fmt.Errorf("remove dangling symlink %s: %w", name, err)
			}
			continue
		}
		if err == nil {
			if rel, rerr := filepath.Rel(root, resolved); rerr != nil || !filepath.IsLocal(rel) {
				err = errors.New("resolves outside the app")
			}
		}
		if err != nil {
			os.Remove(path) // never leave an escaping link behind, even on failure
			return fmt.Errorf("%w: symlink %s: %v", ErrUnsafePackage, name, err)
		}
	}
	return nil
}
