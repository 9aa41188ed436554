// Package cfenv reads what Cloud Foundry tells an app instance through its environment:
// VCAP_APPLICATION (who and where the app is) and VCAP_SERVICES (bound services), and
// finds the results database among the bindings. Errors name services, never credentials.
package cfenv

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// Application is the part of VCAP_APPLICATION the toolkit uses.
type Application struct {
	ID          string   `json:"application_id"`
	Name        string   `json:"application_name"`
	SpaceID     string   `json:"space_id"`
	SpaceName   string   `json:"space_name"`
	OrgID       string   `json:"organization_id"`
	OrgName     string   `json:"organization_name"`
	ProcessID   string   `json:"process_id"`
	ProcessType string   `json:"process_type"`
	URIs        []string `json:"application_uris"`
	CFAPI       string   `json:"cf_api"`
	Limits      struct {
		Mem  int `json:"mem"`
		Disk int `json:"disk"`
		FDs  int `json:"fds"`
	} `json:"limits"`
}

// ParseApplication decodes VCAP_APPLICATION.
func ParseApplication(s string) (*Application, error) {
	var a Application
	if err := json.Unmarshal([]byte(s), &a); err != nil {
		return nil, fmt.Errorf("VCAP_APPLICATION is not valid JSON: %w", jsonErr(err))
	}
	if a.Name == "" {
		return nil, errors.New("VCAP_APPLICATION has no application_name")
	}
	return &a, nil
}

// Service is one service binding of VCAP_SERVICES.
type Service struct {
	Name         string         `json:"name"`
	InstanceName string         `json:"instance_name"`
	BindingName  string         `json:"binding_name"`
	Label        string         `json:"label"`
	Tags         []string       `json:"tags"`
	Plan         string         `json:"plan"`
	Credentials  map[string]any `json:"credentials"`
}

// ParseServices decodes VCAP_SERVICES ({label: [binding, …]}) into a flat list ordered
// by label and then by position.
func ParseServices(s string) ([]Service, error) {
	var byLabel map[string][]Service
	if err := json.Unmarshal([]byte(s), &byLabel); err != nil {
		return nil, fmt.Errorf("VCAP_SERVICES is not valid JSON of the form {label: [bindings]}: %w", jsonErr(err))
	}
	labels := make([]string, 0, len(byLabel))
	for l := range byLabel {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	var out []Service
	for _, l := range labels {
		for _, svc := range byLabel[l] {
			if svc.Label == "" {
				svc.Label = l
			}
			out = append(out, svc)
		}
	}
	return out, nil
}

// jsonErr keeps a decoding error's position but not the offending value (it may be a secret).
func jsonErr(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("syntax error at byte %d", syn.Offset)
	case errors.As(err, &typ):
		return fmt.Errorf("unexpected %s at byte %d", typ.Value, typ.Offset)
	}
	return errors.New("malformed")
}

func (s *Service) matchesName(name string) bool {
	return s.Name == name || s.InstanceName == name || s.BindingName == name
}

func (s *Service) isPostgres() bool {
	if strings.Contains(strings.ToLower(s.Label), "postgres") {
		return true
	}
	for _, t := range s.Tags {
		if t := strings.ToLower(t); t == "postgres" || t == "postgresql" {
			return true
		}
	}
	return false
}

func (s *Service) display() string {
	if s.Name != "" {
		return s.Name
	}
	return s.Label
}

// ResultsDSN finds the results database: DATABASE_URL when set, else the Postgres binding
// of VCAP_SERVICES named name (by name, instance_name or binding_name), else the only
// binding labelled or tagged postgres/postgresql. getenv is os.Getenv or a test double.
func ResultsDSN(getenv func(string) string, name string) (string, error) {
	if dsn := getenv("DATABASE_URL"); dsn != "" {
		if _, err := normaliseURI(dsn); err != nil {
			return "", fmt.Errorf("DATABASE_URL: %w", err)
		}
		return dsn, nil
	}
	vs := getenv("VCAP_SERVICES")
	if vs == "" {
		return "", errors.New("no results database: neither DATABASE_URL nor VCAP_SERVICES is set (bind the results DB service to this app)")
	}
	svcs, err := ParseServices(vs)
	if err != nil {
		return "", err
	}
	svc, err := pick(svcs, name)
	if err != nil {
		return "", err
	}
	dsn, err := PostgresDSN(svc.Credentials)
	if err != nil {
		return "", fmt.Errorf("service %s: %w", svc.display(), err)
	}
	return dsn, nil
}

