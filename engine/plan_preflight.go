package engine

import (
	"context"
	"fmt"
	"slices"

	"github.com/cf-benchmark/cf-benchmark/platform"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// Preflight reports every problem that would make a session of sp refuse to start,
// before anything is started, pushed or created: where sp can run (Check; a spec with a
// landscape runs on Cloud Foundry), a header value naming a variable lookupEnv has not
// (nil lookupEnv skips that check), a variant manifest that cannot be pushed (a
// missing or malformed file, no such app, app files that do not exist, a matrix cell
// that does not fit it), and a plan (PlanOf) over the spec's limits or, with quotas
// (nil skips them), over the quota of the org or of a space. The problems come as a
// spec.Errors, each naming file, line and field where the spec has them; nil means a
// session may start. It returns the plan also with problems: the spec and its
// manifests, each read once (PlanOf), which the later phases read from it instead
// (RunSession, Deploy). It reads nothing else but, with quotas, the org's and spaces'
// quotas.
func Preflight(ctx context.Context, sp *spec.Spec, lookupEnv func(string) (string, bool), quotas QuotaReader) (*Plan, error) {
	p := PlanOf(sp)
	if errs := p.problems(ctx, lookupEnv, quotas, false); len(errs) > 0 {
		return p, errs
	}
	return p, nil
}

// problems is what Preflight finds wrong with p (see there); with foundationOnly only
// what needs the foundation quotas reads (a fault its chaos API cannot make, its
// quotas): what is left to check of a plan Preflight judged without a foundation.
func (p *Plan) problems(ctx context.Context, lookupEnv func(string) (string, bool), quotas QuotaReader, foundationOnly bool) spec.Errors {
	sp := p.spec
	onCF := sp.Landscape != nil
	var errs spec.Errors
	if !foundationOnly {
		errs = unsupported(sp, onCF)
		if lookupEnv != nil {
			errs = append(errs, headerErrors(sp, lookupEnv)...)
		}
		errs = append(errs, p.manifestErrors()...)
		errs = append(errs, faultErrors(ctx, p, quotas)...)
	} else {
		errs = append(errs, chaosErrors(ctx, sp, quotas)...)
	}
	var qs []platform.Quota
	if onCF && quotas != nil {
		l := sp.Landscape
		var err error
		if qs, err = quotas.Quotas(ctx, l.Org, l.Apps.Space, l.Generators.Space); err != nil {
			errs = append(errs, sp.Errorf("landscape.org", "read the quotas to check the plan against: %v", err))
		}
	}
	if !foundationOnly {
		errs = append(errs, limitErrors(sp, p)...)
	}
	return append(errs, quotaErrors(sp, p, qs)...)
}

// manifestErrors are the variants' manifests that cannot be pushed, each problem once
// (the cells of a matrix share their manifest's problems).
func (p *Plan) manifestErrors() spec.Errors {
	var errs spec.Errors
	if p.spec.Landscape == nil {
		return nil
	}
	seen := map[string]bool{}
	for _, v := range p.spec.Variants {
		if v.Manifest == "" {
			continue
		}
		if err := p.checkManifest(v); err != nil {
			if e := p.spec.Errorf(v.Field+".manifest", "%v", err); !seen[e.Error()] {
				seen[e.Error()] = true
				errs = append(errs, e)
			}
		}
	}
	return errs
}

// Check reports why sp cannot run where it is asked to, or nil: on Cloud Foundry (onCF)
// it needs a landscape and a results_db; without, every variant needs a url: of a running
// target. The error matches ErrUnsupported and is a spec.Errors naming line and field.
// Preflight checks this and more before a session starts.
func Check(sp *spec.Spec, onCF bool) error {
	if errs := unsupported(sp, onCF); len(errs) > 0 {
		return unsupportedError{errs}
	}
	return nil
}

// unsupported is what keeps sp from running where onCF says, as spec problems.
func unsupported(sp *spec.Spec, onCF bool) spec.Errors {
	var errs spec.Errors
	if onCF {
		if sp.Landscape == nil {
			errs = append(errs, sp.Errorf("landscape", "is required to run on Cloud Foundry (the org and spaces to push to)"))
		}
		if sp.ResultsDB == nil {
			// Placed at the landscape: it is why results_db is needed.
			e := sp.Errorf("landscape", "is required with a landscape: the service instance the generators write to")
			e.Path = "results_db"
			errs = append(errs, e)
		}
		return errs
	}
	if sp.Ramp.Stop.AppCPUAbove > 0 {
		errs = append(errs, sp.Errorf("ramp.stop.app_cpu_above", "needs the apps' container metrics, which only a run on Cloud Foundry (a landscape section) has"))
	}
	for i, v := range sp.Variants {
		if v.URL == "" && (i == 0 || sp.Variants[i-1].Field != v.Field) {
			errs = append(errs, sp.Errorf(v.Field+".manifest", "pushing a manifest needs a Cloud Foundry (a landscape section and a cf login)"))
		}
	}
	return errs
}

// checkHeaderVars fails when a header value names an environment variable lookup does
// not have (see Preflight).
func checkHeaderVars(sp *spec.Spec, lookup func(string) (string, bool)) error {
	if errs := headerErrors(sp, lookup); len(errs) > 0 {
		return errs
	}
	return nil
}

// headerErrors names each header value that uses a ${NAME} lookup does not have: better
// now than from every generator instance once the run started.
func headerErrors(sp *spec.Spec, lookup func(string) (string, bool)) spec.Errors {
	var errs spec.Errors
	eachHeader(sp, func(i int, name, val string) {
		if _, err := spec.ExpandHeader(val, lookup); err != nil {
			errs = append(errs, sp.Errorf(fmt.Sprintf("workload.requests[%d].headers.%s", i, name), "%v", err))
		}
	})
	return errs
}

// eachHeader calls f with each header of the workload's requests: the request's index,
// the header's name and its value as written, requests in order and each request's
// headers by name.
func eachHeader(sp *spec.Spec, f func(i int, name, val string)) {
	for i, r := range sp.Workload.Requests {
		names := make([]string, 0, len(r.Headers))
		for name := range r.Headers {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			f(i, name, r.Headers[name])
		}
	}
}

// unsupportedError is what Check returns: the spec's problems, which also match
// ErrUnsupported.
type unsupportedError struct{ errs spec.Errors }

func (e unsupportedError) Error() string   { return e.errs.Error() }
func (e unsupportedError) Unwrap() []error { return []error{e.errs, ErrUnsupported} }
