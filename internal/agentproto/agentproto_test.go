package agentproto

import "testing"

func TestSupported(t *testing.T) {
	for v, want := range map[int]bool{0: false, MinProtocolVersion: true, ProtocolVersion: true, ProtocolVersion + 1: false} {
		if got := Supported(v); got != want {
			t.Errorf("Supported(%d) = %v, want %v", v, got, want)
		}
	}
}

// A version-1 outcome's start failure is inferred from runsc's words; a
// version-2 host's typed answer is taken as it is, whatever the words.
func TestInferStartFailed(t *testing.T) {
	for _, c := range []struct {
		version int
		in      Outcome
		want    bool
	}{
		{1, Outcome{SandboxError: "starting sandbox: creating process: failed to load /nope: no such file or directory"}, true},
		{1, Outcome{SandboxError: "exec format error"}, true},
		{1, Outcome{SandboxError: "runsc died"}, false},
		{1, Outcome{}, false},
		{2, Outcome{SandboxError: "creating process: failed to load /nope"}, false},
		{2, Outcome{SandboxError: "anything", StartFailed: true}, true},
	} {
		o := c.in
		o.InferStartFailed(c.version)
		if o.StartFailed != c.want {
			t.Errorf("v%d %q: StartFailed %v, want %v", c.version, c.in.SandboxError, o.StartFailed, c.want)
		}
	}
}
