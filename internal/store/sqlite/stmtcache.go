package sqlite

import (
	"context"
	"database/sql/driver"
	"io"
	"reflect"
	"strings"
	"sync"
)

// stmtCacheSize bounds the prepared statements kept per connection. The
// store has fewer distinct single statements than this; the bound only
// guards against generated SQL (batched inserts of varying widths).
const stmtCacheSize = 256

// cachingConnector opens connections through the modernc connector and wraps
// each in a cachingConn, so that every connection keeps its own prepared
// statements. It works below database/sql's pool and transactions: a
// statement is tied to the one connection that prepared it and is only ever
// run on it, the way database/sql already runs each query.
type cachingConnector struct {
	driver.Connector
}

func (c cachingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return newCachingConn(conn)
}

// connIface is what database/sql uses of a modernc connection. Requiring all
// of it at Connect keeps the wrapper from silently dropping one (which would
// change how database/sql runs transactions or validates connections).
type connIface interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

type unsupportedConn struct{ t reflect.Type }

func (e unsupportedConn) Error() string {
	return "sqlite: statement cache: driver connection " + e.t.String() + " lacks an interface database/sql uses"
}

func newCachingConn(c driver.Conn) (driver.Conn, error) {
	ci, ok := c.(connIface)
	if !ok {
		c.Close()
		return nil, unsupportedConn{reflect.TypeOf(c)}
	}
	// The modernc connection does not implement driver.NamedValueChecker
	// (nor the deprecated Execer/Queryer that database/sql would only use
	// without the context forms). If a future version adds the checker, keep
	// it: database/sql converts arguments differently with one.
	if nvc, ok := c.(driver.NamedValueChecker); ok {
		return &cachingConnNVC{cachingConn: cachingConn{conn: ci, stmts: map[string]*cachedStmt{}}, nvc: nvc}, nil
	}
	return &cachingConn{conn: ci, stmts: map[string]*cachedStmt{}}, nil
}

type cachedStmt struct {
	stmt  driver.Stmt
	exec  driver.StmtExecContext
	query driver.StmtQueryContext
	inUse bool // a Rows from it is open, or it is executing
}

// cachingConn wraps one driver connection. QueryContext and ExecContext run
// single statements through a statement prepared once per connection and
// SQL text; everything else is delegated unchanged.
//
// database/sql never uses a driver connection from two goroutines at once,
// except that it may close a Rows from the context watcher; mu guards the
// cache for that case and costs nothing measurable otherwise.
type cachingConn struct {
	conn connIface

	mu     sync.Mutex
	stmts  map[string]*cachedStmt
	closed bool
}

var (
	_ driver.Conn               = (*cachingConn)(nil)
	_ driver.ConnBeginTx        = (*cachingConn)(nil)
	_ driver.ConnPrepareContext = (*cachingConn)(nil)
	_ driver.ExecerContext      = (*cachingConn)(nil)
	_ driver.QueryerContext     = (*cachingConn)(nil)
	_ driver.Pinger             = (*cachingConn)(nil)
	_ driver.SessionResetter    = (*cachingConn)(nil)
	_ driver.Validator          = (*cachingConn)(nil)
	_ driver.NamedValueChecker  = (*cachingConnNVC)(nil)
)

func (c *cachingConn) Prepare(query string) (driver.Stmt, error) { return c.conn.Prepare(query) }

// PrepareContext lends the cached statement for query (database/sql's
// Prepare, Tx.Prepare and Tx.Stmt come here): closing the lent statement
// returns it to the cache instead of finalizing it. While lent it is in use,
// so the connection's own QueryContext and ExecContext run the same text
// uncached; a second Prepare of it gets a statement of its own.
func (c *cachingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	s, err := c.acquire(ctx, query)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return c.conn.PrepareContext(ctx, query)
	}
	return &lentStmt{c: c, text: query, s: s}, nil
}

//lint:ignore SA1019 delegation of the deprecated method driver.Conn requires
func (c *cachingConn) Begin() (driver.Tx, error) { return c.conn.Begin() } //nolint:staticcheck
func (c *cachingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.conn.BeginTx(ctx, opts)
}
func (c *cachingConn) Ping(ctx context.Context) error         { return c.conn.Ping(ctx) }
func (c *cachingConn) ResetSession(ctx context.Context) error { return c.conn.ResetSession(ctx) }
func (c *cachingConn) IsValid() bool                          { return c.conn.IsValid() }

