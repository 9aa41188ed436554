package pgbroker

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
)

func TestMain(m *testing.M) { testpg.Main(m) }

func TestProvisionBindDeprovision(t *testing.T) {
	ctx := context.Background()
	srv := testpg.Server(t)
	b := New(srv.DSN("postgres"), "127.0.0.1", srv.Port(), []byte("k"))
	const inst, other = "0b9e8f5e-1c2d-4e3f-8a9b-0c1d2e3f4a5b", "1b9e8f5e-1c2d-4e3f-8a9b-0c1d2e3f4a5b"
	for _, i := range []string{inst, other} {
		if err := b.Provision(ctx, i, "db"); err != nil {
			t.Fatal(err)
		}
	}
	creds, err := b.Bind(ctx, inst, "binding")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, creds["uri"].(string))
	if err != nil {
		t.Fatalf("connect with the binding's uri: %v", err)
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE ads (id serial)`); err != nil {
		t.Fatalf("the instance's role cannot create tables: %v", err)
	}
	var user, db string
	if err := conn.QueryRow(ctx, `SELECT current_user, current_database()`).Scan(&user, &db); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	if user != creds["username"] || db != creds["name"] || db != creds["db_name"] || creds["port"] != srv.Port() || creds["hostname"] != "127.0.0.1" {
		t.Fatalf("connected as %s to %s; credentials %v", user, db, creds)
	}
	oc, _ := b.Bind(ctx, other, "x")
	intruder := fmt.Sprintf("postgres://%s:%s@127.0.0.1:%d/%s", oc["username"], oc["password"], srv.Port(), db)
	if c, err := pgx.Connect(ctx, intruder); err == nil {
		c.Close(ctx)
		t.Fatal("another instance's role connected to this instance's database")
	}
	if err := b.Deprovision(ctx, inst); err != nil {
		t.Fatal(err)
	}
	if c, err := pgx.Connect(ctx, creds["uri"].(string)); err == nil {
		c.Close(ctx)
		t.Fatal("connected after deprovisioning")
	}
}
