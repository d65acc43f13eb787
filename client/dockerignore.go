package client

import (
	"bufio"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// ignoreRule is one line of a .dockerignore.
type ignoreRule struct {
	parts  []string // the pattern split on "/", "**" matching any depth
	negate bool
}

// ignorer decides what a push leaves out, as docker build does with
// .dockerignore: patterns relative to the directory, later lines win,
// "!" re-includes, "**" matches any number of directories, and a pattern
// that matches a directory leaves out everything below it.
type ignorer struct{ rules []ignoreRule }

func loadIgnore(dir string) (*ignorer, error) {
	f, err := os.Open(filepath.Join(dir, ".dockerignore"))
	if os.IsNotExist(err) {
		return &ignorer{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseIgnore(bufio.NewScanner(f))
}

func parseIgnore(sc *bufio.Scanner) (*ignorer, error) {
	ig := &ignorer{}
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		r := ignoreRule{}
		if strings.HasPrefix(line, "!") {
			r.negate, line = true, strings.TrimSpace(line[1:])
		}
		line = path.Clean(strings.TrimPrefix(filepath.ToSlash(line), "/"))
		if line == "." {
			continue
		}
		r.parts = strings.Split(line, "/")
		ig.rules = append(ig.rules, r)
	}
	return ig, sc.Err()
}

// ignored says whether rel (slash-separated, relative) is left out.
func (ig *ignorer) ignored(rel string) bool {
	parts := strings.Split(rel, "/")
	out := false
	for _, r := range ig.rules {
		// A rule matches the path or one of its parent directories.
		for n := 1; n <= len(parts); n++ {
			if matchParts(r.parts, parts[:n]) {
				out = !r.negate
				break
			}
		}
	}
	return out
}

func matchParts(pat, name []string) bool {
	if len(pat) == 0 {
		return len(name) == 0
	}
	if pat[0] == "**" {
		for i := 0; i <= len(name); i++ {
			if matchParts(pat[1:], name[i:]) {
				return true
			}
		}
		return false
	}
	if len(name) == 0 {
		return false
	}
	if ok, err := path.Match(pat[0], name[0]); err != nil || !ok {
		return false
	}
	return matchParts(pat[1:], name[1:])
}