// Close finalizes the cached statements, then closes the connection.
// database/sql closes a driver connection only after the Rows on it are
// closed, so no cached statement is in use here.
func (c *cachingConn) Close() error {
	c.mu.Lock()
	stmts := c.stmts
	c.stmts, c.closed = nil, true
	c.mu.Unlock()
	var first error
	for _, s := range stmts {
		if err := s.stmt.Close(); err != nil && first == nil {
			first = err
		}
	}
	if err := c.conn.Close(); err != nil {
		return err
	}
	return first
}

// acquire returns the cached statement for query, preparing it if needed,
// marked in use. It returns nil when query must run uncached: it is not a
// single statement, its cached statement is in use (a Rows of it is still
// open), or every cached statement is in use and the cache is full.
func (c *cachingConn) acquire(ctx context.Context, query string) (*cachedStmt, error) {
	text, ok := singleStatement(query)
	if !ok {
		return nil, nil
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, driver.ErrBadConn
	}
	if s := c.stmts[query]; s != nil {
		if s.inUse {
			c.mu.Unlock()
			return nil, nil
		}
		s.inUse = true
		c.mu.Unlock()
		return s, nil
	}
	var evict *cachedStmt
	if len(c.stmts) >= stmtCacheSize {
		for q, s := range c.stmts {
			if !s.inUse {
				evict = s
				delete(c.stmts, q)
				break
			}
		}
		if evict == nil {
			c.mu.Unlock()
			return nil, nil
		}
	}
	c.mu.Unlock()
	if evict != nil {
		evict.stmt.Close()
	}

	st, err := c.conn.PrepareContext(ctx, text)
	if err != nil {
		// Let the uncached path report the error as it always has.
		return nil, nil
	}
	se, okE := st.(driver.StmtExecContext)
	sq, okQ := st.(driver.StmtQueryContext)
	if !okE || !okQ {
		st.Close()
		return nil, nil
	}
	s := &cachedStmt{stmt: st, exec: se, query: sq, inUse: true}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		st.Close()
		return nil, driver.ErrBadConn
	}
	c.stmts[query] = s
	c.mu.Unlock()
	return s, nil
}

// release marks s free again. A statement whose execution failed is dropped
// and finalized rather than kept: errors are rare, and a fresh statement
// next time is certain to start clean.
func (c *cachingConn) release(query string, s *cachedStmt, failed bool) {
	c.mu.Lock()
	s.inUse = false
	if c.closed {
		// Close finalized it with the rest.
		c.mu.Unlock()
		return
	}
	if !failed {
		c.mu.Unlock()
		return
	}
	if c.stmts[query] == s {
		delete(c.stmts, query)
	}
	c.mu.Unlock()
	s.stmt.Close()
}

func (c *cachingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	s, err := c.acquire(ctx, query)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return c.conn.ExecContext(ctx, query, args)
	}
	res, err := s.exec.ExecContext(ctx, args)
	c.release(query, s, err != nil)
	return res, err
}

func (c *cachingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	s, err := c.acquire(ctx, query)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return c.conn.QueryContext(ctx, query, args)
	}
	rows, err := s.query.QueryContext(ctx, args)
	if err != nil {
		c.release(query, s, true)
		return nil, err
	}
	return wrapRows(rows, func(failed bool) { c.release(query, s, failed) }), nil
}

// cachingConnNVC is a cachingConn over a connection that checks named
// values itself.
type cachingConnNVC struct {
	cachingConn
	nvc driver.NamedValueChecker
}

func (c *cachingConnNVC) CheckNamedValue(v *driver.NamedValue) error { return c.nvc.CheckNamedValue(v) }

// singleStatement reports whether query is exactly one SQL statement, and
// returns its text without what follows its last token (a terminating
// semicolon, whitespace, comments): the driver prepares text with anything
// after the statement as a script, parsed anew on every run. Text it is not
// sure of (several statements, CREATE TRIGGER bodies, an unterminated
// string or comment, no statement at all) is reported as not single, and
// runs uncached as before.
func singleStatement(query string) (string, bool) {
	end := -1          // just past the statement's last token
	semicolon := false // a top-level ';' has ended the statement
	for i := 0; i < len(query); {
		switch ch := query[i]; {
		case ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v':
			i++
		case ch == '-' && i+1 < len(query) && query[i+1] == '-':
			nl := strings.IndexByte(query[i:], '\n')
			if nl < 0 {
				i = len(query)
			} else {
				i += nl + 1
			}
		case ch == '/' && i+1 < len(query) && query[i+1] == '*':
			c := strings.Index(query[i+2:], "*/")
			if c < 0 {
				return "", false
			}
			i += 2 + c + 2
		case ch == ';':
			if end < 0 {
				return "", false // an empty statement first
			}
			semicolon = true
			i++
		default:
			if semicolon {
				return "", false // a second statement
			}
			n, ok := tokenLen(query[i:])
			if !ok {
				return "", false
			}
			i += n
			end = i
		}
	}
	if end < 0 {
		return "", false
	}
	return query[:end], true
}

