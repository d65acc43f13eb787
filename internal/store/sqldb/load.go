package sqldb

import (
	"bufio"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
)

// loadQueries reads every "-- name: X" block of queries/*.sql from base,
// then lets the same-named blocks of overrides replace them.
func loadQueries(base, overrides fs.FS) (map[string]string, error) {
	qs := map[string]string{}
	for _, fsys := range []fs.FS{base, overrides} {
		if fsys == nil {
			continue
		}
		files, err := fs.Glob(fsys, "queries/*.sql")
		if err != nil {
			return nil, err
		}
		seen := map[string]string{}
		for _, f := range files {
			data, err := fs.ReadFile(fsys, f)
			if err != nil {
				return nil, err
			}
			blocks, err := splitQueries(string(data))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			for name, text := range blocks {
				if prev, dup := seen[name]; dup {
					return nil, fmt.Errorf("query %s defined in both %s and %s", name, prev, f)
				}
				seen[name] = f
				qs[name] = text
			}
		}
	}
	return qs, nil
}

func splitQueries(src string) (map[string]string, error) {
	out := map[string]string{}
	var name string
	var b strings.Builder
	flush := func() {
		if name != "" {
			out[name] = strings.TrimSpace(b.String())
		}
		b.Reset()
	}
	sc := bufio.NewScanner(strings.NewReader(src))
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "-- name:"); ok {
			flush()
			name = strings.TrimSpace(rest)
			if _, dup := out[name]; dup {
				return nil, fmt.Errorf("query %s defined twice", name)
			}
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(line), "--") {
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	flush()
	return out, sc.Err()
}

// migration is one numbered schema change.
type migration struct {
	name string
	sql  string
}

// loadMigrations lists migrations/*.sql of base in name order, taking an
// override's file of the same name in place of the common one.
func loadMigrations(base, overrides fs.FS) ([]migration, error) {
	byName := map[string]string{}
	for _, fsys := range []fs.FS{base, overrides} {
		if fsys == nil {
			continue
		}
		files, err := fs.Glob(fsys, "migrations/*.sql")
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			data, err := fs.ReadFile(fsys, f)
			if err != nil {
				return nil, err
			}
			byName[path.Base(f)] = string(data)
		}
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	ms := make([]migration, len(names))
	for i, n := range names {
		ms[i] = migration{name: strings.TrimSuffix(n, ".sql"), sql: byName[n]}
	}
	return ms, nil
}
