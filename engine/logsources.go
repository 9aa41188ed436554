package command

import (
	"errors"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs"
	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/elastic"
	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/file"
	"github.com/cf-benchmark/cf-benchmark/engine"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// logSources builds a router log source from a spec's collectors.router_logs, by source
// kind; apps maps the run's app GUIDs to names. It returns the source and its name for
// the pull's record.
var logSources = map[spec.LogSource]func(rl *spec.RouterLogs, env *Env, apps map[string]string, log *slog.Logger) (routerlogs.Source, string, error){
	spec.SourceElasticsearch: elasticSource,
	spec.SourceFile:          fileSource,
	spec.SourceDrain:         drainSource,
}

// drainSource refuses: a drain's lines are stored by the run's drain as they arrive,
// and there is nothing to pull afterwards.
func drainSource(*spec.RouterLogs, *Env, map[string]string, *slog.Logger) (routerlogs.Source, string, error) {
	return nil, "", errors.New("source drain: the run's drain stored the router lines as they arrived; there is nothing to pull (with -f, give a spec whose router_logs source is elasticsearch or file)")
}

// logSource is the engine's way to open the source a spec names, wired to logSources.
func logSource(env *Env, log *slog.Logger) engine.LogSourceFunc {
	return func(rl *spec.RouterLogs, apps map[string]string) (routerlogs.Source, string, error) {
		return logSources[rl.Source](rl, env, apps, log)
	}
}

// elasticSource reads Elasticsearch or OpenSearch; credentials come from the
// environment: CFBENCH_LOGS_API_KEY, or CFBENCH_LOGS_USERNAME and CFBENCH_LOGS_PASSWORD.
func elasticSource(rl *spec.RouterLogs, env *Env, _ map[string]string, log *slog.Logger) (routerlogs.Source, string, error) {
	cfg := elastic.Config{URLs: []string{rl.URL}, Index: rl.Index, Raw: rl.Raw, Logger: log,
		APIKey: env.Getenv("CFBENCH_LOGS_API_KEY"), Username: env.Getenv("CFBENCH_LOGS_USERNAME"), Password: env.Getenv("CFBENCH_LOGS_PASSWORD")}
	var pairs []string
	for name, path := range rl.Fields {
		pairs = append(pairs, name+"="+path)
	}
	if err := cfg.Fields.Set(strings.Join(pairs, ",")); err != nil {
		return nil, "", err
	}
	src, err := elastic.New(cfg)
	if err != nil {
		return nil, "", err
	}
	return src, "elasticsearch:" + strings.TrimRight(rl.URL, "/") + "/" + rl.Index, nil
}

// fileSource reads a file of access-log lines (a router's log, cf logs output).
func fileSource(rl *spec.RouterLogs, _ *Env, apps map[string]string, _ *slog.Logger) (routerlogs.Source, string, error) {
	src, err := file.New(rl.Path, apps)
	if err != nil {
		return nil, "", err
	}
	abs, err := filepath.Abs(rl.Path)
	if err != nil {
		abs = rl.Path
	}
	return src, "file:" + abs, nil
}
