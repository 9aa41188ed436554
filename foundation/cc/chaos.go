package cc

import (
	"errors"
	"net/http"
	"time"
)

// The local foundation's faults on demand (a real CC has no such endpoint): POST
// /cfbench/v1/chaos, advertised in the root document as links.cfbench_chaos when
// Config.Chaos is set, for the admin only. The body names the fault:
//
//	{"action": "crash"|"oom"|"evacuate"|"restart-router"|"expire-tokens",
//	 "app_guid": "…", "process_type": "web", "index": 0, "cell": "apps"}
//
// crash and oom need app_guid (index 0 and process type web by default), evacuate
// needs cell. The answer, once the fault is applied (not recovered from):
//
//	{"action": "crash", "at": "<RFC 3339>", "instances": [{"app_guid": "…",
//	 "process_type": "web", "index": 0, "instance_guid": "…", "cell": "apps"}]}

// ChaosPath is the path of the chaos endpoint.
const ChaosPath = "/cfbench/v1/chaos"

// Chaos applies faults to the foundation the server runs on.
type Chaos interface {
	// Crash kills instance index of the process, as an OOM kill when oom is set.
	Crash(processGUID string, index int, oom bool) (ChaosInstance, error)
	// Evacuate moves every instance off the cell (isolation segment) named cell.
	Evacuate(cell string) ([]ChaosInstance, error)
	// RestartRouter begins a router restart (its drain).
	RestartRouter() error
}

// ChaosInstance is an instance a fault hit.
type ChaosInstance struct {
	ProcessGUID, AppGUID, ProcessType string
	Index                             int
	InstanceGUID, Cell                string
}

// ErrChaosNotFound, wrapped in what a Chaos returns, answers 404: no such instance or
// cell.
var ErrChaosNotFound = errors.New("not found")

func (s *Server) chaosRoutes() {
	s.handle("POST "+ChaosPath, s.chaos)
}

type chaosBody struct {
	Action      string  `json:"action"`
	AppGUID     string  `json:"app_guid"`
	ProcessType string  `json:"process_type"`
	Index       *int    `json:"index"`
	Cell        *string `json:"cell"`
}

func (s *Server) chaos(c *call) error {
	if s.cfg.Chaos == nil {
		return errUnknownRequest
	}
	var b chaosBody
	if err := c.decode(&b); err != nil {
		return err
	}
	var (
		hits []ChaosInstance
		err  error
		at   = time.Now()
	)
	switch b.Action {
	case "crash", "oom":
		var hit ChaosInstance
		if hit, err = s.chaosCrash(b); err == nil {
			hits = []ChaosInstance{hit}
		}
	case "evacuate":
		if b.Cell == nil {
			return unprocessable("Cell is required for evacuate")
		}
		hits, err = s.cfg.Chaos.Evacuate(*b.Cell)
	case "restart-router":
		err = s.cfg.Chaos.RestartRouter()
	case "expire-tokens":
		s.ExpireTokens(at)
	case "":
		return unprocessable("Action is required: crash, oom, evacuate, restart-router or expire-tokens")
	default:
		return unprocessable("Action must be one of crash, oom, evacuate, restart-router, expire-tokens; not %q", b.Action)
	}
	if errors.Is(err, ErrChaosNotFound) {
		return &Error{Code: 10010, Title: "CF-ResourceNotFound", Detail: err.Error(), status: http.StatusNotFound}
	}
	if err != nil {
		return err
	}
	out := make([]obj, 0, len(hits))
	for _, h := range hits {
		out = append(out, obj{"app_guid": h.AppGUID, "process_type": h.ProcessType, "index": h.Index,
			"instance_guid": h.InstanceGUID, "cell": h.Cell})
	}
	return c.json(http.StatusOK, obj{"action": b.Action, "at": at.UTC().Format(time.RFC3339Nano), "instances": out})
}

// chaosCrash kills the instance the body names.
func (s *Server) chaosCrash(b chaosBody) (ChaosInstance, error) {
	if b.AppGUID == "" {
		return ChaosInstance{}, unprocessable("App guid is required for %s", b.Action)
	}
	typ, index := b.ProcessType, 0
	if typ == "" {
		typ = "web"
	}
	if b.Index != nil {
		index = *b.Index
	}
	if index < 0 {
		return ChaosInstance{}, unprocessable("Index must be 0 or more")
	}
	var proc string
	var err error
	s.st.read(func(st *State) {
		if st.Apps[b.AppGUID] == nil {
			err = notFound("App")
			return
		}
		if p := st.process(b.AppGUID, typ); p != nil {
			proc = p.GUID
		} else {
			err = notFound("Process")
		}
	})
	if err != nil {
		return ChaosInstance{}, err
	}
	return s.cfg.Chaos.Crash(proc, index, b.Action == "oom")
}
