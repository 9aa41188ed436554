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

func (s *Server) packageDroplets(c *call) error {
	pkg := c.r.PathValue("guid")
	return s.dropletList(c, func(st *State) error {
		if st.Packages[pkg] == nil {
			return notFound("Package")
		}
		return nil
	}, func(_ *State, d *Droplet) bool { return d.PackageGUID == pkg })
}

func (s *Server) appDroplets(c *call) error {
	app := c.r.PathValue("guid")
	return s.dropletList(c, func(st *State) error {
		if st.Apps[app] == nil {
			return notFound("App")
		}
		return nil
	}, func(_ *State, d *Droplet) bool { return d.AppGUID == app })
}

func (s *Server) listDroplets(c *call) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	return s.dropletList(c, func(*State) error { return nil }, func(st *State, d *Droplet) bool {
		a := st.Apps[d.AppGUID]
		return q.match("app_guids", d.AppGUID) && q.match("package_guids", d.PackageGUID) && (q.list("space_guids") == nil || a != nil && q.match("space_guids", a.SpaceGUID))
	})
}

// dropletList answers a droplet list: those keep takes, filtered by states and guids
// as every droplet list is; check says whether the parent exists.
func (s *Server) dropletList(c *call, check func(*State) error, keep func(*State, *Droplet) bool) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	var out []*Droplet
	s.st.read(func(st *State) {
		if err = check(st); err != nil {
			return
		}
		for _, d := range sorted(st.Droplets, func(d *Droplet) time.Time { return d.Created }, func(d *Droplet) string { return d.GUID }) {
			if keep(st, d) && q.match("states", d.State) && q.match("guids", d.GUID) {
				cp := *d
				out = append(out, &cp)
			}
		}
	})
	if err != nil {
		return err
	}
	return paginate(c, q, out, func(d *Droplet) string { return d.GUID }, func(d *Droplet) time.Time { return d.Created }, s.renderDroplet, nil)
}

func (s *Server) getBuild(c *call) error {
	var b *Build
	s.st.read(func(st *State) {
		if x := st.Builds[c.r.PathValue("guid")]; x != nil {
			cp := *x
			b = &cp
		}
	})
	if b == nil {
		return notFound("Build")
	}
	return c.json(http.StatusOK, s.renderBuild(b))
}

// createBuild stages a package in the background; clients poll the build.
func (s *Server) createBuild(c *call) error {
	var body struct {
		Package struct {
			GUID string `json:"guid"`
		} `json:"package"`
		Lifecycle *lifecycleBody `json:"lifecycle"`
	}
	if err := c.decode(&body); err != nil {
		return err
	}
	if err := checkLifecycle(body.Lifecycle); err != nil {
		return err
	}
	var (
		b   *Build
		req StageRequest
	)
	err := c.change(http.StatusCreated, func(st *State) (any, error) {
		p := st.Packages[body.Package.GUID]
		if p == nil {
			return nil, unprocessable("Unable to use package. Ensure that the package exists and you have access to it.")
		}
		if p.State != PackageReady {
			// CC's words: the cf CLI matches them to say the package must be uploaded.
			return nil, &Error{Code: 1004, Title: "CF-BadRequest", Detail: "Bad request: Cannot stage package whose state is not ready.", status: http.StatusBadRequest}
		}
		a := st.Apps[p.AppGUID]
		web := st.process(a.GUID, "web")
		now := time.Now().UTC()
		b = &Build{GUID: newGUID(), AppGUID: a.GUID, PackageGUID: p.GUID, State: BuildStaging, Buildpacks: a.Buildpacks, Created: now, Updated: now}
		if body.Lifecycle != nil && len(body.Lifecycle.Data.Buildpacks) > 0 {
			b.Buildpacks = body.Lifecycle.Data.Buildpacks
		}
		st.Builds[b.GUID] = b
		st.audit("audit.app.build.create", a, map[string]any{"build_guid": b.GUID, "package_guid": p.GUID})
		req = StageRequest{PackageZip: s.packagePath(p.GUID), Buildpacks: b.Buildpacks, Env: st.groupEnv("staging", a.Env), MemoryMB: defaultMemoryMB}
		if web != nil {
			req.Command, req.MemoryMB = web.Command, web.MemoryMB
		}
		return s.renderBuild(b), nil
	})
	if err != nil {
		return err
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.stage(b.GUID, b.AppGUID, req)
	}()
	return nil
}

// stage runs one build to completion and records its droplet or its error.
// Its output goes to a file per build and to the app's log (STG).
func (s *Server) stage(buildGUID, appGUID string, req StageRequest) {
	droplet := newGUID()
	req.DropletDir = s.dropletDir(droplet)
	logPath := filepath.Join(s.cfg.DataDir, "staging-logs", buildGUID+".log")
	stg := &lineWriter{emit: func(line string) { s.appLog(appGUID, "STG", "0", line) }}
	req.Log = stg
	if log, err := os.Create(logPath); err == nil {
		defer log.Close()
		req.Log = io.MultiWriter(log, stg)
	}
	res, err := s.cfg.Runtime.Stage(s.ctx, req)
	stg.Close()
	if err != nil {
		os.RemoveAll(req.DropletDir)
		s.cfg.Logger.Warn("staging failed", "build", buildGUID, "err", err, "log", logPath)
	}
	uerr := s.st.update(func(st *State) error {
		b := st.Builds[buildGUID]
		if b == nil {
			return nil // the app was deleted meanwhile
		}
		now := time.Now().UTC()
		b.Updated = now
		switch {
		case errors.Is(err, ErrNoAppDetected): // the staging log says which lifecycles there are
			b.State, b.Error = BuildFailed, ErrNoAppDetected.Error()
			return nil
		case err != nil:
			b.State, b.Error = BuildFailed, "StagingError - Staging error: "+err.Error()
			return nil
		}
		st.Droplets[droplet] = &Droplet{GUID: droplet, AppGUID: b.AppGUID, PackageGUID: b.PackageGUID, State: BuildStaged,
			Buildpack: res.Buildpack, StartCommand: res.StartCommand, Created: now, Updated: now}
		b.State, b.DropletGUID = BuildStaged, droplet
		return nil
	})
	if uerr != nil {
		s.cfg.Logger.Error("record build result", "build", buildGUID, "err", uerr)
	}
}
