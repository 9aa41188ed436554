package command

import (
	"context"
	"flag"
	"fmt"
	"log/slog"

	"go.opentelemetry.io/otel"

	"github.com/cf-benchmark/cf-benchmark/report/metrics"
)

// metricsFlag is --metrics prometheus[:ADDR] or --metrics otlp=URL.
type metricsFlag struct {
	value  string
	target *metrics.Target
}

func (m *metricsFlag) register(fs *flag.FlagSet) {
	fs.StringVar(&m.value, "metrics", "", "publish the run's figures as it goes: prometheus[:ADDR] serves them for scraping at http://ADDR/metrics "+
		"(default 127.0.0.1 and a free port, printed), otlp=URL pushes them to an OTLP/HTTP receiver every 10 s; the report's own numbers, then its final ones")
}

// parse checks the value given (after flag parsing).
func (m *metricsFlag) parse() error {
	if m.value == "" {
		return nil
	}
	t, err := metrics.ParseTarget(m.value)
	if err != nil {
		return usagef("--metrics: %v", err)
	}
	m.target = &t
	return nil
}

// start starts the output asked for (after parse); nil when none.
func (m *metricsFlag) start(ctx context.Context, log *slog.Logger) (metrics.Output, error) {
	if m.target == nil {
		return nil, nil
	}
	// The SDK reports a failed push through its global handler: to the log, not stderr.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("metrics: OTLP push failed; trying again at the next", "err", err) }))
	out, err := metrics.New(*m.target, metrics.Config{Logger: log})
	if err != nil {
		return nil, err
	}
	if err := out.Start(ctx); err != nil {
		return nil, err
	}
	return out, nil
}

// print says where the figures go, for people (JSON carries it in the started
// event).
func (m *metricsFlag) print(env *Env, out metrics.Output) {
	if m.target.Kind == "prometheus" {
		fmt.Fprintf(env.Stdout, "metrics: %s (Prometheus; live until the run ends, then its report's figures)\n", out.Where())
		return
	}
	fmt.Fprintf(env.Stdout, "metrics: pushed to %s (OTLP; live until the run ends, then its report's figures)\n", out.Where())
}
