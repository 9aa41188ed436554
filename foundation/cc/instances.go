// Process instances: restarting one instance (cf restart-app-instance), as CC's
// ProcessTerminate has Diego stop the instance, which Diego then starts again.

package cc

import (
	"net/http"
	"strconv"
	"strings"
)

// instanceRoutes registers the endpoints of process instances.
func (s *Server) instanceRoutes() {
	s.handle("DELETE /v3/processes/{guid}/instances/{index}", s.terminateInstance)
	s.handle("DELETE /v3/apps/{guid}/processes/{type}/instances/{index}", s.terminateAppInstance)
}

func (s *Server) terminateInstance(c *call) error {
	return s.terminate(c, c.r.PathValue("guid"), "")
}

func (s *Server) terminateAppInstance(c *call) error {
	return s.terminate(c, c.r.PathValue("guid"), c.r.PathValue("type"))
}

// terminate answers DELETE …/instances/:index as CC does: 404 Instance not found
// unless 0 ≤ index < the process's instances, else the instance is stopped and
// started again (a restart, not a crash: no crash event), the event
// audit.app.process.terminate_instance recorded, and 204, whether or not the app runs.
func (s *Server) terminate(c *call, guid, typ string) error {
	index := rubyToI(c.r.PathValue("index"))
	var (
		processGUID, app, ptype string
		started                 bool
	)
	err := s.st.update(func(st *State) error {
		var p *Process
		if typ == "" {
			p = st.Processes[guid]
		} else {
			if st.Apps[guid] == nil {
				return notFound("App")
			}
			p = st.process(guid, typ)
		}
		if p == nil {
			return notFound("Process")
		}
		if index < 0 || index >= p.Instances {
			return notFound("Instance")
		}
		a := st.Apps[p.AppGUID]
		processGUID, app, ptype, started = p.GUID, a.GUID, p.Type, a.State == AppStarted
		st.audit("audit.app.process.terminate_instance", a, map[string]any{"process_guid": p.GUID, "process_type": p.Type, "process_index": index})
		return nil
	})
	if err != nil {
		return err
	}
	s.appLog(app, "API", "0", "Terminating process: \""+ptype+"\", index: \""+strconv.Itoa(index)+"\"")
	if started {
		if _, err := s.cfg.Runtime.Terminate(processGUID, index); err != nil {
			// Nothing runs there (yet): as Diego's retire of an absent instance, no error.
			s.cfg.Logger.Info("terminate instance: none running", "process_guid", processGUID, "index", index, "err", err)
		}
	}
	c.w.WriteHeader(http.StatusNoContent)
	return nil
}

// rubyToI reads an index as CC's params[:index].to_i: an optional sign and the
// leading digits, 0 without any ("abc" is instance 0).
func rubyToI(s string) int {
	s = strings.TrimLeft(s, " \t\n")
	sign, i := 1, 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		if s[i] == '-' {
			sign = -1
		}
		i++
	}
	n := 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		if n > 1<<30 {
			break // an index that large is out of range however it goes on
		}
		n = n*10 + int(s[i]-'0')
	}
	return sign * n
}
