package cfenv

import (
	"strings"
	"testing"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestResultsDSN(t *testing.T) {
	cases := []struct {
		name, vcap, dbURL, service string
		want, wantErr              string
	}{
		{name: "DATABASE_URL wins", dbURL: "postgres://u:p@db:5432/r", vcap: `{"postgres":[]}`, want: "postgres://u:p@db:5432/r"},
		{name: "DATABASE_URL not a postgres url", dbURL: "mysql://u:hunter2@db/r", wantErr: "DATABASE_URL: not a postgres:// URL"},
		{name: "nothing bound", wantErr: "no results database: neither DATABASE_URL nor VCAP_SERVICES is set (bind the results DB service to this app)"},
		{name: "uri credential",
			vcap: `{"postgresql-db":[{"name":"cfbench-results","label":"postgresql-db","tags":["relational"],"credentials":{"uri":"postgresql://u:p%40ss@10.0.0.5:5432/db1"}}]}`,
			want: "postgresql://u:p%40ss@10.0.0.5:5432/db1"},
		{name: "hostname, numeric port, name",
			vcap: `{"elephant":[{"name":"r","tags":["PostgreSQL"],"credentials":{"hostname":"db.internal","port":6432,"name":"d","username":"u","password":"p w"}}]}`,
			want: "postgres://u:p%20w@db.internal:6432/d"},
		{name: "host, string port, db_name",
			vcap: `{"a9s-postgresql13":[{"name":"r","credentials":{"host":"10.1.2.3","port":"5433","db_name":"d","username":"u","password":"p"}}]}`,
			want: "postgres://u:p@10.1.2.3:5433/d"},
		{name: "default port, ipv6 host",
			vcap: `{"postgres":[{"name":"r","credentials":{"host":"fd00::1","database":"d","user":"u","password":"p"}}]}`,
			want: "postgres://u:p@[fd00::1]:5432/d"},
		{name: "jdbcUrl only",
			vcap: `{"postgres":[{"name":"r","credentials":{"jdbcUrl":"jdbc:postgresql://h:5432/d?user=u&password=secret&sslmode=require"}}]}`,
			want: "postgres://u:secret@h:5432/d?sslmode=require"},
		{name: "picked by name among several",
			vcap:    `{"postgres":[{"name":"app-db","credentials":{"uri":"postgres://a@h/a"}},{"name":"cfbench-results","credentials":{"uri":"postgres://b@h/b"}}]}`,
			service: "cfbench-results", want: "postgres://b@h/b"},
		{name: "picked by binding name",
			vcap:    `{"user-provided":[{"name":"x","binding_name":"results","credentials":{"uri":"postgres://b@h/b"}}]}`,
			service: "results", want: "postgres://b@h/b"},
		{name: "ambiguous",
			vcap:    `{"postgres":[{"name":"app-db","credentials":{"uri":"postgres://a:pw1@h/a"}},{"name":"other","credentials":{"uri":"postgres://b:pw2@h/b"}}]}`,
			wantErr: "2 services match (app-db, other): name the results DB with the service option"},
		{name: "named service missing",
			vcap: `{"postgres":[{"name":"app-db","credentials":{"uri":"postgres://a@h/a"}}]}`, service: "cfbench-results",
			wantErr: `no service named "cfbench-results" in VCAP_SERVICES (bound: app-db)`},
		{name: "no postgres among bindings",
			vcap:    `{"p-redis":[{"name":"cache","credentials":{"password":"x"}}]}`,
			wantErr: "no Postgres service in VCAP_SERVICES (bound: cache): bind one, or name it with the service option"},
		{name: "credentials incomplete",
			vcap:    `{"postgres":[{"name":"r","credentials":{"hostname":"h","password":"hunter2"}}]}`,
			wantErr: "service r: credentials lack name/db_name, username"},
		{name: "bad port",
			vcap:    `{"postgres":[{"name":"r","credentials":{"hostname":"h","port":"http","name":"d","username":"u","password":"hunter2"}}]}`,
			wantErr: "service r: credentials port is not a port number"},
		{name: "uri not postgres",
			vcap:    `{"postgres":[{"name":"r","credentials":{"uri":"mysql://u:hunter2@h/d"}}]}`,
			wantErr: "service r: not a postgres:// URL"},
		{name: "not json", vcap: `{"postgres": [`, wantErr: "VCAP_SERVICES is not valid JSON of the form {label: [bindings]}: syntax error at byte 14"},
		{name: "wrong shape", vcap: `{"postgres": {"name": "r"}}`, wantErr: "VCAP_SERVICES is not valid JSON of the form {label: [bindings]}: unexpected object at byte 14"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ResultsDSN(env(map[string]string{"VCAP_SERVICES": c.vcap, "DATABASE_URL": c.dbURL}), c.service)
			if c.wantErr != "" {
				if err == nil || err.Error() != c.wantErr {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				for _, secret := range []string{"hunter2", "pw1", "pw2"} {
					if strings.Contains(err.Error(), secret) {
						t.Fatalf("error leaks a credential: %v", err)
					}
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("ResultsDSN = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

func TestParseApplication(t *testing.T) {
	a, err := ParseApplication(`{"application_id":"a1","application_name":"cfbench-loadgen","space_name":"loadgen","organization_name":"cfbench",
		"process_type":"web","application_uris":[],"cf_api":"https://api.example.com","limits":{"mem":64,"disk":256,"fds":16384}}`)
	if err != nil || a.Name != "cfbench-loadgen" || a.ID != "a1" || a.Limits.Mem != 64 || a.SpaceName != "loadgen" {
		t.Fatalf("ParseApplication = %+v, %v", a, err)
	}
	for _, bad := range []string{``, `[]`, `{"application_id":"a1"}`} {
		if _, err := ParseApplication(bad); err == nil {
			t.Errorf("ParseApplication(%q) succeeded", bad)
		}
	}
}

func FuzzResultsDSN(f *testing.F) {
	f.Add(`{"postgres":[{"name":"r","credentials":{"uri":"postgres://u:p@h/d"}}]}`, "")
	f.Add(`{"postgres":[{"name":"r","credentials":{"hostname":"h","port":5432,"name":"d","username":"u","password":"p"}}]}`, "r")
	f.Add(`{"x":[{"credentials":{"jdbcUrl":"jdbc:postgresql://h/d?user=u"}}]}`, "")
	f.Add(`{"postgres":[{"name":"r","credentials":{"port":1e99}}]}`, "r")
	f.Fuzz(func(t *testing.T, vcap, name string) {
		dsn, err := ResultsDSN(env(map[string]string{"VCAP_SERVICES": vcap}), name)
		if err == nil && !strings.HasPrefix(dsn, "postgres") {
			t.Fatalf("DSN %q without error", dsn)
		}
	})
}
