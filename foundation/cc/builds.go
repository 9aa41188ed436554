// Builds: staging a package into a droplet with the runtime's stager.

package cc

import (
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// buildRoutes registers the endpoints of builds.
func (s *Server) buildRoutes() {
	s.handle("POST /v3/builds", s.createBuild)
	s.handle("GET /v3/builds/{guid}", s.getBuild)
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
			Buildpack: res.Buildpack, BuildpackVersion: res.BuildpackVersion, StartCommand: res.StartCommand,
			ProcessTypes: res.ProcessTypes, Created: now, Updated: now}
		b.State, b.DropletGUID = BuildStaged, droplet
		return nil
	})
	if uerr != nil {
		s.cfg.Logger.Error("record build result", "build", buildGUID, "err", uerr)
	}
}
