package sqldb

import (
	"fmt"
	"strconv"
	"strings"
)

// The helpers below give a query from queries/*.sql the shape one call needs,
// following the conventions written at the top of queries/job.sql. They only
// rewrite $N placeholders; every value is still bound as a parameter. The
// query texts they read contain no string literals or dollar quotes holding
// "$" followed by a digit.

// renumber rewrites every $N placeholder of query to $f(N).
func renumber(query string, f func(n int) int) string {
	var b strings.Builder
	b.Grow(len(query) + 16)
	for i := 0; i < len(query); i++ {
		c := query[i]
		if c != '$' || i+1 >= len(query) || !isDigit(query[i+1]) {
			b.WriteByte(c)
			continue
		}
		j := i + 1
		for j < len(query) && isDigit(query[j]) {
			j++
		}
		n, _ := strconv.Atoi(query[i+1 : j])
		b.WriteByte('$')
		b.WriteString(strconv.Itoa(f(n)))
		i = j - 1
	}
	return b.String()
}

// maxPlaceholder is the highest N of the $N placeholders of query.
func maxPlaceholder(query string) int {
	highest := 0
	renumber(query, func(n int) int { highest = max(highest, n); return n })
	return highest
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// expandList rewrites the list placeholder of query, its highest-numbered
// parameter $N written once as "($N)", into "($N, $N+1, ..., $N+k-1)".
func expandList(query string, k int) (string, error) {
	n := maxPlaceholder(query)
	marker := "($" + strconv.Itoa(n) + ")"
	if n == 0 || strings.Count(query, marker) != 1 {
		return "", fmt.Errorf("sqldb: query has no single list placeholder %s", marker)
	}
	if k < 1 {
		return "", fmt.Errorf("sqldb: empty list for %s", marker)
	}
	var b strings.Builder
	b.WriteByte('(')
	for i := range k {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('$')
		b.WriteString(strconv.Itoa(n + i))
	}
	b.WriteByte(')')
	return strings.Replace(query, marker, b.String(), 1), nil
}

// repeatValues turns a one-row "INSERT ... VALUES (tuple)" into one inserting
// rows rows: parameters $1..$shared are the same for every row, the others
// are shifted by their count for each further row. It returns the statement
// and the number of parameters each row adds.
func repeatValues(query string, shared, rows int) (string, int, error) {
	i := strings.LastIndex(strings.ToUpper(query), "VALUES")
	if i < 0 || rows < 1 {
		return "", 0, fmt.Errorf("sqldb: cannot repeat the VALUES of %q %d times", query, rows)
	}
	head := query[:i+len("VALUES")]
	tuple := strings.TrimSuffix(strings.TrimSpace(query[i+len("VALUES"):]), ";")
	perRow := maxPlaceholder(tuple) - shared
	if perRow < 1 {
		return "", 0, fmt.Errorf("sqldb: VALUES of %q has no per-row parameters after $%d", query, shared)
	}
	var b strings.Builder
	b.Grow(len(head) + rows*(len(tuple)+8))
	b.WriteString(head)
	for r := range rows {
		if r > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n    ")
		b.WriteString(renumber(tuple, func(n int) int {
			if n <= shared {
				return n
			}
			return n + r*perRow
		}))
	}
	return b.String(), perRow, nil
}

// sqlBuilder assembles a statement from fragments each numbered from $1,
// shifting each fragment's placeholders after the arguments already bound.
type sqlBuilder struct {
	b    strings.Builder
	args []any
}

func (s *sqlBuilder) add(fragment string, args ...any) {
	if s.b.Len() > 0 {
		s.b.WriteByte('\n')
	}
	base := len(s.args)
	s.b.WriteString(renumber(fragment, func(n int) int { return n + base }))
	s.args = append(s.args, args...)
}

// addList adds a fragment whose only parameter is a list placeholder.
func (s *sqlBuilder) addList(fragment string, values []any) error {
	f, err := expandList(fragment, len(values))
	if err != nil {
		return err
	}
	s.add(f, values...)
	return nil
}

func (s *sqlBuilder) String() string { return s.b.String() }