func pick(svcs []Service, name string) (*Service, error) {
	var found []*Service
	for i := range svcs {
		if (name != "" && svcs[i].matchesName(name)) || (name == "" && svcs[i].isPostgres()) {
			found = append(found, &svcs[i])
		}
	}
	switch {
	case len(found) == 1:
		return found[0], nil
	case len(found) == 0 && name != "":
		return nil, fmt.Errorf("no service named %q in VCAP_SERVICES (bound: %s)", name, names(svcs))
	case len(found) == 0:
		return nil, fmt.Errorf("no Postgres service in VCAP_SERVICES (bound: %s): bind one, or name it with the service option", names(svcs))
	}
	return nil, fmt.Errorf("%d services match (%s): name the results DB with the service option", len(found), names(derefs(found)))
}

func derefs(ps []*Service) []Service {
	out := make([]Service, len(ps))
	for i, p := range ps {
		out[i] = *p
	}
	return out
}

func names(svcs []Service) string {
	if len(svcs) == 0 {
		return "none"
	}
	var n []string
	for i := range svcs {
		n = append(n, svcs[i].display())
	}
	return strings.Join(n, ", ")
}

// PostgresDSN builds a postgres:// URL from binding credentials as brokers write them:
// uri (or url, or a jdbcUrl), else hostname/host + port + name/db_name/database +
// username/user + password.
func PostgresDSN(creds map[string]any) (string, error) {
	for _, k := range []string{"uri", "url"} {
		if s, ok := creds[k].(string); ok && s != "" {
			return normaliseURI(s)
		}
	}
	host := str(creds, "hostname", "host")
	db := str(creds, "name", "db_name", "database", "dbname")
	user := str(creds, "username", "user")
	if host == "" || db == "" || user == "" {
		if s, ok := creds["jdbcUrl"].(string); ok && s != "" {
			return fromJDBC(s)
		}
		var missing []string
		for k, v := range map[string]string{"uri or hostname/host": host, "name/db_name": db, "username": user} {
			if v == "" {
				missing = append(missing, k)
			}
		}
		sort.Strings(missing)
		return "", fmt.Errorf("credentials lack %s", strings.Join(missing, ", "))
	}
	port := "5432"
	switch p := creds["port"].(type) {
	case string:
		if p != "" {
			port = p
		}
	case float64:
		port = strconv.Itoa(int(p))
	case nil:
	default:
		return "", errors.New("credentials port must be a number or a string")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", errors.New("credentials port is not a port number")
	}
	u := url.URL{Scheme: "postgres", Host: net.JoinHostPort(host, port), Path: "/" + db}
	if pw := str(creds, "password"); pw != "" {
		u.User = url.UserPassword(user, pw)
	} else {
		u.User = url.User(user)
	}
	return u.String(), nil
}

func str(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if s, ok := m[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// normaliseURI accepts postgres:// and postgresql:// URLs (the password stays encoded).
func normaliseURI(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		return "", errors.New("not a postgres:// URL") // the URL may hold a password: never echo it
	}
	return s, nil
}

// fromJDBC turns jdbc:postgresql://host:port/db?user=u&password=p into a postgres:// URL.
func fromJDBC(s string) (string, error) {
	rest, ok := strings.CutPrefix(s, "jdbc:")
	if !ok {
		return "", errors.New("jdbcUrl does not start with jdbc:")
	}
	u, err := url.Parse(rest)
	if err != nil || u.Scheme != "postgresql" || u.Host == "" {
		return "", errors.New("jdbcUrl is not a jdbc:postgresql:// URL")
	}
	q := u.Query()
	user, pw := q.Get("user"), q.Get("password")
	q.Del("user")
	q.Del("password")
	if user != "" {
		u.User = url.UserPassword(user, pw)
		if pw == "" {
			u.User = url.User(user)
		}
	}
	u.Scheme, u.RawQuery = "postgres", q.Encode()
	return u.String(), nil
}
