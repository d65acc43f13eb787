package build

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The build policy: what a Dockerfile may reference besides its own context,
// and which RUN flags it may use.
// Every project's layers live in one buildah storage, so a Dockerfile that
// could name an arbitrary image (by name or by an ID prefix, which buildah
// accepts: "COPY --from=d3c4 / /") could read another project's image. ADD of
// a URL would fetch from the build host itself, outside the sandbox, and cache
// mounts are directories on the build host shared by every build; RUN
// --mount is limited to binds of the context and tmpfs (runMount). So the
// builder refuses those before buildah runs, with a message the user can act
// on. The parser follows the Dockerfile grammar (escape directive, line
// continuations, comments). It does not know heredocs, which buildah 1.42
// accepts: their bodies are read as instructions too, which can only add
// refusals, never hide the flags of the instruction that opens them.

// dockerfileInstruction is one logical instruction: its keyword in upper case
// and the rest of its (joined) lines.
type dockerfileInstruction struct {
	line int
	cmd  string
	args string
}

var directivePattern = regexp.MustCompile(`^#\s*([a-zA-Z][a-zA-Z0-9]*)\s*=\s*(.+?)\s*$`)

// parseDockerfile splits a Dockerfile into logical instructions.
func parseDockerfile(src string) []dockerfileInstruction {
	lines := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	escape := byte('\\')
	start := 0
	for ; start < len(lines); start++ {
		m := directivePattern.FindStringSubmatch(lines[start])
		if m == nil {
			break
		}
		if strings.EqualFold(m[1], "escape") && (m[2] == "`" || m[2] == `\`) {
			escape = m[2][0]
		}
	}

	var out []dockerfileInstruction
	var cur strings.Builder
	curLine := 0
	for i := start; i < len(lines); i++ {
		trimmed := strings.TrimSpace(lines[i])
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue // comments and blank lines, also inside a continuation
		}
		if cur.Len() == 0 {
			curLine = i + 1
		}
		body := strings.TrimRight(lines[i], " \t")
		if strings.HasSuffix(body, string(escape)) {
			// Joined as buildah joins them: the escape and the blanks after
			// it go, nothing is put in their place.
			cur.WriteString(strings.TrimSuffix(body, string(escape)))
			continue
		}
		cur.WriteString(body)
		out = append(out, splitInstruction(curLine, cur.String()))
		cur.Reset()
	}
	if cur.Len() > 0 {
		out = append(out, splitInstruction(curLine, cur.String()))
	}
	return out
}

func splitInstruction(line int, text string) dockerfileInstruction {
	cmd, args := cutSpace(strings.TrimSpace(text))
	return dockerfileInstruction{line: line, cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
}

// splitFlags separates the leading --name=value flags of an instruction from
// the rest of its arguments the way buildah's parser (imagebuilder's
// extractBuilderFlags) does: a flag may hold quoted spaces, quotes are
// dropped and a backslash takes the next character literally. A looser split
// would let `--mount=target="/a b",from=s` hide its from= from the policy.
func splitFlags(args string) (flags []string, rest string) {
	const (
		inSpaces = iota
		inWord
		inQuote
	)
	phase := inSpaces
	var word strings.Builder
	var quote byte
	blankOK := false
	for pos := 0; pos <= len(args); pos++ {
		var ch byte
		if pos < len(args) {
			ch = args[pos]
		}
		if phase == inSpaces {
			if pos == len(args) {
				break
			}
			if isSpace(ch) {
				continue
			}
			if ch != '-' || pos+1 == len(args) || args[pos+1] != '-' {
				return flags, strings.TrimSpace(args[pos:])
			}
			phase = inWord
		}
		if pos == len(args) { // inWord or inQuote at the end
			if word.String() != "--" && (blankOK || word.Len() > 0) {
				flags = append(flags, word.String())
			}
			break
		}
		switch phase {
		case inWord:
			switch {
			case isSpace(ch):
				phase = inSpaces
				if word.String() == "--" {
					return flags, strings.TrimSpace(args[pos:])
				}
				if blankOK || word.Len() > 0 {
					flags = append(flags, word.String())
				}
				word.Reset()
				blankOK = false
				continue
			case ch == '\'' || ch == '"':
				quote, blankOK, phase = ch, true, inQuote
				continue
			case ch == '\\':
				if pos+1 == len(args) {
					continue
				}
				pos++
				ch = args[pos]
			}
			word.WriteByte(ch)
		case inQuote:
			if ch == quote {
				phase = inWord
				continue
			}
			if ch == '\\' {
				if pos+1 == len(args) {
					phase = inWord
					continue
				}
				pos++
				ch = args[pos]
			}
			word.WriteByte(ch)
		}
	}
	return flags, ""
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// cutSpace splits s at its first space or tab.
func cutSpace(s string) (before, after string) {
	if i := strings.IndexAny(s, " \t"); i >= 0 {
		return s[:i], s[i+1:]
	}
	return s, ""
}

// flagValue returns the value of --name=value when flag is that flag.
func flagValue(flag, name string) (string, bool) {
	k, v, ok := strings.Cut(strings.TrimPrefix(flag, "--"), "=")
	if !ok || !strings.EqualFold(k, name) {
		return "", false
	}
	return unquote(v), true
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}

// imagePolicy decides which image references a Dockerfile may use.
type imagePolicy struct {
	allowed []string
}

// checkDockerfile returns one message per policy violation, each naming its
// line; none means the Dockerfile may be built.
func (p imagePolicy) checkDockerfile(src string) []string {
	c := policyCheck{policy: p, stages: map[string]bool{}}
	for _, ins := range parseDockerfile(src) {
		c.instruction(ins)
	}
	return c.problems
}

type policyCheck struct {
	policy   imagePolicy
	stages   map[string]bool
	nStages  int
	problems []string
}

func (c *policyCheck) addf(line int, format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf("Dockerfile line %d: ", line)+fmt.Sprintf(format, args...))
}

func (c *policyCheck) instruction(ins dockerfileInstruction) {
	switch ins.cmd {
	case "FROM":
		_, rest := splitFlags(ins.args)
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return // buildah reports the syntax error itself
		}
		c.ref(ins.line, fields[0], false)
		if len(fields) >= 3 && strings.EqualFold(fields[1], "AS") {
			c.stages[strings.ToLower(fields[2])] = true
		}
		c.nStages++
	case "COPY", "ADD":
		c.heredoc(ins)
		flags, rest := splitFlags(ins.args)
		for _, f := range flags {
			if v, ok := flagValue(f, "from"); ok {
				c.ref(ins.line, v, true)
			}
		}
		if ins.cmd == "ADD" {
			for _, src := range addSources(rest) {
				if strings.Contains(src, "://") || strings.HasPrefix(src, "git@") {
					c.addf(ins.line, "ADD %s: fetching URLs is not allowed (it would run on the build host, outside the sandbox); download in a RUN step instead", src)
				}
			}
		}
	case "RUN":
		c.heredoc(ins)
		flags, _ := splitFlags(ins.args)
		for _, f := range flags {
			c.runFlag(ins.line, f)
		}
	case "ONBUILD":
		// Triggers run only in builds FROM this image, which the policy never
		// allows for project images; check them anyway so that nothing slips by.
		inner := splitInstruction(ins.line, ins.args)
		c.instruction(inner)
	}
}

// heredoc refuses the heredocs (<<EOF) of RUN, COPY and ADD. buildah 1.42
// reads the lines after such an instruction as its body up to a terminator
// it chooses, so a parser that does not follow it exactly could take a body
// line for an instruction or, worse, a real instruction for a body line:
// `RUN <<'E\'` ends its body at a line "E\" that looks like a line
// continuation swallowing the next instruction. Refusing is simpler than
// tracking every quoting rule of the terminator.
func (c *policyCheck) heredoc(ins dockerfileInstruction) {
	if strings.Contains(ins.args, "<<") {
		c.addf(ins.line, "%s with a heredoc (<<) is not supported here; put the script in a file of the build context and COPY or RUN it", ins.cmd)
	}
}

// runFlag checks one RUN flag. Only two are allowed: --network=none and a
// narrow --mount (runMount). Anything else, including flags a newer buildah
// may add, is refused rather than passed through unexamined.
func (c *policyCheck) runFlag(line int, flag string) {
	if spec, ok := flagValue(flag, "mount"); ok {
		c.runMount(line, spec)
		return
	}
	if v, ok := flagValue(flag, "network"); ok {
		if v != "none" {
			c.addf(line, "RUN --network=%s is not allowed; the operator sets the build network", v)
		}
		return
	}
	name, _, _ := strings.Cut(flag, "=")
	c.addf(line, "RUN %s is not allowed (only --mount=type=bind or tmpfs, and --network=none)", name)
}

// The keys RUN --mount may use, per type. A bind mount reads from the build
// context only: from= would bind another stage's or image's tree, and with a
// symlink planted in that stage buildah before 1.35 bound the build host's
// own / instead (CVE-2024-1753). bind-propagation let a mount reach back to
// the host (CVE-2024-9407). Everything not listed is refused, so a key a
// later buildah gives new meaning to cannot slip through.
var runMountKeys = map[string]map[string]bool{
	"bind":  {"type": true, "source": true, "target": true, "ro": true, "readonly": true},
	"tmpfs": {"type": true, "target": true, "size": true},
}

// runMount checks the value of one RUN --mount flag.
func (c *policyCheck) runMount(line int, spec string) {
	mountType := "bind" // buildah's default type
	type kv struct{ key, value string }
	var pairs []kv
	for _, field := range strings.Split(spec, ",") {
		k, v, _ := strings.Cut(field, "=")
		k = strings.ToLower(strings.TrimSpace(k))
		v = unquote(strings.TrimSpace(v))
		if k == "type" {
			mountType = strings.ToLower(v)
		}
		pairs = append(pairs, kv{k, v})
	}
	allowed, ok := runMountKeys[mountType]
	switch {
	case strings.ContainsAny(spec, "$\\\"'"):
		// buildah expands ARG and ENV values in the flag and drops quotes and
		// escapes after this check: `source=${X}` with X="a,from=s" would
		// add a key. The spec must be literal.
		c.addf(line, "RUN --mount must be written literally: no variables ($), quotes or backslashes")
		return
	case mountType == "cache":
		c.addf(line, "RUN --mount=type=cache is not supported: cache directories would be shared with other projects on the build host")
		return
	case !ok:
		c.addf(line, "RUN --mount=type=%s is not supported (only bind and tmpfs)", mountType)
		return
	}
	for _, p := range pairs {
		switch {
		case p.key == "from":
			c.addf(line, "RUN --mount from=%s is not allowed: a mount may only bind the build context (copy from a stage with COPY --from instead)", p.value)
		case p.key == "bind-propagation":
			c.addf(line, "RUN --mount bind-propagation is not allowed")
		case p.key == "":
			c.addf(line, "RUN --mount has an empty option")
		case !allowed[p.key]:
			c.addf(line, "RUN --mount=type=%s: option %q is not allowed (allowed: %s)", mountType, p.key, mountKeyList(allowed))
		}
	}
}

// mountKeyList names the allowed keys of a mount type for messages.
func mountKeyList(allowed map[string]bool) string {
	keys := make([]string, 0, len(allowed))
	for k := range allowed {
		if k != "type" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return strings.Join(keys, ", ")
}

// ref checks one image reference. A --from may also name an earlier stage by
// its index.
func (c *policyCheck) ref(line int, ref string, indexOK bool) {
	lower := strings.ToLower(ref)
	switch {
	case c.stages[lower], lower == "scratch":
		return
	case indexOK && isDecimal(ref):
		if n, err := strconv.Atoi(ref); err == nil && n < c.nStages {
			return
		}
		c.addf(line, "%q is not an earlier build stage", ref)
	case strings.ContainsAny(ref, "$\\\"'"):
		c.addf(line, "image %q uses a variable; name base images literally", ref)
	case looksLikeImageID(ref):
		c.addf(line, "image %q looks like an image ID; name base images by reference", ref)
	case !c.policy.allows(ref):
		c.addf(line, "image %q is not an allowed base image (%s)", ref, c.policy.describe())
	}
}

func (p imagePolicy) allows(ref string) bool {
	for _, pattern := range p.allowed {
		if prefix, ok := strings.CutSuffix(pattern, "*"); ok {
			if strings.HasPrefix(ref, prefix) {
				return true
			}
		} else if ref == pattern {
			return true
		}
	}
	return false
}

func (p imagePolicy) describe() string {
	if len(p.allowed) == 0 {
		return "only FROM scratch is allowed here"
	}
	return "allowed: scratch, " + strings.Join(p.allowed, ", ")
}

// addSources returns the source arguments of ADD (all but the destination), in
// either the shell or the JSON form.
func addSources(rest string) []string {
	var args []string
	if strings.HasPrefix(rest, "[") {
		if err := json.Unmarshal([]byte(rest), &args); err != nil {
			return nil
		}
	} else {
		args = strings.Fields(rest)
	}
	if len(args) < 2 {
		return nil
	}
	return args[:len(args)-1]
}

func isDecimal(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// looksLikeImageID reports whether buildah could resolve ref as an image ID or
// ID prefix rather than as a name.
func looksLikeImageID(ref string) bool {
	ref = strings.TrimPrefix(strings.ToLower(ref), "sha256:")
	if ref == "" {
		return false
	}
	for _, r := range ref {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}

// checkAllowPattern validates one Config.AllowedBaseImages entry. A pattern
// must contain "/" or ":" before any "*", so that it can never match an image
// ID.
func checkAllowPattern(pattern string) error {
	fixed, _ := strings.CutSuffix(pattern, "*")
	switch {
	case pattern == "":
		return fmt.Errorf("allowed base image: empty pattern")
	case strings.ContainsAny(pattern, " \t\n$"):
		return fmt.Errorf("allowed base image %q: no spaces or variables", pattern)
	case strings.Contains(fixed, "*"):
		return fmt.Errorf("allowed base image %q: \"*\" may only end a pattern", pattern)
	case !strings.ContainsAny(fixed, "/:"):
		return fmt.Errorf("allowed base image %q: name a repository (with \"/\" or \":\") before any \"*\"", pattern)
	}
	return nil
}
