package cells

import (
	"fmt"
	"strings"

	"github.com/cf-benchmark/cf-benchmark/foundation/cells/cgroup"
)

// ParseCells reads cells as a command line gives them: name=CPUS entries separated by
// commas, where CPUS is a CPU list (0, 0-3, or 0,2 continuing over the next commas until
// the next name=), e.g. apps=0,2,loadgen=1,3. "" is no cells (the default).
func ParseCells(s string) ([]Cell, error) {
	if s == "" {
		return nil, nil
	}
	var out []Cell
	for _, tok := range strings.Split(s, ",") {
		name, list, named := strings.Cut(tok, "=")
		if !named {
			if len(out) == 0 {
				return nil, fmt.Errorf("%q: want name=CPUS, e.g. apps=0,loadgen=1", s)
			}
			name, list = "", tok
		}
		cpus, err := cgroup.ParseCPUList(list)
		if err != nil || len(cpus) == 0 {
			return nil, fmt.Errorf("%q: %q is not a CPU list like 0, 0-3 or 4-7", s, list)
		}
		if named {
			if name == "" {
				return nil, fmt.Errorf("%q: a cell needs a name", s)
			}
			out = append(out, Cell{Name: name, CPUs: cpus})
		} else {
			last := &out[len(out)-1]
			last.CPUs = append(last.CPUs, cpus...)
		}
	}
	return out, nil
}
