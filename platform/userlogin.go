package platform

import (
	"fmt"

	"github.com/cloudfoundry/go-cfclient/v3/client"
	"github.com/cloudfoundry/go-cfclient/v3/config"
)

// ConnectUser returns a CF on the API at api logged in as user with password, as
// `cf auth USER PASSWORD` logs in (UAA's password grant, the cf CLI's client): for a
// foundation whose credentials are at hand, as the local foundation's state dir keeps
// its admin's. go-cfclient keeps and renews the token; the requests are neither counted
// nor paced (Connect does that, for a run).
func ConnectUser(api, user, password string) (*CF, error) {
	cfg, err := config.New(api, config.UserPassword(user, password))
	if err != nil {
		return nil, fmt.Errorf("log in to %s as %s: %w", api, user, err)
	}
	cl, err := client.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("log in to %s as %s: %w", api, user, err)
	}
	return New(cl), nil
}
