package main

import (
	"context"
	"fmt"
	"sort"

	cfplugin "code.cloudfoundry.org/cli/v8/plugin"

	cfbversion "github.com/cf-benchmark/cf-benchmark/internal/version"
	"github.com/cf-benchmark/cf-benchmark/plugin/command"
)

// cliPlugin adapts the commands to the cf CLI plugin interface.
type cliPlugin struct {
	ctx  context.Context
	env  *command.Env
	code int
}

var _ cfplugin.Plugin = (*cliPlugin)(nil)

// Run is called by the cf CLI with the plugin command's name and its arguments.
func (p *cliPlugin) Run(conn cfplugin.CliConnection, args []string) {
	if len(args) == 0 || args[0] == "CLI-MESSAGE-UNINSTALL" {
		return
	}
	p.env.CF = func() (command.CFTarget, error) { return target(conn) }
	c := command.Lookup(args[0])
	if c == nil || c.PluginName != args[0] {
		fmt.Fprintf(p.env.Stderr, "error: unknown command %q\n", args[0])
		p.code = command.ExitUsage
		return
	}
	p.code = command.Execute(p.ctx, p.env, "cf", c, args[1:])
}

// GetMetadata describes the plugin commands to the cf CLI (cf plugins, cf help).
func (p *cliPlugin) GetMetadata() cfplugin.PluginMetadata {
	major, minor, patch := cfbversion.Numbers(p.env.Version)
	m := cfplugin.PluginMetadata{
		Name:    "cf-benchmark",
		Version: cfplugin.VersionType{Major: major, Minor: minor, Build: patch},
		// The plugin asks the cf CLI for its API endpoint, whether TLS checks are off, and
		// an access token it then uses for CC v3 calls of its own. Those RPCs came with
		// cf CLI 6.11.2, but only from 6.14.0 on does AccessToken refresh an expired
		// token (before, a run would start with a stale one), and only from 6.14.0 do all
		// CLIs honour MinCliVersion (plugin/plugin_examples/CHANGELOG.md in the cf CLI).
		MinCliVersion: cfplugin.VersionType{Major: 6, Minor: 14, Build: 0},
	}
	for _, c := range command.PluginCommands() {
		m.Commands = append(m.Commands, cfplugin.Command{
			Name:     c.PluginName,
			HelpText: c.Summary,
			UsageDetails: cfplugin.Usage{
				Usage:   c.Usage("cf") + "\n\nEXAMPLE:\n   " + c.Example("cf"),
				Options: c.FlagHelp(),
			},
		})
	}
	sort.Slice(m.Commands, func(i, j int) bool { return m.Commands[i].Name < m.Commands[j].Name })
	return m
}

// target reads the cf CLI's API endpoint and a fresh access token (the cf CLI refreshes
// it when needed) over the plugin RPC connection.
func target(conn cfplugin.CliConnection) (command.CFTarget, error) {
	var t command.CFTarget
	var err error
	if t.API, err = conn.ApiEndpoint(); err != nil {
		return t, err
	}
	if t.API == "" {
		return t, nil
	}
	if t.AccessToken, err = conn.AccessToken(); err != nil {
		return t, err
	}
	t.SkipTLS, err = conn.IsSSLDisabled()
	return t, err
}
