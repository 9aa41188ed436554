package cc

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
)

// TestLoginPrompts: cf login reads the login server's prompts (GET /login, no token)
// and asks for what they name before the password grant.
func TestLoginPrompts(t *testing.T) {
	e := newEnv(t, t.TempDir())
	req, _ := http.NewRequest("GET", e.http.URL+"/login", nil)
	req.Header.Set("Accept", "application/json")
	resp, err := testhttp.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Prompts map[string][]string `json:"prompts"`
		Links   map[string]string   `json:"links"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /login: %d %v", resp.StatusCode, err)
	}
	if !slices.Equal(body.Prompts["username"], []string{"text", "Email"}) || !slices.Equal(body.Prompts["password"], []string{"password", "Password"}) {
		t.Errorf("prompts %v: want username (text) and password (password)", body.Prompts)
	}
	if body.Links["uaa"] != e.http.URL || body.Links["login"] != e.http.URL {
		t.Errorf("links %v: want uaa and login at %s", body.Links, e.http.URL)
	}
}
