package command

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/cloudfoundry/go-cfclient/v3/client"
	"github.com/cloudfoundry/go-cfclient/v3/config"

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
// connection when running as a plugin (env.CF), else from its config file.
func (f *cfFlags) connect(env *Env) (*platform.CF, string, error) {
	var cfg *config.Config
	var api string
	var err error
	if env.CF != nil {
		t, terr := env.CF()
		if terr != nil {
			return nil, "", fmt.Errorf("the cf CLI's connection: %w", terr)
		}
		if t.API == "" || t.AccessToken == "" {
			return nil, "", errors.New("not logged in to Cloud Foundry. Try: cf api URL && cf login")
		}
		api = t.API
		if t.RefreshToken == "" {
			// The plugin RPC gives no refresh token; without one a run outliving the
			// access token would fail, so take the cf CLI's from its config.
			t.RefreshToken = f.refreshToken(env, t.API)
		}
		opts := []config.Option{config.Token(strings.TrimPrefix(strings.TrimPrefix(t.AccessToken, "bearer "), "Bearer "), t.RefreshToken)}
		if t.SkipTLS {
			opts = append(opts, config.SkipTLSValidation())
		}
		cfg, err = config.New(t.API, opts...)
	} else {
		home := f.home(env)
		if _, serr := os.Stat(filepath.Join(home, ".cf", "config.json")); serr != nil {
			return nil, "", fmt.Errorf("no cf CLI config in %s: log in first. Try: cf api URL && cf login (or --cf-home DIR)", home)
		}
		cfg, err = config.NewFromCFHomeDir(home)
		if err == nil {
			api = cfg.ApiURL("")
		}
	}
	if err != nil {
		return nil, "", fmt.Errorf("cf CLI target: %w. Try: cf login", err)
	}
	cl, err := client.New(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("cf client: %w", err)
	}
	return platform.New(cl), api, nil
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

// refreshToken is the cf CLI's refresh token for api from its config, or "".
func (f *cfFlags) refreshToken(env *Env, api string) string {
	b, err := os.ReadFile(filepath.Join(f.home(env), ".cf", "config.json"))
	if err != nil {
		return ""
	}
	var c struct{ Target, RefreshToken string }
	if json.Unmarshal(b, &c) != nil || strings.TrimSuffix(c.Target, "/") != strings.TrimSuffix(api, "/") {
		return ""
	}
	return c.RefreshToken
}
