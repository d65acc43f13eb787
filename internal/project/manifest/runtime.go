package manifest

import (
	"encoding/json"
	"fmt"
	"strings"
)

const installsBelongInDockerfile = "installs and setup belong in the Dockerfile (RUN steps), which runs once at build time"

func parseRuntime(root *object) Runtime {
	var rt Runtime
	if !root.require("runtime", `; for example "runtime": {"kind": "oci", "sandbox": "gvisor", "workdir": "/app"}`) {
		return rt
	}
	o := root.sub("runtime")
	if o == nil {
		return rt
	}
	// Named refusals first, so these fields get a reason instead of
	// "unknown field": they exist for platform projects, not user uploads.
	initField := "runtime.init"
	if hasKey(o.fields["init"], "commands") {
		initField = "runtime.init.commands"
	}
	o.forbid("init", initField, "is not allowed for user projects: "+installsBelongInDockerfile)
	o.forbid("services", "runtime.services", "is not allowed for user projects: a task runs only its entrypoint in the sandbox; start helpers from the entrypoint and install them in the Dockerfile")
	o.rejectUnknown("kind", "sandbox", "workdir")

	if o.require("kind", fmt.Sprintf("; set it to %q", RuntimeKindOCI)) {
		if k, ok := o.str("kind"); ok {
			if k != RuntimeKindOCI {
				o.c.add("runtime.kind", "must be %q, got %q: user projects run as OCI images built from their Dockerfile", RuntimeKindOCI, k)
			}
			rt.Kind = k
		}
	}
	if o.require("sandbox", fmt.Sprintf("; set it to %q", SandboxGVisor)) {
		if s, ok := o.str("sandbox"); ok {
			if s != SandboxGVisor {
				o.c.add("runtime.sandbox", "must be %q, got %q: user projects always run in the gVisor sandbox", SandboxGVisor, s)
			}
			rt.Sandbox = s
		}
	}
	if o.require("workdir", `; for example "/app", the directory your Dockerfile copies the code to`) {
		if w, ok := o.str("workdir"); ok {
			if err := checkContainerPath(w); err != nil {
				o.c.add("runtime.workdir", "%v", err)
			} else {
				rt.Workdir = w
			}
		}
	}
	return rt
}

func parseEntrypoint(root *object) Entrypoint {
	var ep Entrypoint
	if !root.require("entrypoint", `; for example "entrypoint": {"command": ["/runner"]}`) {
		return ep
	}
	o := root.sub("entrypoint")
	if o == nil {
		return ep
	}
	o.rejectUnknown("command", "env")
	if o.require("command", `; for example "command": ["python3", "-m", "runner"]`) {
		if cmd, ok := o.strings("command"); ok {
			checkCommand(o.c, cmd)
			ep.Command = cmd
		}
	}
	env, keys, _ := o.stringMap("env")
	if len(keys) > maxEnv {
		o.c.add("entrypoint.env", "has %d variables; the limit is %d", len(keys), maxEnv)
	}
	for _, k := range keys {
		field := "entrypoint.env." + k
		if err := checkEnvName(k); err != nil {
			o.c.add(field, "%v", err)
		}
		if err := checkValue(env[k]); err != nil {
			o.c.add(field, "%v", err)
		}
	}
	ep.Env = env
	return ep
}

func checkCommand(c *collector, cmd []string) {
	switch {
	case len(cmd) == 0:
		c.add("entrypoint.command", `must name the program to run, for example ["/runner"]`)
	case len(cmd) > maxCommandArgs:
		c.add("entrypoint.command", "has %d arguments; the limit is %d", len(cmd), maxCommandArgs)
	}
	for i, arg := range cmd {
		field := fmt.Sprintf("entrypoint.command[%d]", i)
		if arg == "" {
			c.add(field, "must not be empty")
		} else if err := checkValue(arg); err != nil {
			c.add(field, "%v", err)
		}
	}
}

// checkEnvName refuses names a shell could not export and names in the
// SKIFF_ namespace, which Skiff sets for each task (SKIFF_TASK_PAYLOAD and
// the rest); letting a project override them would break the runner
// protocol.
func checkEnvName(name string) error {
	if !envNamePattern.MatchString(name) {
		return fmt.Errorf("is not a valid variable name: use letters, digits and '_', not starting with a digit")
	}
	if strings.HasPrefix(strings.ToUpper(name), "SKIFF_") {
		return fmt.Errorf("names starting with SKIFF_ are reserved for the variables Skiff sets for each task")
	}
	return nil
}

// hasKey reports whether raw is an object with the given key.
func hasKey(raw json.RawMessage, key string) bool {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return false
	}
	_, ok := fields[key]
	return ok
}
