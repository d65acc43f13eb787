package manifest

import (
	"fmt"
	"net/url"
	"path"
	"strings"
)

func parseDataSources(root *object) []DataSource {
	out := []DataSource{}
	items, ok := root.list("data_sources")
	if !ok {
		return out
	}
	if len(items) > maxDataSources {
		root.c.add("data_sources", "has %d entries; the limit is %d", len(items), maxDataSources)
	}
	names := make(map[string]int)
	for i, raw := range items {
		o := root.c.object(fmt.Sprintf("data_sources[%d]", i), raw)
		if o == nil {
			continue
		}
		ds := parseDataSource(o)
		checkUniqueName(o, ds.Name, i, names, "data_sources")
		out = append(out, ds)
	}
	return out
}

func parseDataSource(o *object) DataSource {
	o.rejectUnknown("name", "source", "repo", "repo_type", "revision", "include", "token_env", "uri", "sha256", "delivery", "mount_path")
	ds := DataSource{Name: parseName(o), Delivery: DeliveryMount}

	if o.require("source", fmt.Sprintf("; one of %q, %q", SourceHuggingFace, SourceURL)) {
		if s, ok := o.str("source"); ok {
			ds.Source = s
			if s != SourceHuggingFace && s != SourceURL {
				o.c.add(o.at("source"), "must be %q or %q, got %q", SourceHuggingFace, SourceURL, s)
			}
		}
	}
	if d, ok := o.str("delivery"); ok && d != DeliveryMount {
		o.c.add(o.at("delivery"), "must be %q, got %q: data sources are mounted read-only at mount_path", DeliveryMount, d)
	}
	if o.require("mount_path", `; the absolute path where tasks read the data, for example "/data/model"`) {
		if p, ok := o.str("mount_path"); ok {
			if err := checkMountPoint(p); err != nil {
				o.c.add(o.at("mount_path"), "%v", err)
			} else {
				ds.MountPath = p
			}
		}
	}

	switch ds.Source {
	case SourceHuggingFace:
		parseHuggingFace(o, &ds)
	case SourceURL:
		parseURL(o, &ds)
	}
	return ds
}

// parseHuggingFace reads a model-hub source. The revision must be a commit
// id: a data source is fetched once per revision and reused, so a branch
// that moves would make two hosts serve different data under one name.
func parseHuggingFace(o *object, ds *DataSource) {
	onlyFor(o, SourceURL, "uri", "sha256")
	if o.require("repo", `; the Hugging Face repo id, for example "openai-community/gpt2"`) {
		if r, ok := o.str("repo"); ok {
			if !hfRepoPattern.MatchString(r) {
				o.c.add(o.at("repo"), "%q is not a Hugging Face repo id such as \"openai-community/gpt2\"", r)
			}
			ds.Repo = r
		}
	}
	ds.RepoType = RepoTypeModel
	if t, ok := o.str("repo_type"); ok {
		if t != RepoTypeModel && t != RepoTypeDataset {
			o.c.add(o.at("repo_type"), "must be %q or %q, got %q", RepoTypeModel, RepoTypeDataset, t)
		}
		ds.RepoType = t
	}
	if o.require("revision", "; the full 40-character commit id to fetch") {
		if r, ok := o.str("revision"); ok {
			if !commitPattern.MatchString(r) {
				o.c.add(o.at("revision"), "must be a full 40-character lowercase commit id, got %q: branches and tags can move and a data source must not; find the commit with `git ls-remote %s HEAD`", r, hubURL(ds))
			}
			ds.Revision = r
		}
	}
	if patterns, ok := o.strings("include"); ok {
		for i, p := range patterns {
			if err := checkIncludePattern(p); err != nil {
				o.c.add(fmt.Sprintf("%s[%d]", o.at("include"), i), "%v", err)
			}
		}
		ds.Include = patterns
	}
	if v, ok := o.str("token_env"); ok {
		if !envNamePattern.MatchString(v) {
			o.c.add(o.at("token_env"), "must name an environment variable of the project (letters, digits, _), for example \"HF_TOKEN\", got %q; put the token itself in the project's env, never in the manifest", v)
		}
		ds.TokenEnv = v
	}
}

// DefaultTokenEnv is the project env variable a huggingface source's token
// is read from when the source names none: the one the hub's own clients
// read.
const DefaultTokenEnv = "HF_TOKEN"

// Token is the tenant's hub token for ds from the project env, or "".
func (ds DataSource) Token(env map[string]string) string {
	if ds.Source != SourceHuggingFace {
		return ""
	}
	name := ds.TokenEnv
	if name == "" {
		name = DefaultTokenEnv
	}
	return strings.TrimSpace(env[name])
}

// parseURL reads a plain download. Plain http is accepted only with a
// digest, which is what keeps a download on an untrusted network honest.
func parseURL(o *object, ds *DataSource) {
	onlyFor(o, SourceHuggingFace, "repo", "repo_type", "revision", "include", "token_env")
	if s, ok := o.str("sha256"); ok {
		if !sha256Pattern.MatchString(s) {
			o.c.add(o.at("sha256"), "must be 64 lowercase hex characters, the output of `sha256sum FILE`")
		}
		ds.SHA256 = s
	}
	if !o.require("uri", `; for example "https://example.com/vocab.txt"`) {
		return
	}
	s, ok := o.str("uri")
	if !ok {
		return
	}
	ds.URI = s
	u, err := url.Parse(s)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		o.c.add(o.at("uri"), "must be an absolute https URL, got %q", s)
	case u.User != nil:
		o.c.add(o.at("uri"), "must not carry credentials: the manifest is stored and shown in plain text")
	case u.Scheme == "http" && ds.SHA256 == "":
		o.c.add(o.at("uri"), "must use https, or come with a sha256 so the download can be verified")
	}
}

// onlyFor reports fields that belong to the other source kind.
func onlyFor(o *object, source string, keys ...string) {
	for _, k := range keys {
		if o.has(k) {
			o.c.add(o.at(k), "applies only to source %q", source)
		}
	}
}

// checkIncludePattern checks a glob selecting files of the repo.
func checkIncludePattern(p string) error {
	if _, err := cleanProjectPath(p); err != nil {
		return err
	}
	if _, err := path.Match(p, ""); err != nil {
		return fmt.Errorf("%q is not a valid glob pattern", p)
	}
	return nil
}

// parseName reads the required name of a data source or cache mount.
func parseName(o *object) string {
	if !o.require("name", "") {
		return ""
	}
	n, ok := o.str("name")
	if !ok {
		return ""
	}
	if !namePattern.MatchString(n) {
		o.c.add(o.at("name"), "%q must be 1-64 characters of a-z, 0-9, '_' and '-', starting with a letter or digit", n)
	}
	return n
}

// checkUniqueName reports a name already used in the same list; names
// identify the fetched data or the cache on the host.
func checkUniqueName(o *object, name string, i int, seen map[string]int, list string) {
	if name == "" {
		return
	}
	if j, dup := seen[name]; dup {
		o.c.add(o.at("name"), "%q is already the name of %s[%d]", name, list, j)
		return
	}
	seen[name] = i
}

// hubURL is the git address of a Hugging Face repo, for messages.
func hubURL(ds *DataSource) string {
	repo := ds.Repo
	if repo == "" {
		repo = "<repo>"
	}
	if ds.RepoType == RepoTypeDataset {
		return "https://huggingface.co/datasets/" + repo
	}
	return "https://huggingface.co/" + repo
}
