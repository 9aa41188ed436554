package cc

import (
	"archive/zip"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// resourceMatchRoutes registers the endpoints of resource matches.
func (s *Server) resourceMatchRoutes() {
	s.handle("POST /v3/resource_matches", s.resourceMatches)
}

// The resource pool: app files CC has seen in uploaded packages, by SHA-1, so that a
// push uploads only the files CC does not hold yet (POST /v3/resource_matches, then
// the package upload's "resources" field). As CC's default resource_pool settings,
// only files from 64 KiB to 512 MiB are pooled: smaller ones cost more to match than
// to send.
const (
	poolMinBytes = 64 << 10
	poolMaxBytes = 512 << 20
	// maxMatchResources is CC's bound on one resource_matches request.
	maxMatchResources = 5000
)

// matchResource is one entry of resource_matches and of the upload's "resources"
// field, as the cf CLI sends them: mode is an octal string.
type matchResource struct {
	Checksum struct {
		Value string `json:"value"`
	} `json:"checksum"`
	Size int64  `json:"size_in_bytes"`
	Path string `json:"path,omitempty"`
	Mode string `json:"mode,omitempty"`
}

type resourcePool struct{ dir string }

func (p resourcePool) file(sha string) string { return filepath.Join(p.dir, sha) }

// has reports whether the pool holds a file of this SHA-1 and size.
func (p resourcePool) has(sha string, size int64) bool {
	if len(sha) != 40 || strings.Trim(sha, "0123456789abcdef") != "" || size < poolMinBytes || size > poolMaxBytes {
		return false
	}
	fi, err := os.Stat(p.file(sha))
	return err == nil && fi.Size() == size
}

// addFrom pools the files of a package zip in the pooled size range. A file that
// cannot be pooled is only not matched next time: errors are not the upload's.
func (p resourcePool) addFrom(zipPath string) {
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		return
	}
	defer zr.Close()
	for _, f := range zr.File {
		if f.FileInfo().IsDir() || f.UncompressedSize64 < poolMinBytes || f.UncompressedSize64 > poolMaxBytes {
			continue
		}
		p.add(f)
	}
}

func (p resourcePool) add(f *zip.File) {
	r, err := f.Open()
	if err != nil {
		return
	}
	defer r.Close()
	tmp, err := os.CreateTemp(p.dir, "add-*")
	if err != nil {
		return
	}
	defer os.Remove(tmp.Name())
	h := sha1.New()
	if _, err := io.Copy(io.MultiWriter(tmp, h), r); err != nil || tmp.Close() != nil {
		tmp.Close()
		return
	}
	os.Rename(tmp.Name(), p.file(hex.EncodeToString(h.Sum(nil))))
}

// resourceMatches answers POST /v3/resource_matches: the resources of the request the
// pool holds.
func (s *Server) resourceMatches(c *call) error {
	var body struct {
		Resources []matchResource `json:"resources"`
	}
	if err := c.decode(&body); err != nil {
		return err
	}
	if len(body.Resources) > maxMatchResources {
		return unprocessable("Resources array can have at most %d resources", maxMatchResources)
	}
	out := []matchResource{}
	for _, r := range body.Resources {
		if s.pool.has(r.Checksum.Value, r.Size) {
			out = append(out, r)
		}
	}
	return c.json(http.StatusCreated, obj{"resources": out})
}

// parseMatched reads the upload's "resources" field and checks every entry is pooled
// and has a safe relative path.
func (p resourcePool) parseMatched(raw []byte) ([]matchResource, error) {
	var rs []matchResource
	if err := json.Unmarshal(raw, &rs); err != nil {
		return nil, unprocessable("Resources must be a JSON array of resources: %v", err)
	}
	for _, r := range rs {
		if !p.has(r.Checksum.Value, r.Size) {
			return nil, unprocessable("Resource %q (sha1 %s) is not in the resource cache: match resources first", r.Path, r.Checksum.Value)
		}
		if clean := path.Clean(r.Path); r.Path == "" || path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
			return nil, unprocessable("Resource path %q must be relative to the app directory", r.Path)
		}
		if r.Mode != "" {
			if _, err := strconv.ParseUint(r.Mode, 8, 32); err != nil {
				return nil, unprocessable("Resource %q: mode %q is not an octal file mode", r.Path, r.Mode)
			}
		}
	}
	return rs, nil
}

// assemble writes the package zip dst: the uploaded zip's entries (bits, "" when
// only matched resources were sent) and the matched files from the pool. The package
// stays on this machine, so the matched files are stored, not compressed again: a
// push of a pooled binary costs a copy, not a deflate of megabytes.
func (p resourcePool) assemble(dst, bits string, matched []matchResource) error {
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(out)
	err = func() error {
		if bits != "" {
			zr, err := zip.OpenReader(bits)
			if err != nil {
				return unprocessable("The uploaded bits are not a zip file: %v", err)
			}
			defer zr.Close()
			for _, f := range zr.File {
				if err := zw.Copy(f); err != nil {
					return fmt.Errorf("copy %s: %w", f.Name, err)
				}
			}
		}
		for _, r := range matched {
			if err := p.addToZip(zw, r); err != nil {
				return err
			}
		}
		return zw.Close()
	}()
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(dst)
	}
	return err
}

func (p resourcePool) addToZip(zw *zip.Writer, r matchResource) error {
	src, err := os.Open(p.file(r.Checksum.Value))
	if errors.Is(err, os.ErrNotExist) {
		return unprocessable("Resource %q left the resource cache during the upload: push again", r.Path)
	}
	if err != nil {
		return err
	}
	defer src.Close()
	mode := os.FileMode(0o644)
	if m, err := strconv.ParseUint(r.Mode, 8, 32); err == nil && r.Mode != "" {
		mode = os.FileMode(m) & os.ModePerm
	}
	hdr := &zip.FileHeader{Name: path.Clean(r.Path), Method: zip.Store}
	hdr.SetMode(mode)
	w, err := zw.CreateHeader(hdr)
	if err != nil {
		return err
	}
	_, err = io.Copy(w, src)
	return err
}
