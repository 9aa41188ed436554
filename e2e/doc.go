// Package e2e holds end-to-end tests that drive real external programs, not fakes: the
// cf-benchmark binary built from this module and the real cf CLI (v8.18.0, built by
// scripts/install-cf-cli.sh). `make check` (go test -short) skips them; in `make test`
// they fail rather than skip when a program is missing: it installs everything first. They need no network and never read or write
// the user's own cf configuration.
package e2e
