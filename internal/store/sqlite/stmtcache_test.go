package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"testing"
)

func TestSingleStatement(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"SELECT 1", "SELECT 1", true},
		{"SELECT 1;", "SELECT 1", true},
		{"  SELECT 1 ;  \n-- trailing\n/* c */ ;", "  SELECT 1", true},
		{"-- name: x\nSELECT 1 -- c", "-- name: x\nSELECT 1", true},
		{"SELECT ';' AS a, \"x;y\", [a;b], `c;d`", "SELECT ';' AS a, \"x;y\", [a;b], `c;d`", true},
		{"SELECT 'it''s; ok'; ", "SELECT 'it''s; ok'", true},
		{"SELECT 1 /* ; */ + 2", "SELECT 1 /* ; */ + 2", true},
		{"SELECT 1; SELECT 2", "", false},
		{"SELECT 1;;SELECT 2;", "", false},
		{"; SELECT 1", "", false},
		{"", "", false},
		{" -- only a comment\n", "", false},
		{"/* only */ ;", "", false},
		{"SELECT 'unterminated", "", false},
		{"SELECT 1 /* unterminated", "", false},
		{"CREATE TRIGGER t AFTER INSERT ON a BEGIN UPDATE b SET n = n + 1; END;", "", false},
	} {
		got, ok := singleStatement(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("singleStatement(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func testDSN(path, txlock string) string {
	v := url.Values{}
	v.Add("_pragma", "journal_mode(WAL)")
	v.Add("_pragma", "busy_timeout(0)")
	if txlock != "" {
		v.Add("_txlock", txlock)
	}
	return "file:" + path + "?" + v.Encode()
}

func rawConn(t *testing.T, conn *sql.Conn) *cachingConn {
	t.Helper()
	var cc *cachingConn
	if err := conn.Raw(func(dc any) error {
		cc = dc.(*cachingConn)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return cc
}

func cached(cc *cachingConn) int {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return len(cc.stmts)
}

func TestStmtCache(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	db, err := openDB(testDSN(path, "immediate"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)

	// A script runs whole, uncached.
	if _, err := db.ExecContext(ctx, "CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT); CREATE TABLE b (id INTEGER PRIMARY KEY);"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO b (id) VALUES (1)"); err != nil {
		t.Fatal("script did not create b:", err)
	}
	for i := range 5 {
		if _, err := db.ExecContext(ctx, "INSERT INTO a (v) VALUES (?);", fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}

	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cc := rawConn(t, conn)
	if n := cached(cc); n != 2 {
		t.Errorf("%d statements cached after one insert and one script, want 2 (both inserts)", n)
	}

	// The same query while a Rows of it is open on the same connection.
	const q = "SELECT id, v FROM a WHERE id > ? ORDER BY id"
	outer, err := conn.QueryContext(ctx, q, 0)
	if err != nil {
		t.Fatal(err)
	}
	pairs := 0
	for outer.Next() {
		var id int
		var v string
		if err := outer.Scan(&id, &v); err != nil {
			t.Fatal(err)
		}
		inner, err := conn.QueryContext(ctx, q, id)
		if err != nil {
			t.Fatal(err)
		}
		for inner.Next() {
			pairs++
		}
		if err := inner.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := outer.Err(); err != nil {
		t.Fatal(err)
	}
	outer.Close()
	if pairs != 10 {
		t.Errorf("nested iteration saw %d pairs, want 10", pairs)
	}
	// The cached statement is free again, and gives the full result.
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM a WHERE id > ?", 0).Scan(&n); err != nil || n != 5 {
		t.Fatalf("count = %d, %v", n, err)
	}
	for _, s := range cc.stmts {
		if s.inUse {
			t.Error("a statement is still marked in use")
		}
	}

	// An error drops the statement; the next run prepares it again.
	if _, err := conn.ExecContext(ctx, "INSERT INTO b (id) VALUES (?)", 1); err == nil {
		t.Fatal("duplicate insert succeeded")
	}
	if _, err := conn.ExecContext(ctx, "INSERT INTO b (id) VALUES (?)", 2); err != nil {
		t.Fatal(err)
	}

	// A prepared statement is lent from the cache: while it is held, the same
	// text runs uncached, and a second Prepare gets its own statement.
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	p1, err := tx.PrepareContext(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := tx.PrepareContext(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	r1, err := p1.QueryContext(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []*sql.Stmt{p2, tx.StmtContext(ctx, p1)} {
		if err := st.QueryRowContext(ctx, 4).Scan(&n, new(string)); err != nil || n != 5 {
			t.Fatalf("second statement: %d, %v", n, err)
		}
	}
	if err := tx.QueryRowContext(ctx, q, 4).Scan(&n, new(string)); err != nil || n != 5 {
		t.Fatalf("query beside a lent statement: %d, %v", n, err)
	}
	got := 0
	for r1.Next() {
		got++
	}
	r1.Close()
	if got != 2 {
		t.Errorf("lent statement gave %d rows, want 2", got)
	}
	p1.Close()
	p2.Close()
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	cc.mu.Lock()
	if s := cc.stmts[q]; s == nil || s.inUse {
		t.Errorf("after the lent statement closed: cached %v", s)
	}
	cc.mu.Unlock()

	// Bounded.
	for i := range stmtCacheSize + 20 {
		if _, err := conn.ExecContext(ctx, fmt.Sprintf("SELECT %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := cached(cc); n > stmtCacheSize {
		t.Errorf("%d statements cached, want at most %d", n, stmtCacheSize)
	}
	conn.Close()
}

// Cached statements must not keep a lock: after the write pool's queries and
// transactions, another process (skiff admin) writes at once.
func TestStmtCacheReleasesLocks(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "l.db")
	w, err := openDB(testDSN(path, "immediate"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.SetMaxOpenConns(1)
	if _, err := w.ExecContext(ctx, "CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT)"); err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("sqlite", testDSN(path, ""))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	otherWrite := func(step string) {
		t.Helper()
		if _, err := other.ExecContext(ctx, "INSERT INTO a (v) VALUES ('other')"); err != nil {
			t.Fatalf("after %s: other connection cannot write: %v", step, err)
		}
	}

	for range 3 {
		var id int
		if err := w.QueryRowContext(ctx, "INSERT INTO a (v) VALUES (?) RETURNING id", "x").Scan(&id); err != nil {
			t.Fatal(err)
		}
		otherWrite("INSERT RETURNING through QueryRow")

		rows, err := w.QueryContext(ctx, "SELECT id FROM a")
		if err != nil {
			t.Fatal(err)
		}
		rows.Next() // not drained
		rows.Close()
		otherWrite("a Rows closed early")

		tx, err := w.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO a (v) VALUES (?)", "tx"); err != nil {
			t.Fatal(err)
		}
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM a").Scan(&id); err != nil {
			t.Fatal(err)
		}
		if _, err := other.ExecContext(ctx, "INSERT INTO a (v) VALUES ('other')"); err == nil {
			t.Fatal("other connection wrote inside a BEGIN IMMEDIATE transaction")
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		otherWrite("a committed transaction")

		tx, err = w.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO a (v) VALUES (?)", "rolled back"); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		otherWrite("a rolled back transaction")
	}
}
