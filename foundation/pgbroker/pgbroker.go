// Package pgbroker is the local foundation's "postgres" service offering: each service
// instance is a database with a role of its own on the foundation's private Postgres
// server, and a binding hands out that role's credentials in the shapes brokers use
// (uri, and hostname/host, port, name/db_name, username, password, jdbcUrl).
package pgbroker

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/cf-benchmark/cf-benchmark/foundation/cc"
)

// Broker provisions databases through a superuser connection.
type Broker struct {
	adminDSN string // superuser DSN of the server's maintenance database
	host     string
	port     int
	secret   []byte // derives each instance's password, so none is stored
}

var _ cc.Broker = (*Broker)(nil)

// New returns a broker for the server reachable as host:port with adminDSN.
func New(adminDSN, host string, port int, secret []byte) *Broker {
	return &Broker{adminDSN: adminDSN, host: host, port: port, secret: secret}
}

// Catalog offers postgres with one plan.
func (b *Broker) Catalog() []cc.Offering {
	return []cc.Offering{{
		Name:        "postgres",
		Description: "A PostgreSQL database of its own, on the local foundation's Postgres server",
		Tags:        []string{"postgres", "postgresql", "relational"},
		Plans:       []cc.Plan{{Name: "db", Description: "One database with its own role (the server allows 200 connections in all)"}},
	}}
}

// names derives the role and database name from the instance guid.
func names(instance string) (role, db string) {
	short := strings.ReplaceAll(instance, "-", "")[:16]
	return "si_" + short, "si_" + short
}

func (b *Broker) password(instance string) string {
	mac := hmac.New(sha256.New, b.secret)
	mac.Write([]byte(instance))
	return hex.EncodeToString(mac.Sum(nil))[:32]
}

func (b *Broker) exec(ctx context.Context, stmts ...string) error {
	conn, err := pgx.Connect(ctx, b.adminDSN)
	if err != nil {
		return fmt.Errorf("connect to the foundation's postgres: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// Provision creates the instance's role and database. Names and passwords are derived
// from guids and hex, so they need no quoting beyond the literal.
func (b *Broker) Provision(ctx context.Context, instance, plan string) error {
	role, db := names(instance)
	return b.exec(ctx,
		fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD '%s'`, role, b.password(instance)),
		fmt.Sprintf(`CREATE DATABASE %s OWNER %s`, db, role),
		// Other instances' roles must not reach it: PUBLIC may connect by default.
		fmt.Sprintf(`REVOKE ALL ON DATABASE %s FROM PUBLIC`, db))
}

// Deprovision drops the database (ending its sessions) and the role.
func (b *Broker) Deprovision(ctx context.Context, instance string) error {
	role, db := names(instance)
	return b.exec(ctx,
		fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, db),
		fmt.Sprintf(`DROP ROLE IF EXISTS %s`, role))
}

// Bind returns the instance's credentials.
func (b *Broker) Bind(ctx context.Context, instance, binding string) (map[string]any, error) {
	role, db := names(instance)
	pw := b.password(instance)
	return map[string]any{
		"uri":      fmt.Sprintf("postgres://%s:%s@%s:%d/%s", role, pw, b.host, b.port, db),
		"hostname": b.host, "host": b.host, "port": b.port,
		"name": db, "db_name": db, "username": role, "password": pw,
		"jdbcUrl": fmt.Sprintf("jdbc:postgresql://%s:%d/%s?user=%s&password=%s", b.host, b.port, db, role, pw),
	}, nil
}

// Unbind has nothing to revoke: bindings share the instance's role.
func (b *Broker) Unbind(context.Context, string, string) error { return nil }
