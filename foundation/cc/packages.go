package cc

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// packageRoutes registers the endpoints of packages.
func (s *Server) packageRoutes() {
	s.handle("GET /v3/packages", s.listPackages)
	s.handle("POST /v3/packages", s.createPackage)
	s.handle("GET /v3/packages/{guid}", s.getPackage)
	s.handle("POST /v3/packages/{guid}/upload", s.uploadPackage)
}

// maxPackageBytes bounds an upload (CC's default package limit is 1 GiB).
const maxPackageBytes = 1 << 30

func (s *Server) listPackages(c *call) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	var out []*Package
	s.st.read(func(st *State) {
		for _, p := range sorted(st.Packages, func(p *Package) time.Time { return p.Created }, func(p *Package) string { return p.GUID }) {
			if q.match("app_guids", p.AppGUID) && q.match("guids", p.GUID) && q.match("states", p.State) && q.match("types", "bits") {
				cp := *p
				out = append(out, &cp)
			}
		}
	})
	return paginate(c, q, out, func(p *Package) string { return p.GUID }, func(p *Package) time.Time { return p.Created }, s.renderPackage, nil)
}

func (s *Server) getPackage(c *call) error {
	var p *Package
	s.st.read(func(st *State) {
		if x := st.Packages[c.r.PathValue("guid")]; x != nil {
			cp := *x
			p = &cp
		}
	})
	if p == nil {
		return notFound("Package")
	}
	return c.json(http.StatusOK, s.renderPackage(p))
}

func (s *Server) createPackage(c *call) error {
	var body struct {
		Type          string `json:"type"`
		Relationships struct {
			App toOneBody `json:"app"`
		} `json:"relationships"`
	}
	if err := c.decode(&body); err != nil {
		return err
	}
	if body.Type != "bits" {
		return unprocessable("Type must be one of 'bits': the local foundation runs no docker images")
	}
	return c.change(http.StatusCreated, func(st *State) (any, error) {
		app := body.Relationships.App.guid()
		if st.Apps[app] == nil {
			return nil, unprocessable("App must exist")
		}
		now := time.Now().UTC()
		p := &Package{GUID: newGUID(), AppGUID: app, State: PackageAwaitingUpload, Created: now, Updated: now}
		st.Packages[p.GUID] = p
		return s.renderPackage(p), nil
	})
}

// uploadPackage takes the bits as the multipart file field "bits" (a zip) and the
// files the resource pool already holds as the field "resources" (a JSON list, see
// resourceMatches), as the cf CLI and go-cfclient send them; either may be absent,
// not both. The package is the zip plus the matched files.
func (s *Server) uploadPackage(c *call) error {
	guid := c.r.PathValue("guid")
	var exists bool
	s.st.read(func(st *State) { exists = st.Packages[guid] != nil })
	if !exists {
		return notFound("Package")
	}
	c.r.Body = http.MaxBytesReader(c.w, c.r.Body, maxPackageBytes)
	mr, err := c.r.MultipartReader()
	if err != nil {
		return unprocessable("Upload must be multipart/form-data with the zip in the field 'bits'")
	}
	var (
		bits    string // the uploaded zip, in a temp file
		matched []matchResource
		sawRes  bool
	)
	defer func() {
		if bits != "" {
			os.Remove(bits)
		}
	}()
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return unprocessable("Bad multipart upload: %v", err)
		}
		switch part.FormName() {
		case "bits":
			if bits != "" {
				os.Remove(bits)
			}
			if bits, err = s.saveUpload(guid, part); err != nil {
				return err
			}
		case "resources":
			raw, err := io.ReadAll(io.LimitReader(part, 16<<20))
			if err != nil {
				return unprocessable("Bad multipart upload: %v", err)
			}
			if matched, err = s.pool.parseMatched(raw); err != nil {
				return err
			}
			sawRes = true
		}
	}
	if bits == "" && !sawRes {
		return unprocessable("Upload must include either resources or bits")
	}
	if bits == "" && len(matched) == 0 {
		return unprocessable("Upload must include the zip in the field 'bits' when no resources matched")
	}
	sum, err := s.storePackage(guid, bits, matched)
	if err != nil {
		return err
	}
	return c.change(http.StatusOK, func(st *State) (any, error) {
		p := st.Packages[guid]
		if p == nil {
			return nil, notFound("Package")
		}
		p.State, p.SHA256, p.Updated = PackageReady, sum, time.Now().UTC()
		if a := st.Apps[p.AppGUID]; a != nil {
			st.audit("audit.app.upload-bits", a, nil)
		}
		return s.renderPackage(p), nil
	})
}

// saveUpload copies an uploaded zip into a temp file beside the packages.
func (s *Server) saveUpload(guid string, r io.Reader) (string, error) {
	tmp, err := os.CreateTemp(filepath.Dir(s.packagePath(guid)), "upload-*")
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(tmp, r); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return "", unprocessable("Package exceeds the maximum size of %d bytes", int64(maxPackageBytes))
		}
		return "", fmt.Errorf("store package: %w", err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return tmp.Name(), nil
}

// storePackage makes the package's zip from the upload and the matched resources,
// pools its files for later pushes and returns its SHA-256.
func (s *Server) storePackage(guid, bits string, matched []matchResource) (string, error) {
	final := s.packagePath(guid)
	tmp := final + ".new"
	if len(matched) == 0 {
		if err := os.Rename(bits, tmp); err != nil {
			return "", err
		}
	} else if err := s.pool.assemble(tmp, bits, matched); err != nil {
		return "", err
	}
	f, err := os.Open(tmp)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	_, err = io.Copy(h, f)
	f.Close()
	if err == nil {
		err = os.Rename(tmp, final)
	}
	if err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("store package: %w", err)
	}
	s.pool.addFrom(final)
	return hex.EncodeToString(h.Sum(nil)), nil
}
