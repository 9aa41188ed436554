package main

import (
	"testing"

	cfplugin "code.cloudfoundry.org/cli/v8/plugin"

	"github.com/cf-benchmark/cf-benchmark/plugin/command"
)

func TestMetadataCarriesTheVersionAndTheMinimumCLI(t *testing.T) {
	for _, c := range []struct {
		version string
		want    cfplugin.VersionType
	}{
		{"v1.2.3-4-gabcdef0-dirty", cfplugin.VersionType{Major: 1, Minor: 2, Build: 3}},
		{"7.8.9", cfplugin.VersionType{Major: 7, Minor: 8, Build: 9}},
		{"abcdef0-dirty", cfplugin.VersionType{}}, // a clone without tags: cf plugins shows N/A
	} {
		p := &cliPlugin{env: &command.Env{Version: c.version}}
		m := p.GetMetadata()
		if m.Version != c.want {
			t.Errorf("version %q: metadata Version %+v, want %+v", c.version, m.Version, c.want)
		}
		if got := cfplugin.MinCliVersionStr(m.MinCliVersion); got != "6.14.0" {
			t.Errorf("MinCliVersion %q, want 6.14.0", got)
		}
		if len(m.Commands) != len(command.PluginCommands()) {
			t.Errorf("%d commands in the metadata, want %d", len(m.Commands), len(command.PluginCommands()))
		}
	}
}
