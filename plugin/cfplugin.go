package main

import (
	"context"
	"fmt"
	"sort"

	cfplugin "code.cloudfoundry.org/cli/v8/plugin"

	"github.com/cf-benchmark/cf-benchmark/plugin/command"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "0.1.0"

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
	m := cfplugin.PluginMetadata{Name: "cf-benchmark", Version: parseVersion(version)}
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

func parseVersion(s string) cfplugin.VersionType {
	var v cfplugin.VersionType
	fmt.Sscanf(s, "%d.%d.%d", &v.Major, &v.Minor, &v.Build)
	return v
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
