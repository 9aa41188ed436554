package engine

import (
	"errors"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs"
	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/elastic"
	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/file"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// logSources builds a router log source from a spec's collectors.router_logs, by source
// kind; apps maps the run's app GUIDs to names, getenv gives credentials. It returns
// the source and its name for the pull's record.
var logSources = map[spec.LogSource]func(rl *spec.RouterLogs, getenv func(string) string, apps map[string]string, log *slog.Logger) (routerlogs.Source, string, error){
	spec.SourceElasticsearch: elasticSource,
	spec.SourceFile:          fileSource,
	spec.SourceDrain:         drainSource,
}

// LogSources opens the source a spec's collectors.router_logs names, of any kind the
// engine knows (Elasticsearch or OpenSearch, a file; a drain refuses: there is nothing
// to pull). getenv gives the search node's credentials: CFBENCH_LOGS_API_KEY, or
// CFBENCH_LOGS_USERNAME and CFBENCH_LOGS_PASSWORD.
func LogSources(getenv func(string) string, log *slog.Logger) LogSourceFunc {
	return func(rl *spec.RouterLogs, apps map[string]string) (routerlogs.Source, string, error) {
		return logSources[rl.Source](rl, getenv, apps, log)
	}
}

// drainSource refuses: a drain's lines are stored by the run's drain as they arrive,
// and there is nothing to pull afterwards.
func drainSource(*spec.RouterLogs, func(string) string, map[string]string, *slog.Logger) (routerlogs.Source, string, error) {
	return nil, "", errors.New("source drain: the run's drain stored the router lines as they arrived; there is nothing to pull (with -f, give a spec whose router_logs source is elasticsearch or file)")
}

// elasticSource reads Elasticsearch or OpenSearch.
func elasticSource(rl *spec.RouterLogs, getenv func(string) string, _ map[string]string, log *slog.Logger) (routerlogs.Source, string, error) {
	cfg := elastic.Config{URLs: []string{rl.URL}, Index: rl.Index, Raw: rl.Raw, Logger: log,
		APIKey: getenv("CFBENCH_LOGS_API_KEY"), Username: getenv("CFBENCH_LOGS_USERNAME"), Password: getenv("CFBENCH_LOGS_PASSWORD")}
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
func fileSource(rl *spec.RouterLogs, _ func(string) string, apps map[string]string, _ *slog.Logger) (routerlogs.Source, string, error) {
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
