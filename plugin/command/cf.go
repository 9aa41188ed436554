package command

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/cf-benchmark/cf-benchmark/platform"
)

// CFTarget is the Cloud Foundry a command talks to and the user's token for it.
type CFTarget struct {
	API string
	// AccessToken is the token as the cf CLI gives it ("bearer …").
	AccessToken string
	// RefreshToken lets a long run renew the token; "" when unknown.
	RefreshToken string
	SkipTLS      bool
}

// cfFlags choose the Cloud Foundry of a standalone command; the plugin uses the cf
// CLI's connection instead.
type cfFlags struct {
	cfHome string
}

func (f *cfFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.cfHome, "cf-home", "", "standalone: the cf CLI's home whose target and token to use (default $CF_HOME, else your home directory)")
}

// connect returns a Cloud Foundry client with the API and token of the cf CLI: from its
// connection when running as a plugin (env.CF), else from its config file. The client
// renews the token in memory (platform.Connect) and never writes the cf CLI's config:
// as a plugin it asks the cf CLI first, which renews and saves the token as it does
// for its own commands.
func (f *cfFlags) connect(env *Env) (*platform.CF, string, error) {
	ctx := context.Background()
	var l platform.Login
	if env.CF != nil {
		t, terr := env.CF()
		if terr != nil {
			return nil, "", fmt.Errorf("the cf CLI's connection: %w", terr)
		}
		if t.API == "" || t.AccessToken == "" {
			return nil, "", errors.New("not logged in to Cloud Foundry. Try: cf api URL && cf login")
		}
		if t.RefreshToken == "" {
			// The plugin RPC gives no refresh token; when the cf CLI cannot renew a
			// rejected token, UAA's refresh grant needs the one in its config.
			t.RefreshToken = f.cliConfig(env, t.API).RefreshToken
		}
		l = platform.Login{API: t.API, Token: platform.Token{Access: t.AccessToken, Refresh: t.RefreshToken}, SkipTLS: t.SkipTLS,
			Fresh: func(context.Context) (string, error) {
				t, err := env.CF()
				return t.AccessToken, err
			}}
	} else {
		home := f.home(env)
		c, err := readCLIConfig(home)
		if err != nil {
			return nil, "", fmt.Errorf("no cf CLI config in %s: log in first. Try: cf api URL && cf login (or --cf-home DIR)", home)
		}
		if c.Target == "" || c.AccessToken == "" {
			return nil, "", fmt.Errorf("the cf CLI in %s is not logged in. Try: cf api URL && cf login (or --cf-home DIR)", home)
		}
		l = platform.Login{API: c.Target, Token: platform.Token{Access: c.AccessToken, Refresh: c.RefreshToken}, UAA: c.UaaEndpoint,
			ClientID: c.UAAOAuthClient, ClientSecret: c.UAAOAuthClientSecret, ClientCredentials: c.UAAGrantType == "client_credentials",
			SkipTLS: c.SSLDisabled}
	}
	l.Logger = env.logger()
	cf, err := platform.Connect(ctx, l)
	if err != nil {
		return nil, "", fmt.Errorf("cf CLI target: %w. Try: cf login", err)
	}
	return cf, strings.TrimRight(l.API, "/"), nil
}

func (f *cfFlags) home(env *Env) string {
	if f.cfHome != "" {
		return f.cfHome
	}
	return cfHome(runtime.GOOS, env.Getenv)
}

// cfHome is the directory whose .cf/config.json the cf CLI uses on goos, found as the
// cf CLI finds it: $CF_HOME, else the home directory (on Windows %HOMEDRIVE%%HOMEPATH%,
// else %USERPROFILE%).
func cfHome(goos string, getenv func(string) string) string {
	if h := getenv("CF_HOME"); h != "" {
		return h
	}
	if goos != "windows" {
		return getenv("HOME")
	}
	if h := getenv("HOMEDRIVE") + getenv("HOMEPATH"); h != "" {
		return h
	}
	return getenv("USERPROFILE")
}

// cliConfig is what the cf CLI keeps in $CF_HOME/.cf/config.json (cf CLI v7+ names).
type cliConfig struct {
	Target, AccessToken, RefreshToken, UaaEndpoint     string
	UAAOAuthClient, UAAOAuthClientSecret, UAAGrantType string
	SSLDisabled                                        bool
}

func readCLIConfig(home string) (cliConfig, error) {
	var c cliConfig
	b, err := os.ReadFile(filepath.Join(home, ".cf", "config.json"))
	if err != nil {
		return c, err
	}
	err = json.Unmarshal(b, &c)
	return c, err
}

// cliConfig is the cf CLI's config when it targets api, else empty.
func (f *cfFlags) cliConfig(env *Env, api string) cliConfig {
	c, err := readCLIConfig(f.home(env))
	if err != nil || strings.TrimSuffix(c.Target, "/") != strings.TrimSuffix(api, "/") {
		return cliConfig{}
	}
	return c
}