// tokenLen returns the length of the token at the start of s, which is not
// whitespace or a comment: a quoted string or identifier as a whole, or one
// byte of anything else.
func tokenLen(s string) (int, bool) {
	var closer byte
	switch s[0] {
	case '\'', '"', '`':
		closer = s[0]
	case '[':
		closer = ']'
	default:
		return 1, true
	}
	for i := 1; i < len(s); i++ {
		if s[i] != closer {
			continue
		}
		if closer != ']' && i+1 < len(s) && s[i+1] == closer {
			i++ // doubled quote
			continue
		}
		return i + 1, true
	}
	return 0, false
}

// cachedRows returns its statement to the cache when closed.
type cachedRows struct {
	driver.Rows
	release func(failed bool)
	failed  bool
}

func wrapRows(r driver.Rows, release func(failed bool)) *cachedRows {
	return &cachedRows{Rows: r, release: release}
}

func (r *cachedRows) Next(dest []driver.Value) error {
	err := r.Rows.Next(dest)
	if err != nil && err != io.EOF {
		r.failed = true
	}
	return err
}

func (r *cachedRows) Close() error {
	err := r.Rows.Close()
	if r.release != nil {
		r.release(r.failed || err != nil)
		r.release = nil
	}
	return err
}

// The column type methods delegate when the driver's rows have them, and
// otherwise answer what database/sql assumes of rows without them.

func (r *cachedRows) ColumnTypeDatabaseTypeName(i int) string {
	if t, ok := r.Rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return t.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

func (r *cachedRows) ColumnTypeLength(i int) (int64, bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypeLength); ok {
		return t.ColumnTypeLength(i)
	}
	return 0, false
}

func (r *cachedRows) ColumnTypeNullable(i int) (nullable, ok bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypeNullable); ok {
		return t.ColumnTypeNullable(i)
	}
	return false, false
}

func (r *cachedRows) ColumnTypePrecisionScale(i int) (precision, scale int64, ok bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypePrecisionScale); ok {
		return t.ColumnTypePrecisionScale(i)
	}
	return 0, 0, false
}

func (r *cachedRows) ColumnTypeScanType(i int) reflect.Type {
	if t, ok := r.Rows.(driver.RowsColumnTypeScanType); ok {
		return t.ColumnTypeScanType(i)
	}
	return reflect.TypeFor[any]()
}

// lentStmt is a cached statement handed to database/sql by PrepareContext.
// database/sql closes a statement only once the Rows from it are closed.
type lentStmt struct {
	c      *cachingConn
	text   string
	s      *cachedStmt
	failed bool
	closed bool
}

var (
	_ driver.StmtExecContext  = (*lentStmt)(nil)
	_ driver.StmtQueryContext = (*lentStmt)(nil)
)

func (l *lentStmt) Close() error {
	if !l.closed {
		l.closed = true
		l.c.release(l.text, l.s, l.failed)
	}
	return nil
}

func (l *lentStmt) NumInput() int { return l.s.stmt.NumInput() }

//lint:ignore SA1019 delegation of the deprecated method driver.Stmt requires
func (l *lentStmt) Exec(args []driver.Value) (driver.Result, error) { //nolint:staticcheck
	res, err := l.s.stmt.Exec(args) //nolint:staticcheck
	l.failed = l.failed || err != nil
	return res, err
}

//lint:ignore SA1019 delegation of the deprecated method driver.Stmt requires
func (l *lentStmt) Query(args []driver.Value) (driver.Rows, error) { //nolint:staticcheck
	rows, err := l.s.stmt.Query(args) //nolint:staticcheck
	l.failed = l.failed || err != nil
	return rows, err
}

func (l *lentStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	res, err := l.s.exec.ExecContext(ctx, args)
	l.failed = l.failed || err != nil
	return res, err
}

func (l *lentStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := l.s.query.QueryContext(ctx, args)
	l.failed = l.failed || err != nil
	return rows, err
}
