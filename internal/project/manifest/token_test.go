package manifest_test

import (
	"testing"

	"github.com/skiffhq/skiff/internal/project/manifest"
)

// A huggingface source's token comes from the project env: HF_TOKEN, or
// the variable token_env names; a url source never has one.
func TestDataSourceToken(t *testing.T) {
	t.Parallel()
	env := map[string]string{"HF_TOKEN": "hf_default", "MY_HUB": " hf_named\n"}
	hf := manifest.DataSource{Source: manifest.SourceHuggingFace}
	if got := hf.Token(env); got != "hf_default" {
		t.Errorf("default: %q", got)
	}
	hf.TokenEnv = "MY_HUB"
	if got := hf.Token(env); got != "hf_named" {
		t.Errorf("token_env: %q", got)
	}
	if got := (manifest.DataSource{Source: manifest.SourceURL}).Token(env); got != "" {
		t.Errorf("url source: %q", got)
	}
}
