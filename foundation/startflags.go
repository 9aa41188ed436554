package foundation

import (
	goruntime "runtime"

	"github.com/cf-benchmark/cf-benchmark/foundation/cc"
	"github.com/cf-benchmark/cf-benchmark/foundation/cells"
	"github.com/cf-benchmark/cf-benchmark/foundation/cells/cgroup"
	"github.com/cf-benchmark/cf-benchmark/foundation/logship"
)

// The lifetimes of a token when none is given, as UAA's of cf-deployment's cf client.
const (
	DefaultAccessTokenTTL  = cc.DefaultAccessTokenTTL
	DefaultRefreshTokenTTL = cc.DefaultRefreshTokenTTL
)

// StartFlags are the settings of a foundation as a person writes them (the flags of
// `cf-benchmark foundation start`); "" is the default of each.
type StartFlags struct {
	// RateLimit is CC's rate limit, N requests per user per interval: 2000/60m.
	RateLimit string
	// Cells are the cells and their CPUs: apps=0,loadgen=1 or apps=0-3,loadgen=4-7.
	Cells string
	// PlatformCPUs are the CPUs of the foundation's own work: 1, 2-3, or any.
	PlatformCPUs string
	// LogQuota is the router lines kept per window: 1000/1h.
	LogQuota string
}

// SettingError is a setting Apply could not read; Flag names it as its flag does.
type SettingError struct {
	Flag string
	Err  error
}

func (e *SettingError) Error() string { return "--" + e.Flag + ": " + e.Err.Error() }
func (e *SettingError) Unwrap() error { return e.Err }

// Apply reads s into cfg: its rate limit, cells, platform CPUs (by default those of
// no apps cell) and log quota. A setting it cannot read gives a *SettingError.
func (s StartFlags) Apply(cfg *Config) error {
	limit, err := cc.ParseRateLimit(s.RateLimit)
	if err != nil {
		return &SettingError{"rate-limit", err}
	}
	cfg.RateLimit, cfg.RateLimitInterval = limit.Limit, limit.Interval
	if cfg.Cells, err = cells.ParseCells(s.Cells); err != nil {
		return &SettingError{"cells", err}
	}
	switch s.PlatformCPUs {
	case "":
		cfg.PlatformCPUs = AppsFreeCPUs(cfg.Cells, goruntime.NumCPU())
	case "any":
	default:
		if cfg.PlatformCPUs, err = cgroup.ParseCPUList(s.PlatformCPUs); err != nil {
			return &SettingError{"platform-cpus", err}
		}
	}
	if cfg.LogQuota, cfg.LogQuotaWindow, err = logship.ParseQuota(s.LogQuota); err != nil {
		return &SettingError{"log-quota", err}
	}
	return nil
}
